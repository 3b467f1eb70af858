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

register(KERNEL_LAUNCHES, CUDA_ERRORS, ENGINE_LOG_MESSAGES)

SPAN_SAMPLE_ENV: Final = "GPUOBS_KERNEL_SPAN_SAMPLE"
"""Environment variable: fraction of launches recorded as spans (0..1)."""

SPAN_SAMPLE_SETTING: Final = "kernel_span_sample"
"""Setting name (config table `[kernels]`, key `kernel-span-sample`) behind SPAN_SAMPLE_ENV."""

DEFAULT_SPAN_SAMPLE: Final = 0.01
"""Default sampled fraction: 1% of launches."""
