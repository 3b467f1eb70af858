"""Input checks run before every kernel launch, so a bad call fails with a clear message, not a GPU fault."""

from __future__ import annotations

import itertools
from typing import Any

from gpuobs.errors import KernelError

__all__ = [
    "KernelInputError",
    "paged_attention_decode",
    "prefill_attention",
    "rms_norm",
    "rotary_embedding",
    "silu_and_mul",
    "write_kv_cache",
]


class KernelInputError(KernelError, ValueError):
    """A kernel argument has the wrong shape, dtype, device or layout, or an out-of-range index."""


def _fail(kernel: str, message: str) -> KernelInputError:
    return KernelInputError(f"{kernel}: {message}")


def _float_dtypes() -> tuple[Any, ...]:
    import torch

    return (torch.float32, torch.float16, torch.bfloat16)


def _int_dtypes() -> tuple[Any, ...]:
    import torch

    return (torch.int32, torch.int64)


def _is_tensor(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


def _tensor(kernel: str, name: str, value: Any, ndim: int | None = None) -> None:
    if not _is_tensor(value):
        raise _fail(kernel, f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if ndim is not None and value.dim() != ndim:
        raise _fail(kernel, f"{name} must have {ndim} dims, got shape {tuple(value.shape)}")


def _float(kernel: str, name: str, value: Any) -> None:
    if value.dtype not in _float_dtypes():
        raise _fail(kernel, f"{name} must be float32, float16 or bfloat16, got {value.dtype}")


def _same_device(kernel: str, ref_name: str, ref: Any, **others: Any) -> None:
    for name, other in others.items():
        if other is not None and other.device != ref.device:
            raise _fail(kernel, f"{name} is on {other.device} but {ref_name} is on {ref.device}")


def _same_dtype(kernel: str, ref_name: str, ref: Any, **others: Any) -> None:
    for name, other in others.items():
        if other is not None and other.dtype != ref.dtype:
            raise _fail(kernel, f"{name} has dtype {other.dtype} but {ref_name} has {ref.dtype}")


def _last_dim_contiguous(kernel: str, name: str, value: Any) -> None:
    if value.numel() > 0 and value.stride(-1) != 1:
        raise _fail(kernel, f"{name} must be contiguous in its last dim (stride {value.stride(-1)})")


def _contiguous(kernel: str, name: str, value: Any) -> None:
    if not value.is_contiguous():
        raise _fail(kernel, f"{name} must be contiguous (call .contiguous())")


def _positive_scalar(kernel: str, name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise _fail(kernel, f"{name} must be a positive number, got {value!r}")


def rms_norm(x: Any, residual: Any, weight: Any, eps: float) -> None:
    k = "rms_norm"
    _tensor(k, "x", x)
    if x.dim() < 1 or x.shape[-1] == 0:
        raise _fail(k, f"x must have a non-empty last dim, got shape {tuple(x.shape)}")
    _float(k, "x", x)
    _tensor(k, "weight", weight, 1)
    if weight.shape[0] != x.shape[-1]:
        raise _fail(k, f"weight has {weight.shape[0]} elements but x's last dim is {x.shape[-1]}")
    if residual is not None:
        _tensor(k, "residual", residual)
        if residual.shape != x.shape:
            raise _fail(k, f"residual shape {tuple(residual.shape)} != x shape {tuple(x.shape)}")
    _same_dtype(k, "x", x, residual=residual)
    _float(k, "weight", weight)
    _same_device(k, "x", x, residual=residual, weight=weight)
    _contiguous(k, "x", x)
    if residual is not None:
        _contiguous(k, "residual", residual)
    _contiguous(k, "weight", weight)
    _positive_scalar(k, "eps", eps)


def rotary_embedding(q: Any, k_: Any, positions: Any, cos: Any, sin: Any) -> None:
    k = "rotary_embedding"
    _tensor(k, "q", q, 3)
    _tensor(k, "k", k_, 3)
    _tensor(k, "positions", positions, 1)
    _tensor(k, "cos", cos, 2)
    _tensor(k, "sin", sin, 2)
    _float(k, "q", q)
    _same_dtype(k, "q", q, k=k_)
    head_dim = q.shape[2]
    if head_dim % 2 or head_dim == 0:
        raise _fail(k, f"head_dim must be even and positive, got {head_dim}")
    if k_.shape[2] != head_dim:
        raise _fail(k, f"k head_dim {k_.shape[2]} != q head_dim {head_dim}")
    if k_.shape[0] != q.shape[0] or positions.shape[0] != q.shape[0]:
        raise _fail(k, f"q, k and positions must have the same num_tokens, got {q.shape[0]}, "
                       f"{k_.shape[0]}, {positions.shape[0]}")
    if positions.dtype not in _int_dtypes():
        raise _fail(k, f"positions must be int32 or int64, got {positions.dtype}")
    import torch

    for name, table in (("cos", cos), ("sin", sin)):
        if table.dtype != torch.float32:
            raise _fail(k, f"{name} must be float32 (from rope_cos_sin), got {table.dtype}")
        if table.shape[1] != head_dim // 2:
            raise _fail(k, f"{name} must be [max_positions, {head_dim // 2}], got {tuple(table.shape)}")
        _contiguous(k, name, table)
    if cos.shape != sin.shape:
        raise _fail(k, f"cos shape {tuple(cos.shape)} != sin shape {tuple(sin.shape)}")
    _same_device(k, "q", q, k=k_, positions=positions, cos=cos, sin=sin)
    _last_dim_contiguous(k, "q", q)
    _last_dim_contiguous(k, "k", k_)
    _contiguous(k, "positions", positions)
    if positions.numel() and not positions.is_cuda:
        lo, hi = int(positions.min()), int(positions.max())
        if lo < 0 or hi >= cos.shape[0]:
            raise _fail(k, f"positions must lie in [0, {cos.shape[0]}), got [{lo}, {hi}]")


def silu_and_mul(x: Any) -> None:
    k = "silu_and_mul"
    _tensor(k, "x", x)
    if x.dim() < 1 or x.shape[-1] % 2 or x.shape[-1] == 0:
        raise _fail(k, f"x's last dim must be even and positive (gate, up), got shape {tuple(x.shape)}")
    _float(k, "x", x)
    _contiguous(k, "x", x)


def _cache(kernel: str, query: Any, key_cache: Any, value_cache: Any) -> tuple[int, int, int, int]:
    _tensor(kernel, "key_cache", key_cache, 4)
    _tensor(kernel, "value_cache", value_cache, 4)
    if key_cache.shape != value_cache.shape:
        raise _fail(kernel, f"key_cache shape {tuple(key_cache.shape)} != value_cache shape "
                            f"{tuple(value_cache.shape)}")
    num_blocks, block_size, num_kv_heads, head_dim = key_cache.shape
    if block_size < 1 or num_kv_heads < 1 or head_dim < 1:
        raise _fail(kernel, f"key_cache has an empty dim: {tuple(key_cache.shape)}")
    _same_dtype(kernel, "query", query, key_cache=key_cache, value_cache=value_cache)
    _same_device(kernel, "query", query, key_cache=key_cache, value_cache=value_cache)
    _contiguous(kernel, "key_cache", key_cache)
    _contiguous(kernel, "value_cache", value_cache)
    return num_blocks, block_size, num_kv_heads, head_dim


def paged_attention_decode(
    query: Any, key_cache: Any, value_cache: Any, block_tables: Any, context_lens: Any, scale: Any,
    check_bounds: bool,
) -> None:
    import torch

    k = "paged_attention_decode"
    _tensor(k, "query", query, 3)
    _float(k, "query", query)
    num_seqs, num_heads, head_dim = query.shape
    num_blocks, block_size, num_kv_heads, cache_head_dim = _cache(k, query, key_cache, value_cache)
    if cache_head_dim != head_dim:
        raise _fail(k, f"cache head_dim {cache_head_dim} != query head_dim {head_dim}")
    if num_heads % num_kv_heads:
        raise _fail(k, f"num_heads {num_heads} must be a multiple of num_kv_heads {num_kv_heads}")
    _tensor(k, "block_tables", block_tables, 2)
    _tensor(k, "context_lens", context_lens, 1)
    if block_tables.dtype != torch.int32:
        raise _fail(k, f"block_tables must be int32, got {block_tables.dtype}")
    if context_lens.dtype != torch.int32:
        raise _fail(k, f"context_lens must be int32, got {context_lens.dtype}")
    if block_tables.shape[0] != num_seqs or context_lens.shape[0] != num_seqs:
        raise _fail(k, f"block_tables has {block_tables.shape[0]} rows and context_lens "
                       f"{context_lens.shape[0]} entries but query has {num_seqs} sequences")
    if block_tables.shape[1] < 1:
        raise _fail(k, "block_tables must have at least one column")
    _same_device(k, "query", query, block_tables=block_tables, context_lens=context_lens)
    _last_dim_contiguous(k, "query", query)
    _contiguous(k, "block_tables", block_tables)
    _contiguous(k, "context_lens", context_lens)
    _positive_scalar(k, "scale", scale)
    if not (check_bounds or not query.is_cuda) or num_seqs == 0:
        return
    capacity = block_tables.shape[1] * block_size
    lens = context_lens.to(torch.int64)
    bad_len = (lens < 1) | (lens > capacity)
    if bool(bad_len.any()):
        seq = int(torch.nonzero(bad_len)[0, 0])
        raise _fail(k, f"context_lens[{seq}] = {int(lens[seq])} outside [1, {capacity}] "
                       f"(max_blocks_per_seq {block_tables.shape[1]} x block_size {block_size})")
    used_blocks = (lens + block_size - 1) // block_size
    cols = torch.arange(block_tables.shape[1], device=block_tables.device)
    used = cols.unsqueeze(0) < used_blocks.unsqueeze(1)
    out_of_range = used & ((block_tables < 0) | (block_tables >= num_blocks))
    if bool(out_of_range.any()):
        seq, col = (int(v) for v in torch.nonzero(out_of_range)[0])
        raise _fail(k, f"block_tables[{seq}, {col}] = {int(block_tables[seq, col])} outside "
                       f"[0, {num_blocks}) (num_blocks of the cache)")


def write_kv_cache(key: Any, value: Any, key_cache: Any, value_cache: Any, slot_mapping: Any) -> None:
    k = "write_kv_cache"
    _tensor(k, "key", key, 3)
    _tensor(k, "value", value, 3)
    _float(k, "key", key)
    if key.shape != value.shape:
        raise _fail(k, f"key shape {tuple(key.shape)} != value shape {tuple(value.shape)}")
    num_blocks, block_size, num_kv_heads, head_dim = _cache(k, key, key_cache, value_cache)
    if tuple(key.shape[1:]) != (num_kv_heads, head_dim):
        raise _fail(k, f"key must be [num_tokens, {num_kv_heads}, {head_dim}], got {tuple(key.shape)}")
    _same_dtype(k, "key", key, value=value)
    _tensor(k, "slot_mapping", slot_mapping, 1)
    if slot_mapping.dtype not in _int_dtypes():
        raise _fail(k, f"slot_mapping must be int32 or int64, got {slot_mapping.dtype}")
    if slot_mapping.shape[0] != key.shape[0]:
        raise _fail(k, f"slot_mapping has {slot_mapping.shape[0]} entries for {key.shape[0]} tokens")
    _same_device(k, "key", key, value=value, slot_mapping=slot_mapping)
    if slot_mapping.numel() and not slot_mapping.is_cuda:
        lo, hi = int(slot_mapping.min()), int(slot_mapping.max())
        if lo < 0 or hi >= num_blocks * block_size:
            raise _fail(k, f"slot_mapping must lie in [0, {num_blocks * block_size}), got [{lo}, {hi}]")


def prefill_attention(
    q: Any, k_: Any, v: Any, cu_seqlens: Any, scale: Any, max_seqlen: int | None
) -> int:
    """Checks the inputs and returns max_seqlen (computed from cu_seqlens when not given)."""
    import torch

    k = "prefill_attention"
    _tensor(k, "q", q, 3)
    _tensor(k, "k", k_, 3)
    _tensor(k, "v", v, 3)
    _float(k, "q", q)
    _same_dtype(k, "q", q, k=k_, v=v)
    total, num_heads, head_dim = q.shape
    if k_.shape != v.shape:
        raise _fail(k, f"k shape {tuple(k_.shape)} != v shape {tuple(v.shape)}")
    if k_.shape[0] != total or k_.shape[2] != head_dim:
        raise _fail(k, f"k must be [{total}, num_kv_heads, {head_dim}], got {tuple(k_.shape)}")
    num_kv_heads = k_.shape[1]
    if num_kv_heads < 1 or num_heads % num_kv_heads:
        raise _fail(k, f"num_heads {num_heads} must be a multiple of num_kv_heads {num_kv_heads}")
    _tensor(k, "cu_seqlens", cu_seqlens, 1)
    if cu_seqlens.dtype != torch.int32:
        raise _fail(k, f"cu_seqlens must be int32, got {cu_seqlens.dtype}")
    if cu_seqlens.shape[0] < 2:
        raise _fail(k, "cu_seqlens must have num_seqs + 1 >= 2 entries")
    _same_device(k, "q", q, k=k_, v=v, cu_seqlens=cu_seqlens)
    for name, t in (("q", q), ("k", k_), ("v", v)):
        _last_dim_contiguous(k, name, t)
    _contiguous(k, "cu_seqlens", cu_seqlens)
    _positive_scalar(k, "scale", scale)
    if max_seqlen is not None:
        if isinstance(max_seqlen, bool) or not isinstance(max_seqlen, int) or max_seqlen < 0:
            raise _fail(k, f"max_seqlen must be a non-negative int, got {max_seqlen!r}")
        if not cu_seqlens.is_cuda:
            _check_cu_seqlens(k, cu_seqlens, total, max_seqlen)
        return max_seqlen
    return _check_cu_seqlens(k, cu_seqlens, total, None)


def _check_cu_seqlens(kernel: str, cu_seqlens: Any, total: int, max_seqlen: int | None) -> int:
    values = cu_seqlens.to("cpu", copy=False).tolist()
    if values[0] != 0 or values[-1] != total:
        raise _fail(kernel, f"cu_seqlens must start at 0 and end at total_tokens {total}, "
                            f"got {values[0]}..{values[-1]}")
    lengths = [b - a for a, b in itertools.pairwise(values)]
    if any(n < 0 for n in lengths):
        raise _fail(kernel, "cu_seqlens must be non-decreasing")
    longest = max(lengths)
    if max_seqlen is not None and max_seqlen < longest:
        raise _fail(kernel, f"max_seqlen {max_seqlen} < longest sequence {longest}")
    return longest
