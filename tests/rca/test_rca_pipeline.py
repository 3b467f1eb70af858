"""gpuobs.rca.diagnose: the one pipeline every caller (CLI, bundle replay, corpus, game days) goes through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuobs.cli.app import app
from gpuobs.errors import InputError
from gpuobs.rca import (
    DiagnoseInputs,
    TimeWindow,
    catalog_with_overrides,
    collect,
    diagnose,
    load_catalog,
)
from gpuobs.rca.bundle import make_bundle
from gpuobs.rca.inputs import DEFAULT_LIVE_WINDOW_S
from gpuobs.rca.parsers import parse_text

CASES = Path(__file__).resolve().parent / "incidents"
XID79 = CASES / "xid_79_fallen_off_bus"
OOM_PODS = CASES / "oom_killed_container" / "pods.json"


def test_the_library_call_and_the_cli_give_the_same_report() -> None:
    logs = [str(XID79 / "dmesg.txt"), str(XID79 / "worker-3.log")]
    report = diagnose(DiagnoseInputs(logs=logs))
    args = ["diagnose", "--json", *(a for path in logs for a in ("--logs", path))]
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 0, run.stdout
    assert json.loads(run.stdout) == json.loads(json.dumps(report.to_dict(), default=str))
    assert report.top is not None and report.top.id == "xid_79_fallen_off_bus"


def test_bundle_replay_is_an_input_like_any_other(tmp_path: Path) -> None:
    archive = tmp_path / "incident.tar.gz"
    made = make_bundle(archive, DiagnoseInputs(logs=[str(OOM_PODS)]))
    assert made.manifest["inputs"]["live"] is False
    direct = diagnose(DiagnoseInputs(logs=[str(OOM_PODS)]))
    replay = diagnose(DiagnoseInputs(bundle=str(archive)))
    assert [c.id for c in replay.causes] == [c.id for c in direct.causes] != []
    # the replayed evidence passes through the window like every other source (untimed records stay)
    before = diagnose(DiagnoseInputs(bundle=str(archive), window=TimeWindow(0.0, 1.0)))
    assert "oom_killed_container" not in [c.id for c in before.causes]
    assert 0 < before.evidence_count < direct.evidence_count
    with pytest.raises(InputError, match="no such file"):
        diagnose(DiagnoseInputs(bundle=str(tmp_path / "missing.tar.gz")))


def test_kubernetes_objects_evidence_and_stdin_are_inputs_too() -> None:
    objects = json.loads(OOM_PODS.read_text())["items"]
    from_objects = diagnose(DiagnoseInputs(k8s_objects=objects))
    assert from_objects.top is not None and from_objects.top.id == "oom_killed_container"
    assert from_objects.sources == {"kubernetes": from_objects.evidence_count}

    evidence = parse_text((XID79 / "dmesg.txt").read_text(), source="dmesg.txt")
    assert diagnose(DiagnoseInputs(evidence=evidence)).top.id == "xid_79_fallen_off_bus"  # type: ignore[union-attr]

    pasted = (CASES / "xid_79_paste_no_timestamps" / "issue-comment.txt").read_bytes()
    from_stdin = diagnose(DiagnoseInputs(logs=["-"], stdin=pasted))
    assert from_stdin.top is not None and from_stdin.top.id == "xid_79_fallen_off_bus"
    assert set(from_stdin.sources) == {"<stdin>"}


def test_every_requested_source_failing_is_an_input_error_not_a_healthy_verdict() -> None:
    with pytest.raises(InputError, match=r"no evidence could be read: prometheus: Prometheus"):
        diagnose(DiagnoseInputs(prometheus="http://127.0.0.1:1"))
    mixed = diagnose(DiagnoseInputs(prometheus="http://127.0.0.1:1", logs=[str(XID79)]))
    assert mixed.top is not None and mixed.problems[0].startswith("[prometheus]")


def test_live_is_decided_from_the_other_inputs_with_a_default_window() -> None:
    live = DiagnoseInputs().resolved(now=10_000.0)
    assert live.live is True and live.window == TimeWindow(10_000.0 - DEFAULT_LIVE_WINDOW_S, 10_000.0)
    files = DiagnoseInputs(logs=["x.log"]).resolved(now=10_000.0)
    assert files.live is False and files.window == TimeWindow()
    kept = DiagnoseInputs(live=True, window=TimeWindow(1.0, 2.0)).resolved(now=10_000.0)
    assert kept.window == TimeWindow(1.0, 2.0)
    # this machine has no GPU: the live readers say so in notes, they do not fail
    collected = collect(DiagnoseInputs())
    assert any("NVML" in note for note in collected.notes) and not collected.problems


def test_bad_inputs_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="give a list"):
        DiagnoseInputs(logs="dmesg.txt")
    with pytest.raises(InputError, match="must be before"):
        TimeWindow(5.0, 1.0)
    with pytest.raises(InputError, match=r"nope\.log: no such file"):
        diagnose(DiagnoseInputs(logs=[str(tmp_path / "nope.log")]))
    with pytest.raises(InputError, match="not a folder"):
        catalog_with_overrides(tmp_path / "missing")


def test_a_site_catalog_replaces_by_id_and_adds_new_ids(tmp_path: Path) -> None:
    src = (Path(__file__).resolve().parents[2] / "rca" / "catalog" / "engine_dead.toml").read_text()
    (tmp_path / "engine_dead.toml").write_text(src.replace('severity = "high"', 'severity = "critical"'))
    site = src.replace('id = "engine_dead"', 'id = "site_engine_dead"')
    (tmp_path / "site_engine_dead.toml").write_text(site)
    merged = catalog_with_overrides(tmp_path).by_id()
    bundled = load_catalog().by_id()
    assert set(merged) == set(bundled) | {"site_engine_dead"}
    assert bundled["engine_dead"].severity.value == "high"
    assert merged["engine_dead"].severity.value == "critical"
