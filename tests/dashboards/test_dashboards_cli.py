"""`gpuobs dashboards build|alerts` as a user runs them: a real subprocess, its files, exit codes, JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpuobs.dashboards.options import Options
from gpuobs.dashboards.rules.alerts import alert_rules


def _gpuobs(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuobs", "dashboards", *args], capture_output=True, text=True, timeout=120,
        env={**os.environ, "GPUOBS_CONFIG": os.devnull, "COLUMNS": "200", **(env or {})}, check=False,
    )


def test_build_writes_everything_and_reports_json(tmp_path: Path) -> None:
    out = _gpuobs("build", str(tmp_path / "out"), "--k8s", str(tmp_path / "k8s"), "--json",
                  "--runbook-base-url", "https://runbooks.example/gpuobs", "--serving-job", "vllm")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    files = [Path(f["path"]) for f in report["files"]]
    assert all(f.is_file() for f in files)
    kinds = [f["kind"] for f in report["files"]]
    assert kinds.count("dashboard") == 4 and kinds.count("prometheus-rules") == 2
    assert kinds.count("grafana-alerting") == 3 and kinds.count("kubernetes") == 4
    assert sorted(p.name for p in (tmp_path / "out").glob("*.json")) == sorted(
        f.name for f, k in zip(files, kinds, strict=True) if k == "dashboard"
    )
    alerts = yaml.safe_load((tmp_path / "out" / "rules" / "gpuobs-alerts.yml").read_text())
    rules = [r for g in alerts["groups"] for r in g["rules"]]
    assert {r["annotations"]["runbook_url"] for r in rules} == {
        f"https://runbooks.example/gpuobs/{r.name}.md" for r in alert_rules(Options())
    }
    restarts = next(r for r in rules if r["alert"] == "ServingRestarts")
    assert 'job="vllm"' in restarts["expr"]


def test_build_settings_come_from_the_environment_too(tmp_path: Path) -> None:
    out = _gpuobs("build", str(tmp_path), "--json", env={"GPUOBS_EXPORTER_JOB": "dcgm"})
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "rules" / "gpuobs-alerts.yml").read_text()
    assert 'up{job="dcgm"}' in text


def test_bad_out_dir_is_one_line_and_exit_2(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for args in (["build", str(a_file)], ["build", str(tmp_path / "o"), "--exporter-job", "two words"],
                 ["build", str(tmp_path / "o"), "--k8s", str(a_file)]):
        out = _gpuobs(*args)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), out.stderr
        assert "Traceback" not in out.stderr
    assert a_file.read_text() == "x"
    assert not (tmp_path / "o").exists()  # refused before any folder was made


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--runbook-base-url", "runbooks.example/x"], "--runbook-base-url 'runbooks.example/x' is not"),
        (["--alertmanager-url", "alertmanager:9093"], "--alertmanager-url 'alertmanager:9093' is not"),
        (["--grafana-datasource-uid", ""], "--grafana-datasource-uid must be 1 to 40 letters"),
        (["--grafana-datasource-uid", "prom source"], "--grafana-datasource-uid must be 1 to 40 letters"),
        (["--namespace", "GPU_obs", "--k8s", "K8S"], "--namespace 'GPU_obs' is not a namespace name"),
    ],
    ids=["runbook URL with no scheme", "Alertmanager with no scheme", "empty UID", "UID with a space",
         "namespace in capitals"],
)
def test_a_setting_grafana_or_kubectl_would_refuse_is_refused_first(
    tmp_path: Path, args: list[str], words: str
) -> None:
    """These were written: runbook links and a contact point that go nowhere, Grafana-managed rules with no
    data source, manifests kubectl refuses. Now one line before any folder is made."""
    out = _gpuobs("build", str(tmp_path / "o"), *(str(tmp_path / a) if a == "K8S" else a for a in args))
    assert out.returncode == 2 and words in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "o").exists() and not (tmp_path / "K8S").exists()


def test_a_file_the_build_did_not_write_is_kept_unless_forced(tmp_path: Path) -> None:
    """`--k8s deploy/monitoring` over a folder holding the user's own kustomization.yaml (or a dashboard JSON
    of another uid under a gpuobs file name) replaced it without a word; now nothing is written, the file is
    named, and --force replaces it. A second build over its own output still just rewrites it."""
    out, k8s = tmp_path / "out", tmp_path / "monitoring"
    k8s.mkdir()
    mine = k8s / "kustomization.yaml"
    mine.write_text("resources:\n- my-own-app.yaml\n")
    refused = _gpuobs("build", str(out), "--k8s", str(k8s))
    assert refused.returncode == 2, refused.stderr
    assert f"{mine} exists and was not written by" in " ".join(refused.stderr.split())
    assert mine.read_text() == "resources:\n- my-own-app.yaml\n" and not out.exists(), "nothing written"
    again = _gpuobs("build", str(out), "--k8s", str(k8s), "--force")
    assert again.returncode == 0, again.stderr
    assert "my-own-app" not in mine.read_text()
    assert _gpuobs("build", str(out), "--k8s", str(k8s)).returncode == 0, "its own output"
    board = out / "gpuobs-incident.json"
    board.write_text(json.dumps({"uid": "someone-else", "title": "Theirs"}))
    clash = _gpuobs("build", str(out))
    assert clash.returncode == 2 and "gpuobs-incident.json" in clash.stderr, clash.stderr
    assert json.loads(board.read_text())["uid"] == "someone-else"


def _files(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_rule_file_edited_after_the_build_is_kept_unless_forced(tmp_path: Path) -> None:
    """An alert's `for:` changed by hand during an incident, then `dashboards build` run again for another
    setting: the edit was written over without a word, and the PrometheusRule of `--k8s` never had it. Now the
    build names the edited file and writes nothing; --force replaces it; an unedited build output, or one
    written before files carried their digest, is rewritten as before."""
    out, k8s = tmp_path / "out", tmp_path / "monitoring"
    first = _gpuobs("build", str(out), "--k8s", str(k8s))
    assert first.returncode == 0, first.stderr
    alerts = out / "rules" / "gpuobs-alerts.yml"
    text = alerts.read_text()
    assert text.splitlines()[1].startswith("# gpuobs-sha256: ")
    edited = text.replace("for: 5m", "for: 15m", 1)
    assert edited != text
    alerts.write_text(edited)
    before = _files(tmp_path)
    refused = _gpuobs("build", str(out), "--k8s", str(k8s), "--runbook-base-url", "https://runbooks.example/gpu")
    assert refused.returncode == 2, refused.stderr
    assert f"{alerts} was edited after `gpuobs dashboards build` wrote it: nothing was written" in " ".join(
        refused.stderr.split()
    )
    assert _files(tmp_path) == before
    manifest = next(k8s.glob("*.yaml"))
    manifest.write_text(manifest.read_text() + "# a note of mine\n")
    alerts.write_text(text)  # the rule file back as the build wrote it: the manifest is now the edited one
    again = _gpuobs("build", str(out), "--k8s", str(k8s))
    assert again.returncode == 2 and str(manifest) in " ".join(again.stderr.split()), again.stderr
    forced = _gpuobs("build", str(out), "--k8s", str(k8s), "--force", "--runbook-base-url", "https://rb.example/g")
    assert forced.returncode == 0, forced.stderr
    assert "https://rb.example/g" in alerts.read_text() and "a note of mine" not in manifest.read_text()
    old_style = "\n".join(line for line in alerts.read_text().splitlines() if "gpuobs-sha256" not in line)
    alerts.write_text(old_style + "\n")  # an earlier build's output: header, no digest
    assert _gpuobs("build", str(out), "--k8s", str(k8s)).returncode == 0
    assert _gpuobs("build", str(out), "--k8s", str(k8s)).returncode == 0, "its own output, unedited"


def test_missing_out_dir_is_a_usage_error() -> None:
    out = _gpuobs("build")
    assert out.returncode == 2
    assert "OUT_DIR" in out.stderr


def test_alerts_lists_every_alert_with_signature_and_runbook() -> None:
    out = _gpuobs("alerts", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["alert"] for r in rows] == [r.name for r in alert_rules(Options())]
    assert all(r["signature"] and r["severity"] and r["runbook"].endswith(f"/{r['alert']}.md") for r in rows)
    people = _gpuobs("alerts")
    assert people.returncode == 0
    assert "GpuFallenOffBus" in people.stdout and "xid_79_fallen_off_bus" in people.stdout
