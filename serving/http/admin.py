"""Admin routes: the model list (`/v1/models`), hot-swap (`/admin/models`), and fault injection.

`/admin/faults` exists only with `--enable-fault-injection`: engine faults (gpuobs.serving.faults) and the
server's own `grpc_block` and `drain_stop` (the shutdown drain begins with the process stopped until it
gets SIGCONT: what a CPU-starved host does to it, for a test to send requests into that moment).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from starlette.responses import JSONResponse, Response

from gpuobs.names import logs as lf
from gpuobs.serving.errors import SwapInProgressError, SwapRefusedError
from gpuobs.serving.faults import FAULT_KINDS, FaultInjector
from gpuobs.serving.http.ingress import json_object, parse, read_body
from gpuobs.serving.http.protocol import ApiError, LoadBody
from gpuobs.serving.http.runtime import ServingRuntime
from gpuobs.serving.model.loader import served_name_problem

__all__ = [
    "SERVER_FAULTS",
    "add_admin_routes",
    "add_disabled_fault_routes",
    "add_fault_routes",
    "add_model_routes",
    "model_card",
]

logger = logging.getLogger(__name__)

SERVER_FAULTS = ("grpc_block", "drain_stop")

ReadJson = Callable[[Request], Awaitable[dict[str, Any]]]


def model_card(runtime: ServingRuntime) -> dict[str, Any] | None:
    """The served model as `/v1/models` lists it (None before the first model is loaded)."""
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
        "max_model_len": current.engine.max_model_len,
    }


def add_model_routes(app: FastAPI, runtime: ServingRuntime) -> None:
    """`GET /v1/models` and `GET /v1/models/{id}`."""

    @app.get("/v1/models")
    async def models() -> Response:
        card = model_card(runtime)
        return JSONResponse({"object": "list", "data": [card] if card else []})

    @app.get("/v1/models/{model_id:path}")
    async def model(model_id: str) -> Response:
        card = model_card(runtime)
        if card is None or card["id"] != model_id:
            raise ApiError(
                404,
                f"The model `{model_id}` does not exist.",
                type_="not_found_error",
                param="model",
                code="model_not_found",
            )
        return JSONResponse(card)


def add_admin_routes(app: FastAPI, runtime: ServingRuntime, read_json: ReadJson) -> None:
    """Hot-swap: `GET /admin/models`, `POST /admin/models/load`, `GET /admin/models/swaps/{id}`."""

    @app.get("/admin/models")
    async def admin_models() -> Response:
        return JSONResponse(runtime.manager.status())

    @app.post("/admin/models/load")
    async def admin_load(request: Request) -> Response:
        body = parse(LoadBody, await read_json(request))
        name_problem = None if body.name is None else served_name_problem(body.name)
        if name_problem is not None:
            raise ApiError(
                400, f"name {name_problem}: leave it out to keep the served name", param="name",
                code="invalid_value",
            )
        try:
            status = runtime.manager.start_swap(body.model, body.name)
        except SwapRefusedError as exc:
            raise ApiError(409, str(exc), type_="invalid_request_error", code="swap_refused") from None
        except SwapInProgressError as exc:
            raise ApiError(409, str(exc), code="swap_in_progress") from None
        if not body.wait:
            return JSONResponse(status.as_dict(), status_code=202)
        await asyncio.to_thread(status.done.wait, float(body.timeout_s))
        if status.state == "failed" and status.input_error:
            raise ApiError(422, f"swap failed: {status.error}", code="swap_failed")
        if status.state == "failed":
            raise ApiError(500, f"swap failed: {status.error}", type_="server_error", code="swap_failed")
        return JSONResponse(status.as_dict(), status_code=200 if status.done.is_set() else 202)

    @app.get("/admin/models/swaps/{swap_id}")
    async def admin_swap(swap_id: str) -> Response:
        status = runtime.manager.get_swap(swap_id)
        if status is None:
            raise ApiError(404, f"no swap {swap_id}", code="not_found", type_="not_found_error")
        return JSONResponse(status.as_dict())


def _set_grpc_block(runtime: ServingRuntime, hang_s: float | None) -> bool:
    """Start (hang_s) or end (None) the grpc_block fault; returns whether it was active."""
    was = runtime.grpc_block.is_set()
    if hang_s is None:
        runtime.grpc_block.clear()
        runtime.grpc_unblock.set()
    else:
        runtime.grpc_block_s = hang_s
        runtime.grpc_unblock.clear()
        runtime.grpc_block.set()
    return was


def add_disabled_fault_routes(app: FastAPI) -> None:
    """`/admin/faults` without --enable-fault-injection: a 404 that says why (as the exporter's does),
    not a bare "Not Found" that reads like a wrong URL."""

    @app.api_route("/admin/faults", methods=["GET", "POST", "DELETE"])
    @app.api_route("/admin/faults/{kind}", methods=["GET", "POST", "DELETE"])
    async def faults_off(kind: str | None = None) -> Response:
        raise ApiError(
            404,
            "fault injection is off (start gpuobs serve with --enable-fault-injection)",
            type_="not_found_error",
            code="fault_injection_disabled",
            reason="fault_injection_disabled",
        )


def add_fault_routes(app: FastAPI, runtime: ServingRuntime) -> None:
    """`/admin/faults`: list, inject (`POST /admin/faults/{kind}`), clear one or all (`DELETE`)."""

    def engine_faults() -> FaultInjector:
        current = runtime.manager.current
        if current is None:
            raise ApiError.unavailable("no model loaded yet", "not_ready")
        return current.engine.faults

    @app.get("/admin/faults")
    async def faults_list() -> Response:
        active: dict[str, Any] = dict(engine_faults().active())
        if runtime.grpc_block.is_set():
            active["grpc_block"] = {"hang_s": runtime.grpc_block_s}
        if runtime.drain_stop.is_set():
            active["drain_stop"] = {}
        return JSONResponse({"enabled": True, "kinds": [*FAULT_KINDS, *SERVER_FAULTS], "active": active})

    @app.post("/admin/faults/{kind}")
    async def faults_inject(kind: str, request: Request) -> Response:
        raw = await read_body(request, runtime.config.max_body_bytes)  # a cut upload: no traceback
        params = json_object(raw) if raw.strip() else {}
        if kind == "grpc_block":
            hang = params.get("hang_s", 60)
            if not isinstance(hang, int | float) or isinstance(hang, bool) or not 0 < hang <= 3600:
                raise ApiError(
                    400, "hang_s must be a number in (0, 3600]", param="hang_s", code="invalid_value"
                )
            _set_grpc_block(runtime, float(hang))
            logger.warning("fault injected: grpc_block %s", params, extra={lf.EVENT: "fault_injected"})
            return JSONResponse({"kind": kind, "params": {"hang_s": runtime.grpc_block_s}})
        if kind == "drain_stop":
            runtime.drain_stop.set()
            logger.warning("fault injected: drain_stop", extra={lf.EVENT: "fault_injected"})
            return JSONResponse({"kind": kind, "params": {}})
        try:
            effective = engine_faults().inject(kind, **params)
        except (ValueError, TypeError) as exc:
            raise ApiError(400, str(exc), param="kind", code="invalid_fault") from None
        return JSONResponse({"kind": kind, "params": effective})

    @app.delete("/admin/faults/{kind}")
    async def faults_clear_one(kind: str) -> Response:
        if kind == "grpc_block":
            cleared = [kind] if _set_grpc_block(runtime, None) else []
        elif kind == "drain_stop":
            cleared = [kind] if runtime.drain_stop.is_set() else []
            runtime.drain_stop.clear()
        else:
            cleared = list(engine_faults().clear(kind))
        return JSONResponse({"cleared": cleared})

    @app.delete("/admin/faults")
    async def faults_clear_all() -> Response:
        cleared = list(engine_faults().clear(None))
        if _set_grpc_block(runtime, None):
            cleared.append("grpc_block")
        if runtime.drain_stop.is_set():
            runtime.drain_stop.clear()
            cleared.append("drain_stop")
        return JSONResponse({"cleared": cleared})
