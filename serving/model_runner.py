"""The tensor side of the engine: one loaded model, its paged KV cache, the batched steps and the sampler.

The engine (requests, scheduling, spans, liveness) hands the runner the sequences the scheduler picked and
gets one sampled token per sequence back, as vLLM's model runner sits beside its scheduler; the runner
never sees threads, queues or telemetry. Sizing helpers (CPU threads, KV blocks) live here as well.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpuobs import cuda_errors
from gpuobs.errors import InputError
from gpuobs.serving.errors import InvalidRequestError
from gpuobs.serving.kv_cache import BlockManager, KVCache
from gpuobs.serving.scheduler import SequenceState

if TYPE_CHECKING:
    import torch

    from gpuobs.serving.model.llama import LlamaModel

__all__ = [
    "ModelRunner",
    "activation_bytes_per_token",
    "auto_num_blocks",
    "classify_step_error",
    "num_parameters",
    "set_cpu_threads",
    "step_activation_bytes",
]

SMALL_MODEL_BYTES = 256 * 1024**2  # below this, one CPU thread: ops too small to split suffer from contention


def set_cpu_threads(model: LlamaModel, threads: int | None) -> None:
    """torch's intra-op threads on CPU (process-wide): `threads`, or 1 for a small model."""
    import torch

    if threads is None and model.parameter_bytes() < SMALL_MODEL_BYTES:
        threads = 1
    if threads is not None:
        if threads < 1:
            raise InputError(f"cpu_threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)


def auto_num_blocks(
    model: LlamaModel, block_size: int, max_model_len: int, kv_cache_bytes: int, memory_fraction: float
) -> int:
    """KV blocks for the budget: `memory_fraction` of free GPU memory on CUDA, `kv_cache_bytes` on CPU;
    never fewer than one sequence of `max_model_len` needs."""
    per_block = model.kv_bytes_per_token() * block_size
    if str(model.device).startswith("cuda"):
        import torch

        free, _total = torch.cuda.mem_get_info(model.device)
        budget = int(free * memory_fraction)
    else:
        budget = kv_cache_bytes
    need_one = -(-max_model_len // block_size) + 1
    return max(need_one, budget // per_block)


def activation_bytes_per_token(model: LlamaModel) -> int:
    """Device bytes one token's activations take at the peak of a step: the residual stream and its norm,
    the q/k/v projections, the MLP's gate and up, and the logits (the simulated device's step footprint)."""
    c = model.config
    itemsize = int(getattr(model.dtype, "itemsize", 4) or 4)
    width = 2 * c.hidden_size + (c.num_attention_heads + 2 * c.num_key_value_heads) * c.head_dim
    return itemsize * (width + 2 * c.intermediate_size + c.vocab_size)


def step_activation_bytes(model: LlamaModel, query_lens: Sequence[int], context_lens: Sequence[int]) -> int:
    """Peak device bytes of a step's activations on the reference kernels: every query token's
    (`activation_bytes_per_token`) plus what attention materialises for the sequence that needs most (one at a
    time): K and V repeated to every head and the scores and their softmax, in float32, and for a prompt the
    causal mask. A long prompt's scores grow with its length squared."""
    c = model.config
    heads = c.num_attention_heads
    attention = 0
    for n, m in zip(query_lens, context_lens, strict=True):
        need = 4 * (2 * m * heads * c.head_dim + 2 * heads * n * m) + (2 * n * m if n > 1 else 0)
        attention = max(attention, need)
    return sum(query_lens) * activation_bytes_per_token(model) + attention


def num_parameters(model: LlamaModel) -> int:
    """Parameter count, from the weights' bytes and element size."""
    itemsize = int(getattr(model.dtype, "itemsize", 4) or 4)
    return int(model.parameter_bytes() // itemsize)


def classify_step_error(exc: BaseException) -> tuple[str, int | None, str | None]:
    """(error kind, CUDA error code, CUDA error name) of a failed model step: cuda_oom, cuda_error or
    python_exception."""
    import torch

    text = str(exc)
    if isinstance(exc, torch.OutOfMemoryError) or "out of memory" in text.lower():
        return "cuda_oom", 2, "cudaErrorMemoryAllocation"
    err = cuda_errors.from_text(text)
    if err is not None:
        return "cuda_error", err.code, err.name
    return "python_exception", None, None


class ModelRunner:
    """Batched prefill and decode over the paged KV cache, sampling, and the dense forward of gRPC Predict."""

    def __init__(self, model: LlamaModel, kv: KVCache, blocks: BlockManager, seed: int = 0) -> None:
        self.model = model
        self.kv = kv
        self.blocks = blocks
        self.seed = seed
        self._forward_lock = threading.Lock()

    def prefill(self, seqs: list[SequenceState]) -> list[int]:
        """Compute the KV entries of each sequence's tokens into its slots; one sampled token each."""
        import torch

        slots = torch.tensor(
            [x for s in seqs for x in s.prefill_slots], dtype=torch.long, device=self.model.device
        )
        logits = self.model.prefill([s.all_token_ids() for s in seqs], self.kv, slots)
        return self.sample(seqs, logits)

    def decode(self, seqs: list[SequenceState], copies: list[tuple[int, int]]) -> list[int]:
        """One decode step for each sequence (after the copy-on-write block copies); one token each."""
        import torch

        self.kv.copy_blocks(copies)
        dev = self.model.device
        tables = [self.blocks.block_table(s.seq_id) for s in seqs]
        width = max(len(t) for t in tables)
        padded = [t + [0] * (width - len(t)) for t in tables]
        bt = torch.tensor(padded, dtype=torch.int32, device=dev)
        positions = [s.num_tokens - 1 for s in seqs]
        ctx = torch.tensor([p + 1 for p in positions], dtype=torch.int32, device=dev)
        slots = torch.tensor([s.decode_slot for s in seqs], dtype=torch.long, device=dev)
        logits = self.model.decode([s.all_token_ids()[-1] for s in seqs], positions, self.kv, slots, bt, ctx)
        return self.sample(seqs, logits)

    def sample(self, seqs: list[SequenceState], logits: torch.Tensor) -> list[int]:
        """Greedy at temperature 0, else temperature + top-p with a per-request seeded generator."""
        import torch

        greedy = logits.argmax(dim=-1).tolist()
        out: list[int] = []
        for i, seq in enumerate(seqs):
            p = seq.request.params
            if p.temperature <= 0.0:
                out.append(int(greedy[i]))
                continue
            gen = seq.extra.get("generator")
            if gen is None:
                gen = torch.Generator()
                seed = p.seed if p.seed is not None else self.seed * 1_000_003 + hash(seq.seq_id)
                gen.manual_seed(seed & 0xFFFF_FFFF_FFFF)
                seq.extra["generator"] = gen
            probs = torch.softmax(logits[i].float().cpu() / p.temperature, dim=-1)
            if p.top_p < 1.0:
                sorted_p, idx = probs.sort(descending=True)
                keep = sorted_p.cumsum(0) - sorted_p < p.top_p
                sorted_p = sorted_p * keep
                probs = torch.zeros_like(probs).scatter(0, idx, sorted_p)
            out.append(int(torch.multinomial(probs / probs.sum(), 1, generator=gen).item()))
        return out

    def forward_logits(
        self, input_ids: list[list[int]], attention_mask: list[list[int]], max_model_len: int
    ) -> list[list[float]]:
        """Logits of the last attended token of each row (gRPC Predict); rows may be padded either side."""
        if len(input_ids) != len(attention_mask):
            raise InvalidRequestError("input_ids and attention_mask have different batch sizes")
        vocab = self.model.config.vocab_size
        rows: list[list[int]] = []
        for i, (ids, mask) in enumerate(zip(input_ids, attention_mask, strict=True)):
            if len(ids) != len(mask):
                raise InvalidRequestError(f"row {i}: input_ids and attention_mask lengths differ")
            kept = [t for t, m in zip(ids, mask, strict=True) if m]
            if not kept:
                raise InvalidRequestError(f"row {i}: attention_mask masks every token")
            if len(kept) > max_model_len:
                raise InvalidRequestError(
                    f"row {i}: {len(kept)} tokens exceed the maximum length {max_model_len}"
                )
            if any(not isinstance(t, int) or not 0 <= t < vocab for t in kept):
                raise InvalidRequestError(f"row {i}: token id outside the vocabulary [0, {vocab})")
            rows.append(kept)
        with self._forward_lock:
            return [self.model.forward_dense(r)[-1].tolist() for r in rows]

    def memory_bytes(self) -> int:
        """Model weights + KV cache tensors."""
        return int(self.model.parameter_bytes() + self.kv.nbytes())
