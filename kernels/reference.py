"""Plain PyTorch references of every kernel: the CPU path and the ground truth of the tests and bench."""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F

__all__ = [
    "paged_attention_decode",
    "paged_to_contiguous",
    "prefill_attention",
    "rms_norm",
    "rope_cos_sin",
    "rotary_embedding",
    "silu_and_mul",
    "write_kv_cache",
]


def rms_norm(
    x: torch.Tensor, residual: torch.Tensor | None, weight: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    summed = x.float() if residual is None else x.float() + residual.float()
    rstd = torch.rsqrt(summed.pow(2).mean(dim=-1, keepdim=True) + eps)
    out = (summed * rstd * weight.float()).to(x.dtype)
    return out, (x if residual is None else summed.to(x.dtype))


def rope_cos_sin(
    head_dim: int, max_positions: int, base: float = 10000.0, device: torch.device | str | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    angles = torch.arange(max_positions, dtype=torch.float64).unsqueeze(1) * inv_freq.unsqueeze(0)
    return angles.cos().float().to(device), angles.sin().float().to(device)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)


def rotary_embedding(
    q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> None:
    c = cos[positions.long()].unsqueeze(1)
    s = sin[positions.long()].unsqueeze(1)
    q.copy_(_rotate(q, c, s))
    k.copy_(_rotate(k, c, s))


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return (F.silu(x[..., :d].float()) * x[..., d:].float()).to(x.dtype)


def paged_to_contiguous(
    cache: torch.Tensor, block_tables: torch.Tensor, seq: int, length: int
) -> torch.Tensor:
    """Tokens 0..length-1 of sequence `seq` from a paged cache: [length, num_kv_heads, head_dim]."""
    block_size = cache.shape[1]
    n_blocks = (length + block_size - 1) // block_size
    blocks = cache[block_tables[seq, :n_blocks].long()]
    return blocks.reshape(-1, cache.shape[2], cache.shape[3])[:length]


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool) -> torch.Tensor:
    """q [n, H, D], k/v [m, Hkv, D] -> [n, H, D] in float32, GQA by repeating KV heads."""
    group = q.shape[1] // k.shape[1]
    kf = k.float().repeat_interleave(group, dim=1)
    vf = v.float().repeat_interleave(group, dim=1)
    scores = torch.einsum("nhd,mhd->hnm", q.float(), kf) * scale
    if causal:
        n, m = q.shape[0], k.shape[0]
        mask = torch.ones(n, m, dtype=torch.bool, device=q.device).tril(diagonal=m - n)
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.einsum("hnm,mhd->nhd", scores.softmax(dim=-1), vf)


def paged_attention_decode(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    block_tables: torch.Tensor,
    context_lens: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    out = torch.empty_like(query)
    lens = context_lens.tolist()
    for seq, length in enumerate(lens):
        k = paged_to_contiguous(key_cache, block_tables, seq, length)
        v = paged_to_contiguous(value_cache, block_tables, seq, length)
        out[seq] = _attend(query[seq : seq + 1], k, v, scale, causal=False)[0].to(query.dtype)
    return out


def write_kv_cache(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    slots = slot_mapping.long()
    key_cache.view(-1, key_cache.shape[2], key_cache.shape[3]).index_copy_(0, slots, key)
    value_cache.view(-1, value_cache.shape[2], value_cache.shape[3]).index_copy_(0, slots, value)


def prefill_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, scale: float
) -> torch.Tensor:
    out = torch.empty_like(q)
    bounds = cu_seqlens.tolist()
    for start, end in itertools.pairwise(bounds):
        if end > start:
            out[start:end] = _attend(q[start:end], k[start:end], v[start:end], scale, causal=True).to(q.dtype)
    return out
