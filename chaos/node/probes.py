"""Probes of a GPU node through `gpuobs export`: every GPU up, no slowdown, no new Xid, NVML answering."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from chaoslib.exceptions import ActivityFailed
from prometheus_client.parser import text_string_to_metric_families

from gpuobs.chaos.httpjson import request_json, request_text
from gpuobs.chaos.incident import current
from gpuobs.chaos.safety import check_url
from gpuobs.names import exporter as ex
from gpuobs.names import gpu as g

__all__ = ["gpu_problems", "gpus_healthy", "wait_for_gpu_problem", "wait_for_node_healthy", "xid_totals"]

logger = logging.getLogger("chaostoolkit")

DEFAULT_EXPORTER = "http://127.0.0.1:9400"
BAD_CLOCK_REASONS = frozenset(
    {"hw_slowdown", "hw_thermal_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown"}
)


def _samples(base: str) -> list[tuple[str, dict[str, str], float]]:
    status, text = request_text("GET", f"{base}/metrics", timeout=10)
    if status != 200:
        raise ActivityFailed(f"{base}/metrics answered {status}")
    return [
        (s.name, dict(s.labels), float(s.value))
        for f in text_string_to_metric_families(text)
        for s in f.samples
    ]


def xid_totals(
    exporter_url: str = DEFAULT_EXPORTER,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> dict[str, float]:
    """XID events counted per GPU so far."""
    base = check_url(exporter_url, configuration)
    out: dict[str, float] = {}
    for name, labels, value in _samples(base):
        if name == g.XID_ERRORS.exposed_native:
            out[labels.get("gpu", "")] = out.get(labels.get("gpu", ""), 0.0) + value
    return out


_MTIME_SLACK_S = 1.0


def _kernel_xids(path: str | None, since: float | None) -> list[str]:
    if not path or since is None:
        return []
    try:
        file = Path(path)
        # File times come from the kernel's coarse clock, which can lag time.time() by a few ms: a line
        # written right after the fault mark may carry an mtime just before it. A second of slack.
        if file.stat().st_mtime < since - _MTIME_SLACK_S:
            return []
        lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in lines[-50:] if "NVRM: Xid" in line or "Killed process" in line]


def gpu_problems(
    exporter_url: str = DEFAULT_EXPORTER,
    kernel_log: str | None = None,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> list[str]:
    """What is wrong with the node now: GPUs lost, NVML down, slowdown reasons, Xids since the fault."""
    base = check_url(exporter_url, configuration)
    problems: list[str] = []
    status, health = request_json("GET", f"{base}/healthz", timeout=5)
    if status != 200 or not isinstance(health, dict):
        return [f"exporter /healthz answered {status}"]
    if health.get("nvml_up") is False:
        problems.append(f"NVML is not answering: {health.get('last_init_error')}")
    baseline = current().details.get("xid_baseline")
    xids: dict[str, float] = {}
    for name, labels, value in _samples(base):
        gpu = labels.get("gpu", "?")
        if name == ex.GPU_UP.native and value == 0:
            problems.append(f"GPU {gpu} is lost")
        elif name == g.CLOCK_EVENT_ACTIVE.native and value and labels.get("reason") in BAD_CLOCK_REASONS:
            problems.append(f"GPU {gpu} clocks held down ({labels.get('reason')})")
        elif name == g.XID_ERRORS.exposed_native:
            xids[gpu] = xids.get(gpu, 0.0) + value
    for gpu, total in sorted(xids.items()):
        if baseline is not None and total > float(baseline.get(gpu, 0.0)):
            problems.append(f"GPU {gpu} reported {total - float(baseline.get(gpu, 0.0)):.0f} new Xid events")
    problems.extend(f"kernel log: {line}" for line in _kernel_xids(kernel_log, current().since_fault()))
    return problems


def gpus_healthy(
    exporter_url: str = DEFAULT_EXPORTER,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> bool:
    """True when every GPU is up, NVML answers and no clock slowdown is active."""
    problems = [p for p in gpu_problems(exporter_url, None, configuration) if "Xid" not in p]
    if problems:
        logger.info("node not healthy: %s", "; ".join(problems))
    return not problems


def wait_for_gpu_problem(
    exporter_url: str = DEFAULT_EXPORTER,
    kernel_log: str | None = None,
    timeout_s: float = 30.0,
    interval_s: float = 0.2,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> list[str]:
    """Poll the exporter (and the kernel log) until the node shows a problem: the detection."""
    refused = current().no_fault_reason()
    if refused is not None:  # no fault went in: no problem will show, however long one waits
        raise ActivityFailed(f"no fault went in ({refused}): nothing to detect")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        problems = gpu_problems(exporter_url, kernel_log, configuration)
        if problems:
            current().mark("detected", "; ".join(problems))
            return problems
        time.sleep(interval_s)
    raise ActivityFailed(f"the node showed no problem within {timeout_s:.0f} s of the fault")


def wait_for_node_healthy(
    exporter_url: str = DEFAULT_EXPORTER,
    timeout_s: float = 30.0,
    interval_s: float = 0.2,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> float:
    """Poll until every GPU is healthy again (the recovery); returns seconds since the fault."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if gpus_healthy(exporter_url, configuration):
            at = current().mark("recovered")
            fault = current().since_fault()
            return round(at - fault, 3) if fault is not None else 0.0
        time.sleep(interval_s)
    raise ActivityFailed(f"the node was not healthy again within {timeout_s:.0f} s")
