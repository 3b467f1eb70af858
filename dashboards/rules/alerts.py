"""Alert rules: what pages or tickets someone, with a severity, an RCA signature and a runbook each.

Every alert carries the `signature` label of the `gpuobs diagnose` catalog entry it points to, so the
alert, the dashboards' incident view, the runbook and the diagnosis speak of the same failure. Alerts
whose signature depends on an event code (XIDs, CUDA errors) set it per series with `label_replace`
from the tables below; the others set it as a rule label.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpuobs.dashboards.options import Options
from gpuobs.dashboards.promql import UP, label_map, matchers, new_or_increased, regex_union, series
from gpuobs.dashboards.rules.slo import BURN_CONDITIONS, ratio_record
from gpuobs.names import exporter as ex
from gpuobs.names import gpu as g
from gpuobs.names import kernel as k
from gpuobs.names import serving as s

__all__ = [
    "CRITICAL_SIGNATURES",
    "CUDA_CODE_SIGNATURES",
    "CUDA_DEFAULT_SIGNATURE",
    "ENGINE_KIND_SIGNATURES",
    "POWER_REASONS",
    "PROCESS_START_TIME",
    "THERMAL_REASONS",
    "XID_CODE_SIGNATURES",
    "XID_DEFAULT_SIGNATURE",
    "AlertRule",
    "alert_groups",
    "alert_rules",
]

PROCESS_START_TIME = "process_start_time_seconds"
"""prometheus_client's process collector (every Python server has it): a change means a restart."""

XID_CODE_SIGNATURES: Mapping[str, tuple[int, ...]] = {
    "launch_timeout_watchdog": (8,),
    "xid_13_graphics_exception": (13,),
    "xid_31_mmu_fault": (31,),
    "ecc_row_remap_failure": (64,),
    "nvlink_error": (74, 144, 145, 146, 147, 148, 149, 150),
    "xid_94_contained_ecc": (94,),
    "xid_95_uncontained_ecc": (95,),
    "xid_119_gsp_timeout": (119, 120),
    "gpu_reset_required": (154,),
}
"""XID codes by the catalog signature that names them (XID 48 and 79 have alerts of their own)."""
XID_DEFAULT_SIGNATURE = "gpu_reset_required"
"""An XID the catalog has no entry for: the driver's usual recovery is a reset of the GPU."""

CUDA_CODE_SIGNATURES: Mapping[str, tuple[int, ...]] = {
    "illegal_memory_access": (700,),
    "cuda_oom_capacity": (2,),
    "cuda_arch_unsupported": (209,),
    "cuda_driver_mismatch": (35, 222, 803),
    "launch_timeout_watchdog": (702,),
    "gpu_not_visible": (100, 101),
}
"""cudaError_t codes (gpuobs.cuda_errors) by the catalog signature that names them."""
CUDA_DEFAULT_SIGNATURE = "illegal_memory_access"
"""Any other CUDA error at a launch is a fault of the kernel (misaligned address, launch failure...)."""

ENGINE_KIND_SIGNATURES: Mapping[str, tuple[str, ...]] = {
    "cuda_oom_capacity": ("cuda_oom",),
    "illegal_memory_access": ("cuda_error",),
}
"""`kind` label values of the serving engine-errors counter (SERVING_ENGINE_ERRORS) that are CUDA errors."""

CRITICAL_SIGNATURES = frozenset({"xid_95_uncontained_ecc", "xid_119_gsp_timeout", "ecc_row_remap_failure"})
"""Signatures of the XID table whose catalog severity is critical: those XIDs page."""

_REASONS = {name for _, name in g.CLOCK_EVENT_REASONS}
THERMAL_REASONS = ("sw_thermal_slowdown", "hw_thermal_slowdown")
POWER_REASONS = ("sw_power_cap", "hw_power_brake_slowdown")
if not {*THERMAL_REASONS, *POWER_REASONS} <= _REASONS:  # pragma: no cover - names drifted
    raise ImportError("throttle reasons are not in gpuobs.names.gpu.CLOCK_EVENT_REASONS")


@dataclass(frozen=True)
class AlertRule:
    """One `alert:` rule. `severity`/`signature` None: the expression sets them on each series, and
    `signatures` lists every value it can set."""

    name: str
    group: str
    expr: str
    for_: str
    summary: str
    description: str
    severity: str | None = None
    signature: str | None = None
    signatures: tuple[str, ...] = ()
    severities: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def all_signatures(self) -> tuple[str, ...]:
        """Every signature id this alert can carry."""
        return (self.signature,) if self.signature else self.signatures

    @property
    def all_severities(self) -> tuple[str, ...]:
        """Every severity this alert can carry."""
        return (self.severity,) if self.severity else self.severities

    def rule_labels(self) -> dict[str, str]:
        """The labels written on the rule (the expression supplies the others)."""
        out = dict(self.labels)
        if self.severity:
            out["severity"] = self.severity
        if self.signature:
            out["signature"] = self.signature
        return out

    def annotations(self, options: Options) -> dict[str, str]:
        return {
            "summary": self.summary,
            "description": self.description,
            "runbook_url": options.runbook_url(self.name),
        }

    def effective_for(self, options: Options) -> str:
        return options.for_override or self.for_


def _num(x: float) -> str:
    return f"{x:.6g}"


_GPU = "GPU {{ $labels.gpu }} on {{ $labels.host }}"


def _gpu_alerts(o: Options) -> list[AlertRule]:
    w = o.event_window
    xid_gate = f"and on (job, instance, gpu) (changes({series(g.XID_LAST)}[{w}]) > 0)"

    def xid_events(selector: str) -> str:
        return new_or_increased(series(g.XID_ERRORS, selector), w, xid_gate)

    fell_off = f"({series(ex.GPU_UP)} == 0)\nor\nmax without (code) ({xid_events(matchers(code='79'))})"
    other_xids = xid_events(matchers(code="!~48|79"))
    with_signature = label_map(other_xids, "signature", "code", XID_CODE_SIGNATURES, XID_DEFAULT_SIGNATURE)
    xid_expr = label_map(
        with_signature, "severity", "signature", {"critical": sorted(CRITICAL_SIGNATURES)}, "warning"
    )
    thermal = matchers(reason="~" + regex_union(THERMAL_REASONS))
    power = matchers(reason="~" + regex_union(POWER_REASONS))
    return [
        AlertRule(
            "GpuFallenOffBus",
            "gpuobs-gpu",
            fell_off,
            "0m",
            f"{_GPU} fell off the bus (XID 79) or stopped answering",
            "The driver lost the GPU (XID 79 or NVML reports it lost): every CUDA context on it is dead. "
            "Cordon the node and follow the runbook.",
            severity="critical",
            signature="xid_79_fallen_off_bus",
        ),
        AlertRule(
            "GpuXidError",
            "gpuobs-gpu",
            xid_expr,
            "0m",
            f"XID {{{{ $labels.code }}}} on {_GPU}",
            "The NVIDIA driver reported XID {{ $labels.code }} in the last " + w + "; the signature label "
            "names the catalog entry for that code.",
            signatures=tuple(dict.fromkeys((*XID_CODE_SIGNATURES, XID_DEFAULT_SIGNATURE))),
            severities=("critical", "warning"),
        ),
        AlertRule(
            "GpuEccUncorrectableErrors",
            "gpuobs-gpu",
            f"increase({series(g.ECC_DBE_VOLATILE)}[{w}]) > 0",
            "0m",
            f"Uncorrectable (double-bit) ECC errors on {_GPU}",
            "The GPU counted double-bit ECC errors in the last " + w + " (XID 48): data in its memory was "
            "corrupted and the processes on it must be treated as failed.",
            severity="critical",
            signature="xid_48_double_bit_ecc",
        ),
        AlertRule(
            "GpuRowRemapFailure",
            "gpuobs-gpu",
            f"{series(g.ROW_REMAP_FAILURE)} == 1",
            "0m",
            f"Memory row remapping failed on {_GPU}",
            "The GPU could not remap a failing memory row: it has no spare rows left for that bank and "
            "needs replacement.",
            severity="critical",
            signature="ecc_row_remap_failure",
        ),
        AlertRule(
            "GpuRowRemapPending",
            "gpuobs-gpu",
            f"{series(g.ROW_REMAP_PENDING)} == 1",
            "15m",
            f"{_GPU} waits for a reset to remap a memory row",
            "A row remap is pending: until the GPU is reset it runs without the remap.",
            severity="warning",
            signature="gpu_reset_required",
        ),
        AlertRule(
            "GpuThermalThrottling",
            "gpuobs-gpu",
            f"max without (reason) ({series(g.CLOCK_EVENT_ACTIVE, thermal)}) == 1",
            "5m",
            f"{_GPU} is throttled by temperature",
            "A thermal slowdown (software or hardware) has held the clocks down; work on this GPU runs "
            "slower and may straggle.",
            severity="warning",
            signature="thermal_throttling",
        ),
        AlertRule(
            "GpuPowerThrottling",
            "gpuobs-gpu",
            f"max without (reason) ({series(g.CLOCK_EVENT_ACTIVE, power)}) == 1",
            "15m",
            f"{_GPU} is throttled by power",
            "The power cap or a hardware power brake has held the clocks down.",
            severity="warning",
            signature="power_throttling",
        ),
        AlertRule(
            "GpuMemoryNearFull",
            "gpuobs-gpu",
            f"{series(g.MEMORY_USED)} / {series(g.MEMORY_TOTAL)} > {_num(o.gpu_memory_full_ratio)}",
            "10m",
            f"{_GPU} memory is over {_num(o.gpu_memory_full_ratio * 100)}% used",
            "Framebuffer memory has stayed nearly full: the next allocation may fail with CUDA out of "
            "memory.",
            severity="warning",
            signature="cuda_oom_capacity",
        ),
    ]


def _exporter_alerts(o: Options) -> list[AlertRule]:
    return [
        AlertRule(
            "GpuobsExporterDown",
            "gpuobs-exporter",
            f"{UP}{matchers(job=o.exporter_job)} == 0",
            "5m",
            "GPU exporter {{ $labels.instance }} is down",
            "Prometheus cannot scrape the GPU exporter: this node's GPU dashboards and alerts are blind.",
            severity="warning",
            signature="telemetry_exporter_failure",
        ),
        AlertRule(
            "GpuBackendDown",
            "gpuobs-exporter",
            f"{series(ex.NVML_UP)} == 0",
            "5m",
            "The GPU exporter on {{ $labels.instance }} cannot initialise NVML",
            "The exporter runs but the NVIDIA driver does not answer (NVML init fails and is retried).",
            severity="critical",
            signature="gpu_driver_failure",
        ),
        AlertRule(
            "GpuobsCollectorFailing",
            "gpuobs-exporter",
            f"{series(ex.COLLECTOR_SUCCESS)} == 0",
            "15m",
            "Collector {{ $labels.collector }} of the GPU exporter {{ $labels.instance }} keeps failing",
            "The collector's samples are dropped on every scrape, so its metrics are missing.",
            severity="warning",
            signature="telemetry_exporter_failure",
        ),
    ]


def _burn_expr(kind: str, objective: float, severity: str) -> str:
    budget = 1 - objective
    parts = []
    for c in BURN_CONDITIONS:
        if c.severity != severity:
            continue
        limit = _num(c.factor * budget)
        parts.append(
            f"(\n  {ratio_record(kind, c.long_window)} > {limit}\n  and\n"
            f"  {ratio_record(kind, c.short_window)} > {limit}\n)"
        )
    return "\nor\n".join(parts)


def _serving_alerts(o: Options) -> list[AlertRule]:
    w = o.event_window
    slo = o.slo
    job = matchers(job=o.serving_job)
    up_gate = f"and on (job, instance) ({UP} offset {w} == 1)"
    launcher = new_or_increased(series(k.CUDA_ERRORS), w, up_gate)
    engine_kinds = [kind for kinds in ENGINE_KIND_SIGNATURES.values() for kind in kinds]
    engine_sel = matchers(kind="~" + regex_union(engine_kinds))
    engine = new_or_increased(series(s.SERVING_ENGINE_ERRORS, engine_sel), w, up_gate)
    cuda_expr = (
        label_map(launcher, "signature", "code", CUDA_CODE_SIGNATURES, CUDA_DEFAULT_SIGNATURE)
        + "\nor\n"
        + label_map(engine, "signature", "kind", ENGINE_KIND_SIGNATURES, CUDA_DEFAULT_SIGNATURE)
    )
    restarts = (
        f"increase({series(s.SERVING_WORKER_RESTARTS, job)}[{w}]) > 0\n"
        f"or\nchanges({PROCESS_START_TIME}{job}[{w}]) > 0"
    )
    queue = (
        f"max without (engine) ({series(s.NUM_REQUESTS_WAITING)}) >= {o.queue_waiting_requests}\n"
        f"or\nsum without (reason) (rate({series(s.ADMISSION_REJECTIONS)}[5m])) > 0"
    )
    latency_pct = _num(slo.latency_objective * 100)
    rules: list[AlertRule] = []
    for severity, for_ in (("critical", "2m"), ("warning", "15m")):
        rules.append(
            AlertRule(
                "ServingLatencyBudgetBurn",
                "gpuobs-serving",
                _burn_expr("slow", slo.latency_objective, severity),
                for_,
                "Model {{ $labels.model_name }} burns its latency error budget",
                f"More than the budgeted {_num(100 - slo.latency_objective * 100)}% of requests take longer "
                f"than {_num(slo.latency_threshold_s)} s (SLO: {latency_pct}% within it), at a rate that "
                "spends the budget early (multi-window burn rate).",
                severity=severity,
                signature="queue_saturation",
            )
        )
        rules.append(
            AlertRule(
                "ServingErrorBudgetBurn",
                "gpuobs-serving",
                _burn_expr("errors", slo.error_objective, severity),
                for_,
                "Model {{ $labels.model_name }} burns its error budget",
                "Requests fail (finish reason error) above the budgeted "
                f"{_num(100 - slo.error_objective * 100)}% at a rate that spends the budget early "
                "(multi-window burn rate).",
                severity=severity,
                signature="engine_dead",
            )
        )
    rules += [
        AlertRule(
            "ServingQueueSaturation",
            "gpuobs-serving",
            queue,
            "5m",
            "Model {{ $labels.model_name }} on {{ $labels.instance }} has a saturated request queue",
            f"At least {o.queue_waiting_requests} requests keep waiting, or admission control refuses "
            "requests (HTTP 429): offered load is above what the replica serves.",
            severity="warning",
            signature="queue_saturation",
        ),
        AlertRule(
            "ServingKvCacheExhausted",
            "gpuobs-serving",
            f"max without (engine) ({series(s.KV_CACHE_USAGE)}) > {_num(o.kv_cache_full_ratio)}",
            "10m",
            "Model {{ $labels.model_name }} on {{ $labels.instance }} has run out of KV cache",
            "The KV cache has stayed nearly full: new requests queue and running ones get preempted.",
            severity="warning",
            signature="kv_cache_exhausted",
        ),
        AlertRule(
            "ServingPreemptionStorm",
            "gpuobs-serving",
            f"sum without (engine) (increase({series(s.NUM_PREEMPTIONS)}[5m])) > {o.preemptions_per_5m}",
            "5m",
            "Model {{ $labels.model_name }} on {{ $labels.instance }} preempts requests continuously",
            f"More than {o.preemptions_per_5m} preemptions in 5 minutes: the KV cache cannot hold the "
            "running batch, so work is recomputed and throughput collapses.",
            severity="warning",
            signature="kv_cache_exhausted",
        ),
        AlertRule(
            "ServingRestarts",
            "gpuobs-serving",
            restarts,
            "0m",
            "The serving process on {{ $labels.instance }} restarted",
            "The supervisor restarted a crashed worker, or the server process started again, in the last "
            f"{w}.",
            severity="warning",
            signature="crash_loop",
        ),
        AlertRule(
            "CudaErrors",
            "gpuobs-serving",
            cuda_expr,
            "0m",
            "CUDA errors on {{ $labels.instance }}",
            "Kernel launches or engine steps failed with a CUDA error in the last " + w + " (code "
            "{{ $labels.code }}{{ $labels.kind }}); the signature label names the catalog entry.",
            severity="warning",
            signatures=tuple(
                dict.fromkeys((*CUDA_CODE_SIGNATURES, *ENGINE_KIND_SIGNATURES, CUDA_DEFAULT_SIGNATURE))
            ),
        ),
    ]
    return rules


def alert_rules(options: Options) -> list[AlertRule]:
    """Every alert rule, in group order."""
    return [*_gpu_alerts(options), *_exporter_alerts(options), *_serving_alerts(options)]


def alert_groups(options: Options) -> dict[str, list[AlertRule]]:
    """Alert rules by group name."""
    groups: dict[str, list[AlertRule]] = {}
    for rule in alert_rules(options):
        groups.setdefault(rule.group, []).append(rule)
    return groups
