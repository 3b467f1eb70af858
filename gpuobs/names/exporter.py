"""Metric names of the exporter domain: the health of `gpuobs export` (NVML, GPUs, collectors, scrapes).

These are emitted in every naming mode (`native`, `dcgm`, `both`) so that the exporter's own health is
always visible next to the GPU metrics.
"""

from __future__ import annotations

from typing import Final

from gpuobs.names.gpu import GPU_LABELS
from gpuobs.names.spec import MetricKind, MetricSpec, register

__all__ = [
    "COLLECTOR_SUCCESS",
    "GPU_UP",
    "HISTORY_SAMPLES",
    "NVML_INIT_FAILURES",
    "NVML_UP",
    "SCRAPE_DURATION",
    "SLOW_FIELD_AGE",
]

NVML_UP: Final = MetricSpec(
    native="gpuobs_nvml_up",
    kind=MetricKind.GAUGE,
    unit="",
    help="1 when the GPU backend (NVML or the simulator) is initialised; 0 while init fails and is retried.",
)
"""Gauge 0/1, no labels."""
NVML_INIT_FAILURES: Final = MetricSpec(
    native="gpuobs_nvml_init_failures",
    kind=MetricKind.COUNTER,
    unit="",
    help="Failed attempts to initialise the GPU backend (retried with backoff).",
)
"""Counter, no labels."""
GPU_UP: Final = MetricSpec(
    native="gpuobs_gpu_up",
    kind=MetricKind.GAUGE,
    unit="",
    labels=GPU_LABELS,
    help="1 when the GPU answers; 0 when it is lost (NVML_ERROR_GPU_IS_LOST, fallen off the bus).",
)
"""Gauge 0/1 per GPU."""
COLLECTOR_SUCCESS: Final = MetricSpec(
    native="gpuobs_collector_success",
    kind=MetricKind.GAUGE,
    unit="",
    labels=("collector",),
    help="1 when the collector's last run succeeded, 0 when it failed and its samples were dropped.",
)
"""Gauge 0/1 per collector (gpu, slow, processes, mig, xid, pods)."""
SCRAPE_DURATION: Final = MetricSpec(
    native="gpuobs_scrape_duration_seconds",
    kind=MetricKind.GAUGE,
    unit="seconds",
    labels=("collector",),
    help="Time the collector took in this scrape.",
)
"""Gauge, s, per collector."""
SLOW_FIELD_AGE: Final = MetricSpec(
    native="gpuobs_slow_fields_age_seconds",
    kind=MetricKind.GAUGE,
    unit="seconds",
    labels=GPU_LABELS,
    help="Age of the cached slow fields (energy, PCIe and GPM rates) served by this scrape.",
)
"""Gauge, s, per GPU."""
HISTORY_SAMPLES: Final = MetricSpec(
    native="gpuobs_history_samples",
    kind=MetricKind.GAUGE,
    unit="",
    help="Snapshots held by the flight recorder (/api/history).",
)
"""Gauge, no labels."""

register(
    NVML_UP, NVML_INIT_FAILURES, GPU_UP, COLLECTOR_SUCCESS, SCRAPE_DURATION, SLOW_FIELD_AGE, HISTORY_SAMPLES
)
