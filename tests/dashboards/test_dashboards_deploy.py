"""deploy/monitoring is exactly what the build writes (so the PrometheusRule and the dashboard ConfigMaps come
from the same code as everything else), and its rules pass promtool. tests/test_deploy.py renders the
kustomization, compares it with `kubectl kustomize` and validates every object (the PrometheusRule
against the part of its CRD it uses)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuobs.dashboards.build import ALERTING_DIR, RULES_DIR, BuildResult
from gpuobs.dashboards.k8s import ALERTING_FILE, DASHBOARDS_FILE, PROMETHEUS_RULE_FILE

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
KUBECTL_APPLY_ANNOTATION_LIMIT = 262144  # bytes of kubectl's last-applied-configuration annotation


def _objects(path: Path) -> list[dict[str, Any]]:
    return [o for o in yaml.safe_load_all(path.read_text()) if o]


def test_committed_manifests_are_the_build_output(built: BuildResult) -> None:
    generated = built.out_dir / "k8s"
    names = {p.name for p in generated.iterdir()}
    assert names == {p.name for p in MONITORING.iterdir()}, "run `make dashboards`, commit deploy/monitoring"
    for name in names:
        assert (MONITORING / name).read_text() == (generated / name).read_text(), (
            f"deploy/monitoring/{name} is stale: run `make dashboards`"
        )


def test_dashboard_configmaps_hold_the_built_dashboards(built: BuildResult) -> None:
    maps = _objects(MONITORING / DASHBOARDS_FILE)
    boards = {f.path.name: json.loads(f.path.read_text()) for f in built.of_kind("dashboard")}
    assert len(maps) == len(boards) == 4
    for cm in maps:
        assert cm["kind"] == "ConfigMap"
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        (file, text), = cm["data"].items()
        assert json.loads(text) == boards[file]
        assert len(json.dumps(cm)) < KUBECTL_APPLY_ANNOTATION_LIMIT, f"{file} too big for kubectl apply"
    alerting, = _objects(MONITORING / ALERTING_FILE)
    assert alerting["metadata"]["labels"]["grafana_alert"] == "1"
    written = {p.name: p.read_text() for p in (built.out_dir / ALERTING_DIR).iterdir()}
    assert alerting["data"] == written


@pytest.mark.prometheus
def test_prometheus_rule_groups_pass_promtool(built: BuildResult, tmp_path: Path) -> None:
    rule, = _objects(MONITORING / PROMETHEUS_RULE_FILE)
    groups = rule["spec"]["groups"]
    built_groups = [g for p in sorted((built.out_dir / RULES_DIR).glob("*.yml"))
                    for g in yaml.safe_load(p.read_text())["groups"]]
    assert sorted(groups, key=lambda g: g["name"]) == sorted(built_groups, key=lambda g: g["name"])
    path = tmp_path / "from-prometheusrule.yml"
    path.write_text(yaml.safe_dump({"groups": groups}))
    if shutil.which("promtool") is None:
        pytest.fail("promtool not installed: run `make system-deps`")
    out = subprocess.run(
        ["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((MONITORING / "kustomization.yaml").read_text())
    assert kustomization["namespace"] == "gpuobs"
    assert sorted(kustomization["resources"]) == sorted(
        p.name for p in MONITORING.iterdir() if p.name != "kustomization.yaml"
    )
