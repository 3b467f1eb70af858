"""Generation for one HTTP request: submit to the engine, carry its events to the event loop, detokenize.

The engine calls back on its own thread; `EventChannel` hands events to the loop with one wake-up per
burst. `generate` turns them into text deltas and one final `Outcome`, records the request's metrics,
closes its span and writes the "request finished" log line. A request never waits on a dead engine: the
wait polls the engine's liveness, and a death ends the wait with a 503 at once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import math
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span

from gpuobs import cuda_errors
from gpuobs.names import logs as lf
from gpuobs.serving import stat_loggers
from gpuobs.serving.errors import (
    EngineClosedError,
    EngineUnhealthyError,
    InvalidRequestError,
    QueueFullError,
)
from gpuobs.serving.hotswap import ModelHandle
from gpuobs.serving.http.protocol import ApiError, Outcome, PreparedRequest
from gpuobs.serving.http.runtime import ServingRuntime
from gpuobs.serving.http.spans import finish_request_span
from gpuobs.serving.interface import (
    GenerationRequest,
    SamplingParams,
    TokenEvent,
    TokenizerLike,
    input_hash,
)

__all__ = [
    "LIVENESS_POLL_S",
    "MAX_WAIT_S",
    "Detokenizer",
    "EventChannel",
    "engine_events",
    "failure",
    "generate",
]

logger = logging.getLogger(__name__)

MAX_WAIT_S = 600.0  # the longest a request waits for its next engine event while the engine lives
LIVENESS_POLL_S = 1.0  # while waiting, how often the engine's liveness is checked


class EventChannel:
    """Engine thread -> event loop: events queue in a deque and the loop is woken once per burst.

    One `call_soon_threadsafe` per token would wake the loop for every token of every request; under
    load that costs more than the rest of the server path together.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: collections.deque[tuple[float, TokenEvent]] = collections.deque()
        self._wake_pending = False
        self._ready = asyncio.Event()

    def put(self, event: TokenEvent) -> None:
        """Called on the engine thread for each TokenEvent."""
        self._items.append((time.monotonic(), event))
        if not self._wake_pending:
            self._wake_pending = True
            with contextlib.suppress(RuntimeError):  # loop closed during shutdown
                self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        self._wake_pending = False
        self._ready.set()

    async def get(self, timeout: float) -> list[tuple[float, TokenEvent]]:
        """Every event queued so far (waits up to `timeout` for the first; TimeoutError after)."""
        while not self._items:
            self._ready.clear()
            if self._items:
                break
            # Not asyncio.wait_for: on Python 3.11 it returns the result and drops a cancel that lands in
            # the step the event arrives in, so a client that hung up mid-generation kept its request
            # running to the end (about one disconnect in six under load). asyncio.timeout keeps it.
            async with asyncio.timeout(timeout):
                await self._ready.wait()
        out = []
        while self._items:
            out.append(self._items.popleft())
        return out


class Detokenizer:
    """Incremental detokenisation: emits only complete text (no half UTF-8 sequences), stops on stop strings.

    Decodes a short window (prefix_offset..end) per token and diffs it against the window's prefix, as
    vLLM and TGI do, so the cost per token does not grow with the output length.
    """

    def __init__(self, tokenizer: Any, stops: list[str]) -> None:
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.prefix_offset = 0
        self.read_offset = 0
        self.text = ""
        self.emitted = 0
        self.stops = stops
        self.hold = max((len(s) for s in stops), default=1) - 1
        self.stopped = False

    def add(self, token_id: int) -> None:
        if self.stopped:
            return  # tokens the engine made before it saw the abort are not part of the answer
        self.ids.append(token_id)
        self._advance(final=False)

    def flush(self) -> None:
        """At the end: take the text still held back (an unfinished character decodes as U+FFFD)."""
        if not self.stopped and self.read_offset < len(self.ids):
            self._advance(final=True)

    def _advance(self, final: bool) -> None:
        prefix = self.tokenizer.decode(self.ids[self.prefix_offset : self.read_offset])
        window = self.tokenizer.decode(self.ids[self.prefix_offset :])
        if len(window) <= len(prefix) or (window.endswith("\ufffd") and not final):
            return  # wait for the rest of a multi-byte character
        before = len(self.text)
        self.text += window[len(prefix) :]
        self.prefix_offset, self.read_offset = self.read_offset, len(self.ids)
        for stop in self.stops:
            at = self.text.find(stop, max(0, before - len(stop) + 1))
            if at >= 0:
                self.text = self.text[:at]
                self.stopped = True

    def delta(self, final: bool = False) -> str:
        end = len(self.text) if (final or self.stopped) else max(self.emitted, len(self.text) - self.hold)
        out = self.text[self.emitted : end]
        self.emitted = max(self.emitted, end)
        return out


def _submit(
    runtime: ServingRuntime, handle: ModelHandle, req: GenerationRequest, channel: EventChannel
) -> None:
    """Queue the request; each refusal of the engine becomes its HTTP answer (429, 400, 503)."""
    try:
        handle.engine.submit(req, channel.put)
    except QueueFullError as exc:
        runtime.stats.record_rejection(handle.name)
        retry = max(1, math.ceil(float(exc.retry_after_s or 1)))
        raise ApiError(
            429,
            f"server is at capacity: {exc}; retry after {retry} s",
            type_="rate_limit_error",
            code="queue_full",
            headers={"Retry-After": str(retry)},
        ) from exc
    except InvalidRequestError as exc:
        raise ApiError(400, str(exc), code="invalid_request", reason="engine_refused") from exc
    except EngineUnhealthyError as exc:
        raise ApiError.unavailable(
            f"the engine cannot take requests: {exc.reason}", "engine_unhealthy", 5
        ) from exc
    except EngineClosedError as exc:
        raise ApiError.unavailable(str(exc), "engine_closed", 1) from exc


async def engine_events(
    runtime: ServingRuntime, handle: ModelHandle, request_id: str, prep: PreparedRequest, span_ctx: Any
) -> AsyncIterator[tuple[float, TokenEvent]]:
    """Submit to the engine and yield (arrival time, TokenEvent) until the final event."""
    channel = EventChannel(asyncio.get_running_loop())
    params = SamplingParams(
        max_tokens=prep.max_tokens,
        temperature=prep.temperature,
        top_p=prep.top_p,
        seed=prep.seed,
        ignore_eos=prep.ignore_eos,
    )
    req = GenerationRequest(
        request_id=request_id,
        prompt_token_ids=prep.prompt_ids,
        params=params,
        tenant=prep.tenant,
        priority=prep.priority,
        deadline=prep.deadline,
        trace_context=span_ctx,
    )
    _submit(runtime, handle, req, channel)
    finished = False
    last_event = time.monotonic()
    try:
        while True:
            try:
                batch = await channel.get(LIVENESS_POLL_S)
            except TimeoutError:
                _check_still_waiting(handle, last_event)
                continue
            last_event = time.monotonic()
            for t, ev in batch:
                if ev.finished:
                    finished = True
                yield t, ev
                if finished:
                    return
    finally:
        if not finished:
            with contextlib.suppress(Exception):
                handle.engine.abort(request_id)


def _check_still_waiting(handle: ModelHandle, last_event: float) -> None:
    """No event for a while: end the wait if the engine died (503) or made no progress in MAX_WAIT_S."""
    health = handle.engine.health()
    if health.state == "dead":
        raise ApiError.unavailable(f"the engine died: {health.reason}", "engine_dead", 5)
    if time.monotonic() - last_event > MAX_WAIT_S:
        raise ApiError(
            504,
            f"no progress from the engine in {MAX_WAIT_S:.0f} s",
            type_="timeout_error",
            code="engine_stalled",
        )


def failure(outcome: Outcome) -> ApiError:
    """The error answer of a generation that ended with finish reason error, deadline or abort."""
    if outcome.finish_reason == "deadline":
        return ApiError(
            504,
            f"request deadline exceeded after {outcome.completion_tokens} tokens",
            type_="timeout_error",
            code="deadline_exceeded",
        )
    if outcome.finish_reason == "abort":
        return ApiError.unavailable(
            f"request aborted by the engine: {outcome.error or 'shutting down'}", "aborted"
        )
    return ApiError(
        500,
        f"generation failed: {outcome.error or 'engine error'}",
        type_="server_error",
        code="engine_error",
    )


def _log_done(
    handle: ModelHandle, request_id: str, prep: PreparedRequest, outcome: Outcome, span: Span, started: float
) -> None:
    """The request's one JSON log line: model_id, input_hash, device_id, cuda_error_code, trace ids."""
    cuda = cuda_errors.from_text(outcome.error) if outcome.error else None
    ctx = span.get_span_context()
    logger.log(
        logging.WARNING if outcome.error else logging.INFO,
        "request finished",
        extra={
            lf.REQUEST_ID: request_id,
            lf.MODEL_NAME: handle.name,
            lf.MODEL_ID: handle.model_dir or handle.name,
            lf.INPUT_HASH: input_hash(prep.prompt_ids),
            lf.DEVICE_ID: str(handle.engine.device),
            lf.CUDA_ERROR_CODE: cuda.code if cuda else None,
            lf.CUDA_ERROR_NAME: cuda.name if cuda else None,
            lf.TENANT: prep.tenant,
            lf.TRACE_ID: format(ctx.trace_id, "032x"),
            lf.SPAN_ID: format(ctx.span_id, "016x"),
            lf.FINISH_REASON: outcome.finish_reason,
            lf.PROMPT_TOKENS: outcome.prompt_tokens,
            lf.GENERATION_TOKENS: outcome.completion_tokens,
            lf.ERROR: outcome.error,
            lf.LATENCY_S: round(time.monotonic() - started, 6),
        },
    )


async def generate(
    runtime: ServingRuntime, handle: ModelHandle, prep: PreparedRequest, request_id: str, span: Span
) -> AsyncGenerator[tuple[str, Outcome | None], None]:
    """Yield text deltas `(text, None)`, then `("", outcome)` once; records metrics, span and log line."""
    tokenizer: TokenizerLike = handle.engine.tokenizer
    eos = tokenizer.eos_token_id
    detok = Detokenizer(tokenizer, prep.stops)
    token_times: list[float] = []
    started = time.monotonic()
    ttfc: float | None = None
    ctx = trace.set_span_in_context(span)
    outcome = Outcome("", "error", len(prep.prompt_ids), 0, "no final event")
    error_type: str | None = None
    final = False
    try:
        async for t, ev in engine_events(runtime, handle, request_id, prep, ctx):
            if ev.token_id is not None:
                token_times.append(t)
                if not (ev.token_id == eos and not prep.ignore_eos):
                    detok.add(int(ev.token_id))
                if detok.stopped:
                    handle.engine.abort(request_id)
            if ev.finished:
                detok.flush()
                reason = "stop" if detok.stopped else (ev.finish_reason or "error")
                text = detok.delta(final=True)
                outcome = Outcome(detok.text, reason, len(prep.prompt_ids), len(token_times), ev.error)
                runtime.stats.record_finished(
                    stat_loggers.FinishedRequest(handle.name, reason, ev.metrics, token_times)
                )
                if outcome.failed and not detok.stopped:
                    error_type = reason
                final = True
                if text:
                    if ttfc is None:
                        ttfc = time.monotonic() - started
                    yield text, None
                yield "", outcome
                return
            if detok.stopped:
                continue  # wait for the engine's final event after the abort
            text = detok.delta()
            if text:
                if ttfc is None:
                    ttfc = time.monotonic() - started
                yield text, None
    except ApiError as exc:
        outcome = Outcome("", "error", len(prep.prompt_ids), len(token_times), exc.message)
        error_type = exc.code or exc.type
        raise
    except (asyncio.CancelledError, GeneratorExit):
        if not final:
            outcome = Outcome(
                detok.text, "abort", len(prep.prompt_ids), len(token_times), "client disconnected"
            )
            error_type = "client_disconnected"
        raise
    finally:
        finish_request_span(span, handle.name, outcome, ttfc, error_type)
        _log_done(handle, request_id, prep, outcome, span, started)
