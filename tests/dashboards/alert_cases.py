"""promtool unit-test cases for every alert: series that make it fire and series that must not.

`promtool_document()` turns the cases into a `promtool test rules` file against the generated rule
files; `test_every_alert_has_cases` keeps this table and the alert rules in sync. Series names come
from gpuobs.names through the same `series()` helper the rules use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gpuobs import cuda_errors
from gpuobs.dashboards.options import Options
from gpuobs.dashboards.promql import UP, series
from gpuobs.dashboards.rules.alerts import PROCESS_START_TIME, AlertRule, alert_rules
from gpuobs.dashboards.rules.prometheus import ALERTS_FILE, RECORDING_FILE
from gpuobs.names import exporter as ex
from gpuobs.names import gpu as g
from gpuobs.names import kernel as k
from gpuobs.names import serving as s

__all__ = ["CASES", "OPTIONS", "AlertCase", "promtool_document"]

OPTIONS = Options()
EXPORTER = {"job": OPTIONS.exporter_job, "instance": "node-a:9400"}
GPU0 = {**EXPORTER, "gpu": "0", "uuid": "GPU-0000", "host": "node-a", "model_name": "NVIDIA H200"}
SERVE = {"job": OPTIONS.serving_job, "instance": "serve-a:8000"}
MODEL = {**SERVE, "model_name": "llama", "engine": "0"}


def sel(metric: str, labels: dict[str, str], **extra: str) -> str:
    merged = {**labels, **extra}
    return metric + "{" + ",".join(f'{key}="{value}"' for key, value in merged.items()) + "}"


def without(labels: dict[str, str], *names: str) -> dict[str, str]:
    return {key: value for key, value in labels.items() if key not in names}


@dataclass(frozen=True)
class AlertCase:
    """Input series, an evaluation time, and the label sets of the alerts expected firing then."""

    alert: str
    why: str
    series: tuple[tuple[str, str], ...]
    eval_time: str
    expected: tuple[dict[str, str], ...] = ()

    @property
    def fires(self) -> bool:
        return bool(self.expected)


XID = series(g.XID_ERRORS)
LAST_XID = series(g.XID_LAST)
CLOCK = series(g.CLOCK_EVENT_ACTIVE)
E2E_BUCKET = series(s.E2E_REQUEST_LATENCY, suffix="_bucket")
E2E_COUNT = series(s.E2E_REQUEST_LATENCY, suffix="_count")
REQUESTS = series(s.REQUEST_SUCCESS)
_ILLEGAL = cuda_errors.by_code(700)
assert _ILLEGAL is not None
ILLEGAL_ADDRESS = {"code": str(_ILLEGAL.code), "name": _ILLEGAL.name, "kernel": "matmul"}
LE = "10.0"  # OPTIONS.slo.latency_threshold_s as prometheus_client writes it


def _fire(labels: dict[str, str], severity: str, signature: str) -> dict[str, str]:
    return {**labels, "severity": severity, "signature": signature}


def _slo_series(total_per_min: int, slow_per_min: int, failed_per_min: int) -> tuple[tuple[str, str], ...]:
    minutes = 130
    return (
        (sel(E2E_COUNT, MODEL), f"0+{total_per_min}x{minutes}"),
        (sel(E2E_BUCKET, MODEL, le=LE), f"0+{total_per_min - slow_per_min}x{minutes}"),
        (sel(REQUESTS, MODEL, finished_reason="stop"), f"0+{total_per_min - failed_per_min}x{minutes}"),
        (sel(REQUESTS, MODEL, finished_reason="error"), f"0+{failed_per_min}x{minutes}"),
    )


_MODEL_ONLY = {"model_name": MODEL["model_name"]}

CASES: tuple[AlertCase, ...] = (
    # --- GPU --------------------------------------------------------------------------------------------
    AlertCase(
        "GpuFallenOffBus",
        "NVML reports the GPU lost",
        ((sel(series(ex.GPU_UP), GPU0), "1x3 0x10"),),
        "6m",
        (_fire(GPU0, "critical", "xid_79_fallen_off_bus"),),
    ),
    AlertCase(
        "GpuFallenOffBus",
        "first XID 79: the counter series is created at 1",
        (
            (sel(series(ex.GPU_UP), GPU0), "1x20"),
            (sel(LAST_XID, GPU0), "0x5 79x15"),
            (sel(XID, GPU0, code="79"), "_x5 1x15"),
        ),
        "8m",
        (_fire(GPU0, "critical", "xid_79_fallen_off_bus"),),
    ),
    AlertCase(
        "GpuFallenOffBus",
        "an old XID 79 seen again after a Prometheus restart, and an XID 13",
        (
            (sel(series(ex.GPU_UP), GPU0), "1x20"),
            (sel(LAST_XID, GPU0), "79x20"),
            (sel(XID, GPU0, code="79"), "1x20"),
            (sel(XID, GPU0, code="13"), "_x5 1x15"),
        ),
        "8m",
    ),
    AlertCase(
        "GpuXidError",
        "a first XID 13 and a repeated XID 95 and an unknown XID 43",
        (
            (sel(LAST_XID, GPU0), "0x8 13x2 95x5 43x5"),
            (sel(XID, GPU0, code="13"), "_x8 1x12"),
            (sel(XID, GPU0, code="95"), "1x10 2x10"),
            (sel(XID, GPU0, code="43"), "_x15 1x5"),
        ),
        "16m",
        (
            _fire(GPU0 | {"code": "13"}, "warning", "xid_13_graphics_exception"),
            _fire(GPU0 | {"code": "95"}, "critical", "xid_95_uncontained_ecc"),
            _fire(GPU0 | {"code": "43"}, "warning", "gpu_reset_required"),
        ),
    ),
    AlertCase(
        "GpuXidError",
        "XID 48 and 79 have their own alerts; an old XID 13 is not new",
        (
            (sel(LAST_XID, GPU0), "13x5 48x5 79x10"),
            (sel(XID, GPU0, code="13"), "1x20"),
            (sel(XID, GPU0, code="48"), "_x5 1x15"),
            (sel(XID, GPU0, code="79"), "_x10 1x10"),
        ),
        "12m",
    ),
    AlertCase(
        "GpuEccUncorrectableErrors",
        "a double-bit ECC error",
        ((sel(series(g.ECC_DBE_VOLATILE), GPU0), "0x5 1x10"),),
        "8m",
        (_fire(GPU0, "critical", "xid_48_double_bit_ecc"),),
    ),
    AlertCase(
        "GpuEccUncorrectableErrors",
        "old errors only",
        ((sel(series(g.ECC_DBE_VOLATILE), GPU0), "3x20"),),
        "15m",
    ),
    AlertCase(
        "GpuRowRemapFailure",
        "remap failed",
        ((sel(series(g.ROW_REMAP_FAILURE), GPU0), "0 1x5"),),
        "3m",
        (_fire(GPU0, "critical", "ecc_row_remap_failure"),),
    ),
    AlertCase("GpuRowRemapFailure", "no failure", ((sel(series(g.ROW_REMAP_FAILURE), GPU0), "0x10"),), "5m"),
    AlertCase(
        "GpuRowRemapPending",
        "pending for 20 minutes",
        ((sel(series(g.ROW_REMAP_PENDING), GPU0), "1x30"),),
        "20m",
        (_fire(GPU0, "warning", "gpu_reset_required"),),
    ),
    AlertCase(
        "GpuRowRemapPending",
        "pending for 10 minutes only",
        ((sel(series(g.ROW_REMAP_PENDING), GPU0), "1x30"),),
        "10m",
    ),
    AlertCase(
        "GpuThermalThrottling",
        "software thermal slowdown for 8 minutes",
        (
            (sel(CLOCK, GPU0, reason="sw_thermal_slowdown"), "1x10"),
            (sel(CLOCK, GPU0, reason="hw_thermal_slowdown"), "0x10"),
        ),
        "8m",
        (_fire(GPU0, "warning", "thermal_throttling"),),
    ),
    AlertCase(
        "GpuThermalThrottling",
        "a 3-minute thermal blip and a hardware slowdown",
        (
            (sel(CLOCK, GPU0, reason="sw_thermal_slowdown"), "1x3 0x7"),
            (sel(CLOCK, GPU0, reason="hw_slowdown"), "1x10"),
        ),
        "8m",
    ),
    AlertCase(
        "GpuPowerThrottling",
        "power capped for 20 minutes",
        ((sel(CLOCK, GPU0, reason="sw_power_cap"), "1x25"),),
        "20m",
        (_fire(GPU0, "warning", "power_throttling"),),
    ),
    AlertCase(
        "GpuPowerThrottling",
        "idle clocks are not throttling",
        ((sel(CLOCK, GPU0, reason="gpu_idle"), "1x25"), (sel(CLOCK, GPU0, reason="sw_power_cap"), "0x25")),
        "20m",
    ),
    AlertCase(
        "GpuMemoryNearFull",
        "99% used for 15 minutes",
        ((sel(series(g.MEMORY_USED), GPU0), "99x20"), (sel(series(g.MEMORY_TOTAL), GPU0), "100x20")),
        "15m",
        (_fire(GPU0, "warning", "cuda_oom_capacity"),),
    ),
    AlertCase(
        "GpuMemoryNearFull",
        "96% used: an engine's KV-cache reservation, not a leak",
        ((sel(series(g.MEMORY_USED), GPU0), "96x20"), (sel(series(g.MEMORY_TOTAL), GPU0), "100x20")),
        "15m",
    ),
    # --- exporter ---------------------------------------------------------------------------------------
    AlertCase(
        "GpuobsExporterDown",
        "scrape fails for 8 minutes",
        ((sel(UP, EXPORTER), "0x10"),),
        "8m",
        (_fire(EXPORTER, "warning", "telemetry_exporter_failure"),),
    ),
    AlertCase(
        "GpuobsExporterDown",
        "another job is down, the exporter is up",
        ((sel(UP, EXPORTER), "1x10"), (sel(UP, {"job": "node", "instance": "node-a:9100"}), "0x10")),
        "8m",
    ),
    AlertCase(
        "GpuBackendDown",
        "NVML does not initialise",
        ((sel(series(ex.NVML_UP), EXPORTER), "0x10"),),
        "8m",
        (_fire(EXPORTER, "critical", "gpu_driver_failure"),),
    ),
    AlertCase("GpuBackendDown", "NVML up", ((sel(series(ex.NVML_UP), EXPORTER), "1x10"),), "8m"),
    AlertCase(
        "GpuobsCollectorFailing",
        "the xid collector fails for 20 minutes",
        ((sel(series(ex.COLLECTOR_SUCCESS), EXPORTER, collector="xid"), "0x25"),),
        "20m",
        (_fire(EXPORTER | {"collector": "xid"}, "warning", "telemetry_exporter_failure"),),
    ),
    AlertCase(
        "GpuobsCollectorFailing",
        "a failure that recovered",
        ((sel(series(ex.COLLECTOR_SUCCESS), EXPORTER, collector="xid"), "0x10 1x15"),),
        "20m",
    ),
    # --- serving ----------------------------------------------------------------------------------------
    AlertCase(
        "ServingLatencyBudgetBurn",
        "half the requests are slow: both burn conditions",
        _slo_series(60, 30, 0),
        "70m",
        (
            _fire(_MODEL_ONLY, "critical", "queue_saturation"),
            _fire(_MODEL_ONLY, "warning", "queue_saturation"),
        ),
    ),
    AlertCase(
        "ServingLatencyBudgetBurn",
        "5% slow: a ticket, not a page",
        _slo_series(100, 5, 0),
        "70m",
        (_fire(_MODEL_ONLY, "warning", "queue_saturation"),),
    ),
    AlertCase("ServingLatencyBudgetBurn", "0.5% slow: within the 1% budget", _slo_series(200, 1, 0), "70m"),
    AlertCase(
        "ServingErrorBudgetBurn",
        "2% of requests fail: both burn conditions",
        _slo_series(100, 0, 2),
        "70m",
        (_fire(_MODEL_ONLY, "critical", "engine_dead"), _fire(_MODEL_ONLY, "warning", "engine_dead")),
    ),
    AlertCase("ServingErrorBudgetBurn", "0.05% fail: within the 0.1% budget", _slo_series(2000, 0, 1), "70m"),
    AlertCase(
        "ServingQueueSaturation",
        "ten requests wait for 10 minutes",
        ((sel(series(s.NUM_REQUESTS_WAITING), MODEL), "10x15"),),
        "10m",
        (_fire(without(MODEL, "engine"), "warning", "queue_saturation"),),
    ),
    AlertCase(
        "ServingQueueSaturation",
        "admission control refuses requests",
        (
            (sel(series(s.NUM_REQUESTS_WAITING), MODEL), "2x15"),
            (
                sel(series(s.ADMISSION_REJECTIONS), without(MODEL, "engine"), reason="max_num_queued_reqs"),
                "0+5x15",
            ),
        ),
        "10m",
        (_fire(without(MODEL, "engine"), "warning", "queue_saturation"),),
    ),
    AlertCase(
        "ServingQueueSaturation",
        "the HTTP connection cap refuses connections (no model: refused before any request was read)",
        (
            (
                sel(
                    series(s.ADMISSION_REJECTIONS),
                    without(MODEL, "model_name", "engine"),
                    reason=s.REASON_MAX_CONNECTIONS,
                ),
                "0+5x15",
            ),
        ),
        "10m",
        (_fire(without(MODEL, "model_name", "engine"), "warning", "queue_saturation"),),
    ),
    AlertCase(
        "ServingQueueSaturation",
        "a short queue, no refusals",
        (
            (sel(series(s.NUM_REQUESTS_WAITING), MODEL), "3x15"),
            (
                sel(series(s.ADMISSION_REJECTIONS), without(MODEL, "engine"), reason="max_num_queued_reqs"),
                "0x15",
            ),
        ),
        "10m",
    ),
    AlertCase(
        "ServingKvCacheExhausted",
        "KV cache 97% full for 12 minutes",
        ((sel(series(s.KV_CACHE_USAGE), MODEL), "0.97x15"),),
        "12m",
        (_fire(without(MODEL, "engine"), "warning", "kv_cache_exhausted"),),
    ),
    AlertCase(
        "ServingKvCacheExhausted",
        "KV cache 80% full",
        ((sel(series(s.KV_CACHE_USAGE), MODEL), "0.8x15"),),
        "12m",
    ),
    AlertCase(
        "ServingPreemptionStorm",
        "100 preemptions per 5 minutes",
        ((sel(series(s.NUM_PREEMPTIONS), MODEL), "0+20x20"),),
        "12m",
        (_fire(without(MODEL, "engine"), "warning", "kv_cache_exhausted"),),
    ),
    AlertCase(
        "ServingPreemptionStorm",
        "a few preemptions under a burst",
        ((sel(series(s.NUM_PREEMPTIONS), MODEL), "0+5x20"),),
        "12m",
    ),
    AlertCase(
        "ServingRestarts",
        "the supervisor restarted the worker",
        ((sel(series(s.SERVING_WORKER_RESTARTS), SERVE), "0x5 1x10"),),
        "8m",
        (_fire(SERVE, "warning", "crash_loop"),),
    ),
    AlertCase(
        "ServingRestarts",
        "the server process started again",
        (
            (sel(series(s.SERVING_WORKER_RESTARTS), SERVE), "0x15"),
            (sel(PROCESS_START_TIME, SERVE), "1000x5 1400x10"),
        ),
        "8m",
        (_fire(SERVE, "warning", "crash_loop"),),
    ),
    AlertCase(
        "ServingRestarts",
        "no restart in the window",
        (
            (sel(series(s.SERVING_WORKER_RESTARTS), SERVE), "1x25"),
            (sel(PROCESS_START_TIME, SERVE), "1000x25"),
        ),
        "20m",
    ),
    AlertCase(
        "CudaErrors",
        "a first illegal address and engine OOMs",
        (
            (sel(UP, SERVE), "1x20"),
            (sel(series(k.CUDA_ERRORS), SERVE, **ILLEGAL_ADDRESS), "_x12 1x8"),
            (sel(series(s.SERVING_ENGINE_ERRORS), without(MODEL, "engine"), kind="cuda_oom"), "0x5 3x15"),
        ),
        "14m",
        (
            _fire(SERVE | ILLEGAL_ADDRESS, "warning", "illegal_memory_access"),
            _fire(without(MODEL, "engine") | {"kind": "cuda_oom"}, "warning", "cuda_oom_capacity"),
        ),
    ),
    AlertCase(
        "CudaErrors",
        "old errors after a Prometheus restart, and Python exceptions",
        (
            (sel(UP, SERVE), "_x12 1x8"),
            (sel(series(k.CUDA_ERRORS), SERVE, **ILLEGAL_ADDRESS), "_x12 4x8"),
            (
                sel(series(s.SERVING_ENGINE_ERRORS), without(MODEL, "engine"), kind="python_exception"),
                "0x5 3x15",
            ),
        ),
        "14m",
    ),
)


_TEMPLATE = re.compile(r"\{\{\s*\$labels\.(\w+)\s*\}\}")


def _expand(text: str, labels: dict[str, str]) -> str:
    """Prometheus's template expansion for `{{ $labels.x }}` (a missing label expands to nothing)."""
    return _TEMPLATE.sub(lambda m: labels.get(m.group(1), ""), text)


def _rule_for(rules: list[AlertRule], name: str, labels: dict[str, str]) -> AlertRule:
    hits = [r for r in rules if r.name == name and (r.severity is None or r.severity == labels["severity"])]
    assert len(hits) == 1, f"{name}: {len(hits)} rules match {labels}"
    return hits[0]


def promtool_document(options: Options = OPTIONS) -> dict[str, Any]:
    """A `promtool test rules` file over the generated rule files (in the same folder)."""
    rules = alert_rules(options)
    tests = []
    for case in CASES:
        expected = []
        for labels in case.expected:
            rule = _rule_for(rules, case.alert, labels)
            annotations = rule.annotations(options)
            expected.append(
                {
                    "exp_labels": labels,
                    "exp_annotations": {key: _expand(value, labels) for key, value in annotations.items()},
                }
            )
        tests.append(
            {
                "name": f"{case.alert}: {case.why}",
                "interval": "1m",
                "input_series": [{"series": name, "values": values} for name, values in case.series],
                "alert_rule_test": [
                    {"eval_time": case.eval_time, "alertname": case.alert, "exp_alerts": expected}
                ],
            }
        )
    return {"rule_files": [RECORDING_FILE, ALERTS_FILE], "evaluation_interval": "1m", "tests": tests}
