"""PyTorch references of the decoder kernels (used when gpuobs.kernels.reference is absent)."""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F

__all__ = [
    "paged_attention_decode",
    "prefill_attention",
    "rms_norm",
    "rotary_embedding",
    "silu_and_mul",
    "write_kv_cache",
]


def rms_norm(
    x: torch.Tensor, residual: torch.Tensor | None, weight: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    res = x if residual is None else x + residual
    r32 = res.float()
    out = r32 * torch.rsqrt(r32.pow(2).mean(-1, keepdim=True) + eps)
    return (out * weight.float()).to(x.dtype), res


def rotary_embedding(
    q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> None:
    c = cos[positions.long()][:, None, :]
    s = sin[positions.long()][:, None, :]
    for t in (q, k):
        half = t.shape[-1] // 2
        x1, x2 = t[..., :half].float(), t[..., half:].float()
        t[..., :half] = (x1 * c - x2 * s).to(t.dtype)
        t[..., half:] = (x2 * c + x1 * s).to(t.dtype)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


def write_kv_cache(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    nb, bs, h, d = key_cache.shape
    key_cache.view(nb * bs, h, d)[slot_mapping.long()] = key
    value_cache.view(nb * bs, h, d)[slot_mapping.long()] = value


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool) -> torch.Tensor:
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q.float(), k.float()) * scale
    if causal:
        n = q.shape[0]
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.einsum("hqk,khd->qhd", scores.softmax(-1), v.float()).to(q.dtype)


def paged_attention_decode(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    block_tables: torch.Tensor,
    context_lens: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    bs = key_cache.shape[1]
    out = torch.empty_like(query)
    for s, n in enumerate(context_lens.tolist()):
        blocks = block_tables[s, : (n + bs - 1) // bs].long()
        k = key_cache[blocks].flatten(0, 1)[:n]
        v = value_cache[blocks].flatten(0, 1)[:n]
        out[s] = _attend(query[s : s + 1], k, v, scale, causal=False)[0]
    return out


def prefill_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, scale: float
) -> torch.Tensor:
    out = torch.empty_like(q)
    bounds = cu_seqlens.tolist()
    for a, b in itertools.pairwise(bounds):
        out[a:b] = _attend(q[a:b], k[a:b], v[a:b], scale, causal=True)
    return out
