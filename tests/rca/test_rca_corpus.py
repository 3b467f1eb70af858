"""The labelled incident corpus through `gpuobs diagnose --json`: top-1 must match on every case.

Every case runs through the real CLI (the typer app, its exit code and its JSON) in this process,
which keeps the corpus fast on a loaded 2-core machine; a handful of cases, one per input kind, also
run as real `python -m gpuobs diagnose` subprocesses in parallel. Healthy baselines must report no
cause (exit 1); incidents must name the expected top cause (exit 0) and every `also` id.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpuobs.cli.app import app
from gpuobs.rca.catalog import load_catalog
from gpuobs.rca.corpus import Case, load_cases

ROOT = Path(__file__).resolve().parents[2]
INCIDENTS = ROOT / "tests" / "rca" / "incidents"
CASES = load_cases(INCIDENTS)
# The signature ids of the RCA issue: a stable API (alerts, reports and tests key on them).
ISSUE_IDS = (
    "cuda_oom_capacity",
    "cuda_oom_fragmentation",
    "cuda_oom_leak",
    "cuda_oom_hot_swap",
    "kv_cache_exhausted",
    "nccl_timeout",
    "nccl_network_error",
    "xid_79_fallen_off_bus",
    "xid_48_double_bit_ecc",
    "xid_94_contained_ecc",
    "xid_95_uncontained_ecc",
    "xid_119_gsp_timeout",
    "ecc_row_remap_failure",
    "illegal_memory_access",
    "xid_31_mmu_fault",
    "launch_timeout_watchdog",
    "thermal_throttling",
    "power_throttling",
    "pcie_link_degraded",
    "cuda_driver_mismatch",
    "gpu_not_visible",
    "gpu_driver_failure",
    "engine_dead",
    "oom_killed_container",
    "crash_loop",
    "grpc_threadpool_exhaustion",
    "queue_saturation",
    "head_of_line_blocking",
    "noisy_neighbor",
    "straggler_gpu",
    "model_load_slow",
    "tokenizer_mismatch",
    "tensorrt_parse_error",
    "tensorrt_engine_incompatible",
    "xid_13_graphics_exception",
    "gpu_reset_required",
    "cuda_arch_unsupported",
    "container_gpu_access_lost",
    "host_oom_killer",
    "ray_oom_killer",
    "nccl_shm_unavailable",
    "nccl_p2p_hang",
    "grpc_deadline_exceeded",
    "telemetry_exporter_failure",
)


SUBPROCESS_CASES = (
    "xid_79_fallen_off_bus",
    "oom_killed_container",
    "thermal_throttling",
    "head_of_line_blocking",
    "healthy_shutdown_noise",
    "queue_saturation",
)


def _subprocess(case: Case) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "gpuobs", "diagnose", "--json", *case.cli_args()],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, COLUMNS="120"),
        cwd=ROOT,
    )
    return _result(proc.returncode, proc.stdout, proc.stderr)


def _in_process(case: Case) -> dict[str, Any]:
    run = CliRunner().invoke(app, ["diagnose", "--json", *case.cli_args()])
    if run.exception is not None and not isinstance(run.exception, SystemExit):
        raise run.exception
    return _result(run.exit_code, run.stdout, "")


def _result(rc: int, stdout: str, stderr: str) -> dict[str, Any]:
    out: dict[str, Any] = {"rc": rc, "stderr": stderr[-2000:]}
    try:
        out["report"] = json.loads(stdout)
    except ValueError:
        out["report"] = None
        out["stdout"] = stdout[-2000:]
    return out


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, Any]]:
    return {case.name: _in_process(case) for case in CASES}


def test_cases_as_real_subprocesses(results: dict[str, dict[str, Any]]) -> None:
    chosen = [c for c in CASES if c.name in SUBPROCESS_CASES]
    assert len(chosen) == len(SUBPROCESS_CASES)
    with ThreadPoolExecutor(max_workers=3) as pool:
        outputs = dict(zip((c.name for c in chosen), pool.map(_subprocess, chosen), strict=True))
    for name, out in outputs.items():
        assert out["report"] is not None, out
        assert out["rc"] == results[name]["rc"], name
        got = [c["id"] for c in out["report"]["causes"]]
        assert got == [c["id"] for c in results[name]["report"]["causes"]], name


def test_corpus_has_a_case_per_signature_and_healthy_baselines() -> None:
    expected = {c.top for c in CASES if c.top}
    catalog_ids = {s.id for s in load_catalog().signatures}
    assert set(ISSUE_IDS) <= catalog_ids
    assert catalog_ids <= expected, f"signatures without a case: {sorted(catalog_ids - expected)}"
    assert expected <= catalog_ids, f"cases expecting unknown ids: {sorted(expected - catalog_ids)}"
    healthy = [c for c in CASES if c.healthy]
    assert len(healthy) >= 8
    for case in CASES:
        assert case.origin, f"{case.name}: expected.json must say where its inputs come from"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case: Case, results: dict[str, dict[str, Any]]) -> None:
    result = results[case.name]
    report = result["report"]
    assert report is not None, (
        f"no JSON on stdout (rc={result['rc']}): {result.get('stdout')} {result['stderr']}"
    )
    causes = [c["id"] for c in report["causes"]]
    if case.healthy:
        assert causes == [], f"healthy baseline paged: {causes}"
        assert result["rc"] == 1
        assert report["verdict"] == "no known failure signature"
        return
    assert result["rc"] == 0, result["stderr"]
    assert causes and causes[0] == case.top, f"expected {case.top}, got {causes}"
    for also in case.also:
        assert also in causes
    top = report["causes"][0]
    assert 0 < top["confidence"] <= 1
    assert top["evidence"] and all({"time", "source", "text"} <= set(e) for e in top["evidence"])
    assert top["remediation"]
    assert report["problems"] == [], report["problems"]
