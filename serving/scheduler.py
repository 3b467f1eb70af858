"""Schedulers: length-bucketed continuous batching (tenants, priorities, admission, preemption, deadlines)
and the FIFO static-batching baseline.

A scheduler owns the waiting queues and the running set and decides, once per engine step, which
sequences to prefill and which to decode. It holds the block manager's bookkeeping in step with
those decisions: prefilled sequences get their blocks, decoded ones their next slot, and when the
cache runs out the least important running sequence is preempted (its blocks freed, its tokens
recomputed by a later prefill). It never touches tensors, threads or telemetry.
"""

from __future__ import annotations

import enum
import itertools
import math
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpuobs.serving.errors import QueueFullError
from gpuobs.serving.kv_cache import BlockManager, NoFreeBlocksError

if TYPE_CHECKING:
    from gpuobs.serving.engine import GenerationRequest

__all__ = [
    "SCHEDULERS",
    "BucketedScheduler",
    "FifoStaticScheduler",
    "QueueFullError",
    "Scheduler",
    "SchedulerConfig",
    "SchedulerOutput",
    "SeqStatus",
    "SequenceState",
    "bucket_names",
    "make_scheduler",
]


class SeqStatus(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


_ids = itertools.count()


@dataclass(eq=False)
class SequenceState:
    """One request as the engine tracks it."""

    request: GenerationRequest
    arrival: float
    bucket: int
    bucket_name: str
    on_event: Any = None
    seq_id: str = field(default_factory=lambda: f"seq-{next(_ids)}")
    output_ids: list[int] = field(default_factory=list)
    status: SeqStatus = SeqStatus.WAITING
    queued: float = 0.0  # when it (last) entered a queue
    first_scheduled: float | None = None
    first_token: float | None = None
    preemptions: int = 0
    prefill_slots: list[int] = field(default_factory=list)
    decode_slot: int = -1
    extra: dict[str, Any] = field(default_factory=dict)  # engine-owned (spans, sampler)

    @property
    def request_id(self) -> str:
        return self.request.request_id

    @property
    def tenant(self) -> str:
        return self.request.tenant

    @property
    def priority(self) -> int:
        return self.request.priority

    @property
    def num_prompt_tokens(self) -> int:
        return len(self.request.prompt_token_ids)

    def all_token_ids(self) -> list[int]:
        return [*self.request.prompt_token_ids, *self.output_ids]

    @property
    def num_tokens(self) -> int:
        return self.num_prompt_tokens + len(self.output_ids)


@dataclass
class SchedulerConfig:
    """Knobs shared by both schedulers (see EngineConfig for their meaning)."""

    max_batch_size: int = 16
    max_prefill_tokens: int = 4096
    buckets: tuple[int, ...] = (64, 256, 1024)
    bucket_wait_s: tuple[float, ...] = (0.002, 0.005, 0.015, 0.03)
    max_queue_len: int = 256
    tenant_weights: dict[str, float] = field(default_factory=dict)
    # Share of the usable KV blocks admission keeps free for running sequences to grow into (vLLM's
    # `watermark`, 1%): at least one block when above 0. It follows the usable capacity, so a cache shrunk
    # at run time (the kv_shrink fault) admits as a server started with that few blocks would.
    watermark: float = 0.01


def bucket_names(bounds: tuple[int, ...]) -> list[str]:
    """Labels of the prompt-length buckets: bounds (64, 256) -> ["1-64", "65-256", "257+"]."""
    names, low = [], 1
    for b in bounds:
        names.append(f"{low}-{b}")
        low = b + 1
    names.append(f"{low}+")
    return names


@dataclass
class SchedulerOutput:
    """One step's decisions. Blocks/slots are already reserved for `prefill` and `decode`."""

    prefill: list[SequenceState] = field(default_factory=list)
    decode: list[SequenceState] = field(default_factory=list)
    copies: list[tuple[int, int]] = field(default_factory=list)  # copy-on-write block copies to do first
    preempted: list[SequenceState] = field(default_factory=list)
    expired: list[SequenceState] = field(default_factory=list)  # deadline passed: removed, blocks freed
    # Could never be admitted under the current (shrunk) KV capacity: removed, to fail with an error
    # instead of waiting forever.
    unfittable: list[SequenceState] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.prefill or self.decode or self.preempted or self.expired or self.unfittable)


class Scheduler(ABC):
    """Waiting queues + running set over one BlockManager. Not thread-safe: the engine locks around it."""

    name = "base"

    def __init__(self, config: SchedulerConfig, blocks: BlockManager) -> None:
        if len(config.bucket_wait_s) != len(config.buckets) + 1:
            raise ValueError(
                f"bucket_wait_s needs {len(config.buckets) + 1} entries (one per bucket incl. the last "
                f"open-ended one), got {len(config.bucket_wait_s)}"
            )
        if list(config.buckets) != sorted(set(config.buckets)) or (config.buckets and config.buckets[0] < 1):
            raise ValueError(f"buckets must be increasing positive bounds, got {config.buckets}")
        if not 0.0 <= config.watermark < 1.0:
            raise ValueError(f"watermark must be in [0, 1), got {config.watermark}")
        self.config = config
        self.blocks = blocks
        self.names = bucket_names(config.buckets)
        self.running: list[SequenceState] = []
        self.tenant_served: dict[str, float] = {}
        self.preemptions_total = 0
        self._service_s = 1.0  # EWMA of a request's time in the engine, for Retry-After

    @property
    def watermark_blocks(self) -> int:
        """Blocks admission leaves free: `watermark` of the usable blocks, at least one (none at 0)."""
        if self.config.watermark <= 0:
            return 0
        return max(1, int(self.blocks.capacity * self.config.watermark))

    # ---- buckets and ordering ------------------------------------------------------------------
    def bucket_of(self, prompt_len: int) -> int:
        for i, bound in enumerate(self.config.buckets):
            if prompt_len <= bound:
                return i
        return len(self.config.buckets)

    def _weight(self, tenant: str) -> float:
        return max(1e-6, float(self.config.tenant_weights.get(tenant, 1.0)))

    def _order_key(self, seq: SequenceState) -> tuple[float, float, float]:
        """Higher priority first, then the tenant furthest below its weighted share, then oldest."""
        share = self.tenant_served.get(seq.tenant, 0.0) / self._weight(seq.tenant)
        return (-seq.priority, share, seq.arrival)

    def account(self, tenant: str, tokens: int) -> None:
        """Record service given to a tenant (tokens processed) for weighted fairness."""
        self.tenant_served[tenant] = self.tenant_served.get(tenant, 0.0) + tokens

    def observe_service_time(self, seconds: float) -> None:
        self._service_s = 0.8 * self._service_s + 0.2 * max(0.0, seconds)

    def retry_after(self, depth: int) -> float:
        """Seconds until a queue of `depth` has likely drained enough to take one more."""
        waves = depth / max(1, self.config.max_batch_size) + 1
        return float(min(60.0, max(0.5, math.ceil(waves * self._service_s * 10) / 10)))

    # ---- queue management (per scheduler) -----------------------------------------------------------
    @abstractmethod
    def _enqueue(self, seq: SequenceState, front: bool) -> None: ...

    @abstractmethod
    def _queue_of(self, seq: SequenceState) -> list[SequenceState] | deque[SequenceState]: ...

    @abstractmethod
    def waiting(self) -> list[SequenceState]:
        """Every waiting sequence."""

    @abstractmethod
    def bucket_depths(self) -> dict[str, int]:
        """Waiting sequences per queue name."""

    @abstractmethod
    def _admit(self, now: float) -> list[SequenceState]:
        """Pick waiting sequences to prefill now (without reserving blocks)."""

    @abstractmethod
    def _check_admission(self, seq: SequenceState) -> None:
        """Raise QueueFullError if the sequence's queue is full."""

    def next_wakeup(self, now: float) -> float | None:
        """Seconds until a waiting sequence may become schedulable by time alone (None: no waiting)."""
        waiting = self.waiting()
        if not waiting:
            return None
        due = min(self._due_time(s) for s in waiting)
        deadlines = [s.request.deadline for s in waiting if s.request.deadline is not None]
        if deadlines:
            due = min(due, min(deadlines))
        return max(0.0, due - now)

    def _due_time(self, seq: SequenceState) -> float:
        return seq.queued + self.config.bucket_wait_s[seq.bucket]

    @property
    def num_waiting(self) -> int:
        return len(self.waiting())

    # ---- the public protocol ------------------------------------------------------------------------
    def add(self, seq: SequenceState, now: float) -> None:
        """Queue a new sequence or raise QueueFullError (the bounded queue is the admission control)."""
        self._check_admission(seq)
        seq.status = SeqStatus.WAITING
        seq.queued = now
        self._enqueue(seq, front=False)

    def remove(self, seq: SequenceState) -> None:
        """Take a sequence out (abort, finish, deadline) and free its blocks."""
        if seq.status is SeqStatus.RUNNING:
            self.running.remove(seq)
        elif seq.status is SeqStatus.WAITING:
            queue = self._queue_of(seq)
            if seq in queue:
                queue.remove(seq)
        self.blocks.free(seq.seq_id)
        seq.status = SeqStatus.FINISHED

    def _preempt(self, seq: SequenceState, now: float) -> None:
        self.running.remove(seq)
        self.blocks.free(seq.seq_id)
        seq.status = SeqStatus.WAITING
        seq.preemptions += 1
        seq.queued = now
        self.preemptions_total += 1
        self._enqueue(seq, front=True)

    def _victim(self) -> SequenceState:
        """The least important running sequence: lowest priority, then latest arrival."""
        return max(self.running, key=lambda s: (-s.priority, s.arrival))

    def schedule(self, now: float) -> SchedulerOutput:
        out = SchedulerOutput()
        # 1. deadlines
        for seq in [*self.running, *self.waiting()]:
            if seq.request.deadline is not None and now >= seq.request.deadline:
                self.remove(seq)
                out.expired.append(seq)
        # 2. a slot for every running sequence's next token, preempting when the cache is full
        for seq in sorted(self.running, key=lambda s: (-s.priority, s.arrival)):
            if seq.status is not SeqStatus.RUNNING:
                continue  # preempted earlier in this loop
            while True:
                try:
                    slot, copy = self.blocks.append_slot(seq.seq_id)
                except NoFreeBlocksError:
                    victim = self._victim()
                    self._preempt(victim, now)
                    out.preempted.append(victim)
                    if victim is seq:
                        break
                    continue
                seq.decode_slot = slot
                if copy is not None:
                    out.copies.append(copy)
                out.decode.append(seq)
                break
        out.decode = [s for s in out.decode if s.status is SeqStatus.RUNNING]
        # 3. waiting sequences that even an empty cache of the current capacity could not hold
        # (submission already refuses what the full cache cannot hold: only a shrunk cache can strand one)
        if self.blocks.capacity < self.blocks.num_blocks:
            limit = self.blocks.capacity - self.watermark_blocks
            for seq in self.waiting():
                if self.blocks.blocks_for(seq.num_tokens + 1) > limit:
                    self.remove(seq)
                    out.unfittable.append(seq)
        # 4. admissions (prefill) into the free batch slots, as the KV cache allows
        if not out.preempted:
            budget = self.config.max_prefill_tokens
            for seq in self._admit(now):
                n = seq.num_tokens
                need = self.blocks.blocks_for(n + 1)
                if len(self.running) >= self.config.max_batch_size:
                    break
                if need + self.watermark_blocks > self.blocks.num_free:
                    break
                if out.prefill and n > budget:
                    break
                self._queue_of(seq).remove(seq)
                seq.prefill_slots = self.blocks.allocate(seq.seq_id, n)
                seq.status = SeqStatus.RUNNING
                if seq.first_scheduled is None:
                    seq.first_scheduled = now
                self.running.append(seq)
                out.prefill.append(seq)
                budget -= n
        return out


class BucketedScheduler(Scheduler):
    """Continuous batching over per-length-bucket queues, each with its own wait budget.

    Free batch slots are refilled every step, from one bucket per step (a prefill batch of similar
    lengths). The picker trades wait time against batch fill: a bucket that can fill every free slot
    goes at once; one that cannot waits for more requests, but no longer than its wait budget. Once any
    bucket's oldest request has waited its budget (or a preempted request waits), the overdue buckets
    come first, earliest due time (oldest arrival + budget) first, so a long-prompt bucket is never
    starved by a stream of short prompts; among buckets that are not overdue and fill the free slots,
    the highest score `fill + oldest_wait / budget` wins. Inside a bucket: priority, then weighted
    tenant fairness, then arrival order.
    """

    name = "bucketed"

    def __init__(self, config: SchedulerConfig, blocks: BlockManager) -> None:
        super().__init__(config, blocks)
        self.queues: list[list[SequenceState]] = [[] for _ in self.names]

    def _enqueue(self, seq: SequenceState, front: bool) -> None:
        queue = self.queues[seq.bucket]
        if front:
            queue.insert(0, seq)
        else:
            queue.append(seq)

    def _queue_of(self, seq: SequenceState) -> list[SequenceState]:
        return self.queues[seq.bucket]

    def waiting(self) -> list[SequenceState]:
        return [s for q in self.queues for s in q]

    @property
    def num_waiting(self) -> int:
        return sum(len(q) for q in self.queues)

    def bucket_depths(self) -> dict[str, int]:
        return {name: len(q) for name, q in zip(self.names, self.queues, strict=True)}

    def _check_admission(self, seq: SequenceState) -> None:
        depth = len(self.queues[seq.bucket])
        if depth >= self.config.max_queue_len:
            raise QueueFullError(
                f"queue for prompt-length bucket {seq.bucket_name} is full ({depth} waiting)",
                self.retry_after(depth),
            )

    def _admit(self, now: float) -> list[SequenceState]:
        free = self.config.max_batch_size - len(self.running)
        if free <= 0:
            return []
        overdue: tuple[float, float, int] | None = None  # (due time, -score, bucket): earliest due first
        best: tuple[float, int] | None = None
        for i, queue in enumerate(self.queues):
            if not queue:
                continue
            oldest = min(s.queued for s in queue)
            waited = now - oldest
            budget = max(1e-6, self.config.bucket_wait_s[i])
            fill = min(len(queue), free) / free
            score = fill + waited / budget
            if waited >= budget or any(s.preemptions for s in queue):
                # Past its budget the bucket competes on its due time alone (earliest deadline first):
                # a waited/budget score would let a bucket with a small budget (short prompts) outrank a
                # long-prompt bucket for ever while its queue is never empty.
                key = (oldest + budget, -score, i)
                if overdue is None or key < overdue:
                    overdue = key
            elif fill >= 1.0 and (best is None or score > best[0]):
                best = (score, i)
        if overdue is not None:
            chosen = overdue[2]
        elif best is not None:
            chosen = best[1]
        else:
            return []
        return sorted(self.queues[chosen], key=self._order_key)


class FifoStaticScheduler(Scheduler):
    """The baseline: static batches in arrival order; a batch runs to completion before the next starts.

    When the engine is idle, the batch is formed from the oldest waiting requests once the queue can
    fill a whole batch or the oldest has waited the longest bucket budget; no request joins a running
    batch (finished sequences leave it, their slots stay empty).
    """

    name = "fifo_static"

    def __init__(self, config: SchedulerConfig, blocks: BlockManager) -> None:
        super().__init__(config, blocks)
        self.queue: deque[SequenceState] = deque()
        self._wait_s = max(config.bucket_wait_s)

    def _enqueue(self, seq: SequenceState, front: bool) -> None:
        if front:
            self.queue.appendleft(seq)
        else:
            self.queue.append(seq)

    def _queue_of(self, seq: SequenceState) -> deque[SequenceState]:
        return self.queue

    def waiting(self) -> list[SequenceState]:
        return list(self.queue)

    @property
    def num_waiting(self) -> int:
        return len(self.queue)

    def bucket_depths(self) -> dict[str, int]:
        return {"fifo": len(self.queue)}

    def _due_time(self, seq: SequenceState) -> float:
        return seq.queued + self._wait_s

    def _check_admission(self, seq: SequenceState) -> None:
        if len(self.queue) >= self.config.max_queue_len:
            depth = len(self.queue)
            raise QueueFullError(f"queue is full ({depth} waiting)", self.retry_after(depth))

    def _admit(self, now: float) -> list[SequenceState]:
        if self.running or not self.queue:
            return []
        waited = now - self.queue[0].queued
        full = len(self.queue) >= self.config.max_batch_size
        if not full and waited < self._wait_s and not self.queue[0].preemptions:
            return []
        return list(itertools.islice(self.queue, self.config.max_batch_size))


# The schedulers make_scheduler builds, by name (EngineConfig.scheduler, serve's --scheduler).
SCHEDULERS = ("bucketed", "fifo_static")


def make_scheduler(kind: str, config: SchedulerConfig, blocks: BlockManager) -> Scheduler:
    """`bucketed` (continuous batching) or `fifo_static` (the baseline)."""
    if kind == "bucketed":
        return BucketedScheduler(config, blocks)
    if kind == "fifo_static":
        return FifoStaticScheduler(config, blocks)
    raise ValueError(f"unknown scheduler {kind!r} (bucketed|fifo_static)")
