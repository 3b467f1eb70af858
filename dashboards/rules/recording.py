"""Recording rules: the fleet and serving aggregates the dashboards and the SLO alerts read.

Names follow Prometheus's `level:metric:operations` convention; the metric part is the native name of
the source spec (with vLLM's `:` turned into `_`), so every recorded name is derived, never spelled.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client.utils import floatToGoString

from gpuobs.dashboards.options import Options
from gpuobs.dashboards.promql import matchers, series
from gpuobs.dashboards.rules.slo import SLO_WINDOWS, ratio_record
from gpuobs.names import exporter as ex
from gpuobs.names import gpu as g
from gpuobs.names import kernel as k
from gpuobs.names import serving as s
from gpuobs.names.spec import MetricSpec

__all__ = [
    "FLEET_UTILIZATION",
    "GPU_MEMORY_USED_RATIO",
    "HOST_GPUS",
    "HOST_GPUS_UP",
    "HOST_MEMORY_TOTAL",
    "HOST_MEMORY_USED",
    "HOST_POWER",
    "HOST_TEMPERATURE_MAX",
    "HOST_THROTTLE_REASONS",
    "HOST_UTILIZATION",
    "KERNEL_GPU_SECONDS_RATE",
    "MODEL_GENERATION_TOKENS_RATE",
    "MODEL_PROMPT_TOKENS_RATE",
    "MODEL_REQUEST_RATE",
    "QUANTILES",
    "QUANTILE_SPECS",
    "RecordingRule",
    "quantile_record",
    "recording_groups",
]

QUANTILES = (0.5, 0.9, 0.99)
QUANTILE_SPECS: tuple[MetricSpec, ...] = (
    s.TTFT,
    s.INTER_TOKEN_LATENCY,
    s.E2E_REQUEST_LATENCY,
    s.REQUEST_QUEUE_TIME,
)
"""Latency histograms recorded as quantiles (label `quantile`) per model."""


def _metric(spec: MetricSpec) -> str:
    return spec.native.replace(":", "_")


HOST_UTILIZATION = f"host:{_metric(g.GPU_UTILIZATION)}:avg"
FLEET_UTILIZATION = f":{_metric(g.GPU_UTILIZATION)}:avg"
HOST_MEMORY_USED = f"host:{_metric(g.MEMORY_USED)}:sum"
HOST_MEMORY_TOTAL = f"host:{_metric(g.MEMORY_TOTAL)}:sum"
HOST_POWER = f"host:{_metric(g.POWER_USAGE)}:sum"
HOST_TEMPERATURE_MAX = f"host:{_metric(g.GPU_TEMPERATURE)}:max"
HOST_GPUS_UP = f"host:{_metric(ex.GPU_UP)}:sum"
HOST_GPUS = f"host:{_metric(ex.GPU_UP)}:count"
GPU_MEMORY_USED_RATIO = f"instance_gpu:{_metric(g.MEMORY_USED)}:ratio"
HOST_THROTTLE_REASONS = f"host_reason:{_metric(g.CLOCK_EVENT_ACTIVE)}:sum"
MODEL_REQUEST_RATE = f"model_name_finished_reason:{_metric(s.REQUEST_SUCCESS)}:rate5m"
MODEL_GENERATION_TOKENS_RATE = f"model_name:{_metric(s.GENERATION_TOKENS)}:rate5m"
MODEL_PROMPT_TOKENS_RATE = f"model_name:{_metric(s.PROMPT_TOKENS)}:rate5m"
KERNEL_GPU_SECONDS_RATE = f"instance_kernel_backend:{_metric(k.KERNEL_DURATION)}:rate5m"
"""Estimated GPU seconds per second each kernel ran (1 = one GPU busy with it all the time; host seconds
of the reference ops on a CPU server): the mean duration of the sampled launches times the launch rate,
since only a sampled fraction is timed. 0 while a kernel runs but none of its launches was timed."""


def quantile_record(spec: MetricSpec) -> str:
    """The recorded quantiles of a latency histogram (one series per `quantile` label)."""
    return f"model_name:{_metric(spec)}:histogram_quantile"


@dataclass(frozen=True)
class RecordingRule:
    """One `record:` rule; `labels` are added to every series it writes."""

    record: str
    expr: str
    labels: dict[str, str] = field(default_factory=dict)


def _fleet_rules() -> list[RecordingRule]:
    gpu_up = series(ex.GPU_UP)
    return [
        RecordingRule(HOST_UTILIZATION, f"avg by (host) ({series(g.GPU_UTILIZATION)})"),
        RecordingRule(FLEET_UTILIZATION, f"avg({series(g.GPU_UTILIZATION)})"),
        RecordingRule(HOST_MEMORY_USED, f"sum by (host) ({series(g.MEMORY_USED)})"),
        RecordingRule(HOST_MEMORY_TOTAL, f"sum by (host) ({series(g.MEMORY_TOTAL)})"),
        RecordingRule(HOST_POWER, f"sum by (host) ({series(g.POWER_USAGE)})"),
        RecordingRule(HOST_TEMPERATURE_MAX, f"max by (host) ({series(g.GPU_TEMPERATURE)})"),
        RecordingRule(HOST_GPUS_UP, f"sum by (host) ({gpu_up})"),
        RecordingRule(HOST_GPUS, f"count by (host) ({gpu_up})"),
        RecordingRule(GPU_MEMORY_USED_RATIO, f"{series(g.MEMORY_USED)} / {series(g.MEMORY_TOTAL)}"),
        RecordingRule(HOST_THROTTLE_REASONS, f"sum by (host, reason) ({series(g.CLOCK_EVENT_ACTIVE)})"),
    ]


def _serving_rules() -> list[RecordingRule]:
    rules = [
        RecordingRule(
            MODEL_REQUEST_RATE,
            f"sum by (model_name, finished_reason) (rate({series(s.REQUEST_SUCCESS)}[5m]))",
        ),
        RecordingRule(
            MODEL_GENERATION_TOKENS_RATE, f"sum by (model_name) (rate({series(s.GENERATION_TOKENS)}[5m]))"
        ),
        RecordingRule(MODEL_PROMPT_TOKENS_RATE, f"sum by (model_name) (rate({series(s.PROMPT_TOKENS)}[5m]))"),
        RecordingRule(
            KERNEL_GPU_SECONDS_RATE,
            "sum by (instance, kernel, backend) (\n"
            f"  rate({series(k.KERNEL_DURATION, suffix='_sum')}[5m])\n"
            f"  / clamp_min(rate({series(k.KERNEL_DURATION, suffix='_count')}[5m]), 1e-9)\n"
            f"  * rate({series(k.KERNEL_LAUNCHES)}[5m])\n)",
        ),
    ]
    for spec in QUANTILE_SPECS:
        for q in QUANTILES:
            rules.append(
                RecordingRule(
                    quantile_record(spec),
                    f"histogram_quantile({q}, sum by (model_name, le) "
                    f"(rate({series(spec, suffix='_bucket')}[5m])))",
                    {"quantile": str(q)},
                )
            )
    return rules


def _slo_rules(options: Options) -> list[RecordingRule]:
    le = floatToGoString(options.slo.latency_threshold_s)
    ok = series(s.REQUEST_SUCCESS)
    failed = series(s.REQUEST_SUCCESS, matchers(finished_reason="error"))
    fast = series(s.E2E_REQUEST_LATENCY, matchers(le=le), suffix="_bucket")
    count = series(s.E2E_REQUEST_LATENCY, suffix="_count")
    rules = []
    for window in SLO_WINDOWS:
        rules.append(
            RecordingRule(
                ratio_record("errors", window),
                f"sum by (model_name) (rate({failed}[{window}]))\n/\n"
                f"sum by (model_name) (rate({ok}[{window}]))",
            )
        )
        rules.append(
            RecordingRule(
                ratio_record("slow", window),
                f"1 - (\n  sum by (model_name) (rate({fast}[{window}]))\n  /\n"
                f"  sum by (model_name) (rate({count}[{window}]))\n)",
            )
        )
    return rules


def recording_groups(options: Options) -> dict[str, list[RecordingRule]]:
    """Rule groups by name: fleet aggregates, serving aggregates, SLO ratios."""
    return {
        "gpuobs-fleet.rules": _fleet_rules(),
        "gpuobs-serving.rules": _serving_rules(),
        "gpuobs-slo.rules": _slo_rules(options),
    }
