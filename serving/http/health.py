"""Liveness and readiness of the server, as `/health` and `/ready` answer them (Kubernetes probes).

Alive: every engine the server holds (the serving one and any draining after a swap) answers its
heartbeat (not dead, no step past its stall budget) and the model did not fail to load. Ready: alive, and
a model is loaded and warmed. A 503 names each problem; the kubelet (livenessProbe on /health) or
`gpuobs serve --supervise` restarts a worker that stays unhealthy.

`/health` body: `{"status": "ok" | "unhealthy", "pid", "restarts", "supervised", "engines": [{"model",
"alive", "state", "reason", "stall_budget_s", "loop_age_s", "step_phase", "step_running_s",
"loop_errors_total"}], "problems": ["engine of M is stalled: ..."]}` (problems only when unhealthy).
`/ready` body: `{"ready", "model", "error"}` (error only when not ready for a known reason).
"""

from __future__ import annotations

import os
from typing import Any

from gpuobs.serving import stat_loggers
from gpuobs.serving.http.runtime import ServingRuntime

__all__ = ["liveness", "readiness"]


def _restarts() -> int:
    raw = os.environ.get(stat_loggers.RESTARTS_ENV, "0") or "0"
    return int(raw) if raw.isdigit() else 0


def liveness(runtime: ServingRuntime) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) of `/health`: 200 when alive, else 503 with the problems."""
    problems: list[str] = []
    engines: list[dict[str, Any]] = []
    for name, engine in runtime.manager.engines():
        health = engine.health()
        engines.append({"model": name, **health.as_dict()})
        if not health.alive:
            problems.append(f"engine of {name} is {health.state}: {health.reason}")
    if runtime.load_error:
        problems.append(f"model load failed: {runtime.load_error}")
    body: dict[str, Any] = {
        "status": "unhealthy" if problems else "ok",
        "pid": os.getpid(),
        "restarts": _restarts(),
        # whether `serve --supervise` started this worker (it sets the restarts variable): what a chaos
        # action that kills the worker asks first, since nothing else on the machine would restart it
        "supervised": stat_loggers.RESTARTS_ENV in os.environ,
        "engines": engines,
    }
    if problems:
        body["problems"] = problems
    return (503 if problems else 200), body


def readiness(runtime: ServingRuntime) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) of `/ready`: ready means alive and a warmed model serving."""
    alive_status, alive = liveness(runtime)
    is_ready = runtime.manager.ready and alive_status == 200
    body: dict[str, Any] = {"ready": is_ready, "model": runtime.manager.served_name or None}
    if runtime.load_error:
        body["error"] = runtime.load_error
    elif alive_status != 200:
        body["error"] = "; ".join(alive.get("problems", []))
    return (200 if is_ready else 503), body
