"""The serving engine: a background thread running continuous batching over a paged KV cache.

It implements `gpuobs.serving.interface.EngineClient`: `Engine(config)`, `start()`, `submit(request,
on_event)` (thread-safe; raises the errors of gpuobs.serving.errors), `abort(id)`, `health()`, `stats()`,
`forward_logits(...)`, `memory_bytes()`, `stop(drain, timeout_s)`, `faults`.

Events: every generated token is delivered as `TokenEvent(finished=False, token_id=...)`, then exactly
one final `TokenEvent(finished=True, token_id=None, finish_reason=..., metrics=...)`. A stop token
(EOS or `stop_token_ids`) is not delivered as a token but counts in `generation_tokens`. `on_event`
runs on the engine thread: hop to your own loop (loop.call_soon_threadsafe) and return quickly.

Liveness: the loop beats a heartbeat (liveness.py). An exception in one request's bookkeeping fails that
request and the loop goes on; a scheduler failure or anything else escaping the loop is a death: every
request in flight fails at once, new ones are refused, and `health()` says why. Nothing ends it silently.

Spans (engine_spans.py): `queue` per request, one `prefill` / `decode_step` per batch. The tensor work
(forward passes, sampling) is the model runner's (model_runner.py).

Over 500 lines on purpose: the loop, the per-request bookkeeping it does under one lock and the failure
paths that guard both share that lock and state, and read as one unit.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpuobs import cuda_errors
from gpuobs.errors import InputError
from gpuobs.exporters.inprocess.launcher import default_launcher
from gpuobs.names import logs as log_fields
from gpuobs.names import spans
from gpuobs.serving.engine_spans import EngineTracer
from gpuobs.serving.errors import (
    EngineClosedError,
    EngineUnhealthyError,
    InvalidRequestError,
    QueueFullError,
)
from gpuobs.serving.faults import FaultInjector
from gpuobs.serving.interface import (
    FINISH_REASONS,
    EngineClient,
    GenerationRequest,
    SamplingParams,
    TokenEvent,
    input_hash,
)
from gpuobs.serving.kv_cache import BlockManager, KVCache
from gpuobs.serving.liveness import EngineHealth, Heartbeat, default_stall_budget_s
from gpuobs.serving.model_runner import (
    ModelRunner,
    activation_bytes_per_token,
    auto_num_blocks,
    classify_step_error,
    num_parameters,
    set_cpu_threads,
    step_activation_bytes,
)
from gpuobs.serving.scheduler import (
    SCHEDULERS,
    Scheduler,
    SchedulerConfig,
    SequenceState,
    make_scheduler,
)
from gpuobs.serving.stats import EngineStats, RequestMetrics

if TYPE_CHECKING:

    from gpuobs.serving.model.tokenizer import HFTokenizer

__all__ = [
    "Engine",
    "EngineClosedError",
    "EngineConfig",
    "EngineHealth",
    "EngineStats",
    "EngineUnhealthyError",
    "GenerationRequest",
    "InvalidRequestError",
    "QueueFullError",
    "RequestMetrics",
    "SamplingParams",
    "TokenEvent",
    "input_hash",
]

logger = logging.getLogger(__name__)


@dataclass
class EngineConfig:
    """Everything an Engine needs. Defaults serve the embedded tiny model on CPU."""

    model_dir: str | None = None  # Hugging Face Llama directory; None = embedded tiny default
    model_name: str | None = None  # served name; default: directory name (or gpuobs-tiny-llama)
    device: str = "auto"  # cpu | cuda | cuda:N | auto
    dtype: str | None = None  # float32 | bfloat16 | float16; default float32 on CPU, config's on CUDA
    kernels: str = "auto"  # kernels (gpuobs.kernels dispatch) | reference | auto (kernels on CUDA)
    num_kv_blocks: int | None = None  # None: from kv_cache_bytes (CPU) / kv_cache_memory_fraction (CUDA)
    block_size: int = 16
    kv_cache_bytes: int = 64 * 1024**2  # CPU default KV budget
    kv_cache_memory_fraction: float = 0.5  # of free GPU memory after loading, on CUDA
    # Capacity of the simulated device that fault injection's memory faults fill on CPU (the serve's
    # --memory-budget-bytes); None: an H200's. On CUDA the real device is used.
    device_memory_bytes: int | None = None
    max_batch_size: int = 16
    max_model_len: int | None = None  # default: the model's max_position_embeddings
    max_prefill_tokens: int = 4096
    buckets: tuple[int, ...] = (64, 256, 1024)  # prompt-length upper bounds; a last open bucket follows
    bucket_wait_s: tuple[float, ...] = (0.002, 0.005, 0.015, 0.03)  # one per bucket incl. the last
    max_queue_len: int = 256  # per queue; beyond it submit() raises QueueFullError
    scheduler: str = "bucketed"  # bucketed | fifo_static
    tenant_weights: dict[str, float] = field(default_factory=dict)
    enable_fault_injection: bool = False
    seed: int = 0
    # torch intra-op threads on CPU (process-wide). None: 1 for small models (< 256 MiB of weights), whose
    # ops are too small to split and suffer badly from thread contention, else torch's default.
    cpu_threads: int | None = None
    # A model step (or loop turn) running longer than this makes /health answer 503 (the engine is stalled).
    # None: sized for the model by liveness.default_stall_budget_s (30 s for the embedded tiny model).
    stall_budget_s: float | None = None

    def check(self) -> None:
        """Refuse a setting no engine could run with, naming the field, before the model loads: found
        after the load, it is a traceback inside a log line (and, for a real model, a minute later)."""
        from gpuobs.serving.model.loader import DEVICE_CHOICES, DTYPES, KERNEL_BACKENDS, is_device_name

        def need(ok: bool, name: str, what: str) -> None:
            if not ok:
                raise InputError(f"{name} must be {what}, got {getattr(self, name)!r}")

        need(is_device_name(self.device), "device", DEVICE_CHOICES)
        need(self.dtype is None or self.dtype in DTYPES, "dtype", "float32, bfloat16 or float16")
        need(self.kernels in KERNEL_BACKENDS, "kernels", " | ".join(KERNEL_BACKENDS))
        need(self.scheduler in SCHEDULERS, "scheduler", " | ".join(SCHEDULERS))
        for name in ("block_size", "max_batch_size", "max_queue_len", "max_prefill_tokens", "kv_cache_bytes"):
            need(getattr(self, name) >= 1, name, ">= 1")
        for name in ("num_kv_blocks", "device_memory_bytes", "max_model_len", "cpu_threads"):
            need(getattr(self, name) is None or getattr(self, name) >= 1, name, ">= 1 (or none)")
        need(0.0 < self.kv_cache_memory_fraction <= 1.0, "kv_cache_memory_fraction", "in (0, 1]")
        need(self.stall_budget_s is None or 0.0 < self.stall_budget_s < math.inf, "stall_budget_s",
             "a number of seconds > 0 (or none)")
        need(all(b >= 1 for b in self.buckets) and list(self.buckets) == sorted(set(self.buckets)), "buckets",
             "increasing prompt lengths >= 1")
        need(len(self.bucket_wait_s) == len(self.buckets) + 1, "bucket_wait_s",
             f"{len(self.buckets) + 1} waits (one per bucket and one for the open-ended last)")
        need(all(0.0 <= w < math.inf for w in self.bucket_wait_s), "bucket_wait_s", "seconds >= 0")
        need(all(0.0 < w < math.inf for w in self.tenant_weights.values()), "tenant_weights", "weights > 0")


class _LoopFailure(Exception):
    """Raised inside the engine loop when a part it cannot recover from (the scheduler) failed."""

    def __init__(self, where: str, cause: BaseException) -> None:
        super().__init__(f"{where}: {cause}")
        self.where, self.cause = where, cause


class _FaultyTokenizer:
    """The engine's tokenizer: the model's, with the tokenizer-mismatch fault applied to decode."""

    def __init__(self, inner: HFTokenizer, faults: FaultInjector) -> None:
        self._inner = inner
        self._faults = faults
        self.eos_token_id = inner.eos_token_id
        self.bos_token_id = inner.bos_token_id
        self.vocab_size = inner.vocab_size

    def encode(self, text: str) -> list[int]:
        return self._inner.encode(text)

    def decode(self, ids: list[int]) -> str:
        return self._inner.decode(self._faults.map_decode_ids(list(ids), self.vocab_size))


class Engine:
    """Continuous-batching LLM engine over a paged KV cache, run by one background thread."""

    def __init__(self, config: EngineConfig, tracer_provider: Any = None) -> None:
        """Load the model and size the KV cache; `tracer_provider` defaults to the global one."""
        from gpuobs.serving.model.loader import load_model

        config.check()
        self.config = config
        loaded = load_model(config.model_dir, device=config.device, dtype=config.dtype,
                            kernels=config.kernels, name=config.model_name)
        self.model = loaded.model
        self.model_name: str = loaded.name
        self.model_path = loaded.path
        # what was loaded (the log's model_id, as the HTTP front end's lines give it); model_name is what
        # clients, Prometheus labels and spans call it
        self.model_id: str = str(self.model_path) if self.model_path else self.model_name
        self.device: str = str(self.model.device)
        self.device_id: int = self.model.device.index or 0 if self.device.startswith("cuda") else 0
        # Batch spans name their GPU, so RCA can compare steps across the GPUs of a fleet.
        self._span_device: dict[str, Any] = (
            {spans.GPU_INDEX: self.device_id} if self.device.startswith("cuda") else {})
        if self.device == "cpu":
            set_cpu_threads(self.model, config.cpu_threads)
        mc = self.model.config
        limit = mc.max_position_embeddings
        self.max_model_len = min(config.max_model_len or limit, limit)
        num_blocks = config.num_kv_blocks or auto_num_blocks(
            self.model, config.block_size, self.max_model_len, config.kv_cache_bytes,
            config.kv_cache_memory_fraction)
        self.blocks = BlockManager(num_blocks, config.block_size)
        self.kv = KVCache(mc.num_hidden_layers, num_blocks, config.block_size, mc.num_key_value_heads,
                          mc.head_dim, self.model.dtype, self.model.device)
        self.runner = ModelRunner(self.model, self.kv, self.blocks, config.seed)
        self.faults = FaultInjector(
            config.enable_fault_injection, self.device, self.device_id,
            device_bytes=config.device_memory_bytes, base_bytes=self.runner.memory_bytes(),
            activation_bytes_per_token=activation_bytes_per_token(self.model))
        self.faults.on_kv_capacity = self._set_kv_fraction
        self.faults.model_vocab_size = mc.vocab_size
        self.faults.model_name = self.model_name
        self.faults.model_id = self.model_id
        self.tokenizer = _FaultyTokenizer(loaded.tokenizer, self.faults)
        self._eos = set(mc.eos_token_ids)
        if loaded.tokenizer.eos_token_id is not None:
            self._eos.add(loaded.tokenizer.eos_token_id)
        try:
            self.scheduler: Scheduler = make_scheduler(
                config.scheduler,
                SchedulerConfig(
                    max_batch_size=config.max_batch_size, max_prefill_tokens=config.max_prefill_tokens,
                    buckets=tuple(config.buckets), bucket_wait_s=tuple(config.bucket_wait_s),
                    max_queue_len=config.max_queue_len, tenant_weights=dict(config.tenant_weights),
                ),
                self.blocks,
            )
        except ValueError as exc:
            raise InputError(str(exc)) from exc
        self._tracer = EngineTracer(tracer_provider)
        self.heartbeat = Heartbeat(self._stall_budget(config))
        self._cond = threading.Condition()
        self._by_request: dict[str, SequenceState] = {}
        self._aborts: set[str] = set()
        self._thread: threading.Thread | None = None
        self._accepting = True
        self._stopping = False
        # counters (written by the engine thread under the lock)
        self._last_batch = 0
        self._last_prefill = 0
        self._prompt_tokens = 0
        self._gen_tokens = 0
        self._steps = 0
        self._iteration_tokens: dict[int, int] = {}  # tokens processed in a step -> steps (vLLM's histogram)
        self._kv_usage_steps: dict[float, int] = {}  # KV usage a step ran at (4 decimals) -> steps
        self._finished: dict[str, int] = dict.fromkeys(FINISH_REASONS, 0)
        self._tenant_finished: dict[str, int] = {}
        self._rejected = 0
        self._errors: dict[str, int] = {}

    # ---- setup helpers ---------------------------------------------------------------------------
    def _stall_budget(self, config: EngineConfig) -> float:
        if config.stall_budget_s is not None:
            if not config.stall_budget_s > 0:
                raise InputError(f"stall_budget_s must be > 0 seconds, got {config.stall_budget_s}")
            return float(config.stall_budget_s)
        return default_stall_budget_s(
            num_parameters(self.model), config.max_prefill_tokens + config.max_batch_size, self.device)

    def _set_kv_fraction(self, fraction: float | None) -> int:
        with self._cond:
            blocks = self.blocks.num_blocks if fraction is None else int(self.blocks.num_blocks * fraction)
            self.blocks.set_capacity(blocks)
            self._cond.notify_all()
        return blocks

    # ---- public API --------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the background engine thread (idempotent)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name=f"engine-{self.model_name}", daemon=True)
        self._thread.start()

    def _validate(self, req: GenerationRequest) -> None:
        p = req.params
        n = len(req.prompt_token_ids)
        if not req.request_id:
            raise InvalidRequestError("request_id must not be empty")
        if n == 0:
            raise InvalidRequestError("the prompt is empty")
        if not isinstance(p.max_tokens, int) or p.max_tokens < 1:
            raise InvalidRequestError(f"max_tokens must be a positive integer, got {p.max_tokens!r}")
        if n + p.max_tokens > self.max_model_len:
            raise InvalidRequestError(
                f"prompt ({n} tokens) + max_tokens ({p.max_tokens}) exceeds the model's maximum context "
                f"length of {self.max_model_len} tokens"
            )
        capacity = self.blocks.num_blocks * self.blocks.block_size
        if n + p.max_tokens > capacity:
            raise InvalidRequestError(
                f"prompt + max_tokens ({n + p.max_tokens}) exceeds the KV cache ({capacity} tokens)"
            )
        vocab = self.model.config.vocab_size
        bad = next((t for t in req.prompt_token_ids if not isinstance(t, int) or not 0 <= t < vocab), None)
        if bad is not None:
            raise InvalidRequestError(f"token id {bad!r} is outside the vocabulary [0, {vocab})")
        if not 0.0 <= p.temperature <= 100.0:
            raise InvalidRequestError(f"temperature must be in [0, 100], got {p.temperature}")
        if not 0.0 < p.top_p <= 1.0:
            raise InvalidRequestError(f"top_p must be in (0, 1], got {p.top_p}")
        if any(not isinstance(t, int) or not 0 <= t < vocab for t in p.stop_token_ids):
            raise InvalidRequestError("stop_token_ids must be token ids inside the vocabulary")

    def submit(self, req: GenerationRequest, on_event: Callable[[TokenEvent], None]) -> None:
        """Queue a request (thread-safe). Raises InvalidRequestError, QueueFullError, EngineClosedError, or
        EngineUnhealthyError when the engine is dead or stalled (a prompt refusal instead of a hang)."""
        self._validate(req)
        health = self.health()
        if not health.alive:
            raise EngineUnhealthyError(health.reason or f"the engine is {health.state}")
        now = time.monotonic()
        seq = SequenceState(request=req, arrival=now, bucket=0, bucket_name="", on_event=on_event)
        seq.bucket = self.scheduler.bucket_of(seq.num_prompt_tokens)
        seq.bucket_name = self.scheduler.names[seq.bucket]
        with self._cond:
            if not self._accepting:
                raise EngineClosedError(f"engine for {self.model_name} is shutting down")
            if req.request_id in self._by_request:
                raise InvalidRequestError(f"request id {req.request_id!r} is already in flight")
            try:
                self.scheduler.add(seq, now)
            except QueueFullError:
                self._rejected += 1
                raise
            self._by_request[req.request_id] = seq
            seq.extra["queue_span"] = self._tracer.start(
                spans.SPAN_QUEUE, req.trace_context, attributes={
                    spans.GEN_AI_REQUEST_ID: req.request_id, spans.GPUOBS_BUCKET: seq.bucket_name,
                    spans.GPUOBS_TENANT: req.tenant, spans.GPUOBS_PRIORITY: req.priority})
            self._cond.notify_all()

    def health(self) -> EngineHealth:
        """Liveness from the heartbeat: dead (thread ended, loop failed) or stalled past the budget."""
        thread = self._thread
        return self.heartbeat.check(started=thread is not None,
                                    thread_alive=thread is not None and thread.is_alive(),
                                    stopping=self._stopping)

    def abort(self, request_id: str) -> None:
        """Stop a request; its final event has finish_reason "abort". Unknown ids are ignored."""
        with self._cond:
            if request_id in self._by_request:
                self._aborts.add(request_id)
                self._cond.notify_all()

    def stats(self) -> EngineStats:
        with self._cond:
            tenant_running: dict[str, int] = {}
            for s in self.scheduler.running:
                tenant_running[s.tenant] = tenant_running.get(s.tenant, 0) + 1
            waiting = self.scheduler.waiting()
            tenant_waiting: dict[str, int] = {}
            for s in waiting:
                tenant_waiting[s.tenant] = tenant_waiting.get(s.tenant, 0) + 1
            return EngineStats(
                model_name=self.model_name, device=self.device, scheduler=self.scheduler.name,
                running=len(self.scheduler.running), waiting=len(waiting),
                kv_usage_ratio=self.blocks.usage_ratio(), num_kv_blocks=self.blocks.num_blocks,
                num_free_kv_blocks=self.blocks.num_free, block_size=self.blocks.block_size,
                bucket_depth=self.scheduler.bucket_depths(), last_batch_size=self._last_batch,
                last_prefill_batch_size=self._last_prefill,
                preemptions_total=self.scheduler.preemptions_total, prompt_tokens_total=self._prompt_tokens,
                generation_tokens_total=self._gen_tokens, steps_total=self._steps,
                iteration_tokens=dict(self._iteration_tokens), kv_usage_steps=dict(self._kv_usage_steps),
                requests_finished_total=dict(self._finished), tenant_running=tenant_running,
                tenant_waiting=tenant_waiting, tenant_finished_total=dict(self._tenant_finished),
                rejected_total=self._rejected, errors_total=dict(self._errors),
                memory_bytes=self.memory_bytes(), faults=self.faults.stats(),
            )

    def forward_logits(
        self, input_ids: list[list[int]], attention_mask: list[list[int]]
    ) -> list[list[float]]:
        """Logits of the last attended token of each row (gRPC Predict); rows may be padded either side."""
        return self.runner.forward_logits(input_ids, attention_mask, self.max_model_len)

    def memory_bytes(self) -> int:
        """Model weights + KV cache (+ memory held by injected leaks), for hot-swap fit checks."""
        return self.runner.memory_bytes() + int(self.faults.leaked_bytes)

    def stop(self, drain: bool = True, timeout_s: float = 30) -> None:
        """Refuse new requests; with drain, let in-flight ones finish (up to timeout_s); abort the rest."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._cond:
            self._accepting = False
            pending = list(self._by_request) if self._thread is None else []
            while (drain and self._thread is not None and self._thread.is_alive() and self._by_request
                   and time.monotonic() < deadline):
                self._cond.wait(timeout=min(0.05, max(0.0, deadline - time.monotonic())))
            for rid in self._by_request:
                self._aborts.add(rid)
            self._cond.notify_all()
        self.faults.clear("hang")  # a step blocked by the hang fault must not hold up the shutdown
        if self._thread is not None:
            # one more loop turn delivers the aborts, then the thread ends
            end = time.monotonic() + 5.0
            while time.monotonic() < end and self._thread.is_alive():
                with self._cond:
                    if not self._by_request:
                        break
                    self._cond.notify_all()
                time.sleep(0.005)
            with self._cond:
                self._stopping = True
                self._cond.notify_all()
            self._thread.join(timeout=5.0)
        else:
            for rid in pending:
                seq = self._by_request.pop(rid)
                self.scheduler.remove(seq)
                self._emit_final(seq, "abort", None, time.monotonic())
        self.faults.clear()

    # ---- the engine thread ------------------------------------------------------------------------
    def _run(self) -> None:
        """The engine thread. Nothing ends it silently: a failure the loop cannot survive is a death, which
        fails every request in flight at once and makes liveness (`health()`) say why."""
        try:
            self._loop()
        except _LoopFailure as failure:
            self._die(failure.where, failure.cause)
        except BaseException as exc:
            self._die("the engine loop raised", exc)

    def _loop(self) -> None:
        busy_since_flush = False
        while True:
            self.heartbeat.beat()
            going_idle = False
            with self._cond:
                if self._stopping:
                    return
                now = time.monotonic()
                try:
                    finals = self._take_aborts()
                    out = self.scheduler.schedule(now)
                except Exception as exc:  # its queues and block tables may be inconsistent now
                    raise _LoopFailure("the scheduler raised", exc) from exc
                for seq in out.expired:
                    self._by_request.pop(seq.request_id, None)
                    finals.append((seq, "deadline", None))
                for seq in out.unfittable:
                    self._by_request.pop(seq.request_id, None)
                    finals.append((seq, "error", (
                        f"the KV cache holds {self.blocks.capacity} blocks of {self.blocks.block_size} "
                        f"tokens now, too few for this request's {seq.num_tokens} tokens")))
                for seq in out.preempted:
                    self._on_preempted(seq, now)
                if out.prefill or out.decode:  # the cache this step runs with, its blocks reserved
                    usage = round(self.blocks.usage_ratio(), 4)
                    self._kv_usage_steps[usage] = self._kv_usage_steps.get(usage, 0) + 1
                if not (out.prefill or out.decode) and not finals:
                    if busy_since_flush:
                        going_idle = True
                    else:
                        try:
                            wake = self.scheduler.next_wakeup(now)
                        except Exception as exc:
                            raise _LoopFailure("the scheduler raised", exc) from exc
                        self._cond.wait(timeout=0.05 if wake is None else min(0.05, max(wake, 0.0005)))
                        continue
            if going_idle:
                busy_since_flush = False
                try:
                    self._flush_kernel_spans()
                except Exception:  # telemetry must not take the engine down
                    logger.exception("flushing kernel spans failed")
                    self.heartbeat.survived()
                continue
            busy_since_flush = busy_since_flush or bool(out.prefill or out.decode)
            for seq, reason, error in finals:
                self._emit_final(seq, reason, error, time.monotonic())
            if out.prefill or out.decode:
                phase = "+".join(name for name, seqs in (("prefill", out.prefill), ("decode", out.decode))
                                 if seqs)
                try:
                    with self.heartbeat.step(phase):
                        self._step(out.prefill, out.decode, out.copies)
                except Exception as exc:  # a bug outside the model call: fail the batch, keep serving
                    logger.exception("engine step failed",
                                     extra=self._log_fields(None, {log_fields.EVENT: "engine_error"}))
                    self.heartbeat.survived()
                    self._finish_step([], [(phase, out.prefill + out.decode, exc)], time.monotonic())

    def _die(self, where: str, exc: BaseException) -> None:
        """The loop cannot go on: record why, refuse new requests, fail every request in flight now."""
        reason = f"{where}: {type(exc).__name__}: {exc}"[:500]
        self.heartbeat.fail(reason)
        with contextlib.suppress(Exception):
            logger.critical("engine dead: %s", reason, exc_info=exc,
                            extra=self._log_fields(None, {log_fields.EVENT: "engine_dead"}))
        with self._cond:
            self._accepting = False
            seqs = list(self._by_request.values())
            self._by_request.clear()
            self._aborts.clear()
            self._errors["engine_dead"] = self._errors.get("engine_dead", 0) + 1
            self._cond.notify_all()
        for seq in seqs:
            with contextlib.suppress(Exception):
                self._tracer.end(seq.extra.pop("queue_span", None), error=reason)
            self._send_final(seq, TokenEvent(seq.request_id, None, True, "error",
                                             error=f"the engine died: {reason}"))

    def _fail_request(self, seq: SequenceState, exc: BaseException) -> None:
        """The bookkeeping of one request raised (a MemoryError, a bug): fail that request, keep serving."""
        self.heartbeat.survived()
        with contextlib.suppress(Exception):
            logger.error("%s in the engine's bookkeeping of request %s: %s; the request fails",
                         type(exc).__name__, seq.request_id, exc, exc_info=exc,
                         extra=self._log_fields(None, {log_fields.REQUEST_ID: seq.request_id,
                                                       log_fields.EVENT: "engine_error"}))
        with self._cond:
            if self._by_request.get(seq.request_id) is seq:
                del self._by_request[seq.request_id]
            self._errors["engine_bookkeeping"] = self._errors.get("engine_bookkeeping", 0) + 1
            self._finished["error"] = self._finished.get("error", 0) + 1
            try:
                self.scheduler.remove(seq)  # idempotent: frees the blocks if they are still held
            except Exception as remove_exc:
                raise _LoopFailure("the scheduler raised", remove_exc) from remove_exc
            self._cond.notify_all()
        with contextlib.suppress(Exception):
            self._tracer.end(seq.extra.pop("queue_span", None), error=str(exc)[:200])
        self._send_final(seq, TokenEvent(
            seq.request_id, None, True, "error",
            error=f"{type(exc).__name__} in the engine's bookkeeping of this request: {exc}"))

    def _send_final(self, seq: SequenceState, event: TokenEvent) -> None:
        """Deliver a request's final event, once whatever path gets there first."""
        if seq.extra.get("final_sent"):
            return
        seq.extra["final_sent"] = True
        self._deliver(seq, event)

    @staticmethod
    def _flush_kernel_spans() -> None:
        """Going idle: end the sampled kernel.launch spans the launcher batches, so traces are complete."""
        default_launcher().flush(timeout_s=1.0)

    def _take_aborts(self) -> list[tuple[SequenceState, str, str | None]]:
        finals: list[tuple[SequenceState, str, str | None]] = []
        for rid in self._aborts:
            seq = self._by_request.pop(rid, None)
            if seq is not None:
                self.scheduler.remove(seq)
                finals.append((seq, "abort", None))
        self._aborts.clear()
        return finals

    def _on_preempted(self, seq: SequenceState, now: float) -> None:
        logger.warning(
            "Preempted request %s (KV cache full): its %d tokens will be recomputed", seq.request_id,
            seq.num_tokens, extra=self._log_fields(seq, {log_fields.EVENT: "preemption"}))
        seq.extra["queue_span"] = self._tracer.start(
            spans.SPAN_QUEUE, seq.request.trace_context, attributes={
                spans.GEN_AI_REQUEST_ID: seq.request_id, spans.GPUOBS_BUCKET: seq.bucket_name,
                spans.GPUOBS_PREEMPTED: True, spans.GPUOBS_TENANT: seq.tenant})

    def _log_fields(self, seq: SequenceState | None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        fields: dict[str, Any] = {log_fields.MODEL_NAME: self.model_name, log_fields.MODEL_ID: self.model_id,
                                  log_fields.DEVICE_ID: self.device_id}
        if seq is not None:
            fields[log_fields.REQUEST_ID] = seq.request_id
            fields[log_fields.INPUT_HASH] = input_hash(seq.request.prompt_token_ids)
            fields[log_fields.TENANT] = seq.tenant
        fields.update(extra or {})
        return fields

    def _step(
        self, prefill: list[SequenceState], decode: list[SequenceState], copies: list[tuple[int, int]]
    ) -> None:
        now = time.monotonic()
        for seq in prefill:
            span = seq.extra.pop("queue_span", None)
            self._tracer.end(span)
        results: list[tuple[SequenceState, int]] = []
        failed: list[tuple[str, list[SequenceState], BaseException]] = []  # (phase, its sequences, error)
        if prefill:
            tokens = sum(s.num_tokens for s in prefill)
            with self._tracer.batch_span(spans.SPAN_PREFILL, prefill, {
                    spans.GPUOBS_BATCH_SIZE: len(prefill), spans.GPUOBS_PREFILL_TOKENS: tokens,
                    spans.GPUOBS_BUCKET: prefill[0].bucket_name, **self._span_device}) as span:
                try:
                    lens = [s.num_tokens for s in prefill]
                    self.faults.before_step("prefill", self._activation_bytes(lens, lens), tuple(
                        s.num_prompt_tokens for s in prefill if s.first_token is None))
                    results += zip(prefill, self.runner.prefill(prefill), strict=True)
                except Exception as exc:
                    self._tracer.mark_error(span, exc)
                    failed.append(("prefill", prefill, exc))
            with self._cond:
                self._last_prefill = len(prefill)
                self._prompt_tokens += sum(s.num_prompt_tokens for s in prefill if s.first_token is None)
                for s in prefill:
                    self.scheduler.account(s.tenant, s.num_tokens)
        if decode:
            with self._tracer.batch_span(spans.SPAN_DECODE_STEP, decode, {
                    spans.GPUOBS_BATCH_SIZE: len(decode), **self._span_device}) as span:
                try:
                    self.faults.before_step(
                        "decode", self._activation_bytes([1] * len(decode), [s.num_tokens for s in decode]))
                    results += zip(decode, self.runner.decode(decode, copies), strict=True)
                except Exception as exc:
                    self._tracer.mark_error(span, exc)
                    failed.append(("decode", decode, exc))
            with self._cond:
                self._last_batch = len(decode)
                for s in decode:
                    self.scheduler.account(s.tenant, 1)
        step_tokens = sum(s.num_tokens for s in prefill) + len(decode)
        with self._cond:
            self._iteration_tokens[step_tokens] = self._iteration_tokens.get(step_tokens, 0) + 1
        self._finish_step(results, failed, now)

    def _activation_bytes(self, query_lens: list[int], context_lens: list[int]) -> int:
        """What a step's activations take on the simulated device, while a fault makes it matter."""
        if not self.faults.simulates_memory:
            return 0
        return step_activation_bytes(self.model, query_lens, context_lens)

    def _finish_step(self, results: list[tuple[SequenceState, int]],
                     failed: list[tuple[str, list[SequenceState], BaseException]], started: float) -> None:
        now = time.monotonic()
        events: list[tuple[SequenceState, TokenEvent]] = []
        finals: list[tuple[SequenceState, str, str | None]] = []
        broken: list[tuple[SequenceState, BaseException]] = []
        with self._cond:
            self._steps += 1
            for seq, token in results:
                if seq.request_id not in self._by_request or self._by_request[seq.request_id] is not seq:
                    continue  # aborted meanwhile
                try:
                    self._take_token(seq, token, now, events, finals)
                except Exception as token_exc:
                    broken.append((seq, token_exc))
            for phase, seqs, exc in failed:
                kind, code, name = classify_step_error(exc)
                self._errors[kind] = self._errors.get(kind, 0) + 1
                cuda = cuda_errors.by_code(code) if code is not None else None
                if cuda is not None:  # every CUDA error the process hits, not only those inside a launch
                    default_launcher().count_error(exc, cuda, kernel=phase)  # outside a launch: the phase
                for seq in seqs:
                    if self._by_request.get(seq.request_id) is not seq:
                        continue
                    try:
                        self._by_request.pop(seq.request_id, None)
                        self.scheduler.remove(seq)
                        finals.append((seq, "error", f"{type(exc).__name__}: {exc}"))
                        logger.error("%s in a model step: %s", type(exc).__name__, exc,
                                     extra=self._log_fields(seq, {
                                         log_fields.CUDA_ERROR_CODE: code, log_fields.CUDA_ERROR_NAME: name,
                                         log_fields.EVENT: kind}))
                    except Exception as bookkeeping_exc:
                        broken.append((seq, bookkeeping_exc))
            self._cond.notify_all()
        for seq, broken_exc in broken:
            self._fail_request(seq, broken_exc)
        for seq, event in events:
            if not seq.extra.get("final_sent"):
                self._deliver(seq, event)
        for seq, reason, error in finals:
            self._emit_final(seq, reason, error, now)

    def _take_token(self, seq: SequenceState, token: int, now: float,
                    events: list[tuple[SequenceState, TokenEvent]],
                    finals: list[tuple[SequenceState, str, str | None]]) -> None:
        """Per-request bookkeeping of one sampled token (under the lock)."""
        p = seq.request.params
        seq.output_ids.append(token)
        self._gen_tokens += 1
        if seq.first_token is None:
            seq.first_token = now
        stop = (token in p.stop_token_ids) or (not p.ignore_eos and token in self._eos)
        if not stop:
            events.append((seq, TokenEvent(seq.request_id, token, False, None)))
        reason = "stop" if stop else (
            "length" if len(seq.output_ids) >= p.max_tokens or seq.num_tokens >= self.max_model_len
            else None)
        if reason is not None:
            self._by_request.pop(seq.request_id, None)
            self.scheduler.remove(seq)
            finals.append((seq, reason, None))

    def _deliver(self, seq: SequenceState, event: TokenEvent) -> None:
        if seq.on_event is None:
            return
        try:
            seq.on_event(event)
        except Exception:
            logger.exception("on_event callback failed for request %s", seq.request_id,
                             extra=self._log_fields(seq))

    def _emit_final(self, seq: SequenceState, reason: str, error: str | None, now: float) -> None:
        try:
            metrics = self._final_bookkeeping(seq, reason, now)
        except Exception as exc:  # e.g. a MemoryError: this request fails, the engine goes on
            self._fail_request(seq, exc)
            return
        self._send_final(seq, TokenEvent(seq.request_id, None, True, reason, error=error, metrics=metrics))

    def _final_bookkeeping(self, seq: SequenceState, reason: str, now: float) -> RequestMetrics:
        """Counters, span and fault hooks of a finished request; returns its metrics."""
        span = seq.extra.pop("queue_span", None)
        self._tracer.end(span, error="deadline exceeded while queued" if reason == "deadline" else None)
        metrics = RequestMetrics(
            arrival=seq.arrival, queued=seq.arrival, first_scheduled=seq.first_scheduled,
            first_token=seq.first_token, finished=now, prompt_tokens=seq.num_prompt_tokens,
            generation_tokens=len(seq.output_ids), preemptions=seq.preemptions, tenant=seq.tenant,
            bucket=seq.bucket_name, max_tokens=seq.request.params.max_tokens)
        with self._cond:
            self._finished[reason] = self._finished.get(reason, 0) + 1
            self._tenant_finished[seq.tenant] = self._tenant_finished.get(seq.tenant, 0) + 1
            self.scheduler.observe_service_time(now - seq.arrival)
        if reason == "deadline":
            logger.warning("request %s missed its deadline", seq.request_id,
                           extra=self._log_fields(seq, {log_fields.EVENT: "deadline"}))
        return metrics


if TYPE_CHECKING:

    def _implements_engine_client(engine: Engine) -> EngineClient:
        """Never called: makes mypy check that Engine satisfies the EngineClient protocol."""
        return engine
