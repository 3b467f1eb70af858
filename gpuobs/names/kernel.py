"""Metric and setting names of the kernel domain: the instrumented launcher and engine adapters.

Its span name and span attribute keys live with every other span name in `gpuobs.names.spans`.
"""

from __future__ import annotations

from typing import Final

from gpuobs.names.spec import MetricKind, MetricSpec, register

__all__ = [
    "BACKEND_LABEL",
    "BACKEND_TENSORRT",
    "BACKEND_TORCH",
    "BACKEND_TRITON",
    "BACKEND_TRITON_INTERPRETER",
    "CUDA_ERRORS",
    "DEFAULT_SPAN_SAMPLE",
    "ENGINE_LOG_MESSAGES",
    "KERNEL_DURATION",
    "KERNEL_DURATION_BUCKETS",
    "KERNEL_LAUNCHES",
    "SPAN_SAMPLE_ENV",
    "SPAN_SAMPLE_SETTING",
]

BACKEND_LABEL: Final = "backend"
"""Label of KERNEL_LAUNCHES: what ran the kernel."""
BACKEND_TRITON: Final = "triton"
"""A compiled Triton kernel (CUDA)."""
BACKEND_TRITON_INTERPRETER: Final = "triton_interpreter"
"""A Triton kernel run by the interpreter on the CPU (`TRITON_INTERPRET=1`)."""
BACKEND_TORCH: Final = "torch"
"""The PyTorch reference implementation of the kernel (the CPU serving path)."""
BACKEND_TENSORRT: Final = "tensorrt"
"""A TensorRT engine layer (counted by the TensorRT adapter)."""

KERNEL_LAUNCHES = MetricSpec(
    native="gpuobs_kernel_launches",
    kind=MetricKind.COUNTER,
    help="Kernel launches through the gpuobs launcher (PyTorch reference ops, TensorRT layers), by kernel "
    "and backend.",
    labels=("kernel", BACKEND_LABEL),
)
"""Counter `gpuobs_kernel_launches_total{kernel,backend}`: launches, always counted; `backend` is one of
`triton`, `triton_interpreter`, `torch`, `tensorrt`."""

KERNEL_DURATION_BUCKETS = (
    5e-06,
    1e-05,
    2.5e-05,
    5e-05,
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
)
"""Upper bounds (s) of KERNEL_DURATION: a small decode kernel (~5 us) to a long prefill (~1 s)."""

KERNEL_DURATION = MetricSpec(
    native="gpuobs_kernel_duration_seconds",
    kind=MetricKind.HISTOGRAM,
    unit="seconds",
    help="Duration of sampled kernel launches (GPU time between CUDA events on CUDA, host time of the "
    "synchronous call on the CPU), by kernel and backend; only sampled launches are timed.",
    labels=("kernel", BACKEND_LABEL),
    extra={"buckets": ",".join(str(b) for b in KERNEL_DURATION_BUCKETS)},
)
"""Histogram `gpuobs_kernel_duration_seconds{kernel,backend}`, s: the launches timed at the sampled
fraction SPAN_SAMPLE_ENV (default 1%); `_count` counts timed launches, not all launches (those are
KERNEL_LAUNCHES). On CUDA the duration is the GPU time between two CUDA events bracketing the launch,
observed once the end event has completed (never synchronised); on the CPU (`torch` reference ops,
`triton_interpreter`) it is the host time of the synchronous call (`time.perf_counter`).
Estimated GPU seconds per second of a kernel = mean duration x launch rate:
`rate(_sum) / rate(_count) * rate(gpuobs_kernel_launches_total)` on the same `{kernel,backend}`
(what `gpuobs.dashboards.rules.recording.KERNEL_GPU_SECONDS_RATE` records)."""

CUDA_ERRORS = MetricSpec(
    native="gpuobs_cuda_errors",
    kind=MetricKind.COUNTER,
    help="CUDA errors caught at kernel launch or at the next synchronisation, by cudaError_t code and name.",
    labels=("code", "name", "kernel"),
)
"""Counter `gpuobs_cuda_errors_total{code,name,kernel}`; `name` is the runtime spelling
(`cudaErrorIllegalAddress`), `kernel` the kernel launched (or surfaced after), or the engine phase
(`prefill`, `decode`) when the error surfaced outside a launch (a failed allocation)."""

ENGINE_LOG_MESSAGES = MetricSpec(
    native="gpuobs_engine_log_messages",
    kind=MetricKind.COUNTER,
    help="Log messages an inference engine (TensorRT ILogger) emitted, by engine and severity.",
    labels=("engine", "severity"),
)
"""Counter `gpuobs_engine_log_messages_total{engine,severity}`."""

register(KERNEL_LAUNCHES, KERNEL_DURATION, CUDA_ERRORS, ENGINE_LOG_MESSAGES)

SPAN_SAMPLE_ENV: Final = "GPUOBS_KERNEL_SPAN_SAMPLE"
"""Environment variable: fraction of launches timed (0..1): each is a `kernel.launch` span (Triton
launches) and a KERNEL_DURATION observation (every launch the launcher runs or calls)."""

SPAN_SAMPLE_SETTING: Final = "kernel_span_sample"
"""Setting name (config table `[kernels]`, key `kernel-span-sample`) behind SPAN_SAMPLE_ENV."""

DEFAULT_SPAN_SAMPLE: Final = 0.01
"""Default sampled fraction: 1% of launches."""
