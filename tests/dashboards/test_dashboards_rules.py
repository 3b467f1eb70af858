"""The generated Prometheus rules pass `promtool check rules` and a `promtool test rules` unit test for every
alert (firing and not firing); every alert carries a severity, a catalog signature and a runbook whose
commands are the ones `gpuobs diagnose` prints; the Grafana-managed rules mirror them."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from alert_cases import CASES, OPTIONS, SERVE, promtool_document, sel

from gpuobs import cuda_errors
from gpuobs.dashboards.build import ALERTING_DIR, RULES_DIR, BuildResult
from gpuobs.dashboards.options import Options
from gpuobs.dashboards.promql import series
from gpuobs.dashboards.rules import alerts as alert_defs
from gpuobs.dashboards.rules import recording as rec
from gpuobs.dashboards.rules.alerts import alert_rules
from gpuobs.dashboards.rules.grafana import CONTACT_POINTS_FILE, POLICIES_FILE, RULES_FILE
from gpuobs.dashboards.rules.prometheus import RECORDING_FILE, dump_yaml
from gpuobs.names import kernel as k

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "rca" / "catalog"
RUNBOOKS = ROOT / "docs" / "runbooks"
SEVERITIES = {"critical", "warning"}


def _catalog() -> dict[str, dict[str, Any]]:
    return {p.stem: tomllib.loads(p.read_text()) for p in sorted(CATALOG.glob("*.toml"))}


def _promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    if shutil.which("promtool") is None:
        pytest.fail("promtool not installed: run `make system-deps` (Debian package prometheus)")
    return subprocess.run(
        ["promtool", *args], capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )


@pytest.mark.prometheus
def test_promtool_check_rules(built: BuildResult) -> None:
    files = sorted((built.out_dir / RULES_DIR).glob("*.yml"))
    assert len(files) == 2
    out = _promtool("check", "rules", *map(str, files))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


@pytest.mark.prometheus
def test_promtool_unit_tests_every_alert(built: BuildResult, tmp_path: Path) -> None:
    for rule_file in (built.out_dir / RULES_DIR).glob("*.yml"):
        shutil.copy(rule_file, tmp_path / rule_file.name)
    (tmp_path / "tests.yml").write_text(dump_yaml(promtool_document()))
    out = _promtool("test", "rules", "tests.yml", cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    assert "SUCCESS" in out.stdout


@pytest.mark.prometheus
def test_promtool_unit_tests_can_fail(built: BuildResult, tmp_path: Path) -> None:
    """The unit tests check something: the same cases against a rule file whose thermal alert looks at
    the wrong reason fail."""
    for rule_file in (built.out_dir / RULES_DIR).glob("*.yml"):
        text = rule_file.read_text().replace("sw_thermal_slowdown|", "")
        (tmp_path / rule_file.name).write_text(text)
    (tmp_path / "tests.yml").write_text(dump_yaml(promtool_document()))
    out = _promtool("test", "rules", "tests.yml", cwd=tmp_path)
    assert out.returncode != 0
    assert "GpuThermalThrottling" in out.stdout + out.stderr


def _kernel_series(kernel: str, launches_per_min: int, timed_per_min: int, seconds_per_min: float
                   ) -> list[dict[str, str]]:
    labels = {**SERVE, "kernel": kernel, k.BACKEND_LABEL: k.BACKEND_TRITON}
    per_minute = (
        (series(k.KERNEL_LAUNCHES), launches_per_min),
        (series(k.KERNEL_DURATION, suffix="_count"), timed_per_min),
        (series(k.KERNEL_DURATION, suffix="_sum"), seconds_per_min),
    )
    return [{"series": sel(name, labels), "values": f"0+{step}x10"} for name, step in per_minute]


@pytest.mark.prometheus
def test_promtool_kernel_gpu_time_is_mean_sampled_duration_times_launch_rate(
    built: BuildResult, tmp_path: Path
) -> None:
    """100 launches/s of which 1/s timed at 5 ms mean: 0.5 GPU s/s; launched but never timed: 0, not NaN."""
    shutil.copy(built.out_dir / RULES_DIR / RECORDING_FILE, tmp_path / RECORDING_FILE)
    recorded = rec.KERNEL_GPU_SECONDS_RATE
    out_labels = f'instance="{SERVE["instance"]}",{k.BACKEND_LABEL}="{k.BACKEND_TRITON}"'
    document = {
        "rule_files": [RECORDING_FILE],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": _kernel_series("rms_norm", 6000, 60, 0.3) + _kernel_series("rare", 60, 0, 0),
                "promql_expr_test": [
                    {
                        "expr": f"round({recorded}, 0.001)",  # rate()'s extrapolation leaves 0.49999...
                        "eval_time": "10m",
                        "exp_samples": [
                            {"labels": f'{{{out_labels},kernel="rms_norm"}}', "value": 0.5},
                            {"labels": f'{{{out_labels},kernel="rare"}}', "value": 0},
                        ],
                    }
                ],
            }
        ],
    }
    (tmp_path / "tests.yml").write_text(dump_yaml(document))
    out = _promtool("test", "rules", "tests.yml", cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "SUCCESS" in out.stdout


def test_every_alert_has_firing_and_quiet_cases() -> None:
    rules = alert_rules(OPTIONS)
    names = {r.name for r in rules}
    firing = {c.alert for c in CASES if c.fires}
    quiet = {c.alert for c in CASES if not c.fires}
    assert names - firing == set(), f"alerts without a firing case: {sorted(names - firing)}"
    assert names - quiet == set(), f"alerts without a not-firing case: {sorted(names - quiet)}"
    assert {c.alert for c in CASES} <= names, "a case names an alert that no longer exists"
    fired = {(c.alert, labels["severity"]) for c in CASES for labels in c.expected}
    for rule in rules:
        if rule.severity:
            assert (rule.name, rule.severity) in fired, f"no case fires {rule.name} at {rule.severity}"
        else:
            assert {sev for name, sev in fired if name == rule.name} == set(rule.severities), rule.name
    for case in CASES:
        for labels in case.expected:
            assert labels["signature"] in next(r for r in rules if r.name == case.alert).all_signatures


def test_every_alert_is_labelled_and_documented() -> None:
    catalog = _catalog()
    for rule in alert_rules(OPTIONS):
        assert rule.all_severities and set(rule.all_severities) <= SEVERITIES, rule.name
        assert rule.all_signatures, rule.name
        unknown = set(rule.all_signatures) - set(catalog)
        assert not unknown, f"{rule.name}: signatures not in rca/catalog: {unknown}"
        annotations = rule.annotations(OPTIONS)
        assert annotations["summary"] and annotations["description"]
        assert annotations["runbook_url"] == f"{OPTIONS.runbook_base_url}/{rule.name}.md"
        assert (RUNBOOKS / f"{rule.name}.md").is_file(), f"docs/runbooks/{rule.name}.md missing"
    documented = {p.stem for p in RUNBOOKS.glob("*.md")} - {"README"}
    assert documented == {r.name for r in alert_rules(OPTIONS)}, "a runbook without an alert, or the reverse"


def _fill(step: str) -> str:
    """What `gpuobs diagnose` prints for a remediation step when the entity is not known."""
    return re.sub(r"\{(\w+)\}", r"<\1>", step)


def test_runbook_commands_are_the_diagnosis_remediation() -> None:
    catalog = _catalog()
    for rule in {r.name: r for r in alert_rules(OPTIONS)}.values():
        text = (RUNBOOKS / f"{rule.name}.md").read_text()
        for signature in rule.all_signatures:
            block = re.search(rf"^### `{signature}`[^\n]*\n\n```sh\n(.*?)\n```", text, re.M | re.S)
            assert block, f"{rule.name}.md has no remediation block for {signature}"
            expected = [_fill(step) for step in catalog[signature]["remediation"]]
            assert block.group(1).split("\n") == expected, f"{rule.name}.md: {signature} commands differ"
        assert rule.all_severities[0] in text.split("## What it means")[0]


def _xid_values(node: Any) -> set[int]:
    found: set[int] = set()
    if isinstance(node, dict):
        keys = node.get("key")
        names_xid = keys == "xid" or (isinstance(keys, list) and "xid" in keys)
        if names_xid and isinstance(node.get("value"), list):
            found.update(int(v) for v in node["value"])
        for value in node.values():
            found |= _xid_values(value)
    elif isinstance(node, list):
        for value in node:
            found |= _xid_values(value)
    return found


def test_code_tables_agree_with_the_catalog() -> None:
    catalog = _catalog()
    for signature, codes in alert_defs.XID_CODE_SIGNATURES.items():
        entry = catalog[signature]
        required = _xid_values({k: v for k, v in entry.items() if k not in ("explains", "rule_out")})
        assert set(codes) <= required, f"{signature} does not name XIDs {set(codes) - required}"
    critical = {sig for sig in alert_defs.XID_CODE_SIGNATURES if catalog[sig]["severity"] == "critical"}
    assert critical == alert_defs.CRITICAL_SIGNATURES
    for signature, codes in alert_defs.CUDA_CODE_SIGNATURES.items():
        text = (CATALOG / f"{signature}.toml").read_text()
        for code in codes:
            error = cuda_errors.by_code(code)
            assert error is not None and error.name in text, f"{signature} does not name CUDA error {code}"


def test_grafana_managed_rules_mirror_the_prometheus_alerts(built: BuildResult) -> None:
    folder = built.out_dir / ALERTING_DIR
    rules_doc = yaml.safe_load((folder / RULES_FILE).read_text())
    grafana = [rule for group in rules_doc["groups"] for rule in group["rules"]]
    assert {g["folder"] for g in rules_doc["groups"]} == {OPTIONS.grafana_folder}
    prometheus = alert_rules(OPTIONS)
    assert len(grafana) == len(prometheus)
    uids = [r["uid"] for r in grafana]
    assert len(set(uids)) == len(uids) and all(len(u) <= 40 for u in uids)
    for mine, theirs in zip(prometheus, grafana, strict=True):
        assert theirs["title"].split(" ")[0] == mine.name
        assert theirs["labels"] == mine.rule_labels()
        assert theirs["annotations"] == mine.annotations(OPTIONS)
        assert theirs["for"] == mine.for_
        assert theirs["noDataState"] == "OK" and theirs["execErrState"] == "Error"
        queries = {q["refId"]: q for q in theirs["data"]}
        assert theirs["condition"] == "C" and set(queries) == {"A", "B", "C"}
        assert mine.expr in queries["A"]["model"]["expr"]
        assert queries["A"]["datasourceUid"] == OPTIONS.grafana_datasource_uid
        assert queries["C"]["model"]["conditions"][0]["evaluator"] == {"params": [0], "type": "gt"}
    contact = yaml.safe_load((folder / CONTACT_POINTS_FILE).read_text())["contactPoints"][0]
    receiver = contact["receivers"][0]
    assert receiver["type"] == "prometheus-alertmanager"
    assert receiver["settings"]["url"] == OPTIONS.alertmanager_url
    policy = yaml.safe_load((folder / POLICIES_FILE).read_text())["policies"][0]
    assert policy["receiver"] == contact["name"]
    assert {r["receiver"] for r in policy["routes"]} == {contact["name"]}
    assert {tuple(r["object_matchers"][0]) for r in policy["routes"]} == {
        ("severity", "=", sev) for sev in SEVERITIES
    }


def test_options_shorten_windows_for_tests_only() -> None:
    short = Options(for_override="2s", event_window="1m")
    assert {r.effective_for(short) for r in alert_rules(short)} == {"2s"}
    assert all("[10m]" not in r.expr for r in alert_rules(short))
    assert {r.effective_for(OPTIONS) for r in alert_rules(OPTIONS)} >= {"0m", "5m", "15m"}
