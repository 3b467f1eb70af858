"""The chaostoolkit extension without a stack: discovery, experiment files, guard rails, undo on exit."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from chaoslib.exceptions import ActivityFailed
from support.paths import EXPERIMENTS

import gpuobs.chaos
from gpuobs.chaos import control, safety
from gpuobs.chaos.gameday.runner import expected_of, load_experiment
from gpuobs.chaos.incident import current
from gpuobs.chaos.node import actions as node_actions
from gpuobs.chaos.serving import actions as serving_actions
from gpuobs.chaos.serving import probes as serving_probes
from gpuobs.rca.catalog import load_catalog


def test_discover_lists_every_exported_activity() -> None:
    found = gpuobs.chaos.discover()
    names = {(a["mod"], a["name"], a["type"]) for a in found["activities"]}
    assert found["extension"]["name"] == "gpuobs"
    for module in gpuobs.chaos.ACTIVITY_MODULES:
        mod = __import__(module, fromlist=["__all__"])
        kind = "action" if module.endswith(".actions") else "probe"
        for func in mod.__all__:
            assert (module, func, kind) in names, f"{module}.{func} not discovered"


def test_every_activity_takes_configuration_and_secrets_last() -> None:
    import inspect

    for module in gpuobs.chaos.ACTIVITY_MODULES:
        mod = __import__(module, fromlist=["__all__"])
        for func in mod.__all__:
            params = list(inspect.signature(getattr(mod, func)).parameters)
            assert params[-2:] == ["configuration", "secrets"], f"{module}.{func}: {params}"


@pytest.mark.parametrize("path", sorted(EXPERIMENTS.glob("*.json")), ids=lambda p: p.stem)
def test_experiment_is_valid_and_names_a_catalog_signature(path: Path) -> None:
    experiment = load_experiment(path)  # chaoslib's own validation
    expected = expected_of(experiment).get("expected_signature")
    ids = {s.id for s in load_catalog().signatures}
    assert expected is None or expected in ids
    assert experiment["rollbacks"] or path.stem.startswith("k8s-pod"), "every fault has a rollback"
    assert any(c["provider"]["module"] == "gpuobs.chaos.control" for c in experiment["controls"])


def test_the_sigkill_experiment_is_named_as_the_issue_says() -> None:
    exp = json.loads((EXPERIMENTS / "serving-worker-sigkill.json").read_text())
    assert exp["configuration"]["serving_url"]["default"] == "http://127.0.0.1:8000"
    assert expected_of(exp)["expected_signature"] == "host_oom_killer"


def test_targets_off_the_allowlist_are_refused() -> None:
    with pytest.raises(safety.SafetyError, match="allowlist"):
        serving_actions.inject_fault("slow_kernel", base_url="http://10.1.2.3:8000")
    with pytest.raises(safety.SafetyError, match="allowlist"):
        node_actions.inject_gpu_fault("xid", 0, {"code": 79}, exporter_url="http://example.com:9400")
    assert (
        safety.check_url("http://gpu-box:8000/", {"gpuobs_allowed_hosts": "gpu-box"}) == "http://gpu-box:8000"
    )
    with pytest.raises(safety.SafetyError, match="allowlist"):
        serving_actions.start_grpc_load(grpc_target="10.1.2.3:50051")
    with pytest.raises(safety.SafetyError, match="allowlist"):
        serving_probes.grpc_predict("example.com:50051")
    with pytest.raises(safety.SafetyError, match="host:port"):
        safety.check_grpc_target("127.0.0.1", None)
    assert safety.check_grpc_target("[::1]:50051", None) == "[::1]:50051"
    assert safety.check_grpc_target("gpu-box:50051", {"gpuobs_allowed_hosts": "gpu-box"}) == "gpu-box:50051"


def test_grpc_predict_probe_fails_with_the_status() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        target = f"127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(ActivityFailed, match=r"gRPC Predict on .*: UNAVAILABLE"):
        serving_probes.grpc_predict(target, timeout_s=5)


def test_protected_namespaces_and_blast_radius() -> None:
    with pytest.raises(safety.SafetyError, match="protected"):
        safety.check_namespace("kube-system", None)
    assert safety.check_namespace("kube-system", {"gpuobs_protected_namespaces": "prod"}) == "kube-system"
    safety.check_blast_radius(1, None)
    with pytest.raises(safety.SafetyError, match="blast-radius"):
        safety.check_blast_radius(2, None)
    safety.check_blast_radius(3, {"gpuobs_max_blast_radius": 3})


def test_dry_run_touches_nothing() -> None:
    with socket.socket() as s:  # a port nobody listens on: any real request would fail
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    config = {"gpuobs_dry_run": True}
    current().reset()
    out = serving_actions.inject_fault("cuda_oom", {"repeat": True}, url, config)
    assert out["dry_run"] is True and "fault" not in current().marks and current().pending() == []
    with pytest.raises(ActivityFailed):
        serving_actions.inject_fault("cuda_oom", {"repeat": True}, url, None)


def test_control_undoes_pending_faults_when_an_experiment_ends_badly(tmp_path: Path) -> None:
    undone: list[str] = []
    current().reset()
    current().add_undo("serving.fault.hang", lambda: undone.append("hang"))
    current().add_undo("node.fault", lambda: undone.append("node"))
    control.after_experiment_control(context={}, state={"status": "interrupted"})
    assert undone == ["node", "hang"] and current().pending() == []


def test_kernel_log_lines_parse_as_the_kernel_wrote_them(tmp_path: Path) -> None:
    from gpuobs.chaos.diagnosis import diagnose_live

    log = tmp_path / "kernel.log"
    current().reset()
    node_actions.append_xid(79, str(log), pci="0000:3b:00", detail="GPU has fallen off the bus.")
    report: Any = diagnose_live([str(log)])
    assert report.top is not None and report.top.id == "xid_79_fallen_off_bus"
    current().reset()


def test_stock_chaos_discover_finds_the_extension(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "discovery.json"
    chaos = Path(sys.executable).with_name("chaos")
    proc = subprocess.run(
        [
            str(chaos),
            "--no-version-check",
            "discover",
            "--no-system-info",
            "--no-install",
            "gpuobs",
            "--discovery-path",
            str(out),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = {a["name"] for a in json.loads(out.read_text())["activities"]}
    assert {"signal_worker", "inject_gpu_fault", "diagnosed_as", "drain_node", "alert_firing"} <= names


def _gameday_dry_run(tmp_path: Path, *names: str, **env: str) -> Any:
    import os
    import subprocess
    import sys

    clean = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    gpuobs_cli = Path(sys.executable).with_name("gpuobs")
    return subprocess.run(
        [str(gpuobs_cli), "gameday", "--dry-run", "--json", *names],
        env={**clean, "HOME": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_gameday_default_set_leaves_out_kubernetes_experiments_without_an_api(tmp_path: Path) -> None:
    """Without a kubeconfig or a pod's service host the k8s experiments could only fail: left out, say why."""
    proc = _gameday_dry_run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    planned = {row["experiment"] for row in json.loads(proc.stdout)}
    k8s = {p.stem for p in EXPERIMENTS.glob("k8s-*.json")}
    assert k8s and not planned & k8s and "serving-worker-sigkill" in planned
    assert "no Kubernetes API is configured" in proc.stderr and all(name in proc.stderr for name in k8s)
    named = _gameday_dry_run(tmp_path, "k8s-pod-delete")  # named: always planned
    assert [row["experiment"] for row in json.loads(named.stdout)] == ["k8s-pod-delete"], named.stderr
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    configured = _gameday_dry_run(tmp_path, KUBECONFIG=str(kubeconfig))
    assert k8s <= {row["experiment"] for row in json.loads(configured.stdout)}
    assert "no Kubernetes API" not in configured.stderr


def test_gameday_reads_yaml_experiments_and_folders_as_chaos_run_does(tmp_path: Path) -> None:
    """chaostoolkit runs .yaml/.yml experiments, and a team keeps its own in a folder: both were refused
    ("not a readable JSON experiment", "no experiment 'folder'"). Now a YAML file is planned like its JSON
    twin, a folder gives its experiment files, and a broken YAML file or an empty folder is one line."""
    import yaml

    source = json.loads((EXPERIMENTS / "serving-worker-sigkill.json").read_text())
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "oom-kill.yaml").write_text(yaml.safe_dump(source))
    (mine / "hang.yml").write_text((EXPERIMENTS / "serving-hang.json").read_text())  # JSON is YAML too
    (mine / "notes.txt").write_text("not an experiment")
    one = _gameday_dry_run(tmp_path, str(mine / "oom-kill.yaml"))
    assert one.returncode == 0, one.stderr
    assert [(r["experiment"], r["expected_signature"]) for r in json.loads(one.stdout)] == [
        ("oom-kill", expected_of(source)["expected_signature"])
    ]
    folder = _gameday_dry_run(tmp_path, str(mine))
    assert folder.returncode == 0, folder.stderr
    assert [r["experiment"] for r in json.loads(folder.stdout)] == ["hang", "oom-kill"]
    broken = mine / "broken.yaml"
    broken.write_text("title: [\n")
    bad = _gameday_dry_run(tmp_path, str(broken))
    assert bad.returncode == 2 and f"{broken}: not a readable YAML experiment" in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    none = _gameday_dry_run(tmp_path, str(empty))
    assert none.returncode == 2, none.stderr
    assert f"no experiment file (.json, .yaml, .yml) in folder {empty}" in none.stderr


def test_rising_counters_in_experiments_are_counters_serve_exposes() -> None:
    """An experiment's `rising_counters` spell serve's counter names in JSON: each must be one the registry
    declares as a counter, or the probe would watch a series that never exists and never detect."""
    from gpuobs.names import serving as serving_names
    from gpuobs.names.spec import MetricKind, MetricSpec

    exposed = {
        spec.exposed_native
        for spec in vars(serving_names).values()
        if isinstance(spec, MetricSpec) and spec.kind is MetricKind.COUNTER
    }
    named = [
        name
        for path in sorted(EXPERIMENTS.glob("*.json"))
        for step in json.loads(path.read_text())["method"]
        for name in step.get("provider", {}).get("arguments", {}).get("rising_counters", [])
    ]
    assert named, "no experiment watches a counter"
    assert set(named) <= exposed, set(named) - exposed
