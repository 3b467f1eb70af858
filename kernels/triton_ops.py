# mypy: disable-error-code="no-untyped-def"
# Triton JIT kernels take untyped pointer and scalar arguments; the Python wrappers are typed.
# ruff: noqa: SIM108  (constexpr if-blocks read more plainly in Triton kernels than ternaries)
"""Triton kernels and their launch wrappers; every launch goes through the instrumented launcher.

Imported lazily by gpuobs.kernels (it imports torch and triton). Inputs reaching these wrappers
are already validated. Launch configurations differ between CUDA (tuned for Hopper, H200) and the
CPU interpreter (small tiles so tests exercise the multi-tile and split paths cheaply).
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from gpuobs.exporters.inprocess.launcher import default_launcher
from gpuobs.kernels.validate import KernelInputError

__all__ = [
    "paged_attention_decode",
    "prefill_attention",
    "rms_norm",
    "rotary_embedding",
    "silu_and_mul",
]

_LOG2E = 1.4426950408889634
_MAX_FUSED_COLS = 65536
_SMEM_BUDGET = 160 * 1024  # bytes of pipelined K/V tiles per program, leaving room for the rest

# Launch configurations used on CUDA (the CPU interpreter uses small fixed tiles). Chosen by the
# sweep in bench/kernels.py on an H200; a tuning run may overwrite entries before launching.
TUNING: dict[str, dict[str, Any]] = {
    "silu_and_mul": {"block": 8192, "num_warps": 8},
    "paged_attention_decode": {"block_n": 128, "num_warps": 4, "num_stages": 2, "target_programs": 256,
                               "head_major": True, "prefetch_table": False},
    "prefill_attention": {"block_m": 128, "block_n": 64, "num_warps": 8, "num_stages": 3},
}


def _precision(dtype: torch.dtype, cuda: bool) -> str:
    # float32 inputs must not be rounded to tf32 inside tl.dot (nor upcast bf16 on the interpreter).
    return "ieee" if dtype == torch.float32 or _upcast(dtype, cuda) else "tf32"


def _upcast(dtype: torch.dtype, cuda: bool) -> bool:
    # The Triton interpreter (numpy) computes tl.dot on bfloat16 operands wrongly: upcast there only.
    return not cuda and dtype == torch.bfloat16


# --------------------------------------------------------------------------------------------------
# Fused residual-add + RMSNorm
# --------------------------------------------------------------------------------------------------
@triton.jit
def _rms_norm_kernel(
    x_ptr, res_ptr, w_ptr, out_ptr, res_out_ptr, n_cols, eps,
    HAS_RESIDUAL: tl.constexpr, BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    offs = row * n_cols + cols
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        x += tl.load(res_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(res_out_ptr + offs, x.to(res_out_ptr.dtype.element_ty), mask=mask)
    var = tl.sum(x * x, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def rms_norm(
    x: torch.Tensor, residual: torch.Tensor | None, weight: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    n_cols = x.shape[-1]
    block = triton.next_power_of_2(n_cols)
    if block > _MAX_FUSED_COLS:
        raise KernelInputError(f"rms_norm: hidden size {n_cols} exceeds {_MAX_FUSED_COLS}")
    n_rows = x.numel() // n_cols
    out = torch.empty_like(x)
    res_out = torch.empty_like(x) if residual is not None else x
    if n_rows == 0:
        return out, res_out
    num_warps = max(1, min(16, block // 256))
    default_launcher().launch(
        "rms_norm", _rms_norm_kernel, (n_rows,),
        (x, residual if residual is not None else x, weight, out, res_out, n_cols, float(eps)),
        num_warps=num_warps, num_stages=1, HAS_RESIDUAL=residual is not None, BLOCK=block,
    )
    return out, res_out


# --------------------------------------------------------------------------------------------------
# Rotary position embedding, in place on q and k
# --------------------------------------------------------------------------------------------------
@triton.jit
def _rotate_heads(ptr, t, stride_t, stride_h, n_heads, cos, sin, d, dmask,
                  HALF: tl.constexpr, BLOCK_H: tl.constexpr):
    h = tl.arange(0, BLOCK_H)
    for h0 in range(0, n_heads, BLOCK_H):
        heads = h0 + h
        m = (heads < n_heads)[:, None] & dmask[None, :]
        base = ptr + t * stride_t + heads[:, None].to(tl.int64) * stride_h + d[None, :]
        x1 = tl.load(base, mask=m, other=0.0).to(tl.float32)
        x2 = tl.load(base + HALF, mask=m, other=0.0).to(tl.float32)
        tl.store(base, (x1 * cos - x2 * sin).to(ptr.dtype.element_ty), mask=m)
        tl.store(base + HALF, (x2 * cos + x1 * sin).to(ptr.dtype.element_ty), mask=m)


@triton.jit
def _rotary_kernel(
    q_ptr, k_ptr, pos_ptr, cos_ptr, sin_ptr,
    q_stride_t, q_stride_h, k_stride_t, k_stride_h, n_q_heads, n_k_heads,
    HALF: tl.constexpr, BLOCK_HALF: tl.constexpr, BLOCK_H: tl.constexpr,
):
    t = tl.program_id(0).to(tl.int64)
    pos = tl.load(pos_ptr + t).to(tl.int64)
    d = tl.arange(0, BLOCK_HALF)
    dmask = d < HALF
    cos = tl.load(cos_ptr + pos * HALF + d, mask=dmask, other=0.0)[None, :]
    sin = tl.load(sin_ptr + pos * HALF + d, mask=dmask, other=0.0)[None, :]
    _rotate_heads(q_ptr, t, q_stride_t, q_stride_h, n_q_heads, cos, sin, d, dmask, HALF, BLOCK_H)
    _rotate_heads(k_ptr, t, k_stride_t, k_stride_h, n_k_heads, cos, sin, d, dmask, HALF, BLOCK_H)


def rotary_embedding(
    q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> None:
    n_tokens, n_q_heads, head_dim = q.shape
    if n_tokens == 0:
        return
    half = head_dim // 2
    block_half = triton.next_power_of_2(half)
    block_h = min(triton.next_power_of_2(max(n_q_heads, k.shape[1])), max(1, 4096 // block_half))
    default_launcher().launch(
        "rotary_embedding", _rotary_kernel, (n_tokens,),
        (q, k, positions, cos, sin, q.stride(0), q.stride(1), k.stride(0), k.stride(1),
         n_q_heads, k.shape[1]),
        num_warps=4, num_stages=1, HALF=half, BLOCK_HALF=block_half, BLOCK_H=block_h,
    )


# --------------------------------------------------------------------------------------------------
# SiLU-and-multiply (SwiGLU gate)
# --------------------------------------------------------------------------------------------------
@triton.jit
def _silu_mul_kernel(x_ptr, out_ptr, d, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < d
    gate = tl.load(x_ptr + row * 2 * d + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * 2 * d + d + cols, mask=mask, other=0.0).to(tl.float32)
    y = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + row * d + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    out = torch.empty((*x.shape[:-1], d), dtype=x.dtype, device=x.device)
    n_rows = x.numel() // (2 * d)
    if n_rows == 0:
        return out
    tune = TUNING["silu_and_mul"]
    block = min(tune["block"] if x.is_cuda else 64, triton.next_power_of_2(d))
    default_launcher().launch(
        "silu_and_mul", _silu_mul_kernel, (n_rows, triton.cdiv(d, block)), (x, out, d),
        num_warps=tune["num_warps"] if x.is_cuda else 4, num_stages=1, BLOCK=block,
    )
    return out


# --------------------------------------------------------------------------------------------------
# Paged-attention decode (split-K over the context, GQA: one program per (seq, kv head, split))
# --------------------------------------------------------------------------------------------------
@triton.jit
def _paged_decode_kernel(
    q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, context_lens_ptr,
    out_ptr, m_ptr, l_ptr, acc_ptr,
    qk_scale, num_blocks, num_parts, num_kv_heads,
    stride_qs, stride_qh, stride_cb, stride_ct, stride_ch, stride_bts, stride_os, stride_oh,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
    PAGE: tl.constexpr, BLOCK_N: tl.constexpr, PART: tl.constexpr, SPLIT: tl.constexpr,
    HEAD_MAJOR: tl.constexpr, PREFETCH_TABLE: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
):
    # HEAD_MAJOR puts the KV heads of one sequence on neighbouring programs, so the interleaved
    # rows of a cache block ([block_size, num_kv_heads, head_dim]) are read close together in time.
    if HEAD_MAJOR:
        kvh = tl.program_id(0)
        seq = tl.program_id(1)
    else:
        seq = tl.program_id(0)
        kvh = tl.program_id(1)
    part = tl.program_id(2)
    ctx = tl.load(context_lens_ptr + seq)
    start = part * PART
    end = tl.minimum(start + PART, ctx)
    g = tl.arange(0, BLOCK_G)
    d = tl.arange(0, BLOCK_D)
    gmask = g < GROUP
    heads = kvh * GROUP + g
    if BLOCK_D == HEAD_DIM:
        q_mask = gmask[:, None]
    else:
        q_mask = gmask[:, None] & (d < HEAD_DIM)[None, :]
    q = tl.load(q_ptr + seq.to(tl.int64) * stride_qs + heads[:, None] * stride_qh + d[None, :],
                mask=q_mask, other=0.0)
    if UPCAST:
        q = q.to(tl.float32)
    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], dtype=tl.float32)
    table = block_tables_ptr + seq.to(tl.int64) * stride_bts
    n_base = tl.arange(0, BLOCK_N)
    if PREFETCH_TABLE:  # block ids of the next tile are loaded one iteration ahead
        page_next = tl.load(table + (start + n_base) // PAGE, mask=(start + n_base) < end, other=0)
    for n0 in range(start, end, BLOCK_N):
        n = n0 + n_base
        nmask = n < end
        if PREFETCH_TABLE:
            page = page_next
            page_next = tl.load(table + (n + BLOCK_N) // PAGE, mask=(n + BLOCK_N) < end, other=0)
        else:
            page = tl.load(table + n // PAGE, mask=nmask, other=0)
        ok = nmask & (page >= 0) & (page < num_blocks)
        offs = page.to(tl.int64) * stride_cb + (n % PAGE) * stride_ct + kvh * stride_ch
        if BLOCK_D == HEAD_DIM:
            kv_mask = ok[:, None]
        else:
            kv_mask = ok[:, None] & (d < HEAD_DIM)[None, :]
        k = tl.load(k_cache_ptr + offs[:, None] + d[None, :], mask=kv_mask, other=0.0)
        if UPCAST:
            k = k.to(tl.float32)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
        s = tl.where(nmask[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_cache_ptr + offs[:, None] + d[None, :], mask=kv_mask, other=0.0)
        if UPCAST:
            v = v.to(tl.float32)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m_i = m_new
    out_mask = gmask[:, None] & (d < HEAD_DIM)[None, :]
    if SPLIT:
        row = (seq * (GROUP * num_kv_heads) + heads).to(tl.int64) * num_parts + part
        tl.store(m_ptr + row, m_i, mask=gmask)
        tl.store(l_ptr + row, l_i, mask=gmask)
        tl.store(acc_ptr + row[:, None] * HEAD_DIM + d[None, :], acc, mask=out_mask)
    else:
        out = acc / l_i[:, None]
        tl.store(
            out_ptr + seq.to(tl.int64) * stride_os + heads[:, None] * stride_oh + d[None, :],
            out.to(out_ptr.dtype.element_ty), mask=out_mask,
        )


@triton.jit
def _paged_reduce_kernel(
    m_ptr, l_ptr, acc_ptr, out_ptr, context_lens_ptr, num_parts, stride_os, stride_oh,
    PART: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_P: tl.constexpr,
):
    # Combines the per-split (max, sum, unnormalised acc) of one (sequence, head), BLOCK_P splits
    # at a time so long contexts never hold all splits in registers.
    seq = tl.program_id(0)
    head = tl.program_id(1)
    ctx = tl.load(context_lens_ptr + seq)
    used = tl.cdiv(ctx, PART)
    base = (seq * tl.num_programs(1) + head).to(tl.int64) * num_parts
    d = tl.arange(0, BLOCK_D)
    dmask = d < HEAD_DIM
    p_base = tl.arange(0, BLOCK_P)
    m_max = tl.max(tl.full([BLOCK_P], float("-inf"), dtype=tl.float32), 0)
    for p0 in range(0, used, BLOCK_P):
        p = p0 + p_base
        m = tl.load(m_ptr + base + p, mask=p < used, other=float("-inf"))
        m_max = tl.maximum(m_max, tl.max(m, 0))
    l_sum = tl.sum(tl.zeros([BLOCK_P], dtype=tl.float32), 0)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for p0 in range(0, used, BLOCK_P):
        p = p0 + p_base
        pmask = p < used
        row = base + p
        m = tl.load(m_ptr + row, mask=pmask, other=float("-inf"))
        w = tl.where(pmask, tl.exp2(m - m_max), 0.0)
        l_sum += tl.sum(tl.load(l_ptr + row, mask=pmask, other=0.0) * w, 0)
        part_acc = tl.load(acc_ptr + row[:, None] * HEAD_DIM + d[None, :],
                           mask=pmask[:, None] & dmask[None, :], other=0.0)
        acc += tl.sum(part_acc * w[:, None], 0)
    out = acc / l_sum
    tl.store(out_ptr + seq.to(tl.int64) * stride_os + head * stride_oh + d, out.to(out_ptr.dtype.element_ty),
             mask=dmask)


def _decode_partition(num_seqs: int, num_kv_heads: int, max_context: int, block_n: int, cuda: bool,
                      target_programs: int) -> int:
    """Tokens per split: enough programs to fill the GPU, never below one tile (CPU: one tile)."""
    if not cuda:
        return block_n
    part = max(block_n, 2048)
    while part > block_n and num_seqs * num_kv_heads * triton.cdiv(max_context, part) < target_programs:
        part //= 2
    return part


def paged_attention_decode(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    block_tables: torch.Tensor,
    context_lens: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    num_seqs, num_heads, head_dim = query.shape
    num_blocks, page, num_kv_heads, _ = key_cache.shape
    out = torch.empty_like(query)
    if num_seqs == 0:
        return out
    group = num_heads // num_kv_heads
    cuda = query.is_cuda
    tune = TUNING["paged_attention_decode"]
    block_d = max(16, triton.next_power_of_2(head_dim))
    block_g = max(16, triton.next_power_of_2(group))
    if cuda:
        block_n, num_warps, num_stages = tune["block_n"], tune["num_warps"], tune["num_stages"]
        if query.dtype == torch.float32:
            block_n, num_stages = min(block_n, 32), min(num_stages, 2)
        # K and V tiles of every pipeline stage live in shared memory (228 KB per SM on Hopper).
        while block_n > 16 and num_stages * 2 * block_n * block_d * query.element_size() > _SMEM_BUDGET:
            block_n //= 2
    else:
        block_n, num_warps, num_stages = 16, 4, 1
    max_context = block_tables.shape[1] * page
    part = _decode_partition(num_seqs, num_kv_heads, max_context, block_n, cuda, tune["target_programs"])
    num_parts = triton.cdiv(max_context, part)
    split = num_parts > 1
    if split:
        m_buf = torch.empty((num_seqs * num_heads * num_parts,), dtype=torch.float32, device=query.device)
        l_buf = torch.empty_like(m_buf)
        acc_buf = torch.empty((num_seqs * num_heads * num_parts, head_dim), dtype=torch.float32,
                              device=query.device)
    else:
        m_buf = l_buf = acc_buf = out
    head_major = bool(tune["head_major"]) if cuda else True
    grid = (num_kv_heads, num_seqs, num_parts) if head_major else (num_seqs, num_kv_heads, num_parts)
    launcher = default_launcher()
    launcher.launch(
        "paged_attention_decode", _paged_decode_kernel, grid,
        (query, key_cache, value_cache, block_tables, context_lens, out, m_buf, l_buf, acc_buf,
         float(scale) * _LOG2E, num_blocks, num_parts, num_kv_heads,
         query.stride(0), query.stride(1), key_cache.stride(0), key_cache.stride(1), key_cache.stride(2),
         block_tables.stride(0), out.stride(0), out.stride(1)),
        num_warps=num_warps, num_stages=num_stages,
        GROUP=group, BLOCK_G=block_g, HEAD_DIM=head_dim, BLOCK_D=block_d, PAGE=page, BLOCK_N=block_n,
        PART=part, SPLIT=split, HEAD_MAJOR=head_major, PREFETCH_TABLE=bool(tune.get("prefetch_table", False)),
        PRECISION=_precision(query.dtype, cuda),
        UPCAST=_upcast(query.dtype, cuda),
    )
    if split:
        launcher.launch(
            "paged_attention_reduce", _paged_reduce_kernel, (num_seqs, num_heads),
            (m_buf, l_buf, acc_buf, out, context_lens, num_parts, out.stride(0), out.stride(1)),
            num_warps=4, num_stages=1,
            PART=part, HEAD_DIM=head_dim, BLOCK_D=block_d,
            BLOCK_P=min(triton.next_power_of_2(num_parts), 32 if cuda else 2),
        )
    return out


# --------------------------------------------------------------------------------------------------
# Prefill attention: causal, variable-length packed sequences, online softmax, GQA
# --------------------------------------------------------------------------------------------------
@triton.jit
def _prefill_tile(acc, m_i, l_i, q, k_ptr, v_ptr, rows_n0, n0, offs_m, d, kv_head, length, qk_scale,
                  stride_kt, stride_kh, stride_vt, stride_vh,
                  HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr,
                  MASKED: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    offs_n = n0 + tl.arange(0, BLOCK_N)
    cols = rows_n0 + offs_n.to(tl.int64)
    if MASKED:
        nmask = offs_n < length
        if BLOCK_D == HEAD_DIM:
            kv_mask = nmask[:, None]
        else:
            kv_mask = nmask[:, None] & (d < HEAD_DIM)[None, :]
        k = tl.load(k_ptr + cols[:, None] * stride_kt + kv_head * stride_kh + d[None, :], mask=kv_mask,
                    other=0.0)
    elif BLOCK_D == HEAD_DIM:
        k = tl.load(k_ptr + cols[:, None] * stride_kt + kv_head * stride_kh + d[None, :])
    else:
        k = tl.load(k_ptr + cols[:, None] * stride_kt + kv_head * stride_kh + d[None, :],
                    mask=(d < HEAD_DIM)[None, :], other=0.0)
    if UPCAST:
        k = k.to(tl.float32)
    s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
    if MASKED:
        s = tl.where((offs_m[:, None] >= offs_n[None, :]) & nmask[None, :], s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    alpha = tl.exp2(m_i - m_new)
    p = tl.exp2(s - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    if MASKED:
        v = tl.load(v_ptr + cols[:, None] * stride_vt + kv_head * stride_vh + d[None, :], mask=kv_mask,
                    other=0.0)
    elif BLOCK_D == HEAD_DIM:
        v = tl.load(v_ptr + cols[:, None] * stride_vt + kv_head * stride_vh + d[None, :])
    else:
        v = tl.load(v_ptr + cols[:, None] * stride_vt + kv_head * stride_vh + d[None, :],
                    mask=(d < HEAD_DIM)[None, :], other=0.0)
    if UPCAST:
        v = v.to(tl.float32)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
    return acc, m_new, l_i


@triton.jit
def _prefill_kernel(
    q_ptr, k_ptr, v_ptr, out_ptr, cu_ptr, qk_scale,
    stride_qt, stride_qh, stride_kt, stride_kh, stride_vt, stride_vh, stride_ot, stride_oh,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
):
    m_block = tl.program_id(0)
    seq = tl.program_id(1)
    head = tl.program_id(2)
    start = tl.load(cu_ptr + seq)
    length = tl.load(cu_ptr + seq + 1) - start
    m0 = m_block * BLOCK_M
    if m0 >= length:
        return
    kv_head = head // GROUP
    offs_m = m0 + tl.arange(0, BLOCK_M)
    d = tl.arange(0, BLOCK_D)
    mmask = offs_m < length
    if BLOCK_D == HEAD_DIM:
        qo_mask = mmask[:, None]
    else:
        qo_mask = mmask[:, None] & (d < HEAD_DIM)[None, :]
    rows = start.to(tl.int64) + offs_m
    q = tl.load(q_ptr + rows[:, None] * stride_qt + head * stride_qh + d[None, :], mask=qo_mask, other=0.0)
    if UPCAST:
        q = q.to(tl.float32)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    # Keys before this query block are fully visible and in range: no masks (BLOCK_M % BLOCK_N == 0).
    for n0 in range(0, m0, BLOCK_N):
        acc, m_i, l_i = _prefill_tile(acc, m_i, l_i, q, k_ptr, v_ptr, start.to(tl.int64), n0, offs_m, d,
                                      kv_head, length, qk_scale, stride_kt, stride_kh, stride_vt, stride_vh,
                                      HEAD_DIM, BLOCK_D, BLOCK_N, False, PRECISION, UPCAST)
    # The diagonal block(s): causal and length masks.
    hi = tl.minimum(length, m0 + BLOCK_M)
    for n0 in range(m0, hi, BLOCK_N):
        acc, m_i, l_i = _prefill_tile(acc, m_i, l_i, q, k_ptr, v_ptr, start.to(tl.int64), n0, offs_m, d,
                                      kv_head, length, qk_scale, stride_kt, stride_kh, stride_vt, stride_vh,
                                      HEAD_DIM, BLOCK_D, BLOCK_N, True, PRECISION, UPCAST)
    out = acc / l_i[:, None]
    tl.store(out_ptr + rows[:, None] * stride_ot + head * stride_oh + d[None, :],
             out.to(out_ptr.dtype.element_ty), mask=qo_mask)


def prefill_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, scale: float, max_seqlen: int
) -> torch.Tensor:
    total, num_heads, head_dim = q.shape
    out = torch.empty_like(q)
    num_seqs = cu_seqlens.shape[0] - 1
    if total == 0 or max_seqlen == 0:
        return out
    cuda = q.is_cuda
    block_d = max(16, triton.next_power_of_2(head_dim))
    tune = TUNING["prefill_attention"]
    if not cuda:
        block_m, block_n, num_warps, num_stages = 16, 16, 4, 1
    elif q.dtype == torch.float32 or block_d > 128:
        block_m, block_n, num_warps, num_stages = 64, 32, 4, 2
    else:
        block_m, block_n = tune["block_m"], tune["block_n"]
        num_warps, num_stages = tune["num_warps"], tune["num_stages"]
    if block_m % block_n:
        raise KernelInputError(f"prefill_attention: BLOCK_M {block_m} is not a multiple of BLOCK_N {block_n}")
    grid = (triton.cdiv(max_seqlen, block_m), num_seqs, num_heads)
    default_launcher().launch(
        "prefill_attention", _prefill_kernel, grid,
        (q, k, v, out, cu_seqlens, float(scale) * _LOG2E,
         q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
         out.stride(0), out.stride(1)),
        num_warps=num_warps, num_stages=num_stages,
        GROUP=num_heads // k.shape[1], HEAD_DIM=head_dim, BLOCK_D=block_d,
        BLOCK_M=block_m, BLOCK_N=block_n, PRECISION=_precision(q.dtype, cuda), UPCAST=_upcast(q.dtype, cuda),
    )
    return out

