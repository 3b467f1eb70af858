"""Kernel benchmark: correctness on CUDA against the references, then speed against copy bandwidth,
torch eager and SDPA, and the launcher's overhead on a decode-step loop. Prints a table last.

    python bench/kernels.py [--json-out FILE] [--quick] [--skip PARTS] [--before-launcher OLD_LAUNCHER_PY]

On a machine without CUDA only the host-side launcher microbenchmark runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from gpuobs import kernels as K
from gpuobs.exporters.inprocess import launcher as L
from gpuobs.exporters.inprocess.timing import CudaEventTiming
from gpuobs.kernels import reference as R

RESULTS: list[dict[str, Any]] = []
BEFORE: Any = None  # an earlier launcher module (--before-launcher) measured side by side, or None
CHECKS: list[dict[str, Any]] = []
NOTES: list[str] = []


def log(msg: str) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------------------------------------
# timing helpers
# ---------------------------------------------------------------------------------------------
def bench_ms(fn: Callable[[], Any], warmup: int = 5, reps: int = 30) -> float:
    """Median GPU time of `reps` calls after `warmup` calls, CUDA events around each call.

    A GPU sleep queued before the start event keeps the GPU busy while the host enqueues the call,
    so the figure is device time, not host launch latency (the same for every variant timed).
    """
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(2_000_000)  # about 1 ms at H200 clocks
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out64, ref64 = out.double(), ref.double()
    if not torch.isfinite(out64).all():
        return math.inf
    return float((out64 - ref64).norm() / ref64.norm().clamp_min(1e-30))


TOL = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.2e-2}


def check(name: str, dtype: torch.dtype, pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    err = max(rel_err(o, r) for o, r in pairs)
    ok = err <= TOL[dtype]
    CHECKS.append({"kernel": name, "dtype": str(dtype).removeprefix("torch."), "rel_err": err, "ok": ok})
    log(f"check {name:24s} {dtype!s:16s} rel_err={err:.2e} {'ok' if ok else 'FAIL'}")


# ---------------------------------------------------------------------------------------------
# correctness on CUDA
# ---------------------------------------------------------------------------------------------
def correctness(dev: str) -> None:
    g = torch.Generator(device="cpu").manual_seed(1234)

    def rnd(*shape: int, dtype: torch.dtype) -> torch.Tensor:
        return torch.randn(*shape, generator=g).to(dtype).to(dev)

    for dt in (torch.float32, torch.float16, torch.bfloat16):
        # RMSNorm, with and without residual, odd hidden size
        for hidden in (4096, 5120 + 3):
            x, r, w = rnd(257, hidden, dtype=dt), rnd(257, hidden, dtype=dt), rnd(hidden, dtype=dt)
            o, ro = K.rms_norm(x, r, w, 1e-6)
            eo, ero = R.rms_norm(x, r, w, 1e-6)
            o2, _ = K.rms_norm(x, None, w, 1e-5)
            eo2, _ = R.rms_norm(x, None, w, 1e-5)
            check(f"rms_norm[h={hidden}]", dt, [(o, eo), (ro, ero), (o2, eo2)])
        # SiLU-mul
        x = rnd(3, 129, 2 * 1000, dtype=dt)
        check("silu_and_mul", dt, [(K.silu_and_mul(x), R.silu_and_mul(x))])
        # RoPE on views of a fused qkv buffer
        cos, sin = K.rope_cos_sin(128, 4096, device=dev)
        qkv = rnd(300, (32 + 2 * 8) * 128, dtype=dt)
        q = qkv[:, : 32 * 128].view(300, 32, 128)
        k = qkv[:, 32 * 128 : 40 * 128].view(300, 8, 128)
        pos = torch.randint(0, 4096, (300,), generator=g).to(dev)
        q_ref, k_ref = q.clone(), k.clone()
        R.rotary_embedding(q_ref, k_ref, pos, cos, sin)
        K.rotary_embedding(q, k, pos, cos, sin)
        check("rotary_embedding", dt, [(q, q_ref), (k, k_ref)])
        # paged decode: random block tables, ragged lengths, GQA ratios 1, 4, 8
        for heads, kv_heads, page in ((8, 8, 16), (32, 8, 16), (16, 2, 32)):
            seqs, max_blocks = 7, 64
            num_blocks = seqs * max_blocks + 5
            kc = rnd(num_blocks, page, kv_heads, 128, dtype=dt)
            vc = rnd(num_blocks, page, kv_heads, 128, dtype=dt)
            perm = torch.randperm(num_blocks, generator=g)[: seqs * max_blocks]
            bt = perm.view(seqs, max_blocks).int().to(dev)
            lens = torch.tensor([1, 2, page, page + 1, 517, 1000, max_blocks * page], dtype=torch.int32)
            lens = lens.to(dev)
            qd = rnd(seqs, heads, 128, dtype=dt)
            out = K.paged_attention_decode(qd, kc, vc, bt, lens, 128**-0.5)
            ref = R.paged_attention_decode(qd, kc, vc, bt, lens, 128**-0.5)
            check(f"paged_decode[{heads}/{kv_heads},p{page}]", dt, [(out, ref)])
        # varlen causal prefill, GQA 4
        lens_list = [1, 17, 128, 300, 0, 513]
        cu = torch.tensor([0, *torch.tensor(lens_list).cumsum(0).tolist()], dtype=torch.int32).to(dev)
        total = sum(lens_list)
        q, k, v = rnd(total, 16, 128, dtype=dt), rnd(total, 4, 128, dtype=dt), rnd(total, 4, 128, dtype=dt)
        check("prefill_attention", dt, [(K.prefill_attention(q, k, v, cu, 128**-0.5),
                                         R.prefill_attention(q, k, v, cu, 128**-0.5))])
    # validation raises before launch
    try:
        bad = torch.tensor([[10**6]], dtype=torch.int32, device=dev)
        cache = rnd(4, 16, 8, 128, dtype=torch.bfloat16)
        K.paged_attention_decode(rnd(1, 8, 128, dtype=torch.bfloat16), cache, cache, bad,
                                 torch.tensor([3], dtype=torch.int32, device=dev), 0.1)
        CHECKS.append({"kernel": "block_table_bounds", "dtype": "-", "rel_err": 0.0, "ok": False})
    except K.KernelInputError as exc:
        log(f"check block-table bounds raised before launch: {exc}")
        CHECKS.append({"kernel": "block_table_bounds", "dtype": "-", "rel_err": 0.0, "ok": True})


# ---------------------------------------------------------------------------------------------
# speed
# ---------------------------------------------------------------------------------------------
def add(name: str, shape: str, ms: float, nbytes: float, copy_gbs: float, base_name: str = "",
        base_ms: float | None = None, flops: float = 0.0, target: str = "", met: bool | None = None) -> None:
    gbs = nbytes / (ms * 1e-3) / 1e9
    row = {"kernel": name, "shape": shape, "us": ms * 1e3, "GB/s": gbs,
           "copy_pct": 100 * gbs / copy_gbs if copy_gbs else 0.0,
           "baseline": base_name, "base_us": base_ms * 1e3 if base_ms else None,
           "speedup": (base_ms / ms) if base_ms else None,
           "TFLOP/s": flops / (ms * 1e-3) / 1e12 if flops else None, "target": target, "met": met}
    RESULTS.append(row)
    log(json.dumps(row))


def _copy(dev: str, quick: bool) -> float:
    n = 1 << (28 if not quick else 24)  # bf16 elements: 512 MiB
    src = torch.randn(n, device=dev, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    copy_ms = bench_ms(lambda: dst.copy_(src))
    copy_gbs = 2 * n * 2 / (copy_ms * 1e-3) / 1e9
    add("copy (torch)", f"{n} bf16", copy_ms, 2 * n * 2, copy_gbs)
    return copy_gbs


def _rms(dev: str, quick: bool, copy_gbs: float) -> None:
    bf = torch.bfloat16
    rows, hidden = (32768 if not quick else 4096), 8192
    x, r = torch.randn(rows, hidden, device=dev, dtype=bf), torch.randn(rows, hidden, device=dev, dtype=bf)
    w = torch.randn(hidden, device=dev, dtype=bf)

    def eager_rms() -> Any:  # Hugging Face Llama's residual add + LlamaRMSNorm
        s = x + r
        var = s.float().pow(2).mean(-1, keepdim=True)
        return (s.float() * torch.rsqrt(var + 1e-6)).to(bf) * w, s

    t = bench_ms(lambda: K.rms_norm(x, r, w, 1e-6))
    te = bench_ms(eager_rms)
    nbytes = 4 * rows * hidden * 2
    gbs = nbytes / (t * 1e-3) / 1e9
    add("rms_norm+residual", f"{rows}x{hidden} bf16", t, nbytes, copy_gbs, "torch eager", te,
        target=">=80% copy, >=2x eager", met=gbs >= 0.8 * copy_gbs and te / t >= 2)


def _silu(dev: str, quick: bool, copy_gbs: float) -> None:
    rows, d = (16384 if not quick else 2048), 14336
    x = torch.randn(rows, 2 * d, device=dev, dtype=torch.bfloat16)
    t = bench_ms(lambda: K.silu_and_mul(x))
    te = bench_ms(lambda: F.silu(x[:, :d]) * x[:, d:])
    nbytes = 3 * rows * d * 2
    gbs = nbytes / (t * 1e-3) / 1e9
    add("silu_and_mul", f"{rows}x{2 * d} bf16", t, nbytes, copy_gbs, "torch eager", te,
        target=">=80% copy, >=2x eager", met=gbs >= 0.8 * copy_gbs and te / t >= 2)


def _rope(dev: str, quick: bool, copy_gbs: float) -> None:
    bf = torch.bfloat16
    tokens = 16384 if not quick else 2048
    q = torch.randn(tokens, 32, 128, device=dev, dtype=bf)
    k = torch.randn(tokens, 8, 128, device=dev, dtype=bf)
    cos, sin = K.rope_cos_sin(128, 8192, device=dev)
    pos = torch.randint(0, 8192, (tokens,), device=dev)
    t = bench_ms(lambda: K.rotary_embedding(q, k, pos, cos, sin))
    te = bench_ms(lambda: R.rotary_embedding(q, k, pos, cos, sin))
    nbytes = 2 * (q.numel() + k.numel()) * 2
    add("rotary_embedding", f"{tokens} tok 32/8 heads bf16", t, nbytes, copy_gbs, "torch eager", te)


def _sdpa_best(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **kw: Any) -> tuple[float, str, Any]:
    """Fastest SDPA variant: native GQA under each backend, or KV heads expanded."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    group = q.shape[1] // k.shape[1]
    variants: list[tuple[str, Callable[[], Any]]] = [
        ("gqa", lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw))]
    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
        def run(backend: Any = backend) -> Any:
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw)
        variants.append((name, run))
    ke, ve = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    variants.append(("expanded-kv", lambda: F.scaled_dot_product_attention(q, ke, ve, **kw)))
    best = (math.inf, "", None)
    for name, fn in variants:
        try:
            out = fn()
            ms = bench_ms(fn, warmup=3, reps=15)
        except Exception as exc:  # a backend that refuses these shapes
            NOTES.append(f"SDPA {name} unavailable for {tuple(q.shape)}: {str(exc).splitlines()[0][:80]}")
            continue
        NOTES.append(f"SDPA {name} {tuple(q.shape)} x {tuple(k.shape)}: {ms * 1e3:.1f} us")
        if ms < best[0]:
            best = (ms, name, out)
    return best


def _paged(dev: str, quick: bool, copy_gbs: float) -> None:
    bf = torch.bfloat16
    seqs, ctx, heads, kv_heads, dim, page = 64, 4096, 32, 8, 128, 16
    if quick:
        seqs = 16
    blocks_per_seq = ctx // page
    num_blocks = seqs * blocks_per_seq
    kc = torch.randn(num_blocks, page, kv_heads, dim, device=dev, dtype=bf)
    vc = torch.randn(num_blocks, page, kv_heads, dim, device=dev, dtype=bf)
    bt = torch.randperm(num_blocks, device=dev).view(seqs, blocks_per_seq).int()
    lens = torch.full((seqs,), ctx, dtype=torch.int32, device=dev)
    qd = torch.randn(seqs, heads, dim, device=dev, dtype=bf)
    scale = dim**-0.5
    t = bench_ms(lambda: K.paged_attention_decode(qd, kc, vc, bt, lens, scale, check_bounds=False))
    t_checked = bench_ms(lambda: K.paged_attention_decode(qd, kc, vc, bt, lens, scale))
    # SDPA on the same KV laid out contiguously [seqs, kv_heads, ctx, dim]
    k_c = torch.stack([R.paged_to_contiguous(kc, bt, s, ctx) for s in range(seqs)])
    v_c = torch.stack([R.paged_to_contiguous(vc, bt, s, ctx) for s in range(seqs)])
    k_c, v_c = k_c.transpose(1, 2).contiguous(), v_c.transpose(1, 2).contiguous()
    ts, sdpa_name, sdpa_out = _sdpa_best(qd.unsqueeze(2), k_c, v_c, scale=scale)
    ours = K.paged_attention_decode(qd, kc, vc, bt, lens, scale, check_bounds=False)
    err = rel_err(ours, sdpa_out.squeeze(2))
    CHECKS.append({"kernel": "paged_decode vs SDPA (big)", "dtype": "bfloat16", "rel_err": err,
                   "ok": err <= TOL[bf]})
    nbytes = 2 * seqs * ctx * kv_heads * dim * 2 + 2 * qd.numel() * 2
    gbs = nbytes / (t * 1e-3) / 1e9
    add("paged_decode", f"b{seqs} ctx{ctx} {heads}/{kv_heads}h d{dim} p{page} bf16", t, nbytes, copy_gbs,
        f"SDPA {sdpa_name}", ts, target=">=60% copy, <=1.25x SDPA",
        met=gbs >= 0.6 * copy_gbs and t <= 1.25 * ts)
    add("paged_decode+bounds check", "same, check_bounds=True (1 sync)", t_checked, nbytes, copy_gbs)


def _prefill(dev: str, quick: bool, copy_gbs: float) -> None:
    bf = torch.bfloat16
    heads, kv_heads, dim = 32, 8, 128
    scale = dim**-0.5
    b, seqlen = (16, 2048) if not quick else (4, 1024)
    total = b * seqlen
    q = torch.randn(total, heads, dim, device=dev, dtype=bf)
    k = torch.randn(total, kv_heads, dim, device=dev, dtype=bf)
    v = torch.randn(total, kv_heads, dim, device=dev, dtype=bf)
    cu = torch.arange(0, total + 1, seqlen, dtype=torch.int32, device=dev)
    t = bench_ms(lambda: K.prefill_attention(q, k, v, cu, scale, max_seqlen=seqlen))
    qb = q.view(b, seqlen, heads, dim).transpose(1, 2)
    kb = k.view(b, seqlen, kv_heads, dim).transpose(1, 2)
    vb = v.view(b, seqlen, kv_heads, dim).transpose(1, 2)
    ts, sdpa_name, sd = _sdpa_best(qb, kb, vb, is_causal=True, scale=scale)
    ours = K.prefill_attention(q, k, v, cu, scale, max_seqlen=seqlen)
    err = rel_err(ours, sd.transpose(1, 2).reshape(total, heads, dim))
    CHECKS.append({"kernel": "prefill vs SDPA (big)", "dtype": "bfloat16", "rel_err": err,
                   "ok": err <= TOL[bf]})
    flops = 4 * b * heads * seqlen * seqlen * dim / 2
    nbytes = (q.numel() * 2 + k.numel() * 2) * 2
    add("prefill_attention", f"{b}x{seqlen} causal {heads}/{kv_heads}h d{dim} bf16", t, nbytes, copy_gbs,
        f"SDPA {sdpa_name}", ts, flops=flops)


SWEEP: list[dict[str, Any]] = []


def _try(kernel: str, cfg: dict[str, Any], fn: Callable[[], Any], ref: torch.Tensor | None) -> float:
    try:
        out = fn()
        torch.cuda.synchronize()
        err = rel_err(out, ref) if ref is not None else 0.0
        ms = bench_ms(fn, warmup=2, reps=20) if err <= TOL[torch.bfloat16] else math.inf
    except Exception as exc:  # a config the compiler or the GPU refuses
        NOTES.append(f"sweep {kernel} {cfg}: {type(exc).__name__} {str(exc).splitlines()[0][:80]}")
        return math.inf
    SWEEP.append({"kernel": kernel, **cfg, "us": ms * 1e3, "rel_err": err})
    return ms


def tune(dev: str, quick: bool) -> None:
    """Sweep launch configurations on this GPU and keep the fastest correct one in TUNING."""
    from gpuobs.kernels import triton_ops as T

    bf = torch.bfloat16
    # SiLU-and-mul
    rows, d = (16384 if not quick else 2048), 14336
    x = torch.randn(rows, 2 * d, device=dev, dtype=bf)
    ref = F.silu(x[:, :d]) * x[:, d:]
    best: tuple[float, dict[str, Any]] = (math.inf, dict(T.TUNING["silu_and_mul"]))
    for block, warps in ((1024, 4), (2048, 4), (2048, 8), (4096, 8), (8192, 8)):
        cfg = {"block": block, "num_warps": warps}
        T.TUNING["silu_and_mul"] = cfg
        ms = _try("silu_and_mul", cfg, lambda: K.silu_and_mul(x), ref)
        best = min(best, (ms, cfg), key=lambda b: b[0])
    T.TUNING["silu_and_mul"] = best[1]

    # paged decode (the benchmark shape)
    seqs, ctx, heads, kv_heads, dim, page = (64 if not quick else 16), 4096, 32, 8, 128, 16
    num_blocks = seqs * ctx // page
    kc = torch.randn(num_blocks, page, kv_heads, dim, device=dev, dtype=bf)
    vc = torch.randn_like(kc)
    bt = torch.randperm(num_blocks, device=dev).view(seqs, ctx // page).int()
    lens = torch.full((seqs,), ctx, dtype=torch.int32, device=dev)
    qd = torch.randn(seqs, heads, dim, device=dev, dtype=bf)
    ref = K.paged_attention_decode(qd, kc, vc, bt, lens, dim**-0.5, check_bounds=False)
    base = dict(T.TUNING["paged_attention_decode"])
    best = (math.inf, base)
    for head_major in (True, False):
        for bn, warps, stages in ((32, 4, 3), (64, 4, 3), (64, 4, 4), (64, 8, 3), (128, 4, 2), (128, 8, 2)):
            cfg = {**base, "block_n": bn, "num_warps": warps, "num_stages": stages, "head_major": head_major}
            T.TUNING["paged_attention_decode"] = cfg
            ms = _try("paged_decode", cfg, lambda: K.paged_attention_decode(qd, kc, vc, bt, lens, dim**-0.5,
                                                                            check_bounds=False), ref)
            best = min(best, (ms, cfg), key=lambda b: b[0])
    for target, prefetch in ((1024, True), (256, False), (512, False), (2048, False)):
        cfg = {**best[1], "target_programs": target, "prefetch_table": prefetch}
        T.TUNING["paged_attention_decode"] = cfg
        ms = _try("paged_decode", cfg, lambda: K.paged_attention_decode(qd, kc, vc, bt, lens, dim**-0.5,
                                                                        check_bounds=False), ref)
        best = min(best, (ms, cfg), key=lambda b: b[0])
    T.TUNING["paged_attention_decode"] = best[1]

    # prefill
    b, seqlen = (16, 2048) if not quick else (4, 1024)
    total = b * seqlen
    q = torch.randn(total, heads, dim, device=dev, dtype=bf)
    k = torch.randn(total, kv_heads, dim, device=dev, dtype=bf)
    v = torch.randn(total, kv_heads, dim, device=dev, dtype=bf)
    cu = torch.arange(0, total + 1, seqlen, dtype=torch.int32, device=dev)
    ref = K.prefill_attention(q, k, v, cu, dim**-0.5, max_seqlen=seqlen)
    best = (math.inf, dict(T.TUNING["prefill_attention"]))
    for bm, bn, warps, stages in ((128, 64, 8, 3), (128, 128, 8, 3), (64, 64, 4, 3), (64, 64, 4, 4),
                                  (128, 64, 8, 4), (64, 32, 4, 3)):
        cfg = {"block_m": bm, "block_n": bn, "num_warps": warps, "num_stages": stages}
        T.TUNING["prefill_attention"] = cfg
        ms = _try("prefill", cfg, lambda: K.prefill_attention(q, k, v, cu, dim**-0.5, max_seqlen=seqlen), ref)
        best = min(best, (ms, cfg), key=lambda b: b[0])
    T.TUNING["prefill_attention"] = best[1]
    NOTES.append("tuned: " + json.dumps(T.TUNING))
    for row in SWEEP:
        log("sweep " + json.dumps(row))


def speed(dev: str, quick: bool) -> float:
    copy_gbs = _copy(dev, quick)
    for part in (_rms, _silu, _rope, _paged, _prefill):
        part(dev, quick, copy_gbs)
        torch.cuda.empty_cache()
    return copy_gbs


# ---------------------------------------------------------------------------------------------
# launcher overhead
# ---------------------------------------------------------------------------------------------
class _BareLauncher(L.KernelLauncher):
    """No instrumentation at all: the baseline of the overhead measurement."""

    def launch(self, name: str, kernel: Any, grid: Any, args: tuple[Any, ...], num_warps: int = 4,
               num_stages: int = 2, **meta: Any) -> Any:
        return kernel[grid](*args, num_warps=num_warps, num_stages=num_stages, **meta)


def _tracer_provider() -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def host_microbench() -> None:
    """Host cost of launcher.launch around a no-op 'kernel' (what the counter adds per launch)."""

    class _Noop:
        def __getitem__(self, grid: Any) -> Callable[..., None]:
            return self._run

        def _run(self, *args: Any, **kwargs: Any) -> None:
            return None

    noop = _Noop()
    bare = _BareLauncher(sample_rate=0.0)
    counted = L.KernelLauncher(sample_rate=0.0)
    provider, _ = _tracer_provider()
    sampled = L.KernelLauncher(sample_rate=0.01, tracer_provider=provider)
    args = (1, 2, 3)
    n = 200_000

    def per_call(launcher: L.KernelLauncher) -> float:
        best = math.inf
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(n):
                launcher.launch("noop", noop, (1,), args, num_warps=4, num_stages=1, BLOCK=16)
            best = min(best, (time.perf_counter() - t0) / n)
        return best

    b, c, s = per_call(bare), per_call(counted), per_call(sampled)
    RESULTS.append({"kernel": "launcher host cost", "shape": "no-op kernel", "us": (c - b) * 1e6,
                    "GB/s": None, "copy_pct": None, "baseline": "bare call", "base_us": b * 1e6,
                    "speedup": None, "TFLOP/s": None, "target": "<=1 us counter",
                    "met": (c - b) * 1e6 <= 1.0})
    RESULTS.append({"kernel": "launcher host cost 1% spans", "shape": "no-op kernel, host spans",
                    "us": (s - b) * 1e6, "GB/s": None, "copy_pct": None, "baseline": "bare call",
                    "base_us": b * 1e6, "speedup": None, "TFLOP/s": None, "target": "", "met": None})
    log(f"launcher host cost per launch: bare {b * 1e9:.0f} ns, counted +{(c - b) * 1e9:.0f} ns, "
        f"sampled 1% +{(s - b) * 1e9:.0f} ns")


def _load_before(path: str) -> Any:
    """Import an earlier copy of the launcher module (e.g. `git show REV:exporters/launcher.py`)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpuobs_launcher_before", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--before-launcher: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def launch_cost(dev: str, quick: bool = False) -> None:
    """Host time per launch of a real (tiny) Triton kernel: direct, through the launcher, 1% spans,
    and every launch traced (the host cost of one sampled launch, hot); the same for --before-launcher."""
    from gpuobs.kernels import triton_ops as T

    x = torch.randn(1, 64, device=dev, dtype=torch.bfloat16)
    out = torch.empty(1, 32, device=dev, dtype=torch.bfloat16)
    provider, exporter = _tracer_provider()

    def per_launch(fn: Callable[[], Any], n: int = 5000) -> float:
        n = n if not quick else 20
        best = math.inf
        for _ in range(5):
            exporter.clear()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best = min(best, (time.perf_counter() - t0) / n)
            torch.cuda.synchronize()
        return best

    def direct() -> Any:
        return T._silu_mul_kernel[(1, 1)](x, out, 32, num_warps=4, num_stages=1, BLOCK=32)

    def via(launcher: Any) -> Callable[[], Any]:
        return lambda: launcher.launch("silu_and_mul", T._silu_mul_kernel, (1, 1), (x, out, 32),
                                       num_warps=4, num_stages=1, BLOCK=32)

    direct()
    d = per_launch(direct)
    figures: dict[str, tuple[float, float, float]] = {}
    for label, module in (("now", L), ("before", BEFORE)):
        if module is None:
            continue
        counted = module.KernelLauncher(sample_rate=0.0)
        sampled = module.KernelLauncher(sample_rate=0.01, tracer_provider=provider, seed=1)
        every = module.KernelLauncher(sample_rate=1.0, tracer_provider=provider)
        c, s = per_launch(via(counted)), per_launch(via(sampled))
        sampled.flush(5.0)
        e = per_launch(via(every), 1000)
        every.flush(5.0)
        figures[label] = (c, s, e)
        NOTES.append(f"Triton launch host time ({label}): direct {d * 1e6:.2f} us, via launcher "
                     f"{c * 1e6:.2f} us (+{(c - d) * 1e9:.0f} ns), with 1% spans {s * 1e6:.2f} us "
                     f"(+{(s - d) * 1e9:.0f} ns, i.e. {(s - c) * 1e8:.0f} us per traced launch at 1%), "
                     f"every launch traced {e * 1e6:.2f} us (+{(e - c) * 1e6:.1f} us per traced launch, hot)")
        log(NOTES[-1])
    # The floor under any traced launch: the OpenTelemetry SDK building and exporting one span with
    # the same ten attributes (and with none), through the same processor and exporter.
    from opentelemetry import context as otel_context

    tracer = provider.get_tracer("bench")
    parent = otel_context.get_current()
    attrs = {f"gpuobs.kernel.attr{i}": ("text" if i % 2 else i) for i in range(10)}

    def sdk_span(attributes: Any) -> Callable[[], None]:
        def one() -> None:
            span = tracer.start_span("kernel.launch", context=parent, start_time=1, attributes=attributes)
            span.end(end_time=2)
        return one

    floor10, floor0 = per_launch(sdk_span(attrs), 2000), per_launch(sdk_span(None), 2000)
    NOTES.append(f"OpenTelemetry SDK span start+end+export (SimpleSpanProcessor, in-memory): "
                 f"{floor10 * 1e6:.1f} us with 10 attributes, {floor0 * 1e6:.1f} us with none")
    log(NOTES[-1])
    c, s, e = figures["now"]
    RESULTS.append({"kernel": "launcher on a Triton launch", "shape": "silu 1x64, host-bound loop",
                    "us": (c - d) * 1e6, "GB/s": None, "copy_pct": None, "baseline": "direct launch",
                    "base_us": d * 1e6, "speedup": None, "TFLOP/s": None, "target": "<=1 us counter",
                    "met": (c - d) * 1e6 <= 1.0})
    before = figures.get("before")
    RESULTS.append({"kernel": "traced launch extra host time", "shape": "silu 1x64, every launch traced",
                    "us": (e - c) * 1e6, "GB/s": None, "copy_pct": None,
                    "baseline": "before" if before else "", "base_us": (before[2] - before[0]) * 1e6 if before
                    else None, "speedup": (before[2] - before[0]) / (e - c) if before else None,
                    "TFLOP/s": None, "target": ">=2x cheaper" if before else "",
                    "met": (before[2] - before[0]) >= 2 * (e - c) if before else None})


def event_costs(dev: str) -> None:
    """Host cost of the CUDA-event steps of a sampled launch: fresh vs pooled events, query, elapsed."""
    timing = CudaEventTiming()
    x = torch.randn(1024, device=dev)
    n = 2000

    def timed(fn: Callable[[], Any]) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n * 1e6

    def fresh() -> None:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        x.add_(1)
        end.record()

    def pooled() -> None:
        token = timing.stop(timing.start(x.device))
        x.add_(1)
        timing.release(token)

    def plain() -> None:
        x.add_(1)

    token = timing.stop(timing.start(x.device))
    torch.cuda.synchronize()
    costs = {"torch op alone": timed(plain), "fresh event pair + op": timed(fresh),
             "pooled event pair + op (cached stream)": timed(pooled),
             "event query": timed(lambda: timing.ready(token)),
             "elapsed_time": timed(lambda: timing.elapsed_ms(token)),
             "torch.cuda.current_stream": timed(lambda: torch.cuda.current_stream(x.device)),
             "cached stream via raw handle": timed(lambda: timing.stream_of(x.device))}
    NOTES.append("CUDA event host costs (us): " + ", ".join(f"{k} {v:.2f}" for k, v in costs.items()))
    log(NOTES[-1])


def decode_loop_overhead(dev: str, quick: bool) -> None:
    """A Llama-8B-shaped decode step (8 layers, batch 64, ctx 1024) with vs without the launcher."""
    bf = torch.bfloat16
    layers, batch, ctx, hidden, heads, kv_heads, dim, inter, page = 8, 64, 1024, 4096, 32, 8, 128, 14336, 16
    if quick:
        layers = 2
    wqkv = torch.randn(hidden, (heads + 2 * kv_heads) * dim, device=dev, dtype=bf) * 0.02
    wo = torch.randn(heads * dim, hidden, device=dev, dtype=bf) * 0.02
    wgu = torch.randn(hidden, 2 * inter, device=dev, dtype=bf) * 0.02
    wd = torch.randn(inter, hidden, device=dev, dtype=bf) * 0.02
    norm_w = torch.ones(hidden, device=dev, dtype=bf)
    blocks = ctx // page
    kc = torch.randn(batch * blocks, page, kv_heads, dim, device=dev, dtype=bf)
    vc = torch.randn_like(kc)
    bt = torch.randperm(batch * blocks, device=dev).view(batch, blocks).int()
    lens = torch.full((batch,), ctx, dtype=torch.int32, device=dev)
    pos = torch.full((batch,), ctx - 1, dtype=torch.int64, device=dev)
    cos, sin = K.rope_cos_sin(dim, 4096, device=dev)
    h0 = torch.randn(batch, hidden, device=dev, dtype=bf)

    def step() -> torch.Tensor:
        h, res = h0, None
        for _ in range(layers):
            x, res = K.rms_norm(h, res, norm_w, 1e-6)
            qkv = x @ wqkv
            q = qkv[:, : heads * dim].view(batch, heads, dim)
            k = qkv[:, heads * dim : (heads + kv_heads) * dim].view(batch, kv_heads, dim)
            K.rotary_embedding(q, k, pos, cos, sin)
            attn = K.paged_attention_decode(q, kc, vc, bt, lens, dim**-0.5, check_bounds=False)
            h = attn.view(batch, heads * dim) @ wo
            x, res = K.rms_norm(h, res, norm_w, 1e-6)
            h = K.silu_and_mul(x @ wgu) @ wd
        return h

    provider, exporter = _tracer_provider()
    # Same seed: every 1% variant traces the same launches, so their rounds compare pairwise.
    variants: dict[str, Any] = {
        "bare": _BareLauncher(sample_rate=0.0),
        "bare again": _BareLauncher(sample_rate=0.0),
        "counter only": L.KernelLauncher(sample_rate=0.0),
        "1% spans (default)": L.KernelLauncher(sample_rate=0.01, tracer_provider=provider, seed=7),
        "1% spans, resolve each": L.KernelLauncher(sample_rate=0.01, tracer_provider=provider, seed=7,
                                                  resolve_batch=1),
        "1% spans, resolver thread": L.KernelLauncher(sample_rate=0.01, tracer_provider=provider, seed=7,
                                                     resolver="thread"),
    }
    if BEFORE is not None:
        variants["1% spans, before"] = BEFORE.KernelLauncher(sample_rate=0.01, tracer_provider=provider,
                                                             seed=7)
    steps = 10 if not quick else 4

    def run(launcher: Any) -> float:
        L.set_default_launcher(launcher)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        # Inside the timed region: spans still pending are built here (the GPU is done, so this only
        # builds them), and a variant that defers more work cannot push it out of the measurement.
        launcher.flush(5.0)
        return (time.perf_counter() - t0) / steps

    for launcher in variants.values():  # warm-up: compile everything
        run(launcher)
    rounds = 60 if not quick else 5
    import gc
    import random

    order = list(variants)
    rng = random.Random(0)
    samples: dict[str, list[float]] = {name: [] for name in variants}
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):  # paired rounds in random order: drifts cancel
            rng.shuffle(order)
            for name in order:
                samples[name].append(run(variants[name]))
    finally:
        gc.enable()
    variants["1% spans, resolver thread"].close()
    med = {name: statistics.median(v) for name, v in samples.items()}
    ratio = {name: statistics.median(a / b for a, b in zip(samples[name], samples["bare"], strict=True))
             for name in variants}
    spans = exporter.get_finished_spans()
    gpu_spans = [s for s in spans if (s.attributes or {}).get("gpuobs.kernel.timing") == "cuda_event"]
    launches = sum(variants["1% spans (default)"].launch_counts().values())
    NOTES.append(f"decode loop: {launches} launches in the default variant, {len(spans)} spans "
                 f"({len(gpu_spans)} GPU-timed); "
                 + ", ".join(f"{name} {ms * 1e3:.3f} ms/step (x{ratio[name]:.4f})"
                             for name, ms in med.items()))
    log(NOTES[-1])
    steps_run = (1 + rounds) * steps
    per_traced = []
    for name, launcher in variants.items():
        traced = getattr(launcher, "spans_started", 0)
        if traced and not isinstance(launcher, _BareLauncher):
            # Extra loop time per traced launch: what one sampled launch costs inside the loop (cold).
            cost_us = (ratio[name] - 1) * med["bare"] * 1e6 / (traced / steps_run)
            per_traced.append(f"{name} {cost_us:.0f} us ({traced / steps_run:.2f} traced/step)")
    if per_traced:
        NOTES.append("decode loop, extra time per traced launch: " + ", ".join(per_traced))
        log(NOTES[-1])
    for name in [n for n in variants if n != "bare"]:
        overhead = ratio[name] - 1
        RESULTS.append({"kernel": f"loop: {name}"[:32], "shape": f"{layers} layers b{batch} ctx{ctx}",
                        "us": med[name] * 1e6, "GB/s": None, "copy_pct": None, "baseline": "bare launches",
                        "base_us": med["bare"] * 1e6, "speedup": None, "TFLOP/s": None,
                        "target": "<=2% at 1% sampling" if name == "1% spans (default)" else "",
                        "met": overhead <= 0.02 if name == "1% spans (default)" else None,
                        "overhead_pct": 100 * overhead})
    L.set_default_launcher(None)


def cuda_error_mapping() -> None:
    """In a child process: an illegal address from a real kernel is mapped to 700 and counted."""
    code = textwrap.dedent("""
        import torch, triton, triton.language as tl
        from gpuobs.exporters.inprocess import launcher as L
        @triton.jit
        def bad(ptr, off):
            tl.store(ptr + off, 1.0)
        x = torch.zeros(4, device="cuda")
        lch = L.KernelLauncher(sample_rate=0.0)
        try:
            lch.launch("bad_store", bad, (1,), (x, 1 << 40), num_warps=1, num_stages=1)
            lch.synchronize()
        except Exception as exc:
            print("raised:", type(exc).__name__, str(exc)[:120])
        print("errors:", lch.error_counts())
    """)
    workdir = tempfile.mkdtemp()
    script = os.path.join(workdir, "bad_store.py")  # Triton reads kernel source from a file
    with open(script, "w", encoding="utf-8") as fh:
        fh.write(code)
    try:
        # cwd elsewhere: the checkout's own gpuobs/ folder must not shadow the linked package.
        proc = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120,
                              env=dict(os.environ), cwd=workdir)
        out = proc.stdout + proc.stderr[-2000:]
    except subprocess.TimeoutExpired:
        out = "timeout"
    ok = "'700', 'cudaErrorIllegalAddress', 'bad_store'" in out
    CHECKS.append({"kernel": "cuda error 700 mapped", "dtype": "-", "rel_err": 0.0, "ok": ok})
    shown = [line for line in out.splitlines() if line.startswith(("raised", "errors"))]
    log("cuda error mapping child: " + (" | ".join(shown) or out[-500:]))


# ---------------------------------------------------------------------------------------------
def table() -> str:
    lines = [f"{'kernel':32s} {'shape':40s} {'us':>9s} {'GB/s':>7s} {'%copy':>6s} {'baseline':>19s} "
             f"{'base us':>9s} {'x':>6s} {'met':>5s}"]
    for r in RESULTS:
        def f(v: Any, fmt: str) -> str:
            return format(v, fmt) if isinstance(v, int | float) else "-"
        extra = f" ({r['overhead_pct']:+.2f}%)" if "overhead_pct" in r else ""
        tfl = f" {r['TFLOP/s']:.0f} TFLOP/s" if r.get("TFLOP/s") else ""
        met = "-" if r["met"] is None else ("yes" if r["met"] else "NO")
        lines.append(f"{r['kernel'][:32]:32s} {r['shape'][:40]:40s} {f(r['us'], '9.1f')} "
                     f"{f(r['GB/s'], '7.0f')} "
                     f"{f(r['copy_pct'], '6.1f')} {r['baseline'][:19]:>19s} {f(r['base_us'], '9.1f')} "
                     f"{f(r['speedup'], '6.2f')} {met:>5s}{extra}{tfl}")
    bad = [c for c in CHECKS if not c["ok"]]
    lines.append(f"correctness: {len(CHECKS) - len(bad)}/{len(CHECKS)} checks ok"
                 + ("" if not bad else " FAILED: " + ", ".join(f"{c['kernel']} {c['dtype']}" for c in bad)))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json-out", help="write all figures as JSON here")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    parser.add_argument("--before-launcher", metavar="PATH",
                        help="an earlier launcher.py to measure side by side (launch, loop)")
    parser.add_argument("--skip", default="", help="parts to skip, comma-separated: "
                        "host,correctness,tune,speed,launch,events,loop,error")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    global BEFORE
    if args.before_launcher:
        BEFORE = _load_before(args.before_launcher)

    def guarded(name: str, fn: Callable[[], Any]) -> None:
        """One failing part is reported and the run goes on (a GPU call is too dear to lose)."""
        if name in skip:
            return
        t0 = time.perf_counter()
        try:
            fn()
        except Exception:
            import traceback

            traceback.print_exc()
            CHECKS.append({"kernel": f"part {name} crashed", "dtype": "-", "rel_err": 0.0, "ok": False})
        NOTES.append(f"part {name}: {time.perf_counter() - t0:.1f} s")

    guarded("host", host_microbench)
    if torch.cuda.is_available():
        import triton

        dev = "cuda"
        log(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
        guarded("correctness", lambda: correctness(dev))
        guarded("tune", lambda: tune(dev, args.quick))
        guarded("speed", lambda: speed(dev, args.quick))
        guarded("launch", lambda: launch_cost(dev, args.quick))
        guarded("events", lambda: event_costs(dev))
        guarded("loop", lambda: decode_loop_overhead(dev, args.quick))
        guarded("error", cuda_error_mapping)
    else:
        NOTES.append("no CUDA device: only the host launcher microbenchmark ran")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump({"results": RESULTS, "checks": CHECKS, "notes": NOTES, "sweep": SWEEP,
                       "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
                       "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}, fh, indent=1)
    for note in NOTES:
        log(note)
    log(table())
    return 0 if all(c["ok"] for c in CHECKS) else 1


if __name__ == "__main__":
    sys.exit(main())
