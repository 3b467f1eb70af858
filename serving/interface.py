"""What the HTTP and gRPC layers and the hot-swap manager need from an engine: request and event types and
the `EngineClient` protocol (as vLLM's `EngineClient`), so they depend on this contract, not on the engine.

Light on purpose (no torch): the servers import it at start-up; `gpuobs.serving.engine.Engine` implements
it, and tests can put a double behind it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from gpuobs.serving.liveness import EngineHealth
from gpuobs.serving.stats import EngineStats, RequestMetrics

if TYPE_CHECKING:
    from gpuobs.serving.faults import FaultInjector

__all__ = [
    "FINISH_REASONS",
    "EngineClient",
    "EngineHealth",
    "GenerationRequest",
    "SamplingParams",
    "TokenEvent",
    "TokenizerLike",
    "input_hash",
]

FINISH_REASONS = ("stop", "length", "abort", "deadline", "error")


@dataclass(frozen=True)
class SamplingParams:
    max_tokens: int = 16
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0
    seed: int | None = None
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False


@dataclass
class GenerationRequest:
    request_id: str
    prompt_token_ids: list[int]
    params: SamplingParams
    tenant: str = "default"
    priority: int = 0  # higher first
    deadline: float | None = None  # time.monotonic() deadline
    trace_context: Any = None  # opentelemetry.context.Context: parent of queue/prefill/decode spans


@dataclass(frozen=True)
class TokenEvent:
    request_id: str
    token_id: int | None
    finished: bool
    finish_reason: str | None  # "stop" | "length" | "abort" | "deadline" | "error"
    error: str | None = None
    metrics: RequestMetrics | None = None  # set on the final event (None when the engine failed)


def input_hash(token_ids: list[int]) -> str:
    """Short stable hash of a prompt (logged instead of the prompt itself)."""
    raw = ",".join(map(str, token_ids)).encode()
    return hashlib.sha256(raw).hexdigest()[:16]


class TokenizerLike(Protocol):
    """The engine's tokenizer as the servers use it."""

    @property
    def eos_token_id(self) -> int | None: ...

    @property
    def vocab_size(self) -> int: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


class EngineClient(Protocol):
    """A started engine, as the servers and the hot-swap manager drive it.

    `submit` is thread-safe and raises `InvalidRequestError`, `QueueFullError`, `EngineClosedError` or
    `EngineUnhealthyError` (gpuobs.serving.errors); `on_event` gets every token, then one final event.
    """

    @property
    def model_name(self) -> str: ...

    @property
    def device(self) -> str: ...

    @property
    def max_model_len(self) -> int: ...

    @property
    def tokenizer(self) -> TokenizerLike: ...

    @property
    def faults(self) -> FaultInjector: ...

    def start(self) -> None: ...

    def submit(self, req: GenerationRequest, on_event: Callable[[TokenEvent], None]) -> None: ...

    def abort(self, request_id: str) -> None: ...

    def health(self) -> EngineHealth: ...

    def stats(self) -> EngineStats: ...

    def forward_logits(
        self, input_ids: list[list[int]], attention_mask: list[list[int]]
    ) -> list[list[float]]: ...

    def memory_bytes(self) -> int: ...

    def stop(self, drain: bool = True, timeout_s: float = 30) -> None: ...
