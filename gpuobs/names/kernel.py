"""Metric, span and setting names of the kernel domain: the instrumented launcher and engine adapters."""

from __future__ import annotations

from typing import Final

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

TRACER_NAME: Final = "gpuobs.kernels"
"""Instrumentation scope of the launcher's spans."""

SPAN_KERNEL_LAUNCH: Final = "kernel.launch"
"""Span name of one sampled kernel launch (or one TensorRT layer execution)."""

SPAN_SAMPLE_ENV: Final = "GPUOBS_KERNEL_SPAN_SAMPLE"
"""Environment variable: fraction of launches recorded as spans (0..1)."""

SPAN_SAMPLE_SETTING: Final = "kernel_span_sample"
"""Setting name (config table `[kernels]`, key `kernel-span-sample`) behind SPAN_SAMPLE_ENV."""

DEFAULT_SPAN_SAMPLE: Final = 0.01
"""Default sampled fraction: 1% of launches."""

# Span attributes of `kernel.launch`.
ATTR_KERNEL: Final = "gpuobs.kernel.name"
ATTR_GRID: Final = "gpuobs.kernel.grid"
ATTR_NUM_WARPS: Final = "gpuobs.kernel.num_warps"
ATTR_NUM_STAGES: Final = "gpuobs.kernel.num_stages"
ATTR_SHAPES: Final = "gpuobs.kernel.input_shapes"
ATTR_DTYPES: Final = "gpuobs.kernel.input_dtypes"
ATTR_DEVICE: Final = "gpuobs.kernel.device"
ATTR_STREAM: Final = "gpuobs.kernel.stream"
ATTR_GPU_DURATION_MS: Final = "gpuobs.kernel.gpu_duration_ms"
ATTR_TIMING: Final = "gpuobs.kernel.timing"
"""How the span was timed: `cuda_event` (GPU time, resolved later) or `host` (CPU/interpreter)."""
ATTR_ERROR_CODE: Final = "gpuobs.cuda.error_code"
ATTR_ERROR_NAME: Final = "gpuobs.cuda.error_name"
ATTR_ENGINE: Final = "gpuobs.engine"
ATTR_LAYER: Final = "gpuobs.engine.layer"
