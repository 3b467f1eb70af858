"""The FastAPI application of `gpuobs serve`: middleware, error handlers, routes, and the server's wiring.

Routes: `/v1/completions`, `/v1/chat/completions` (SSE streaming), `/v1/models`, `/health`, `/ready`,
`/metrics`, `/admin/models` (hot-swap) and, only with fault injection enabled, `/admin/faults`.
Every bad input gets a 4xx with OpenAI's error JSON and the server stays healthy; an admission refusal
is a 429 with Retry-After. `run_server` starts gRPC (optional) and uvicorn, and loads the model in the
background so that `/health` answers while `/ready` waits for the warm-up.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from gpuobs.errors import InputError
from gpuobs.names import serving as serving_names
from gpuobs.serving import stat_loggers
from gpuobs.serving.auth import admin_secret, bearer_matches
from gpuobs.serving.hotswap import ModelHandle
from gpuobs.serving.http.admin import (
    add_admin_routes,
    add_disabled_fault_routes,
    add_fault_routes,
    add_model_routes,
)
from gpuobs.serving.http.health import liveness, readiness
from gpuobs.serving.http.ingress import chat_prompt, completion_prompt, encode, parse, read_json
from gpuobs.serving.http.protocol import CLIENT_CLOSED, READ_TIMED_OUT, ApiError, ChatBody, CompletionBody
from gpuobs.serving.http.responses import respond
from gpuobs.serving.http.runtime import ServerConfig, ServingRuntime

__all__ = ["BearerAuth", "create_app", "run_server"]

logger = logging.getLogger(__name__)


class BearerAuth:
    """Pure ASGI middleware (Starlette's BaseHTTPMiddleware would hide client disconnects from handlers)."""

    def __init__(
        self,
        app: ASGIApp,
        api_key: str | None,
        admin_token: str | None,
        stats: stat_loggers.PrometheusStatLogger,
    ) -> None:
        self.app, self.api_key, self.admin_token, self.stats = app, api_key, admin_token, stats

    def _secret_for(self, path: str) -> str | None:
        if path.startswith("/v1/"):
            return self.api_key
        if path.startswith("/admin"):
            return self.admin_token
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        secret = self._secret_for(str(scope.get("path", ""))) if scope["type"] == "http" else None
        if secret:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            if not bearer_matches(headers.get("authorization"), secret):
                self.stats.record_invalid("http", "unauthorized")
                err = ApiError(
                    401, "missing or wrong bearer token", type_="authentication_error", code="invalid_api_key"
                )
                await JSONResponse(err.body(), status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _add_error_handlers(app: FastAPI, runtime: ServingRuntime) -> None:
    """Every error as OpenAI's error JSON; 4xx (but 429) counted as invalid requests."""

    def error_response(err: ApiError, cut_by_read_deadline: bool = False) -> Response:
        if err.status == CLIENT_CLOSED:  # nobody reads the answer: counted as aborted, logged quietly
            logger.debug("request aborted: %s", err.message)
            if not cut_by_read_deadline:  # else the server cut it, and counted it as a 408 (connections.py)
                runtime.stats.record_request(serving_names.API_HTTP, "", serving_names.OUTCOME_ABORT, None)
            return Response(status_code=CLIENT_CLOSED)
        if err.status < 500 and err.status != 429:
            runtime.stats.record_invalid("http", err.reason)
        return JSONResponse(err.body(), status_code=err.status, headers=err.headers)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> Response:
        return error_response(exc, bool(request.scope.get(READ_TIMED_OUT)))

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


def create_app(runtime: ServingRuntime) -> FastAPI:
    """The FastAPI application over a runtime (the model is loaded separately)."""
    app = FastAPI(title="gpuobs serve", version="1", docs_url=None, redoc_url=None, openapi_url=None)
    cfg = runtime.config
    if cfg.api_key or cfg.admin_token:
        app.add_middleware(
            BearerAuth,
            api_key=cfg.api_key,
            admin_token=admin_secret(cfg.api_key, cfg.admin_token),
            stats=runtime.stats,
        )
    _add_error_handlers(app, runtime)

    async def body_of(request: Request) -> dict[str, Any]:
        return await read_json(request, cfg.max_body_bytes)

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        body = parse(CompletionBody, await body_of(request))
        prompt = completion_prompt(body)

        async def ids(handle: ModelHandle) -> list[int]:
            return await encode(handle, prompt, "prompt") if isinstance(prompt, str) else prompt

        return await respond(runtime, request, "text_completion", body, ids, body.max_tokens)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        body = parse(ChatBody, await body_of(request))
        max_tokens = body.max_completion_tokens if body.max_completion_tokens is not None else body.max_tokens

        async def ids(handle: ModelHandle) -> list[int]:
            return await encode(handle, chat_prompt(handle.engine.tokenizer, body.messages), "messages")

        return await respond(runtime, request, "chat", body, ids, max_tokens)

    # HEAD too: a load balancer's or uptime checker's probe may ask HEAD (405 before).
    @app.api_route("/health", methods=["GET", "HEAD"])
    async def health() -> Response:
        status, body = liveness(runtime)
        return JSONResponse(body, status_code=status)

    @app.api_route("/ready", methods=["GET", "HEAD"])
    async def ready() -> Response:
        status, body = readiness(runtime)
        return JSONResponse(body, status_code=status)

    @app.get("/metrics")
    async def metrics() -> Response:
        data = await asyncio.to_thread(stat_loggers.render, runtime.registry)
        return Response(data, media_type=stat_loggers.CONTENT_TYPE_LATEST)

    add_model_routes(app, runtime)
    add_admin_routes(app, runtime, body_of)
    if cfg.enable_fault_injection:
        add_fault_routes(app, runtime)
    else:
        add_disabled_fault_routes(app)
    return app


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


def _load_or_exit(runtime: ServingRuntime) -> None:
    """Load the initial model; on failure end the process with the status a supervisor understands."""
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


def run_server(config: ServerConfig) -> None:
    """Start gRPC (if a port is given) and uvicorn; load the model in the background; serve until SIGTERM."""
    import uvicorn

    runtime = ServingRuntime(config)
    app = create_app(runtime)
    grpc_server = None
    if config.grpc_port is not None:
        from gpuobs.serving.grpc_api import start_grpc_server

        grpc_server = start_grpc_server(runtime, config.address, config.grpc_port)

    threading.Thread(target=_load_or_exit, args=(runtime,), name="model-load", daemon=True).start()
    _uvicorn_logs_as_json()
    from gpuobs.serving.http.connections import guarded_protocol
    from gpuobs.serving.http.drain import DrainingServer

    server = DrainingServer(
        uvicorn.Config(
            app,
            host=config.address,
            port=config.port,
            log_config=None,  # keep our JSON handlers on uvicorn's loggers
            log_level="warning",
            access_log=False,
            lifespan="off",
            # a backstop only: requests end on their own once the drain runs out (responses.py)
            timeout_graceful_shutdown=int(config.drain_timeout_s) + 3,
            http=guarded_protocol(config.read_timeout_s, config.max_connections, runtime.stats),
        ),
        runtime,
    )
    try:
        server.run()
    finally:
        if grpc_server is not None:
            grpc_server.stop(grace=2)
        runtime.manager.shutdown(drain=False, timeout_s=5)
