"""The raw facts a sampled kernel launch records, their span/log text (built off the launch path), and
the kernels tracer that launch spans and TensorRT layer spans are made with."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gpuobs.names import spans as span_names

__all__ = ["PendingLaunch", "arg_facts", "describe_args", "describe_inputs", "grid_attr", "grid_text",
           "kernel_tracer"]


@dataclass(slots=True)
class PendingLaunch:
    """Raw facts of one sampled launch; its span is built from them (and its duration observed) when
    its duration is known."""

    kernel: str
    context: Any  # the OpenTelemetry context current at launch: the span's parent
    start_ns: int
    grid: Any
    num_warps: int
    num_stages: int
    inputs: tuple[tuple[Any, Any], ...]  # (shape, dtype) of each tensor argument, as the tensor gave them
    device: Any  # of the first CUDA tensor argument, None on the CPU
    token: Any = None
    backend: str = ""  # the KERNEL_DURATION label its duration is observed under
    span: bool = True  # False: a timed call (`KernelLauncher.call`) that only feeds KERNEL_DURATION
    observe: bool = True  # False: the event pair also spans host work (a JIT compile), not kernel time


_DTYPE_NAMES: dict[Any, str] = {}


def _dtype_name(dtype: Any) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


def arg_facts(args: Iterable[Any]) -> tuple[tuple[tuple[Any, Any], ...], Any]:
    """(shape, dtype) of each tensor argument (no text built), and the device of the first CUDA one."""
    inputs = []
    cuda_device = None
    for arg in args:
        dtype = getattr(arg, "dtype", None)
        if dtype is None:
            continue
        shape = getattr(arg, "shape", None)
        if shape is None:
            continue
        inputs.append((shape, dtype))
        if cuda_device is None and getattr(arg, "is_cuda", False):
            cuda_device = arg.device
    return tuple(inputs), cuda_device


def describe_inputs(inputs: Iterable[tuple[Any, Any]]) -> tuple[list[str], list[str]]:
    """Shape texts (`64x4096`) and dtype names of captured (shape, dtype) facts."""
    shapes = ["x".join(map(str, shape)) or "scalar" for shape, _ in inputs]
    dtypes = [_dtype_name(dtype) for _, dtype in inputs]
    return shapes, dtypes


def describe_args(args: Iterable[Any]) -> tuple[list[str], list[str], Any]:
    """Shapes and dtypes of the tensor arguments, and the device of the first CUDA tensor."""
    inputs, cuda_device = arg_facts(args)
    shapes, dtypes = describe_inputs(inputs)
    return shapes, dtypes, cuda_device


def grid_text(grid: Any) -> str:
    """`8x64x2` for a grid tuple (span attributes are plain strings: cheaper to record than lists)."""
    if isinstance(grid, tuple | list):
        return "x".join(map(str, grid))
    return repr(grid)


def grid_attr(grid: Any) -> list[int] | str:
    if isinstance(grid, tuple | list) and all(isinstance(g, int) for g in grid):
        return [int(g) for g in grid]
    return repr(grid)


def kernel_tracer(tracer_provider: Any = None) -> Any:
    """The `gpuobs.kernels` tracer of `tracer_provider`, or of the global provider when None."""
    if tracer_provider is not None:
        return tracer_provider.get_tracer(span_names.TRACER_KERNELS)
    from opentelemetry import trace

    return trace.get_tracer(span_names.TRACER_KERNELS)
