"""The OpenAI-compatible HTTP server of `gpuobs serve` (FastAPI + uvicorn), plus health, metrics, admin.

Routes: `/v1/completions`, `/v1/chat/completions` (SSE streaming), `/v1/models`, `/health`, `/ready`,
`/metrics`, `/admin/models` (hot-swap) and, only with fault injection enabled, `/admin/faults`.
Every bad input gets a 4xx with OpenAI's error JSON (`{"error": {"message", "type", "param", "code"}}`)
and the server stays healthy; an admission refusal is a 429 with Retry-After. Each request opens a
span with the OpenTelemetry GenAI attributes (`gen_ai.*`) whose context the engine's queue, prefill
and decode spans hang under, and ends with one JSON log line carrying model_id, input_hash,
device_id and cuda_error_code.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hmac
import json
import logging
import math
import os
import threading
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import FastAPI, Request
from opentelemetry import trace
from opentelemetry.propagate import extract
from opentelemetry.trace import SpanKind, Status, StatusCode
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from gpuobs.errors import InputError
from gpuobs.serving import stat_loggers
from gpuobs.serving.hotswap import (
    ModelHandle,
    ModelManager,
    SwapInProgressError,
    SwapRefusedError,
    UnknownModelError,
)

if TYPE_CHECKING:
    from starlette.responses import Response

__all__ = [
    "ApiError",
    "ServerConfig",
    "ServingRuntime",
    "create_app",
    "run_server",
]

logger = logging.getLogger(__name__)
tracer = trace.get_tracer("gpuobs.serving")

MAX_BODY_BYTES_DEFAULT = 1 << 20  # 1 MiB: larger bodies get a 413
MAX_WAIT_S = 600.0  # the longest a request waits for its next engine event
MAX_CHARS_PER_TOKEN = 128  # more characters than this per token cannot fit: refused before tokenizing


@dataclass
class ServerConfig:
    """Everything `gpuobs serve` needs; the CLI resolves flags into this."""

    model_dir: str | None = None
    served_name: str | None = None
    address: str = "127.0.0.1"
    port: int = 8000
    grpc_port: int | None = None
    enable_fault_injection: bool = False
    scheduler: str = "bucketed"
    device: str = "auto"
    max_body_bytes: int = MAX_BODY_BYTES_DEFAULT
    max_grpc_batch: int = 64
    memory_budget_bytes: int | None = None  # simulated device capacity for the hot-swap fit check
    engine_options: dict[str, Any] = field(default_factory=dict)
    log_level: str = "info"
    api_key: str | None = (
        None  # when set, /v1/* needs `Authorization: Bearer <api_key>` (as vLLM's --api-key)
    )
    admin_token: str | None = None  # when set, /admin/* needs `Authorization: Bearer <admin_token>`


class ApiError(Exception):
    """An error answered with OpenAI's error JSON."""

    def __init__(
        self,
        status: int,
        message: str,
        type_: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        reason: str | None = None,
    ) -> None:
        message = message.encode("utf-8", "replace").decode("utf-8")  # never echo lone surrogates back
        super().__init__(message)
        self.status, self.message, self.type, self.param = status, message, type_, param
        self.code = code
        self.headers = headers or {}
        self.reason = reason or code or type_

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


# ------------------------------------------------------------------------------------------------
# Request bodies (strict types: a string where a number belongs is a 400, as with OpenAI)
# ------------------------------------------------------------------------------------------------
Number = StrictFloat | StrictInt


class _Common(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: StrictStr
    temperature: Number | None = None
    top_p: Number | None = None
    n: StrictInt | None = None
    seed: StrictInt | None = None
    stop: StrictStr | list[StrictStr] | None = None
    stream: StrictBool | None = False
    stream_options: dict[str, Any] | None = None
    user: StrictStr | None = None
    priority: StrictInt | None = 0
    ignore_eos: StrictBool | None = False
    deadline_ms: StrictInt | None = None


class CompletionBody(_Common):
    prompt: StrictStr | list[StrictStr] | list[StrictInt] | list[list[StrictInt]]
    max_tokens: StrictInt | None = 16


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant", "developer", "tool"]
    content: StrictStr | list[dict[str, Any]] | None = None


class ChatBody(_Common):
    messages: Annotated[list[ChatMessage], Field(min_length=1)]
    max_tokens: StrictInt | None = None
    max_completion_tokens: StrictInt | None = None


class LoadBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: StrictStr | None = None
    name: StrictStr | None = None
    wait: StrictBool = False
    timeout_s: Number = 300


def _validation_message(exc: ValidationError) -> tuple[str, str | None]:
    err = exc.errors()[0]
    loc = [str(p) for p in err.get("loc", ()) if not isinstance(p, int)]
    # drop pydantic's union-branch names ("str", "list[int]") from the path
    param = next((p for p in loc if p in _PARAMS), loc[0] if loc else None)
    return f"{param or 'body'}: {err.get('msg', 'invalid value')}", param


_PARAMS = set(ChatBody.model_fields) | set(CompletionBody.model_fields) | set(LoadBody.model_fields)


# ------------------------------------------------------------------------------------------------
# Engine access
# ------------------------------------------------------------------------------------------------
def _engine_module() -> Any:
    from gpuobs.extras import require

    return require("gpuobs.serving.engine", "serving")


def _max_model_len(engine: Any) -> int:
    """Prompt + completion tokens the engine accepts (its max_model_len)."""
    return int(engine.max_model_len)


def _device_id(engine: Any) -> str:
    return str(getattr(engine, "device", "cpu"))


class _EventChannel:
    """Engine thread -> event loop: events queue in a deque and the loop is woken once per burst.

    One `call_soon_threadsafe` per token would wake the loop for every token of every request; under
    load that costs more than the rest of the server path together.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: collections.deque[tuple[float, Any]] = collections.deque()
        self._wake_pending = False
        self._ready = asyncio.Event()

    def put(self, event: Any) -> None:
        """Called on the engine thread for each TokenEvent."""
        self._items.append((time.monotonic(), event))
        if not self._wake_pending:
            self._wake_pending = True
            with contextlib.suppress(RuntimeError):  # loop closed during shutdown
                self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        self._wake_pending = False
        self._ready.set()

    async def get(self, timeout: float) -> list[tuple[float, Any]]:
        """Every event queued so far (waits up to `timeout` for the first; TimeoutError after)."""
        while not self._items:
            self._ready.clear()
            if self._items:
                break
            await asyncio.wait_for(self._ready.wait(), timeout)
        out = []
        while self._items:
            out.append(self._items.popleft())
        return out


class _Detokenizer:
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


@dataclass
class _Prepared:
    kind: str  # "text_completion" | "chat"
    model: str
    prompt_ids: list[int]
    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None
    stops: list[str]
    stream: bool
    include_usage: bool
    tenant: str
    priority: int
    deadline: float | None
    ignore_eos: bool


@dataclass
class _Outcome:
    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    error: str | None = None


class ServingRuntime:
    """The process-wide state behind both APIs: model manager, metrics, faults, readiness."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.registry = stat_loggers.new_registry()
        self.stats = stat_loggers.PrometheusStatLogger(self.registry)
        self.manager = ModelManager(
            factory=self._build_engine,
            warmup=self._warmup,
            served_name=config.served_name,
            memory_budget_bytes=config.memory_budget_bytes,
            on_swap=self.stats.record_swap,
            on_model=self._on_model,
        )
        self.registry.register(
            stat_loggers.EngineStatsCollector(
                self.manager.engines, lambda: self.manager.ready, lambda: self.manager.served_name
            )
        )
        self.load_error: str | None = None
        self.grpc_block = threading.Event()  # fault: the gRPC handler blocks, ignoring its deadline
        self.grpc_unblock = threading.Event()
        self.grpc_block_s = 60.0
        self.started = time.time()

    def _on_model(self, name: str) -> None:
        current = self.manager.current
        self.stats.register_model(name, _max_model_len(current.engine) if current is not None else 2048)

    # --- engine lifecycle --------------------------------------------------------------------
    def _build_engine(self, model_dir: str | None) -> Any:
        mod = _engine_module()
        options = dict(self.config.engine_options)
        options.setdefault("scheduler", self.config.scheduler)
        options.setdefault("device", self.config.device)
        options.setdefault("enable_fault_injection", self.config.enable_fault_injection)
        if self.config.served_name:
            options.setdefault("model_name", self.config.served_name)
        try:
            engine_config = mod.EngineConfig(model_dir=model_dir, **options)
        except TypeError as exc:
            raise InputError(f"bad engine option: {exc}") from None
        engine = mod.Engine(engine_config)
        engine.start()
        return engine

    def _warmup(self, engine: Any) -> None:
        """Run one short greedy request and one forward pass; raise if either fails."""
        mod = _engine_module()
        done = threading.Event()
        result: list[Any] = []

        def on_event(ev: Any) -> None:
            if ev.finished:
                result.append(ev)
                done.set()

        ids = engine.tokenizer.encode("warm up") or [0]
        req = mod.GenerationRequest(
            request_id=f"warmup-{uuid.uuid4().hex[:8]}",
            prompt_token_ids=ids,
            params=mod.SamplingParams(max_tokens=2, ignore_eos=True),
        )
        engine.submit(req, on_event)
        if not done.wait(120):
            raise RuntimeError("warm-up request did not finish in 120 s")
        if result[0].finish_reason == "error":
            raise RuntimeError(f"warm-up request failed: {result[0].error}")
        engine.forward_logits([ids], [[1] * len(ids)])

    def load(self) -> None:
        """Load and warm the initial model (run in a thread at startup; /ready flips when done)."""
        try:
            self.manager.load_initial(self.config.model_dir)
        except Exception as exc:
            self.load_error = f"{type(exc).__name__}: {exc}"
            logger.exception("model load failed", extra={"model_id": self.config.model_dir})
            raise

    # --- generation ----------------------------------------------------------------------------
    async def events(
        self, handle: ModelHandle, request_id: str, prep: _Prepared, span_ctx: Any
    ) -> AsyncIterator[tuple[float, Any]]:
        """Submit to the engine and yield (arrival time, TokenEvent) until the final event."""
        mod = _engine_module()
        channel = _EventChannel(asyncio.get_running_loop())
        on_event = channel.put

        params = mod.SamplingParams(
            max_tokens=prep.max_tokens,
            temperature=prep.temperature,
            top_p=prep.top_p,
            seed=prep.seed,
            ignore_eos=prep.ignore_eos,
        )
        req = mod.GenerationRequest(
            request_id=request_id,
            prompt_token_ids=prep.prompt_ids,
            params=params,
            tenant=prep.tenant,
            priority=prep.priority,
            deadline=prep.deadline,
            trace_context=span_ctx,
        )
        try:
            handle.engine.submit(req, on_event)
        except mod.QueueFullError as exc:
            self.stats.record_rejection(handle.name)
            retry = max(1, math.ceil(float(getattr(exc, "retry_after_s", 1) or 1)))
            raise ApiError(
                429,
                f"server is at capacity: {exc}; retry after {retry} s",
                type_="rate_limit_error",
                code="queue_full",
                headers={"Retry-After": str(retry)},
            ) from exc
        except mod.InvalidRequestError as exc:
            raise ApiError(400, str(exc), code="invalid_request", reason="engine_refused") from exc
        except mod.EngineClosedError as exc:
            raise ApiError(
                503, str(exc), type_="service_unavailable", code="engine_closed", headers={"Retry-After": "1"}
            ) from exc
        finished = False
        try:
            while True:
                try:
                    batch = await channel.get(MAX_WAIT_S)
                except TimeoutError:
                    raise ApiError(
                        504,
                        f"no progress from the engine in {MAX_WAIT_S:.0f} s",
                        type_="timeout_error",
                        code="engine_stalled",
                    ) from None
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


# ------------------------------------------------------------------------------------------------
# The app
# ------------------------------------------------------------------------------------------------
def _now() -> int:
    return int(time.time())


def _chat_prompt(tokenizer: Any, messages: list[ChatMessage]) -> str:
    apply = getattr(tokenizer, "apply_chat_template", None)
    plain = [{"role": m.role, "content": _content_text(m.content)} for m in messages]
    if callable(apply):
        with contextlib.suppress(Exception):
            text = apply(plain)
            if isinstance(text, str):
                return text
    parts = [f"<|{m['role']}|>\n{m['content']}\n" for m in plain]
    return "".join(parts) + "<|assistant|>\n"


def _content_text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        if part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise ApiError(
                400, "only text content parts are supported", param="messages", code="unsupported_content"
            )
        texts.append(part["text"])
    return "".join(texts)


class _BearerAuth:
    """Pure ASGI middleware (Starlette's BaseHTTPMiddleware would hide client disconnects from handlers)."""

    def __init__(
        self, app: Any, api_key: str | None, admin_token: str | None, stats: stat_loggers.PrometheusStatLogger
    ) -> None:
        self.app, self.api_key, self.admin_token, self.stats = app, api_key, admin_token, stats

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            path = str(scope.get("path", ""))
            secret = (
                self.api_key
                if path.startswith("/v1/")
                else self.admin_token
                if path.startswith("/admin")
                else None
            )
            if secret:
                headers = {
                    k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
                }
                given = headers.get("authorization", "")
                token = given[7:] if given.lower().startswith("bearer ") else ""
                if not hmac.compare_digest(token.encode(), secret.encode()):
                    from starlette.responses import JSONResponse

                    self.stats.record_invalid("http", "unauthorized")
                    err = ApiError(
                        401,
                        "missing or wrong bearer token",
                        type_="authentication_error",
                        code="invalid_api_key",
                    )
                    await JSONResponse(err.body(), status_code=401)(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def create_app(runtime: ServingRuntime) -> FastAPI:
    """The FastAPI application over a runtime (the model is loaded separately)."""
    from fastapi import FastAPI
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException
    from starlette.responses import JSONResponse, Response, StreamingResponse

    app = FastAPI(title="gpuobs serve", version="1", docs_url=None, redoc_url=None, openapi_url=None)
    cfg = runtime.config

    if cfg.api_key or cfg.admin_token:
        app.add_middleware(_BearerAuth, api_key=cfg.api_key, admin_token=cfg.admin_token, stats=runtime.stats)

    def error_response(err: ApiError, api: str = "http") -> JSONResponse:
        if err.status < 500 and err.status != 429:
            runtime.stats.record_invalid(api, err.reason)
        return JSONResponse(err.body(), status_code=err.status, headers=err.headers)

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> Response:
        return error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> Response:
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        return error_response(
            ApiError(exc.status_code, str(exc.detail), type_=kind, reason=f"http_{exc.status_code}")
        )

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> Response:
        return error_response(ApiError(400, f"invalid request: {exc.errors()[:1]}", reason="validation"))

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception) -> Response:
        logger.exception("unhandled error")
        return JSONResponse(
            ApiError(500, f"internal error: {type(exc).__name__}", type_="server_error").body(),
            status_code=500,
        )

    async def read_json(request: Request) -> Any:
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > cfg.max_body_bytes:
            raise ApiError(
                413,
                f"request body of {declared} bytes exceeds the limit of {cfg.max_body_bytes}",
                code="body_too_large",
            )
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > cfg.max_body_bytes:
                raise ApiError(
                    413,
                    f"request body exceeds the limit of {cfg.max_body_bytes} bytes",
                    code="body_too_large",
                )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ApiError(
                400, f"request body is not valid UTF-8 (byte {exc.start})", code="invalid_utf8"
            ) from None
        if not text.strip():
            raise ApiError(400, "request body is empty; send a JSON object", code="invalid_json")
        try:
            data = json.loads(text)
        except RecursionError:
            raise ApiError(400, "malformed JSON: nested too deeply", code="invalid_json") from None
        except json.JSONDecodeError as exc:
            raise ApiError(
                400, f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", code="invalid_json"
            ) from None
        if not isinstance(data, dict):
            raise ApiError(400, "request body must be a JSON object", code="invalid_json")
        try:  # JSON escapes can smuggle in lone surrogates, which are not text
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ApiError(
                400,
                f"request contains invalid Unicode: {exc.reason} (lone surrogate escape)",
                code="invalid_text",
            ) from None
        return data

    def parse(model_cls: type[BaseModel], data: dict[str, Any]) -> Any:
        try:
            return model_cls.model_validate(data)
        except ValidationError as exc:
            message, param = _validation_message(exc)
            raise ApiError(400, message, param=param, code="invalid_type", reason="validation") from None

    def lease(model: str) -> ModelHandle:
        if not runtime.manager.ready:
            raise ApiError(
                503,
                "model is still loading; retry when /ready says ready",
                type_="service_unavailable",
                code="not_ready",
                headers={"Retry-After": "1"},
            )
        try:
            return runtime.manager.acquire(model)
        except UnknownModelError as exc:
            raise ApiError(
                404,
                f"{exc} Served model: `{runtime.manager.served_name}`.",
                param="model",
                code="model_not_found",
                type_="not_found_error",
            ) from None

    async def encode(handle: ModelHandle, text: str, param: str) -> list[int]:
        limit = _max_model_len(handle.engine)
        if len(text) > limit * MAX_CHARS_PER_TOKEN:
            # no tokenizer packs this many characters into max_model_len tokens: refuse before tokenizing
            raise ApiError(
                400,
                f"This model's maximum context length is {limit} tokens; the {param} has {len(text)} "
                "characters, far more than that. Shorten it.",
                param=param,
                code="context_length_exceeded",
            )
        try:
            if len(text) > 8192:  # long texts tokenize off the event loop (tokenizers releases the GIL)
                return list(await asyncio.to_thread(handle.engine.tokenizer.encode, text))
            return list(handle.engine.tokenizer.encode(text))
        except Exception as exc:  # e.g. lone surrogates from JSON escapes
            raise ApiError(
                400, f"{param} cannot be tokenized: {exc}", param=param, code="invalid_text"
            ) from None

    def prepare(
        body: _Common,
        handle: ModelHandle,
        kind: str,
        prompt_ids: list[int],
        max_tokens: int | None,
        request: Request,
    ) -> _Prepared:
        vocab = int(getattr(handle.engine.tokenizer, "vocab_size", 0) or 0)
        if not prompt_ids:
            raise ApiError(
                400, "prompt is empty: send at least one token of text", param="prompt", code="empty_prompt"
            )
        if vocab and any(t < 0 or t >= vocab for t in prompt_ids):
            raise ApiError(
                400, f"prompt token ids must be in [0, {vocab})", param="prompt", code="invalid_token_id"
            )
        limit = _max_model_len(handle.engine)
        if len(prompt_ids) >= limit:
            raise ApiError(
                400,
                f"This model's maximum context length is {limit} tokens; the prompt has "
                f"{len(prompt_ids)} tokens. Shorten the prompt.",
                param="prompt",
                code="context_length_exceeded",
            )
        if max_tokens is None:
            max_tokens = min(256, limit - len(prompt_ids))
        if max_tokens < 1:
            raise ApiError(
                400,
                f"max_tokens must be at least 1, got {max_tokens}",
                param="max_tokens",
                code="invalid_value",
            )
        if len(prompt_ids) + max_tokens > limit:
            raise ApiError(
                400,
                f"This model's maximum context length is {limit} tokens. However, you "
                f"requested {len(prompt_ids) + max_tokens} tokens ({len(prompt_ids)} in the "
                f"prompt, {max_tokens} in the completion). Reduce max_tokens or the prompt.",
                param="max_tokens",
                code="context_length_exceeded",
            )
        temperature = 1.0 if body.temperature is None else float(body.temperature)
        if not 0.0 <= temperature <= 2.0:
            raise ApiError(
                400,
                f"temperature must be between 0 and 2, got {temperature}",
                param="temperature",
                code="invalid_value",
            )
        top_p = 1.0 if body.top_p is None else float(body.top_p)
        if not 0.0 < top_p <= 1.0:
            raise ApiError(400, f"top_p must be in (0, 1], got {top_p}", param="top_p", code="invalid_value")
        if body.n not in (None, 1):
            raise ApiError(400, "only n=1 is supported", param="n", code="invalid_value")
        stops = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
        if len(stops) > 4 or any(not s for s in stops):
            raise ApiError(400, "stop takes up to 4 non-empty strings", param="stop", code="invalid_value")
        deadline = None
        if body.deadline_ms is not None:
            if body.deadline_ms <= 0:
                raise ApiError(400, "deadline_ms must be positive", param="deadline_ms", code="invalid_value")
            deadline = time.monotonic() + body.deadline_ms / 1000.0
        tenant = request.headers.get("x-tenant") or body.user or "default"
        if len(tenant) > 64:
            raise ApiError(
                400,
                "tenant (x-tenant header or user) is longer than 64 characters",
                param="user",
                code="invalid_value",
            )
        include_usage = bool((body.stream_options or {}).get("include_usage", False))
        return _Prepared(
            kind,
            body.model,
            prompt_ids,
            max_tokens,
            temperature,
            top_p,
            body.seed,
            stops,
            bool(body.stream),
            include_usage,
            tenant,
            int(body.priority or 0),
            deadline,
            bool(body.ignore_eos),
        )

    def start_span(kind: str, prep: _Prepared, request: Request, request_id: str) -> Any:
        parent = extract(dict(request.headers))
        span = tracer.start_span(
            f"{kind} {prep.model}",
            context=parent,
            kind=SpanKind.SERVER,
            attributes={
                "gen_ai.operation.name": kind,
                "gen_ai.provider.name": "gpuobs",
                "gen_ai.request.model": prep.model,
                "gen_ai.request.max_tokens": prep.max_tokens,
                "gen_ai.request.temperature": prep.temperature,
                "gen_ai.request.top_p": prep.top_p,
                "gen_ai.request.stream": prep.stream,
                "gen_ai.response.id": request_id,
                "gen_ai.usage.input_tokens": len(prep.prompt_ids),
                "server.address": cfg.address,
                "server.port": cfg.port,
                "gpuobs.tenant": prep.tenant,
                "gpuobs.priority": prep.priority,
            },
        )
        if prep.seed is not None:
            span.set_attribute("gen_ai.request.seed", prep.seed)
        if prep.stops:
            span.set_attribute("gen_ai.request.stop_sequences", prep.stops)
        return span

    def finish_span(
        span: Any, handle: ModelHandle, outcome: _Outcome, ttfc: float | None, error_type: str | None
    ) -> None:
        span.set_attribute("gen_ai.response.model", handle.name)
        span.set_attribute("gen_ai.response.finish_reasons", [outcome.finish_reason])
        span.set_attribute("gen_ai.usage.output_tokens", outcome.completion_tokens)
        if ttfc is not None:
            span.set_attribute("gen_ai.response.time_to_first_chunk", ttfc)
        if error_type:
            from gpuobs import cuda_errors

            cuda = cuda_errors.from_text(outcome.error) if outcome.error else None
            if cuda is not None:  # low-cardinality and specific: the CUDA error name
                error_type = cuda.name
                span.set_attribute("gpuobs.cuda_error_code", cuda.code)
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, outcome.error or error_type))
        span.end()

    def log_done(
        handle: ModelHandle, request_id: str, prep: _Prepared, outcome: _Outcome, span: Any, started: float
    ) -> None:
        from gpuobs import cuda_errors

        cuda = cuda_errors.from_text(outcome.error) if outcome.error else None
        ctx = span.get_span_context()
        logger.log(
            logging.WARNING if outcome.error else logging.INFO,
            "request finished",
            extra={
                "request_id": request_id,
                "model_name": handle.name,
                "model_id": handle.model_dir or handle.name,
                "input_hash": _engine_module().input_hash(prep.prompt_ids),
                "device_id": _device_id(handle.engine),
                "cuda_error_code": cuda.code if cuda else None,
                "cuda_error_name": cuda.name if cuda else None,
                "tenant": prep.tenant,
                "trace_id": format(ctx.trace_id, "032x"),
                "span_id": format(ctx.span_id, "016x"),
                "finish_reason": outcome.finish_reason,
                "prompt_tokens": outcome.prompt_tokens,
                "generation_tokens": outcome.completion_tokens,
                "error": outcome.error,
                "latency_s": round(time.monotonic() - started, 6),
            },
        )

    async def run_generation(
        handle: ModelHandle, prep: _Prepared, request_id: str, span: Any, on_text: Callable[[str], Any] | None
    ) -> AsyncGenerator[tuple[str, _Outcome | None], None]:
        """Yield text deltas, then ("", outcome) once; records metrics and the log line."""
        tokenizer = handle.engine.tokenizer
        eos = getattr(tokenizer, "eos_token_id", None)
        detok = _Detokenizer(tokenizer, prep.stops)
        token_times: list[float] = []
        started = time.monotonic()
        ttfc: float | None = None
        ctx = trace.set_span_in_context(span)
        outcome = _Outcome("", "error", len(prep.prompt_ids), 0, "no final event")
        error_type: str | None = None
        final = False
        try:
            async for t, ev in runtime.events(handle, request_id, prep, ctx):
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
                    gen = len(token_times)
                    outcome = _Outcome(detok.text, reason, len(prep.prompt_ids), gen, ev.error)
                    runtime.stats.record_finished(
                        stat_loggers.FinishedRequest(handle.name, reason, ev.metrics, token_times)
                    )
                    if reason in ("error", "deadline", "abort") and not detok.stopped:
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
            outcome = _Outcome("", "error", len(prep.prompt_ids), len(token_times), exc.message)
            error_type = exc.code or exc.type
            raise
        except (asyncio.CancelledError, GeneratorExit):
            if not final:
                outcome = _Outcome(
                    detok.text, "abort", len(prep.prompt_ids), len(token_times), "client disconnected"
                )
                error_type = "client_disconnected"
            raise
        finally:
            finish_span(span, handle, outcome, ttfc, error_type)
            log_done(handle, request_id, prep, outcome, span, started)

    def failure(outcome: _Outcome) -> ApiError:
        if outcome.finish_reason == "deadline":
            return ApiError(
                504,
                f"request deadline exceeded after {outcome.completion_tokens} tokens",
                type_="timeout_error",
                code="deadline_exceeded",
            )
        if outcome.finish_reason == "abort":
            return ApiError(
                503,
                f"request aborted by the engine: {outcome.error or 'shutting down'}",
                type_="service_unavailable",
                code="aborted",
            )
        return ApiError(
            500,
            f"generation failed: {outcome.error or 'engine error'}",
            type_="server_error",
            code="engine_error",
        )

    async def respond(
        request: Request,
        kind: str,
        body: _Common,
        prompt_ids_of: Callable[[ModelHandle], Awaitable[list[int]]],
        max_tokens: int | None,
    ) -> Response:
        handle = lease(body.model)
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                runtime.manager.release(handle)

        try:
            prep = prepare(body, handle, kind, await prompt_ids_of(handle), max_tokens, request)
            prefix = "chatcmpl" if kind == "chat" else "cmpl"
            request_id = f"{prefix}-{uuid.uuid4().hex}"
            span = start_span(kind, prep, request, request_id)
            created = _now()
            gen = run_generation(handle, prep, request_id, span, None)
            if not prep.stream:
                text_parts: list[str] = []
                outcome: _Outcome | None = None

                async def collect() -> _Outcome | None:
                    final = None
                    async for text, out in gen:
                        if out is not None:
                            final = out
                        else:
                            text_parts.append(text)
                    return final

                task = asyncio.ensure_future(collect())
                try:
                    # a client that hangs up stops its generation (as the streaming path does)
                    while not task.done():
                        await asyncio.wait({task}, timeout=0.25)
                        if not task.done() and await request.is_disconnected():
                            task.cancel()
                            with contextlib.suppress(asyncio.CancelledError):
                                await task
                            return Response(status_code=499)
                    outcome = task.result()
                finally:
                    if not task.done():
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await task
                    await gen.aclose()
                    release()
                assert outcome is not None
                if outcome.finish_reason in ("error", "deadline", "abort"):
                    raise failure(outcome)
                usage = {
                    "prompt_tokens": outcome.prompt_tokens,
                    "completion_tokens": outcome.completion_tokens,
                    "total_tokens": outcome.prompt_tokens + outcome.completion_tokens,
                }
                full = "".join(text_parts)
                if kind == "chat":
                    choice: dict[str, Any] = {
                        "index": 0,
                        "message": {"role": "assistant", "content": full},
                        "logprobs": None,
                        "finish_reason": outcome.finish_reason,
                    }
                    obj = "chat.completion"
                else:
                    choice = {
                        "index": 0,
                        "text": full,
                        "logprobs": None,
                        "finish_reason": outcome.finish_reason,
                    }
                    obj = "text_completion"
                return JSONResponse(
                    {
                        "id": request_id,
                        "object": obj,
                        "created": created,
                        "model": handle.name,
                        "choices": [choice],
                        "usage": usage,
                        "system_fingerprint": None,
                    }
                )
            # Streaming: pull the first event before answering so that 429/400 stay HTTP errors.
            first = await gen.__anext__()
        except BaseException:
            release()
            raise

        async def sse() -> AsyncIterator[bytes]:
            obj = "chat.completion.chunk" if kind == "chat" else "text_completion"

            def chunk(delta_text: str | None, finish: str | None, role: bool = False) -> bytes:
                if kind == "chat":
                    delta: dict[str, Any] = {}
                    if role:
                        delta["role"] = "assistant"
                    if delta_text is not None:
                        delta["content"] = delta_text
                    choice: dict[str, Any] = {
                        "index": 0,
                        "delta": delta,
                        "logprobs": None,
                        "finish_reason": finish,
                    }
                else:
                    choice = {"index": 0, "text": delta_text or "", "logprobs": None, "finish_reason": finish}
                payload = {
                    "id": request_id,
                    "object": obj,
                    "created": created,
                    "model": handle.name,
                    "choices": [choice],
                }
                if prep.include_usage:
                    payload["usage"] = None
                return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()

            try:
                if kind == "chat":
                    yield chunk("", None, role=True)
                item: tuple[str, _Outcome | None] | None = first
                while item is not None:
                    text, out = item
                    if out is None:
                        yield chunk(text, None)
                    else:
                        if out.finish_reason in ("error", "deadline", "abort"):
                            err = failure(out)
                            yield f"data: {json.dumps(err.body())}\n\n".encode()
                        else:
                            yield chunk(None if kind == "chat" else "", out.finish_reason)
                        if prep.include_usage:
                            usage = {
                                "prompt_tokens": out.prompt_tokens,
                                "completion_tokens": out.completion_tokens,
                                "total_tokens": out.prompt_tokens + out.completion_tokens,
                            }
                            yield (
                                "data: "
                                + json.dumps(
                                    {
                                        "id": request_id,
                                        "object": obj,
                                        "created": created,
                                        "model": handle.name,
                                        "choices": [],
                                        "usage": usage,
                                    }
                                )
                                + "\n\n"
                            ).encode()
                        break
                    try:
                        item = await gen.__anext__()
                    except StopAsyncIteration:
                        item = None
                yield b"data: [DONE]\n\n"
            finally:
                await gen.aclose()
                release()

        return StreamingResponse(
            sse(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Request-Id": request_id},
        )

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        body: CompletionBody = parse(CompletionBody, await read_json(request))
        prompt = body.prompt
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], list):
            if len(prompt) != 1:
                raise ApiError(
                    400,
                    "batched prompts are not supported; send one prompt per request",
                    param="prompt",
                    code="invalid_value",
                )
            prompt = prompt[0]
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], str):
            if len(prompt) != 1:
                raise ApiError(
                    400,
                    "batched prompts are not supported; send one prompt per request",
                    param="prompt",
                    code="invalid_value",
                )
            prompt = prompt[0]

        async def ids(handle: ModelHandle) -> list[int]:
            if isinstance(prompt, str):
                return await encode(handle, prompt, "prompt")
            return (
                [t for t in prompt if isinstance(t, int)]
                if len(prompt) == sum(isinstance(t, int) for t in prompt)
                else []
            )

        return await respond(request, "text_completion", body, ids, body.max_tokens)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        body: ChatBody = parse(ChatBody, await read_json(request))
        max_tokens = body.max_completion_tokens if body.max_completion_tokens is not None else body.max_tokens

        async def ids(handle: ModelHandle) -> list[int]:
            text = _chat_prompt(handle.engine.tokenizer, body.messages)
            if not any(_content_text(m.content) for m in body.messages):
                raise ApiError(400, "messages have no content", param="messages", code="empty_prompt")
            return await encode(handle, text, "messages")

        return await respond(request, "chat", body, ids, max_tokens)

    def model_card() -> dict[str, Any] | None:
        current = runtime.manager.current
        if current is None:
            return None
        return {
            "id": current.name,
            "object": "model",
            "created": int(current.loaded_at),
            "owned_by": "gpuobs",
            "root": current.model_dir or "embedded-tiny-llama",
            "parent": None,
            "max_model_len": _max_model_len(current.engine),
        }

    @app.get("/v1/models")
    async def models() -> Response:
        card = model_card()
        return JSONResponse({"object": "list", "data": [card] if card else []})

    @app.get("/v1/models/{model_id:path}")
    async def model(model_id: str) -> Response:
        card = model_card()
        if card is None or card["id"] != model_id:
            raise ApiError(
                404,
                f"The model `{model_id}` does not exist.",
                type_="not_found_error",
                param="model",
                code="model_not_found",
            )
        return JSONResponse(card)

    @app.get("/health")
    async def health() -> Response:
        problems = []
        for name, engine in runtime.manager.engines():
            alive = getattr(engine, "is_alive", None)
            if callable(alive) and not alive():
                problems.append(f"engine of {name} is not running")
        if runtime.load_error:
            problems.append(f"model load failed: {runtime.load_error}")
        if problems:
            return JSONResponse(
                {"status": "unhealthy", "problems": problems, "pid": os.getpid()}, status_code=503
            )
        return JSONResponse(
            {
                "status": "ok",
                "pid": os.getpid(),
                "restarts": int(os.environ.get(stat_loggers.RESTARTS_ENV, "0") or 0),
            }
        )

    @app.get("/ready")
    async def ready() -> Response:
        is_ready = runtime.manager.ready
        body = {"ready": is_ready, "model": runtime.manager.served_name or None}
        if runtime.load_error:
            body["error"] = runtime.load_error
        return JSONResponse(body, status_code=200 if is_ready else 503)

    @app.get("/metrics")
    async def metrics() -> Response:
        data = await asyncio.to_thread(stat_loggers.render, runtime.registry)
        return Response(data, media_type=stat_loggers.CONTENT_TYPE_LATEST)

    @app.get("/admin/models")
    async def admin_models() -> Response:
        return JSONResponse(runtime.manager.status())

    @app.post("/admin/models/load")
    async def admin_load(request: Request) -> Response:
        body: LoadBody = parse(LoadBody, await read_json(request))
        try:
            status = runtime.manager.start_swap(body.model, body.name)
        except SwapRefusedError as exc:
            raise ApiError(409, str(exc), type_="invalid_request_error", code="swap_refused") from None
        except SwapInProgressError as exc:
            raise ApiError(409, str(exc), code="swap_in_progress") from None
        if not body.wait:
            return JSONResponse(status.as_dict(), status_code=202)
        await asyncio.to_thread(status.done.wait, float(body.timeout_s))
        if status.state == "failed":
            raise ApiError(500, f"swap failed: {status.error}", type_="server_error", code="swap_failed")
        return JSONResponse(status.as_dict(), status_code=200 if status.done.is_set() else 202)

    @app.get("/admin/models/swaps/{swap_id}")
    async def admin_swap(swap_id: str) -> Response:
        status = runtime.manager.get_swap(swap_id)
        if status is None:
            raise ApiError(404, f"no swap {swap_id}", code="not_found", type_="not_found_error")
        return JSONResponse(status.as_dict())

    if cfg.enable_fault_injection:
        _add_fault_routes(app, runtime, read_json)

    return app


SERVER_FAULTS = ("grpc_block",)


def _add_fault_routes(app: FastAPI, runtime: ServingRuntime, read_json: Callable[[Request], Any]) -> None:
    """`/admin/faults`: engine faults (gpuobs.serving.faults) and the server's own `grpc_block`."""
    from starlette.responses import JSONResponse

    def engine_faults() -> Any:
        current = runtime.manager.current
        if current is None:
            raise ApiError(503, "no model loaded yet", type_="service_unavailable", code="not_ready")
        return current.engine.faults

    def listing() -> dict[str, Any]:
        from gpuobs.serving.faults import FAULT_KINDS

        active = dict(engine_faults().active())
        if runtime.grpc_block.is_set():
            active["grpc_block"] = {"hang_s": runtime.grpc_block_s}
        return {"enabled": True, "kinds": [*FAULT_KINDS, *SERVER_FAULTS], "active": active}

    @app.get("/admin/faults")
    async def faults_list() -> Any:
        return JSONResponse(listing())

    @app.post("/admin/faults/{kind}")
    async def faults_inject(kind: str, request: Request) -> Any:
        raw = await request.body()
        params = await read_json(request) if raw.strip() else {}
        if kind == "grpc_block":
            hang = params.get("hang_s", 60)
            if not isinstance(hang, int | float) or isinstance(hang, bool) or not 0 < hang <= 3600:
                raise ApiError(
                    400, "hang_s must be a number in (0, 3600]", param="hang_s", code="invalid_value"
                )
            runtime.grpc_block_s = float(hang)
            runtime.grpc_unblock.clear()
            runtime.grpc_block.set()
            logger.warning("fault injected: grpc_block %s", params, extra={"event": "fault_injected"})
            return JSONResponse({"kind": kind, "params": {"hang_s": runtime.grpc_block_s}})
        try:
            effective = engine_faults().inject(kind, **params)
        except (ValueError, TypeError) as exc:
            raise ApiError(400, str(exc), param="kind", code="invalid_fault") from None
        return JSONResponse({"kind": kind, "params": effective})

    @app.delete("/admin/faults/{kind}")
    async def faults_clear_one(kind: str) -> Any:
        cleared: list[str] = []
        if kind == "grpc_block":
            if runtime.grpc_block.is_set():
                cleared.append(kind)
            runtime.grpc_block.clear()
            runtime.grpc_unblock.set()
        else:
            cleared = list(engine_faults().clear(kind))
        return JSONResponse({"cleared": cleared})

    @app.delete("/admin/faults")
    async def faults_clear_all() -> Any:
        cleared = list(engine_faults().clear(None))
        if runtime.grpc_block.is_set():
            cleared.append("grpc_block")
        runtime.grpc_block.clear()
        runtime.grpc_unblock.set()
        return JSONResponse({"cleared": cleared})


def _uvicorn_logs_as_json() -> None:
    """uvicorn's own warnings and errors as JSON lines too (one log format per process)."""
    from gpuobs.jsonlog import JsonFormatter

    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        uv = logging.getLogger(name)
        uv.handlers = [handler]
        uv.setLevel(logging.WARNING)
        uv.propagate = False


def run_server(config: ServerConfig) -> None:
    """Start gRPC (if a port is given) and uvicorn; load the model in the background; serve until SIGTERM."""
    import uvicorn

    runtime = ServingRuntime(config)
    app = create_app(runtime)
    grpc_server = None
    if config.grpc_port is not None:
        from gpuobs.serving.grpc_api import start_grpc_server

        grpc_server = start_grpc_server(runtime, config.address, config.grpc_port)

    def load() -> None:
        try:
            runtime.load()
        except InputError as exc:
            # A bad flag or model directory: restarting cannot help (exit 2 stops the supervisor).
            logger.error("exiting: %s", exc)
            os._exit(2)
        except Exception:
            # Anything else may be transient (device busy, file system): exit 1 so a supervisor retries.
            logger.error("exiting: the model could not be loaded")
            os._exit(1)

    threading.Thread(target=load, name="model-load", daemon=True).start()
    _uvicorn_logs_as_json()
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=config.address,
            port=config.port,
            log_config=None,  # keep our JSON handlers on uvicorn's loggers
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=10,
        )
    )
    try:
        server.run()
    finally:
        if grpc_server is not None:
            grpc_server.stop(grace=2)
        runtime.manager.shutdown(drain=False, timeout_s=5)
