"""gpuobs.kernels: Triton kernels of a Llama-architecture decoder, each with a PyTorch reference.

One dispatch function per kernel. CUDA tensors run the Triton kernel through the instrumented
launcher (`gpuobs.exporters.inprocess.launcher`: launch counter, sampled `kernel.launch` spans, CUDA error
mapping); CPU tensors run the PyTorch reference (counted by the same launcher, backend `torch`), or
the Triton kernel when `TRITON_INTERPRET=1` (how the tests run them). Inputs are validated before any
launch: a bad shape, dtype, device, layout or block id raises `KernelInputError` (a `ValueError`)
naming the argument.

torch and triton are imported lazily: `import gpuobs.kernels` works without them, and calling a
kernel without them raises `MissingExtraError` saying to `pip install 'gpuobs[kernels]'`.

CUDA tensors may live on any GPU: the call makes their device current for the launch.

Supported dtypes: float32, float16, bfloat16 (all tensors of one call share the activation dtype;
accumulation is float32). Shapes and layouts, exactly:

- `rms_norm(x, residual, weight, eps=1e-6) -> (out, residual_out)`
  x [num_tokens, hidden] (any leading dims are flattened; last dim contiguous); residual same shape
  and dtype as x, or None; weight [hidden]. residual_out = x + residual (or x when residual is None),
  out = residual_out * rsqrt(mean(residual_out**2) + eps) * weight, computed in float32 from the
  unrounded sum. out is a new tensor of x's shape and dtype; residual_out too when residual is
  given, and x itself (not copied) when it is None. Inputs are not modified. This is the fused
  residual-add + RMSNorm of a Llama block: feed `residual_out` as the next layer's `residual`.
- `rope_cos_sin(head_dim, max_positions, base=10000.0, device=None) -> (cos, sin)`
  float32 tables [max_positions, head_dim // 2] for `rotary_embedding`.
- `rotary_embedding(q, k, positions, cos, sin) -> None`
  In place on q [num_tokens, num_heads, head_dim] and k [num_tokens, num_kv_heads, head_dim]
  (views into a fused qkv buffer are fine: any token/head strides, last dim contiguous); positions
  [num_tokens] int32/int64; cos/sin from `rope_cos_sin`. Rotate-half (GPT-NeoX / Hugging Face
  Llama) convention: pairs (i, i + head_dim/2).
- `silu_and_mul(x) -> out`
  x [..., 2 * d] (gate first, then up, the layout of a fused gate_up projection); out [..., d] =
  silu(x[..., :d]) * x[..., d:].
- `paged_attention_decode(query, key_cache, value_cache, block_tables, context_lens, scale,
  check_bounds=True) -> out`
  query [num_seqs, num_heads, head_dim] (one new token per sequence);
  key_cache, value_cache [num_blocks, block_size, num_kv_heads, head_dim] (token t of a sequence
  lives in block `block_tables[s, t // block_size]` at row `t % block_size`);
  block_tables [num_seqs, max_blocks_per_seq] int32 (entries past a sequence's length are ignored);
  context_lens [num_seqs] int32 (tokens in the cache per sequence, the new token's K/V included,
  each >= 1 and <= max_blocks_per_seq * block_size); scale: float (usually head_dim ** -0.5).
  num_heads must be a multiple of num_kv_heads (grouped-query attention). out [num_seqs, num_heads,
  head_dim] in query's dtype. With check_bounds (default) the used block ids are checked to lie in
  [0, num_blocks) before launch; for CUDA tensors that reads the tables back (one synchronisation).
- `write_kv_cache(key, value, key_cache, value_cache, slot_mapping) -> None`
  Stores key/value [num_tokens, num_kv_heads, head_dim] into the caches above at flat slots
  slot_mapping [num_tokens] int (slot = block_id * block_size + row); plain PyTorch indexing.
- `prefill_attention(q, k, v, cu_seqlens, scale, max_seqlen=None) -> out`
  Causal attention over variable-length sequences packed in one batch: q [total_tokens, num_heads,
  head_dim], k and v [total_tokens, num_kv_heads, head_dim] (last dim contiguous); cu_seqlens
  [num_seqs + 1] int32, cumulative lengths starting at 0 and ending at total_tokens; max_seqlen the
  longest sequence (computed from cu_seqlens when None, which synchronises on CUDA). out [total_tokens,
  num_heads, head_dim] in q's dtype. Token i of a sequence attends to tokens 0..i of that sequence.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

from gpuobs.exporters.inprocess.launcher import default_launcher
from gpuobs.extras import require
from gpuobs.kernels.validate import KernelInputError
from gpuobs.names.kernel import BACKEND_TORCH

if TYPE_CHECKING:
    import torch

__all__ = [
    "KernelInputError",
    "paged_attention_decode",
    "prefill_attention",
    "rms_norm",
    "rope_cos_sin",
    "rotary_embedding",
    "silu_and_mul",
    "write_kv_cache",
]


def _use_triton(tensor: Any) -> bool:
    """CUDA tensors always run Triton; CPU tensors only under the Triton interpreter (tests)."""
    return bool(tensor.is_cuda) or os.environ.get("TRITON_INTERPRET") == "1"


def _device_of(tensor: Any) -> Any:
    """A context that makes the tensor's GPU current: Triton launches on the current device."""
    if tensor.is_cuda:
        torch = _torch()
        index = tensor.device.index
        if index is not None and index != torch.cuda.current_device():
            return torch.cuda.device(index)
    return contextlib.nullcontext()


def _torch() -> Any:
    return require("torch", "kernels")


def _impl() -> Any:
    require("torch", "kernels")
    require("triton", "kernels")
    from gpuobs.kernels import triton_ops

    return triton_ops


def _ref() -> Any:
    """The PyTorch references."""
    require("torch", "kernels")
    from gpuobs.kernels import reference

    return reference


def _ref_call(kernel: str, *args: Any) -> Any:
    """The PyTorch reference of `kernel` run on `args`, counted (backend `torch`) as the launcher counts
    Triton's and timed at its sampled fraction, so the CPU path shows in `gpuobs_kernel_launches_total`
    and `gpuobs_kernel_duration_seconds` too."""
    return default_launcher().call(kernel, BACKEND_TORCH, getattr(_ref(), kernel), *args)


def rms_norm(
    x: torch.Tensor, residual: torch.Tensor | None, weight: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fused residual-add + RMSNorm: `(out, residual_out)` (see the module docstring)."""
    from gpuobs.kernels import validate

    _torch()
    validate.rms_norm(x, residual, weight, eps)
    if _use_triton(x):
        with _device_of(x):
            return _impl().rms_norm(x, residual, weight, eps)  # type: ignore[no-any-return]
    return _ref_call("rms_norm", x, residual, weight, eps)  # type: ignore[no-any-return]


def rope_cos_sin(
    head_dim: int, max_positions: int, base: float = 10000.0, device: Any = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """float32 cos/sin tables [max_positions, head_dim // 2] for `rotary_embedding`."""
    _torch()
    return _ref().rope_cos_sin(head_dim, max_positions, base, device)  # type: ignore[no-any-return]


def rotary_embedding(
    q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> None:
    """Rotary position embedding applied in place to q and k (see the module docstring)."""
    from gpuobs.kernels import validate

    _torch()
    validate.rotary_embedding(q, k, positions, cos, sin)
    if _use_triton(q):
        with _device_of(q):
            _impl().rotary_embedding(q, k, positions, cos, sin)
    else:
        _ref_call("rotary_embedding", q, k, positions, cos, sin)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    """SwiGLU gate: `silu(x[..., :d]) * x[..., d:]` for x [..., 2d]."""
    from gpuobs.kernels import validate

    _torch()
    validate.silu_and_mul(x)
    if _use_triton(x):
        with _device_of(x):
            return _impl().silu_and_mul(x)  # type: ignore[no-any-return]
    return _ref_call("silu_and_mul", x)  # type: ignore[no-any-return]


def paged_attention_decode(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    block_tables: torch.Tensor,
    context_lens: torch.Tensor,
    scale: float,
    check_bounds: bool = True,
) -> torch.Tensor:
    """One decode step of attention against a paged KV cache, GQA (see the module docstring)."""
    from gpuobs.kernels import validate

    _torch()
    validate.paged_attention_decode(
        query, key_cache, value_cache, block_tables, context_lens, scale, check_bounds
    )
    if _use_triton(query):
        with _device_of(query):
            return _impl().paged_attention_decode(  # type: ignore[no-any-return]
                query, key_cache, value_cache, block_tables, context_lens, scale
            )
    return _ref_call(  # type: ignore[no-any-return]
        "paged_attention_decode", query, key_cache, value_cache, block_tables, context_lens, scale
    )


def write_kv_cache(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    """Store new tokens' K/V into the paged caches at flat slots (see the module docstring)."""
    from gpuobs.kernels import validate

    _torch()
    validate.write_kv_cache(key, value, key_cache, value_cache, slot_mapping)
    _ref_call("write_kv_cache", key, value, key_cache, value_cache, slot_mapping)


def prefill_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens: torch.Tensor,
    scale: float,
    max_seqlen: int | None = None,
) -> torch.Tensor:
    """Causal varlen attention over packed sequences, GQA (see the module docstring)."""
    from gpuobs.kernels import validate

    _torch()
    max_seqlen = validate.prefill_attention(q, k, v, cu_seqlens, scale, max_seqlen)
    if _use_triton(q):
        with _device_of(q):
            return _impl().prefill_attention(q, k, v, cu_seqlens, scale, max_seqlen)  # type: ignore[no-any-return]
    return _ref_call("prefill_attention", q, k, v, cu_seqlens, scale)  # type: ignore[no-any-return]
