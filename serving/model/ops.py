"""The kernel functions the decoder calls: helper B's dispatch (Triton on CUDA) or the PyTorch references.

Signatures are those of `gpuobs.kernels` (see its module docstring). `backend="kernels"` goes through
the dispatch functions (Triton on CUDA, and on CPU under `TRITON_INTERPRET=1`); `backend="reference"`
calls the PyTorch references directly, so CPU serving stays fast even when the Triton interpreter is on.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

__all__ = ["KernelOps", "get_ops"]


@dataclass(frozen=True)
class KernelOps:
    """One implementation of each kernel the decoder uses."""

    name: str
    rms_norm: Any
    rotary_embedding: Any
    silu_and_mul: Any
    paged_attention_decode: Any
    write_kv_cache: Any
    prefill_attention: Any


def _from_module(name: str, module: Any) -> KernelOps:
    return KernelOps(
        name=name,
        rms_norm=module.rms_norm,
        rotary_embedding=module.rotary_embedding,
        silu_and_mul=module.silu_and_mul,
        paged_attention_decode=module.paged_attention_decode,
        write_kv_cache=module.write_kv_cache,
        prefill_attention=module.prefill_attention,
    )


def get_ops(backend: str) -> KernelOps:
    """`"kernels"`: gpuobs.kernels dispatch functions; `"reference"`: the PyTorch references."""
    if backend == "kernels":
        return _from_module("kernels", importlib.import_module("gpuobs.kernels"))
    if backend == "reference":
        return _from_module("reference", importlib.import_module("gpuobs.kernels.reference"))
    raise ValueError(f"unknown kernel backend {backend!r} (kernels|reference)")
