"""Bad kernel inputs raise KernelInputError with a clear message before anything is launched."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

import gpuobs.kernels as K
from gpuobs.exporters.inprocess import launcher as L


@pytest.fixture(autouse=True)
def launcher(monkeypatch: pytest.MonkeyPatch) -> Iterator[L.KernelLauncher]:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    fresh = L.KernelLauncher(sample_rate=0.0)
    old = L.set_default_launcher(fresh)
    yield fresh
    L.set_default_launcher(old)


def paged_args(**over: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "query": torch.randn(2, 4, 16),
        "key_cache": torch.randn(6, 4, 2, 16),
        "value_cache": torch.randn(6, 4, 2, 16),
        "block_tables": torch.tensor([[0, 1], [2, 3]], dtype=torch.int32),
        "context_lens": torch.tensor([5, 8], dtype=torch.int32),
        "scale": 0.25,
    }
    args.update(over)
    return args


def prefill_args(**over: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "q": torch.randn(7, 4, 16),
        "k": torch.randn(7, 2, 16),
        "v": torch.randn(7, 2, 16),
        "cu_seqlens": torch.tensor([0, 3, 7], dtype=torch.int32),
        "scale": 0.25,
    }
    args.update(over)
    return args


BAD_CALLS: list[tuple[str, Callable[[], Any], str]] = [
    ("rms weight size", lambda: K.rms_norm(torch.randn(2, 8), None, torch.ones(7)), "weight has 7 elements"),
    (
        "rms residual shape",
        lambda: K.rms_norm(torch.randn(2, 8), torch.randn(2, 9), torch.ones(8)),
        "residual shape",
    ),
    (
        "rms dtype",
        lambda: K.rms_norm(torch.ones(2, 8, dtype=torch.int32), None, torch.ones(8)),
        "float32, float16 or bfloat16",
    ),
    (
        "rms mixed dtypes",
        lambda: K.rms_norm(torch.randn(2, 8), torch.randn(2, 8).half(), torch.ones(8)),
        "residual has dtype",
    ),
    ("rms non-contiguous", lambda: K.rms_norm(torch.randn(8, 2).t(), None, torch.ones(8)), "contiguous"),
    ("rms device", lambda: K.rms_norm(torch.randn(2, 8), None, torch.ones(8, device="meta")), "is on meta"),
    ("rms eps", lambda: K.rms_norm(torch.randn(2, 8), None, torch.ones(8), eps=0.0), "eps must be"),
    ("rms not a tensor", lambda: K.rms_norm([[1.0]], None, torch.ones(1)), "must be a torch.Tensor"),  # type: ignore[arg-type]
    ("silu odd", lambda: K.silu_and_mul(torch.randn(2, 7)), "even"),
    (
        "rope positions",
        lambda: K.rotary_embedding(
            torch.randn(3, 2, 8), torch.randn(3, 1, 8), torch.tensor([0, 1, 9]), *K.rope_cos_sin(8, 4)
        ),
        "positions must lie in [0, 4)",
    ),
    (
        "rope head dim",
        lambda: K.rotary_embedding(
            torch.randn(3, 2, 8),
            torch.randn(3, 1, 6),
            torch.zeros(3, dtype=torch.int64),
            *K.rope_cos_sin(8, 4),
        ),
        "k head_dim 6",
    ),
    (
        "rope float positions",
        lambda: K.rotary_embedding(
            torch.randn(3, 2, 8), torch.randn(3, 1, 8), torch.zeros(3), *K.rope_cos_sin(8, 4)
        ),
        "int32 or int64",
    ),
    (
        "rope last dim strided",
        lambda: K.rotary_embedding(
            torch.randn(3, 2, 16)[..., ::2],
            torch.randn(3, 1, 8),
            torch.zeros(3, dtype=torch.int64),
            *K.rope_cos_sin(8, 4),
        ),
        "contiguous in its last dim",
    ),
    (
        "paged block id too large",
        lambda: K.paged_attention_decode(
            **paged_args(block_tables=torch.tensor([[0, 1], [2, 6]], dtype=torch.int32))
        ),
        "block_tables[1, 1] = 6 outside [0, 6)",
    ),
    (
        "paged negative block id",
        lambda: K.paged_attention_decode(
            **paged_args(block_tables=torch.tensor([[-1, 1], [2, 3]], dtype=torch.int32))
        ),
        "block_tables[0, 0] = -1",
    ),
    (
        "paged context too long",
        lambda: K.paged_attention_decode(**paged_args(context_lens=torch.tensor([5, 9], dtype=torch.int32))),
        "context_lens[1] = 9 outside [1, 8]",
    ),
    (
        "paged empty context",
        lambda: K.paged_attention_decode(**paged_args(context_lens=torch.tensor([0, 1], dtype=torch.int32))),
        "context_lens[0] = 0",
    ),
    (
        "paged int64 tables",
        lambda: K.paged_attention_decode(**paged_args(block_tables=torch.tensor([[0, 1], [2, 3]]))),
        "block_tables must be int32",
    ),
    (
        "paged gqa ratio",
        lambda: K.paged_attention_decode(**paged_args(query=torch.randn(2, 3, 16))),
        "multiple of num_kv_heads",
    ),
    (
        "paged head dim",
        lambda: K.paged_attention_decode(**paged_args(query=torch.randn(2, 4, 8))),
        "cache head_dim 16 != query head_dim 8",
    ),
    (
        "paged cache dtype",
        lambda: K.paged_attention_decode(
            **paged_args(
                key_cache=torch.randn(6, 4, 2, 16).half(), value_cache=torch.randn(6, 4, 2, 16).half()
            )
        ),
        "key_cache has dtype",
    ),
    (
        "paged cache mismatch",
        lambda: K.paged_attention_decode(**paged_args(value_cache=torch.randn(6, 4, 1, 16))),
        "value_cache shape",
    ),
    (
        "paged seq count",
        lambda: K.paged_attention_decode(**paged_args(query=torch.randn(3, 4, 16))),
        "query has 3 sequences",
    ),
    ("paged scale", lambda: K.paged_attention_decode(**paged_args(scale=-1.0)), "scale must be"),
    (
        "prefill cu end",
        lambda: K.prefill_attention(**prefill_args(cu_seqlens=torch.tensor([0, 3, 6], dtype=torch.int32))),
        "end at total_tokens 7",
    ),
    (
        "prefill cu order",
        lambda: K.prefill_attention(**prefill_args(cu_seqlens=torch.tensor([0, 5, 3, 7], dtype=torch.int32))),
        "non-decreasing",
    ),
    (
        "prefill max_seqlen",
        lambda: K.prefill_attention(**prefill_args(), max_seqlen=3),
        "max_seqlen 3 < longest sequence 4",
    ),
    ("prefill kv shape", lambda: K.prefill_attention(**prefill_args(k=torch.randn(7, 3, 16))), "k shape"),
    (
        "prefill cu dtype",
        lambda: K.prefill_attention(**prefill_args(cu_seqlens=torch.tensor([0, 3, 7]))),
        "cu_seqlens must be int32",
    ),
    (
        "kv write slot",
        lambda: K.write_kv_cache(
            torch.randn(2, 2, 16),
            torch.randn(2, 2, 16),
            torch.zeros(2, 4, 2, 16),
            torch.zeros(2, 4, 2, 16),
            torch.tensor([0, 8]),
        ),
        "slot_mapping must lie in [0, 8)",
    ),
]


@pytest.mark.parametrize(("case", "call", "message"), BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_inputs_raise_before_launch(
    case: str, call: Callable[[], Any], message: str, launcher: L.KernelLauncher
) -> None:
    with pytest.raises(K.KernelInputError) as info:
        call()
    assert message in str(info.value), str(info.value)
    assert isinstance(info.value, ValueError)
    assert launcher.launch_counts() == {}, "nothing may be launched for a bad input"


def test_good_paged_call_launches(launcher: L.KernelLauncher) -> None:
    out = K.paged_attention_decode(**paged_args())
    assert out.shape == (2, 4, 16)
    assert launcher.launch_counts()["paged_attention_decode"] == 1


def test_import_without_torch_names_the_extra() -> None:
    """`import gpuobs.kernels` works without torch; calling a kernel says which extra to install."""
    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['triton'] = None\n"
        "import gpuobs.kernels as K\n"
        "from gpuobs.errors import MissingExtraError\n"
        "try:\n"
        "    K.silu_and_mul(None)\n"
        "except MissingExtraError as exc:\n"
        "    print('MISSING', exc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "MISSING" in proc.stdout and "gpuobs[kernels]" in proc.stdout
