"""Response shaping of the OpenAI routes: one JSON completion, or an SSE stream of chunks.

`respond` is the whole path of one request after its body is parsed: lease the model, tokenize and
validate, open the request span, generate, and answer. The lease is released exactly once, when the
answer is complete (after the last SSE chunk for a stream); a client that hangs up stops its generation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from gpuobs.names import logs as lf
from gpuobs.serving.hotswap import ModelHandle
from gpuobs.serving.http.generation import failure, generate
from gpuobs.serving.http.ingress import lease, prepare
from gpuobs.serving.http.protocol import ApiError, CommonBody, Outcome, PreparedRequest
from gpuobs.serving.http.runtime import ServingRuntime
from gpuobs.serving.http.spans import start_request_span

__all__ = ["DISCONNECT_POLL_S", "completion_body", "respond", "sse_chunk"]

DISCONNECT_POLL_S = 0.25  # how often a non-streamed request checks that its client is still there

logger = logging.getLogger(__name__)


def _cut_by_shutdown(runtime: ServingRuntime, request_id: str, streamed: bool) -> ApiError:
    """The error (and its log line) of a request still running when the shutdown drain ran out."""
    drain = runtime.config.drain_timeout_s
    logger.warning(
        "request %s cut: the server is shutting down and its %g s drain ran out",
        request_id,
        drain,
        extra={lf.EVENT: "request_cut_by_shutdown", lf.REQUEST_ID: request_id, "streamed": streamed},
    )
    return ApiError.unavailable(
        f"the server is shutting down: the request was cut after the {drain:g} s drain", "shutting_down"
    )


Generation = AsyncGenerator[tuple[str, Outcome | None], None]


def _object_name(kind: str, stream: bool) -> str:
    if kind == "chat":
        return "chat.completion.chunk" if stream else "chat.completion"
    return "text_completion"


def completion_body(
    kind: str, request_id: str, created: int, model: str, text: str, outcome: Outcome
) -> dict:
    """The JSON answer of a non-streamed completion or chat completion."""
    if kind == "chat":
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "logprobs": None,
            "finish_reason": outcome.finish_reason,
        }
    else:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": outcome.finish_reason}
    return {
        "id": request_id,
        "object": _object_name(kind, stream=False),
        "created": created,
        "model": model,
        "choices": [choice],
        "usage": outcome.usage(),
        "system_fingerprint": None,
    }


def sse_chunk(payload: dict[str, Any]) -> bytes:
    """One server-sent event carrying a JSON payload."""
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()


class _Stream:
    """The SSE chunks of one streamed request, as OpenAI shapes them."""

    def __init__(self, kind: str, request_id: str, created: int, model: str, include_usage: bool) -> None:
        self.kind, self.request_id, self.created, self.model = kind, request_id, created, model
        self.include_usage = include_usage
        self.object = _object_name(kind, stream=True)

    def _payload(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": self.request_id,
            "object": self.object,
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }

    def chunk(self, delta_text: str | None, finish: str | None, role: bool = False) -> bytes:
        if self.kind == "chat":
            delta: dict[str, Any] = {}
            if role:
                delta["role"] = "assistant"
            if delta_text is not None:
                delta["content"] = delta_text
            choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        else:
            choice = {"index": 0, "text": delta_text or "", "logprobs": None, "finish_reason": finish}
        payload = self._payload([choice])
        if self.include_usage:
            payload["usage"] = None
        return sse_chunk(payload)

    def usage(self, outcome: Outcome) -> bytes:
        return sse_chunk({**self._payload([]), "usage": outcome.usage()})

    async def events(
        self, first: tuple[str, Outcome | None], gen: Generation, runtime: ServingRuntime
    ) -> AsyncIterator[bytes]:
        """Every chunk from the first generation item on, then `[DONE]`; errors go in-band (also when
        the shutdown drain runs out: an error event, not a cut connection)."""
        if self.kind == "chat":
            yield self.chunk("", None, role=True)
        expired = asyncio.ensure_future(runtime.drain_expired.wait())
        try:
            async for chunk in self._until_drained(first, gen, expired, runtime):
                yield chunk
        finally:
            expired.cancel()
        yield b"data: [DONE]\n\n"

    async def _until_drained(
        self,
        first: tuple[str, Outcome | None],
        gen: Generation,
        expired: asyncio.Future[Any],
        runtime: ServingRuntime,
    ) -> AsyncIterator[bytes]:
        item: tuple[str, Outcome | None] | None = first
        while item is not None:
            text, out = item
            if out is None:
                yield self.chunk(text, None)
            else:
                if out.failed:
                    yield sse_chunk(failure(out).body())
                else:
                    yield self.chunk(None if self.kind == "chat" else "", out.finish_reason)
                if self.include_usage:
                    yield self.usage(out)
                break
            nxt = asyncio.ensure_future(gen.__anext__())
            try:
                await asyncio.wait({nxt, expired}, return_when=asyncio.FIRST_COMPLETED)
            finally:  # also when the client hung up (cancelled here): the generation must not run on
                if not nxt.done():
                    nxt.cancel()
                    with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                        await nxt
            if nxt.cancelled():
                yield sse_chunk(_cut_by_shutdown(runtime, self.request_id, streamed=True).body())
                return
            try:
                item = nxt.result()
            except StopAsyncIteration:
                item = None


async def _collect(
    request: Request, gen: Generation, runtime: ServingRuntime, request_id: str
) -> tuple[str, Outcome] | None:
    """Run a non-streamed generation to its end; None if the client hung up (its generation stopped)."""
    parts: list[str] = []

    async def run() -> Outcome | None:
        final = None
        async for text, out in gen:
            if out is not None:
                final = out
            else:
                parts.append(text)
        return final

    task = asyncio.ensure_future(run())
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=DISCONNECT_POLL_S)
            if not task.done() and await request.is_disconnected():
                return None
            if not task.done() and runtime.drain_expired.is_set():
                raise _cut_by_shutdown(runtime, request_id, streamed=False)
        outcome = task.result()
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await gen.aclose()
    assert outcome is not None, "a generation always ends with an outcome"
    return "".join(parts), outcome


async def respond(
    runtime: ServingRuntime,
    request: Request,
    kind: str,
    body: CommonBody,
    prompt_ids_of: Callable[[ModelHandle], Awaitable[list[int]]],
    max_tokens: int | None,
) -> Response:
    """Serve one completion or chat request end to end (see the module docstring)."""
    handle = lease(runtime, body.model)
    released = False

    def release() -> None:
        nonlocal released
        if not released:
            released = True
            runtime.manager.release(handle)

    try:
        prompt_ids = await prompt_ids_of(handle)
        prep: PreparedRequest = prepare(
            body, handle, kind, prompt_ids, max_tokens, request.headers.get("x-tenant")
        )
        request_id = f"{'chatcmpl' if kind == 'chat' else 'cmpl'}-{uuid.uuid4().hex}"
        cfg = runtime.config
        span = start_request_span(prep, request.headers, request_id, cfg.address, cfg.port)
        created = int(time.time())
        gen = generate(runtime, handle, prep, request_id, span)
        if not prep.stream:
            try:
                done = await _collect(request, gen, runtime, request_id)
            finally:
                release()
            if done is None:
                return Response(status_code=499)
            text, outcome = done
            if outcome.failed:
                raise failure(outcome)
            return JSONResponse(completion_body(kind, request_id, created, handle.name, text, outcome))
        # Streaming: pull the first event before answering so that 429/400 stay HTTP errors.
        first = await gen.__anext__()
    except BaseException:
        release()
        raise

    stream = _Stream(kind, request_id, created, handle.name, prep.include_usage)

    async def sse() -> AsyncIterator[bytes]:
        try:
            async for chunk in stream.events(first, gen, runtime):
                yield chunk
        finally:
            try:
                await gen.aclose()
            finally:
                release()

    return StreamingResponse(
        sse(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Request-Id": request_id},
    )
