"""Triton kernels against their PyTorch references on the CPU, under the Triton interpreter.

Random shapes (hypothesis, small sizes: each interpreted program instance costs about 1 ms) and
the three activation dtypes, with tolerances by dtype.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpuobs.kernels as K
from gpuobs.exporters.inprocess import launcher as L
from gpuobs.kernels import reference as R

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# (atol, rtol): outputs are rounded to the dtype, so a couple of ulps apart at most.
TOL = {torch.float32: (2e-5, 2e-5), torch.float16: (2e-3, 2e-3), torch.bfloat16: (2e-2, 2e-2)}
FAST = settings(max_examples=5, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def interpreter(monkeypatch: pytest.MonkeyPatch) -> Iterator[L.KernelLauncher]:
    """Run Triton on the CPU and count launches on a fresh launcher (no spans)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    launcher = L.KernelLauncher(sample_rate=0.0)
    old = L.set_default_launcher(launcher)
    yield launcher
    L.set_default_launcher(old)


def close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> None:
    atol, rtol = TOL[dtype]
    assert out.dtype == ref.dtype and out.shape == ref.shape
    torch.testing.assert_close(out.float(), ref.float(), atol=atol, rtol=rtol)


def randn(gen: torch.Generator, *shape: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(*shape, generator=gen).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(rows=st.integers(1, 5), hidden=st.integers(1, 300), with_residual=st.booleans(),
       eps=st.sampled_from([1e-6, 1e-5]), seed=st.integers(0, 2**16))
def test_rms_norm(dtype: torch.dtype, rows: int, hidden: int, with_residual: bool, eps: float, seed: int,
                  interpreter: L.KernelLauncher) -> None:
    gen = torch.Generator().manual_seed(seed)
    x = randn(gen, rows, hidden, dtype=dtype)
    res = randn(gen, rows, hidden, dtype=dtype) if with_residual else None
    w = randn(gen, hidden, dtype=dtype)
    before = interpreter.launch_counts().get("rms_norm", 0)
    x_copy = x.clone()
    out, res_out = K.rms_norm(x, res, w, eps)
    ref_out, ref_res = R.rms_norm(x, res, w, eps)
    assert interpreter.launch_counts()["rms_norm"] == before + 1
    close(out, ref_out, dtype)
    close(res_out, ref_res, dtype)
    assert torch.equal(x, x_copy)  # inputs untouched


def test_rms_norm_leading_dims() -> None:
    gen = torch.Generator().manual_seed(3)
    x, r = randn(gen, 2, 3, 64, dtype=torch.float32), randn(gen, 2, 3, 64, dtype=torch.float32)
    w = torch.ones(64)
    out, res = K.rms_norm(x, r, w)
    ref, ref_res = R.rms_norm(x, r, w, 1e-6)
    close(out, ref, torch.float32)
    close(res, ref_res, torch.float32)


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(lead=st.lists(st.integers(1, 3), min_size=1, max_size=2), d=st.integers(1, 150),
       seed=st.integers(0, 2**16))
def test_silu_and_mul(dtype: torch.dtype, lead: list[int], d: int, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    x = randn(gen, *lead, 2 * d, dtype=dtype) * 3
    out = K.silu_and_mul(x)
    assert out.shape == (*lead, d)
    close(out, R.silu_and_mul(x), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(tokens=st.integers(1, 6), heads=st.integers(1, 4), kv_heads=st.integers(1, 3),
       half=st.sampled_from([1, 3, 8, 16]), fused=st.booleans(), seed=st.integers(0, 2**16))
def test_rotary_embedding(dtype: torch.dtype, tokens: int, heads: int, kv_heads: int, half: int, fused: bool,
                          seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    dim = 2 * half
    cos, sin = K.rope_cos_sin(dim, 64)
    if fused:  # q and k as strided views into one qkv buffer, as a fused projection gives them
        qkv = randn(gen, tokens, (heads + 2 * kv_heads) * dim, dtype=dtype)
        q = qkv[:, : heads * dim].view(tokens, heads, dim)
        k = qkv[:, heads * dim : (heads + kv_heads) * dim].view(tokens, kv_heads, dim)
        v_before = qkv[:, (heads + kv_heads) * dim :].clone()
    else:
        q, k = randn(gen, tokens, heads, dim, dtype=dtype), randn(gen, tokens, kv_heads, dim, dtype=dtype)
    pos = torch.randint(0, 64, (tokens,), generator=gen, dtype=torch.int64)
    q_ref, k_ref = q.clone(), k.clone()
    R.rotary_embedding(q_ref, k_ref, pos, cos, sin)
    assert K.rotary_embedding(q, k, pos.to(torch.int32), cos, sin) is None
    close(q, q_ref, dtype)
    close(k, k_ref, dtype)
    if fused:
        assert torch.equal(qkv[:, (heads + kv_heads) * dim :], v_before)  # v untouched


def test_rotary_position_zero_is_identity() -> None:
    cos, sin = K.rope_cos_sin(8, 4)
    q, k = torch.randn(3, 2, 8), torch.randn(3, 1, 8)
    q0, k0 = q.clone(), k.clone()
    K.rotary_embedding(q, k, torch.zeros(3, dtype=torch.int64), cos, sin)
    assert torch.equal(q, q0) and torch.equal(k, k0)


def _paged_case(gen: torch.Generator, dtype: torch.dtype, seqs: int, kv_heads: int, group: int, dim: int,
                page: int, max_blocks: int, spare: int) -> tuple[torch.Tensor, ...]:
    num_blocks = seqs * max_blocks + spare
    kc = randn(gen, num_blocks, page, kv_heads, dim, dtype=dtype)
    vc = randn(gen, num_blocks, page, kv_heads, dim, dtype=dtype)
    bt = torch.randperm(num_blocks, generator=gen)[: seqs * max_blocks].view(seqs, max_blocks).to(torch.int32)
    lens = torch.randint(1, max_blocks * page + 1, (seqs,), generator=gen, dtype=torch.int32)
    q = randn(gen, seqs, kv_heads * group, dim, dtype=dtype)
    return q, kc, vc, bt, lens


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(seqs=st.integers(1, 4), kv_heads=st.integers(1, 2), group=st.sampled_from([1, 2, 3, 4]),
       dim=st.sampled_from([16, 24, 32]), page=st.sampled_from([1, 4, 8, 16]), max_blocks=st.integers(1, 6),
       spare=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_paged_attention_decode(dtype: torch.dtype, seqs: int, kv_heads: int, group: int, dim: int, page: int,
                                max_blocks: int, spare: int, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    q, kc, vc, bt, lens = _paged_case(gen, dtype, seqs, kv_heads, group, dim, page, max_blocks, spare)
    # Entries past a sequence's length are ignored: poison them with out-of-range ids.
    for s, n in enumerate(lens.tolist()):
        bt[s, (n + page - 1) // page :] = 10**6
    out = K.paged_attention_decode(q, kc, vc, bt, lens, dim**-0.5)
    close(out, R.paged_attention_decode(q, kc, vc, bt, lens, dim**-0.5), dtype)


@pytest.mark.parametrize("prefetch", [False, True])
def test_paged_decode_split_path_and_ragged_lengths(interpreter: L.KernelLauncher, prefetch: bool,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Long contexts take the split-K path (a second, reduce launch); short ones share the batch."""
    from gpuobs.kernels import triton_ops

    monkeypatch.setitem(triton_ops.TUNING, "paged_attention_decode",
                        {**triton_ops.TUNING["paged_attention_decode"], "prefetch_table": prefetch})
    gen = torch.Generator().manual_seed(11)
    q, kc, vc, bt, _ = _paged_case(gen, torch.float32, 4, 2, 4, 16, 4, 16, 0)
    lens = torch.tensor([1, 5, 33, 64], dtype=torch.int32)
    out = K.paged_attention_decode(q, kc, vc, bt, lens, 0.25)
    close(out, R.paged_attention_decode(q, kc, vc, bt, lens, 0.25), torch.float32)
    counts = interpreter.launch_counts()
    assert counts["paged_attention_decode"] == 1 and counts["paged_attention_reduce"] == 1


def test_paged_decode_matches_dense_attention() -> None:
    """One sequence whose blocks are in order equals plain softmax attention over its tokens."""
    gen = torch.Generator().manual_seed(5)
    kc, vc = randn(gen, 3, 4, 1, 16, dtype=torch.float32), randn(gen, 3, 4, 1, 16, dtype=torch.float32)
    q = randn(gen, 1, 2, 16, dtype=torch.float32)
    out = K.paged_attention_decode(q, kc, vc, torch.tensor([[0, 1, 2]], dtype=torch.int32),
                                   torch.tensor([10], dtype=torch.int32), 0.25)
    k, v = kc.reshape(12, 16)[:10], vc.reshape(12, 16)[:10]
    expected = torch.softmax(q[0] @ k.T * 0.25, dim=-1) @ v
    torch.testing.assert_close(out[0], expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(lengths=st.lists(st.integers(0, 40), min_size=1, max_size=3), kv_heads=st.integers(1, 2),
       group=st.sampled_from([1, 2, 3]), dim=st.sampled_from([16, 32]), seed=st.integers(0, 2**16))
def test_prefill_attention(dtype: torch.dtype, lengths: list[int], kv_heads: int, group: int, dim: int,
                           seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    total = sum(lengths)
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32)
    q = randn(gen, total, kv_heads * group, dim, dtype=dtype)
    k, v = randn(gen, total, kv_heads, dim, dtype=dtype), randn(gen, total, kv_heads, dim, dtype=dtype)
    out = K.prefill_attention(q, k, v, cu, dim**-0.5)
    close(out, R.prefill_attention(q, k, v, cu, dim**-0.5), dtype)


def test_prefill_is_causal_and_per_sequence() -> None:
    """Changing a later token, or another sequence, never changes an earlier token's output."""
    gen = torch.Generator().manual_seed(9)
    q, k, v = (randn(gen, 20, 2, 16, dtype=torch.float32) for _ in range(3))
    cu = torch.tensor([0, 12, 20], dtype=torch.int32)
    base = K.prefill_attention(q, k, v, cu, 0.25, max_seqlen=12)
    k2, v2 = k.clone(), v.clone()
    k2[7:], v2[7:] = 100.0, -100.0
    changed = K.prefill_attention(q, k2, v2, cu, 0.25, max_seqlen=12)
    torch.testing.assert_close(changed[:7], base[:7])
    assert not torch.allclose(changed[12:], base[12:])


def test_write_kv_cache_then_decode() -> None:
    """Tokens written through slot_mapping are what paged decode reads back."""
    kc, vc = torch.zeros(4, 4, 1, 16), torch.zeros(4, 4, 1, 16)
    key, value = torch.randn(6, 1, 16), torch.randn(6, 1, 16)
    bt = torch.tensor([[2, 0]], dtype=torch.int32)
    slots = torch.tensor([8, 9, 10, 11, 0, 1])  # block 2 rows 0-3, then block 0 rows 0-1
    K.write_kv_cache(key, value, kc, vc, slots)
    q = torch.randn(1, 1, 16)
    out = K.paged_attention_decode(q, kc, vc, bt, torch.tensor([6], dtype=torch.int32), 0.25)
    expected = torch.softmax(q[0] @ key[:, 0].T * 0.25, dim=-1) @ value[:, 0]
    torch.testing.assert_close(out[0], expected, atol=1e-5, rtol=1e-5)


def test_cpu_without_interpreter_uses_reference(monkeypatch: pytest.MonkeyPatch,
                                                interpreter: L.KernelLauncher) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    x = torch.randn(3, 32)
    out, _ = K.rms_norm(x, None, torch.ones(32))
    close(out, R.rms_norm(x, None, torch.ones(32), 1e-6)[0], torch.float32)
    # No Triton launch: the reference ran, and counts as a launch of the torch backend.
    assert interpreter.launch_counts_by_backend() == {("rms_norm", "torch"): 1}
    assert os.environ["TRITON_INTERPRET"] == "0"
