"""Metric and setting names of the kernel domain: the instrumented launcher and engine adapters."""

from __future__ import annotations

from typing import Final

from gpuobs.names import spans
from gpuobs.names.spec import MetricKind, MetricSpec, register

__all__ = [
    "ATTR_DEVICE",
    "ATTR_DTYPES",
    "ATTR_ENGINE",
    "ATTR_ERROR_CODE",
    "ATTR_ERROR_NAME",
    "ATTR_GPU_DURATION_MS",
    "ATTR_GRID",
    "ATTR_KERNEL",
    "ATTR_LAYER",
    "ATTR_NUM_STAGES",
    "ATTR_NUM_WARPS",
    "ATTR_SHAPES",
    "ATTR_STREAM",
    "ATTR_TIMING",
    "CUDA_ERRORS",
    "DEFAULT_SPAN_SAMPLE",
    "ENGINE_LOG_MESSAGES",
    "KERNEL_LAUNCHES",
    "SPAN_KERNEL_LAUNCH",
    "SPAN_SAMPLE_ENV",
    "SPAN_SAMPLE_SETTING",
    "TRACER_NAME",
]

KERNEL_LAUNCHES = MetricSpec(
    native="gpuobs_kernel_launches",
    kind=MetricKind.COUNTER,
    help="Kernel launches through the gpuobs launcher (engine layers for TensorRT), by kernel.",
    labels=("kernel",),
)
"""Counter `gpuobs_kernel_launches_total{kernel}`: launches, always counted."""

CUDA_ERRORS = MetricSpec(
    native="gpuobs_cuda_errors",
    kind=MetricKind.COUNTER,
    help="CUDA errors caught at kernel launch or at the next synchronisation, by cudaError_t code and name.",
    labels=("code", "name", "kernel"),
)
"""Counter `gpuobs_cuda_errors_total{code,name,kernel}`; `name` is the runtime spelling
(`cudaErrorIllegalAddress`), `kernel` the kernel launched (or surfaced after)."""

ENGINE_LOG_MESSAGES = MetricSpec(
    native="gpuobs_engine_log_messages",
    kind=MetricKind.COUNTER,
    help="Log messages an inference engine (TensorRT ILogger) emitted, by engine and severity.",
    labels=("engine", "severity"),
)
"""Counter `gpuobs_engine_log_messages_total{engine,severity}`."""

register(KERNEL_LAUNCHES, CUDA_ERRORS, ENGINE_LOG_MESSAGES)

SPAN_SAMPLE_ENV: Final = "GPUOBS_KERNEL_SPAN_SAMPLE"
"""Environment variable: fraction of launches recorded as spans (0..1)."""

SPAN_SAMPLE_SETTING: Final = "kernel_span_sample"
"""Setting name (config table `[kernels]`, key `kernel-span-sample`) behind SPAN_SAMPLE_ENV."""

DEFAULT_SPAN_SAMPLE: Final = 0.01
"""Default sampled fraction: 1% of launches."""

# Span names and attributes live in gpuobs.names.spans; these aliases keep the launcher's old spelling
# importable until every user imports spans directly.
TRACER_NAME: Final = spans.TRACER_KERNELS
SPAN_KERNEL_LAUNCH: Final = spans.SPAN_KERNEL_LAUNCH
ATTR_KERNEL: Final = spans.GPUOBS_KERNEL_NAME
ATTR_GRID: Final = spans.GPUOBS_KERNEL_GRID
ATTR_NUM_WARPS: Final = spans.GPUOBS_KERNEL_NUM_WARPS
ATTR_NUM_STAGES: Final = spans.GPUOBS_KERNEL_NUM_STAGES
ATTR_SHAPES: Final = spans.GPUOBS_KERNEL_INPUT_SHAPES
ATTR_DTYPES: Final = spans.GPUOBS_KERNEL_INPUT_DTYPES
ATTR_DEVICE: Final = spans.GPUOBS_KERNEL_DEVICE
ATTR_STREAM: Final = spans.GPUOBS_KERNEL_STREAM
ATTR_GPU_DURATION_MS: Final = spans.GPUOBS_KERNEL_GPU_DURATION_MS
ATTR_TIMING: Final = spans.GPUOBS_KERNEL_TIMING
ATTR_ERROR_CODE: Final = spans.CUDA_ERROR_CODE
ATTR_ERROR_NAME: Final = spans.CUDA_ERROR_NAME
ATTR_ENGINE: Final = spans.GPUOBS_ENGINE
ATTR_LAYER: Final = spans.GPUOBS_ENGINE_LAYER
