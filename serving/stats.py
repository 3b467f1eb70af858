"""Plain stats dataclasses the engine returns; only stat loggers turn them into metrics, spans or logs."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["EngineStats", "FaultStats", "RequestMetrics"]


@dataclass(frozen=True)
class RequestMetrics:
    """Per-request timestamps (time.monotonic seconds) and counts, for vLLM-style histograms.

    queue time = first_scheduled - queued; prefill time = first_token - first_scheduled;
    decode time = finished - first_token; e2e = finished - arrival.
    """

    arrival: float
    queued: float
    first_scheduled: float | None
    first_token: float | None
    finished: float
    prompt_tokens: int
    generation_tokens: int
    preemptions: int
    tenant: str
    bucket: str
    max_tokens: int


@dataclass(frozen=True)
class FaultStats:
    """What the engine-side fault injector has done so far (counters are totals since start)."""

    enabled: bool = False
    active: tuple[str, ...] = ()
    oom_errors_total: int = 0
    leaked_bytes: int = 0
    fragmented_bytes: int = 0
    slow_steps_total: int = 0
    hangs_total: int = 0
    kv_capacity_blocks: int | None = None
    tokenizer_mismatch: bool = False


@dataclass(frozen=True)
class EngineStats:
    """A snapshot of the engine, cheap to take (one lock acquisition)."""

    model_name: str
    device: str
    scheduler: str
    running: int
    waiting: int
    kv_usage_ratio: float
    num_kv_blocks: int
    num_free_kv_blocks: int
    block_size: int
    bucket_depth: dict[str, int] = field(default_factory=dict)
    last_batch_size: int = 0
    last_prefill_batch_size: int = 0
    preemptions_total: int = 0
    prompt_tokens_total: int = 0
    generation_tokens_total: int = 0
    steps_total: int = 0
    iteration_tokens: dict[int, int] = field(default_factory=dict)  # steps by tokens the step processed
    kv_usage_steps: dict[float, int] = field(default_factory=dict)  # steps by their KV usage (4 decimals)
    requests_finished_total: dict[str, int] = field(default_factory=dict)  # by finish_reason
    tenant_running: dict[str, int] = field(default_factory=dict)
    tenant_waiting: dict[str, int] = field(default_factory=dict)
    tenant_finished_total: dict[str, int] = field(default_factory=dict)
    rejected_total: int = 0  # admission refusals (queue full)
    errors_total: dict[str, int] = field(default_factory=dict)  # by error kind (cuda_oom, ...)
    memory_bytes: int = 0
    faults: FaultStats = field(default_factory=FaultStats)
