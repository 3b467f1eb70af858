"""Actions that break `gpuobs serve`: signal the worker, engine faults over /admin/faults, swap, load.

Every action checks its target against the allowlist (`gpuobs.chaos.safety`), honours dry runs,
records the fault time in the incident record and registers its undo, so rollbacks (and the
experiment control) leave the stack as it was.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from chaoslib.exceptions import ActivityFailed

from gpuobs.chaos.httpjson import check_fault_api, request_json
from gpuobs.chaos.incident import current
from gpuobs.chaos.load import GrpcLoadGenerator, LoadGenerator
from gpuobs.chaos.safety import SafetyError, check_grpc_target, check_log_target, check_url, is_dry_run

__all__ = [
    "clear_faults",
    "flood",
    "hot_swap_oversized",
    "inject_fault",
    "restore",
    "signal_worker",
    "start_grpc_load",
    "start_load",
]
# load_named is a helper for the probes, not an activity: it stays out of __all__ (and of discovery).

logger = logging.getLogger("chaostoolkit")

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_GRPC_TARGET = "127.0.0.1:50051"
_LOADS: dict[str, LoadGenerator] = {}


def _worker(base: str) -> dict[str, Any]:
    """The serving worker's /health body, which names its pid (and whether a supervisor runs it)."""
    status, body = request_json("GET", f"{base}/health", timeout=5)
    if not isinstance(body, dict) or not isinstance(body.get("pid"), int):
        reason = f"{base}/health answered {status} without a worker pid: {str(body)[:200]!r}"
        current().fault_refused(reason)
        raise ActivityFailed(reason)
    return body


def _wait_ready(base: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            status, _ = request_json("GET", f"{base}/ready", timeout=2)
            if status == 200:
                return
        except ActivityFailed:
            pass
        time.sleep(0.2)
    raise ActivityFailed(f"{base} not ready {timeout_s:.0f} s after the fault was undone")


def signal_worker(
    signal_name: str = "SIGKILL",
    base_url: str = DEFAULT_URL,
    ready_timeout_s: float = 60.0,
    oom_killer_log: str | None = None,
    require_supervisor: bool = True,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Send `signal_name` to the serving worker (its pid from /health); the supervisor should restart it.
    A worker whose /health says no supervisor runs it is not signalled unless `require_supervisor` is false.

    Only for a worker on this machine (the URL must be on the allowlist, loopback by default). With
    `oom_killer_log`, the kill is the host OOM killer's: its kernel lines go to that kernel-log file
    first, as the kernel writes them. The undo waits until the replacement worker is ready again.
    """
    base = check_url(base_url, configuration)
    sig = getattr(signal, signal_name, None)
    if not isinstance(sig, signal.Signals) or signal_name not in ("SIGKILL", "SIGTERM", "SIGINT", "SIGSEGV"):
        raise ActivityFailed(f"signal_name must be SIGKILL, SIGTERM, SIGINT or SIGSEGV, got {signal_name!r}")
    worker = _worker(base)
    pid = int(worker["pid"])
    if require_supervisor and worker.get("supervised") is False:
        reason = (
            f"{base} runs without --supervise: nothing would restart its worker after {signal_name}, and the "
            "stack would stay down (set require_supervisor to false where something else restarts it, such "
            "as a Kubernetes restart policy)"
        )
        current().fault_refused(reason)
        raise ActivityFailed(reason)
    if oom_killer_log:
        try:
            check_log_target(oom_killer_log, configuration)  # before the kill, not between it and its lines
        except SafetyError as exc:
            current().fault_refused(str(exc))
            raise
    if is_dry_run(configuration):
        logger.info("dry run: would send %s to worker %d of %s", signal_name, pid, base)
        return {"pid": pid, "signal": signal_name, "dry_run": True}
    current().add_undo("serving.worker", lambda: _wait_ready(base, ready_timeout_s))
    current().mark("fault", {"action": "signal_worker", "signal": signal_name, "pid": pid})
    if oom_killer_log:
        from gpuobs.chaos.node.actions import append_kernel_line

        rss_kb = 21_474_836
        append_kernel_line(
            "python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
            "oom_score_adj=0",
            oom_killer_log,
            configuration,
        )
        append_kernel_line(
            f"Out of memory: Killed process {pid} (python3) total-vm:{rss_kb * 2}kB, anon-rss:{rss_kb}kB, "
            "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:42000kB oom_score_adj:0",
            oom_killer_log,
            configuration,
        )
    try:
        os.kill(pid, sig)
    except ProcessLookupError as exc:
        raise ActivityFailed(f"worker {pid} is not running on this machine") from exc
    except PermissionError as exc:
        raise ActivityFailed(f"not allowed to signal worker {pid}") from exc
    logger.info("sent %s to worker %d", signal_name, pid)
    return {"pid": pid, "signal": signal_name}


def inject_fault(
    kind: str,
    params: dict[str, Any] | None = None,
    base_url: str = DEFAULT_URL,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Inject one serving fault through `POST /admin/faults/<kind>` (serve needs --enable-fault-injection).

    Kinds are gpuobs.serving.faults.FAULT_KINDS plus `grpc_block`; `params` are the fault's own (for
    example `{"delay_s": 0.5}` for slow_kernel). The undo is `DELETE /admin/faults/<kind>`.
    """
    base = check_url(base_url, configuration)
    if is_dry_run(configuration):
        logger.info("dry run: would inject %s %s into %s", kind, params or {}, base)
        return {"kind": kind, "params": params or {}, "dry_run": True}

    def undo() -> None:
        request_json("DELETE", f"{base}/admin/faults/{kind}", timeout=10)

    check_fault_api(f"{base}/admin/faults", f"injecting {kind}")
    current().add_undo(f"serving.fault.{kind}", undo)
    current().mark("fault", {"action": "inject_fault", "kind": kind})
    status, body = request_json("POST", f"{base}/admin/faults/{kind}", params or {}, timeout=10)
    if status != 200:
        raise ActivityFailed(f"injecting {kind} failed with {status}: {body}")
    if not isinstance(body, dict):  # dict(body) of a page's text was "dictionary update sequence element..."
        raise ActivityFailed(
            f"injecting {kind}: {base} answered 200 without the fault's JSON (is it a gpuobs serve?): "
            f"{str(body)[:200]!r}"
        )
    return body


def clear_faults(
    kind: str | None = None,
    base_url: str = DEFAULT_URL,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> list[str]:
    """Clear one serving fault (or every one): `DELETE /admin/faults[/<kind>]`; returns what was cleared."""
    base = check_url(base_url, configuration)
    if is_dry_run(configuration) or current().no_fault_reason() is not None:  # nothing went in to clear
        return []
    current().pop_undos(f"serving.fault.{kind}" if kind else "serving.fault.")
    path = f"{base}/admin/faults/{kind}" if kind else f"{base}/admin/faults"
    status, body = request_json("DELETE", path, timeout=10)
    if status != 200:
        raise ActivityFailed(f"clearing faults failed with {status}: {body}")
    return list(body.get("cleared", [])) if isinstance(body, dict) else []


def hot_swap_oversized(
    model: str | None = None,
    name: str | None = None,
    base_url: str = DEFAULT_URL,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Hot-swap to a model that does not fit next to the one serving: the new engine runs out of memory.

    On a GPU the second copy of the weights really does not fit; on a CPU-only stack the swap loads
    `model` (default: the embedded tiny model again) and the engine's `cuda_oom` fault (repeat) makes
    its steps fail as PyTorch's allocator would. The undo clears the fault.
    """
    base = check_url(base_url, configuration)
    if model is None:
        from gpuobs.serving.model.loader import ensure_tiny_model

        model = str(ensure_tiny_model())
    if is_dry_run(configuration):
        return {"model": model, "dry_run": True}
    if not Path(model).is_dir():
        raise ActivityFailed(f"model {model}: not a directory")
    current().mark("fault", {"action": "hot_swap_oversized", "model": model})
    status, body = request_json(
        "POST",
        f"{base}/admin/models/load",
        {"model": model, "name": name, "wait": True, "timeout_s": 60},
        timeout=90,
    )
    if status not in (200, 202):
        raise ActivityFailed(f"hot swap to {model} failed with {status}: {body}")
    result = inject_fault("cuda_oom", {"repeat": True}, base_url, configuration)
    return {"swap": body, "oom": result}


def flood(
    requests: int = 64,
    concurrency: int = 16,
    max_tokens: int = 64,
    base_url: str = DEFAULT_URL,
    model: str = "gpuobs-tiny-llama",
    ignore_eos: bool = False,
    queue_wait_s: float | None = None,
    batch_size: int = 16,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Send a burst of `requests` completions, `concurrency` at a time, in the background.

    The burst is a load spike: queueing grows and latency climbs while it lasts. The undo stops it.
    `ignore_eos` makes every completion run to `max_tokens`: the tiny model otherwise stops after a few
    tokens, and a fast machine then drains the queue before any request waits long. `queue_wait_s` sizes
    the completions from this server's measured speed instead of a fixed length (`max_tokens` is then
    the cap): full batches of `batch_size` (the server's batch) are timed first, before the fault, so that a
    request behind the flood waits about `queue_wait_s` on a fast machine and a slow one alike.
    """
    base = check_url(base_url, configuration)
    if is_dry_run(configuration):
        return {"requests": requests, "dry_run": True}
    sized: dict[str, Any] = {}
    if queue_wait_s is not None:
        if queue_wait_s <= 0 or concurrency <= batch_size:
            raise ActivityFailed("queue_wait_s needs a positive wait and more clients than the batch holds")
        wanted_s = batch_seconds_for_wait(queue_wait_s, concurrency, batch_size)
        max_tokens, took_s = _tokens_for_batch_seconds(base, model, batch_size, wanted_s, max_tokens)
        sized = {"batch_s": round(took_s, 3), "max_tokens": max_tokens}
    per_thread = max(1, requests // max(1, concurrency))
    gen = LoadGenerator(
        base,
        model=model,
        concurrency=concurrency,
        max_tokens=max_tokens,
        interval_s=0.0,
        ignore_eos=ignore_eos,
    )
    _LOADS["flood"] = gen

    def stop_after_quota() -> None:
        while not gen._stop.is_set() and len(gen.snapshot()) < per_thread * concurrency:
            time.sleep(0.05)
        gen.stop(timeout_s=0)

    current().add_undo("serving.flood", lambda: gen.stop(timeout_s=5))
    current().mark("fault", {"action": "flood", "requests": requests, **sized})
    gen.start()
    threading.Thread(target=stop_after_quota, name="chaos-flood-quota", daemon=True).start()
    return {"requests": per_thread * concurrency, "concurrency": concurrency, **sized}


_FIRST_CALIBRATION_TOKENS = 32


def _tokens_for_batch_seconds(
    base: str, model: str, batch_size: int, wanted_s: float, cap: int
) -> tuple[int, float]:
    """The completion length at which a full batch takes about `wanted_s` on this server, and the seconds
    the longest timed batch took: batches of 32, 64, 128 ... tokens are timed until one takes `wanted_s`
    (or `cap` tokens are reached) and the length is read between the last two. Timed, not modelled: a
    token costs more the longer its sequence (a batch of 320 took three times one of 160 here)."""
    low_tokens, low_s = 0, 0.0
    tokens = min(_FIRST_CALIBRATION_TOKENS, cap)
    while True:
        took = _batch_seconds(base, model, batch_size, tokens)
        if took >= wanted_s or tokens >= cap:
            break
        low_tokens, low_s = tokens, took
        tokens = min(tokens * 2, cap)
    if took < wanted_s:  # even `cap` tokens run faster than wanted: the longest allowed
        return cap, took
    return interpolate_tokens(low_tokens, low_s, tokens, took, wanted_s), took


def _batch_seconds(base: str, model: str, batch_size: int, tokens: int) -> float:
    """Seconds until the last of `batch_size` completions of `tokens` tokens (ignore_eos), sent together,
    returns; ActivityFailed when any of them fails."""
    gen = LoadGenerator(base, model=model, max_tokens=tokens, ignore_eos=True)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(batch_size, thread_name_prefix="chaos-flood-calibrate") as pool:
        samples = list(pool.map(lambda _: gen.one(), range(batch_size)))
    elapsed = time.perf_counter() - t0
    failed = [s for s in samples if s.outcome != "ok"]
    if failed:
        raise ActivityFailed(
            f"the flood's calibration batch failed: {len(failed)} of {batch_size} completions "
            f"{failed[0].outcome} (HTTP {failed[0].status}); is the server up and serving?"
        )
    return elapsed


def batch_seconds_for_wait(wait_s: float, concurrency: int, batch_size: int) -> float:
    """How long each batch must run for a request behind `concurrency` clients to wait about `wait_s`: the
    clients ahead of it fill concurrency / batch_size - 1 batches."""
    return wait_s / (concurrency / batch_size - 1)


def interpolate_tokens(
    low_tokens: int, low_s: float, high_tokens: int, high_s: float, wanted_s: float
) -> int:
    """The length between two timed ones at which a batch would take `wanted_s` (straight between them);
    at least 16 tokens."""
    share = (wanted_s - low_s) / max(high_s - low_s, 1e-9)
    return max(16, round(low_tokens + (high_tokens - low_tokens) * min(1.0, max(0.0, share))))


def start_load(
    name: str = "background",
    concurrency: int = 2,
    max_tokens: int = 32,
    interval_s: float = 0.05,
    base_url: str = DEFAULT_URL,
    model: str = "gpuobs-tiny-llama",
    ignore_eos: bool = False,
    prompt: str = "chaos probe",
    prompt_repeat: int = 1,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Start steady background load named `name`; `gpuobs.chaos.serving.probes.requests_lost` stops it.

    `ignore_eos` makes every completion run to `max_tokens` (the tiny model stops early otherwise); the
    `prompt` repeated `prompt_repeat` times makes long requests that still finish quickly (one prefill).
    """
    base = check_url(base_url, configuration)
    if is_dry_run(configuration):
        return {"name": name, "dry_run": True}
    old = _LOADS.pop(name, None)
    if old is not None:
        old.stop(timeout_s=5)
    gen = LoadGenerator(
        base,
        model=model,
        concurrency=concurrency,
        max_tokens=max_tokens,
        interval_s=interval_s,
        ignore_eos=ignore_eos,
        prompt=prompt * max(1, int(prompt_repeat)),
    )
    _LOADS[name] = gen.start()
    current().add_undo(f"serving.load.{name}", lambda: gen.stop(timeout_s=5))
    return {"name": name, "concurrency": concurrency}


def start_grpc_load(
    name: str = "grpc",
    grpc_target: str = DEFAULT_GRPC_TARGET,
    concurrency: int = 2,
    deadline_s: float = 1.0,
    interval_s: float = 0.2,
    model: str = "",
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Start steady gRPC Predict load named `name`: `concurrency` clients, each call with `deadline_s`.

    Clients of a gRPC service set deadlines; what the server does when calls run past them is what the
    game-day watches. `gpuobs.chaos.serving.probes.requests_lost` (or the rollback) stops it.
    """
    target = check_grpc_target(grpc_target, configuration)
    if is_dry_run(configuration):
        return {"name": name, "grpc_target": target, "dry_run": True}
    old = _LOADS.pop(name, None)
    if old is not None:
        old.stop(timeout_s=5)
    gen = GrpcLoadGenerator(
        target, model=model, concurrency=concurrency, deadline_s=deadline_s, interval_s=interval_s
    )
    _LOADS[name] = gen.start()
    current().add_undo(f"serving.load.{name}", lambda: gen.stop(timeout_s=5))
    return {"name": name, "grpc_target": target, "concurrency": concurrency, "deadline_s": deadline_s}


def load_named(name: str) -> LoadGenerator | None:
    """The background load started under `name` (for the probes)."""
    return _LOADS.get(name)


def restore(
    base_url: str = DEFAULT_URL,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> list[str]:
    """The rollback: run every undo still pending (faults cleared, load stopped, worker ready again)."""
    check_url(base_url, configuration)
    if is_dry_run(configuration):
        return current().pending()
    return current().undo_all()
