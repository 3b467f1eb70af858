"""The kernel functions the decoder calls: helper B's dispatch (Triton on CUDA) or the PyTorch references.

Signatures are those of `gpuobs.kernels` (see its module docstring). `backend="kernels"` goes through
the dispatch functions (Triton on CUDA, and on CPU under `TRITON_INTERPRET=1`); `backend="reference"`
calls the PyTorch references directly, so CPU serving stays fast even when the Triton interpreter is on;
each call is counted by the kernel launcher (backend `torch`) and a sampled fraction timed, so the CPU
path shows in `gpuobs_kernel_launches_total` and `gpuobs_kernel_duration_seconds` like the Triton one.
On that CPU path, decode attention is one batched gather + masked softmax over all sequences
(`batched_paged_attention_decode`, the same math as the per-sequence reference) because a decode step's
cost on CPU is otherwise dominated by per-sequence small-op overhead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

from gpuobs.exporters.inprocess.launcher import default_launcher
from gpuobs.names.kernel import BACKEND_TORCH

__all__ = ["KernelOps", "batched_paged_attention_decode", "get_ops"]


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


def batched_paged_attention_decode(
    query: Any, key_cache: Any, value_cache: Any, block_tables: Any, context_lens: Any, scale: float
) -> Any:
    """Paged decode attention for all sequences at once (PyTorch; signature of gpuobs.kernels')."""
    import torch

    num_seqs, num_heads, head_dim = query.shape
    _, block_size, num_kv, _ = key_cache.shape
    group = num_heads // num_kv
    tables = block_tables.long()
    width = tables.shape[1] * block_size
    keys = key_cache[tables].reshape(num_seqs, width, num_kv, head_dim).float()
    values = value_cache[tables].reshape(num_seqs, width, num_kv, head_dim).float()
    q = query.reshape(num_seqs, num_kv, group, head_dim).float()
    scores = torch.einsum("bkgd,blkd->bkgl", q, keys) * scale
    valid = torch.arange(width, device=query.device)[None, :] < context_lens.long()[:, None]
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    out = torch.einsum("bkgl,blkd->bkgd", scores.softmax(dim=-1), values)
    return out.reshape(num_seqs, num_heads, head_dim).to(query.dtype)


def _counted(kernel: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, each call counted as a launch of `kernel` on the torch backend (and timed when sampled)."""

    def run(*args: Any, **kwargs: Any) -> Any:
        return default_launcher().call(kernel, BACKEND_TORCH, fn, *args, **kwargs)

    run.__name__ = run.__qualname__ = kernel
    run.__doc__ = fn.__doc__
    return run


def get_ops(backend: str) -> KernelOps:
    """`"kernels"`: gpuobs.kernels dispatch functions; `"reference"`: the PyTorch references."""
    if backend == "kernels":
        return _from_module("kernels", importlib.import_module("gpuobs.kernels"))
    if backend == "reference":
        ref = _from_module("reference", importlib.import_module("gpuobs.kernels.reference"))
        ref = replace(ref, paged_attention_decode=batched_paged_attention_decode)
        ops: dict[str, Any] = {
            f.name: _counted(f.name, getattr(ref, f.name)) for f in fields(ref) if f.name != "name"
        }
        return KernelOps(name=ref.name, **ops)
    raise ValueError(f"unknown kernel backend {backend!r} (kernels|reference)")
