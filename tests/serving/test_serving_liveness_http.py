"""Liveness over real HTTP: `/health` and `/ready` answer 503 with the reason when the engine is stalled
(the `hang` fault past a small stall budget), dead (the `worker_crash` fault in mode `thread`, a scheduler
that raises), and a request is answered promptly instead of hanging; a MemoryError in one request's
bookkeeping fails that request only.

Faults are driven through a real `gpuobs serve` subprocess; the scheduler double needs the engine object,
so those tests run the real app in-process under uvicorn on loopback. Every wait is a bounded poll.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.engine_doubles import SchedulerDouble
from support.prometheus import free_port
from support.serve import ServeProcess, http_json

from gpuobs.serving.engine import Engine
from gpuobs.serving.http import ServerConfig, ServingRuntime, create_app

MODEL = "gpuobs-tiny-llama"
PROMPT = {"model": MODEL, "prompt": "liveness", "max_tokens": 3, "temperature": 0, "ignore_eos": True}
PROMPT_ANSWER_S = 10.0  # "promptly": far under the 600 s a request used to hang, far over a loaded machine


def _until(predicate: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not reached in {timeout} s"
        time.sleep(0.1)


def _health(url: str) -> tuple[int, Any]:
    return http_json("GET", f"{url}/health", timeout=10)


def _timed_post(url: str, body: Any = PROMPT, timeout: float = 120) -> tuple[int, Any, float]:
    t0 = time.monotonic()
    status, answer = http_json("POST", f"{url}/v1/completions", body, timeout=timeout)
    return status, answer, time.monotonic() - t0


class Background:
    """One completion request on a thread: its status and answer once it returns."""

    def __init__(self, url: str) -> None:
        self.result: tuple[int, Any, float] | None = None
        self.thread = threading.Thread(target=self._run, args=(url,), daemon=True)
        self.thread.start()

    def _run(self, url: str) -> None:
        self.result = _timed_post(url)

    def join(self, timeout: float = 60) -> tuple[int, Any, float]:
        self.thread.join(timeout)
        assert self.result is not None, "the request did not return"
        return self.result


@pytest.fixture(scope="module")
def stall_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A server whose stall budget is 2 s, so the hang fault makes it stalled quickly."""
    workdir = tmp_path_factory.mktemp("serve-liveness")
    with ServeProcess(
        workdir,
        "--enable-fault-injection",
        "-E",
        "stall_budget_s=2",
        "-E",
        "kv_cache_bytes=8388608",
        grpc=False,
    ) as proc:
        yield proc


def test_health_reports_each_engine_heartbeat(stall_server: ServeProcess) -> None:
    status, body = _health(stall_server.url)
    assert status == 200 and body["status"] == "ok"
    (engine,) = body["engines"]
    assert engine["model"] == MODEL and engine["alive"] is True and engine["state"] == "running"
    assert engine["stall_budget_s"] == 2.0 and engine["loop_age_s"] is not None


def test_hang_past_the_stall_budget_makes_health_503_and_clearing_it_recovers(
    stall_server: ServeProcess,
) -> None:
    url = stall_server.url
    status, _ = http_json("POST", f"{url}/admin/faults/hang", {"hang_s": 300})
    assert status == 200
    stuck = Background(url)
    _until(lambda: _health(url)[0] == 503, what="/health 503")
    status, body = _health(url)
    assert body["status"] == "unhealthy"
    (problem,) = body["problems"]
    assert problem.startswith(f"engine of {MODEL} is stalled: a prefill step has run for ")
    assert problem.endswith("past the stall budget of 2 s")
    assert body["engines"][0]["step_phase"] == "prefill"
    status, ready = http_json("GET", f"{url}/ready")
    assert status == 503 and ready["ready"] is False and "stalled" in ready["error"]

    status, answer, took = _timed_post(url)  # not queued behind the hang: refused at once
    assert status == 503 and answer["error"]["code"] == "engine_unhealthy", answer
    assert "stall budget" in answer["error"]["message"] and took < PROMPT_ANSWER_S

    status, cleared = http_json("DELETE", f"{url}/admin/faults/hang")
    assert status == 200 and cleared["cleared"] == ["hang"]
    status, answer, _ = stuck.join()
    assert status == 200 and answer["choices"][0]["finish_reason"] == "length"
    _until(lambda: _health(url)[0] == 200, what="/health 200 after the hang cleared")
    assert http_json("GET", f"{url}/ready")[0] == 200
    assert _timed_post(url)[0] == 200


def test_a_crashed_engine_thread_makes_health_503_and_requests_fail_fast(tmp_path: Path) -> None:
    with ServeProcess(
        tmp_path, "--enable-fault-injection", "-E", "kv_cache_bytes=8388608", grpc=False
    ) as proc:
        url = proc.url
        assert http_json("POST", f"{url}/admin/faults/worker_crash", {"mode": "thread"})[0] == 200
        status, answer, took = _timed_post(url)  # the request whose step crashes the engine thread
        assert status == 500 and took < PROMPT_ANSWER_S
        message = answer["error"]["message"]
        assert "the engine died: the engine loop raised: EngineThreadCrash" in message
        assert "cudaErrorIllegalAddress" in message
        status, body = _health(url)
        assert status == 503 and body["engines"][0]["state"] == "dead"
        assert body["problems"][0].startswith(f"engine of {MODEL} is dead: the engine loop raised")
        assert http_json("GET", f"{url}/ready")[0] == 503
        status, answer, took = _timed_post(url)
        assert status == 503 and answer["error"]["code"] == "engine_unhealthy" and took < PROMPT_ANSWER_S
        assert proc.proc is not None and proc.proc.poll() is None  # the process lives to tell
        dead = [r for r in proc.json_logs() if r.get("event") == "engine_dead"]
        assert len(dead) == 1 and dead[0]["level"] == "critical"


class InProcessServer:
    """The real app over a loaded runtime, served by uvicorn on loopback from a thread."""

    def __init__(self, model_dir: Path) -> None:
        import uvicorn

        self.runtime = ServingRuntime(
            ServerConfig(
                model_dir=str(model_dir),
                served_name=MODEL,
                device="cpu",
                enable_fault_injection=True,
                engine_options={"kv_cache_bytes": 8 * 1024**2},
            )
        )
        self.runtime.load()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            create_app(self.runtime), host="127.0.0.1", port=self.port, log_config=None, lifespan="off"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        _until(lambda: self.server.started, timeout=30, what="uvicorn started")

    @property
    def engine(self) -> Engine:
        current = self.runtime.manager.current
        assert current is not None
        assert isinstance(current.engine, Engine)
        return current.engine

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        self.runtime.manager.shutdown(drain=False, timeout_s=2)


@pytest.fixture
def inproc(model_dir: Path) -> Iterator[InProcessServer]:
    server = InProcessServer(model_dir)
    yield server
    server.close()


def test_a_scheduler_that_raises_makes_health_503_and_fails_requests_promptly(
    inproc: InProcessServer,
) -> None:
    engine, url = inproc.engine, inproc.url
    double = SchedulerDouble(engine.scheduler)
    engine.scheduler = double  # type: ignore[assignment]
    engine.faults.inject("hang", hang_s=300)  # hold one request in flight until the scheduler breaks
    inflight = Background(url)
    _until(lambda: engine.health().step_phase == "prefill", what="the request's prefill")
    double.schedule_error = RuntimeError("scheduler bug: negative queue depth")
    engine.faults.clear("hang")
    status, answer, _ = inflight.join()
    assert status == 500
    assert "the engine died: the scheduler raised: RuntimeError: scheduler bug" in answer["error"]["message"]
    status, body = _health(url)
    assert status == 503
    assert body["problems"] == [
        f"engine of {MODEL} is dead: the scheduler raised: RuntimeError: scheduler bug: negative queue depth"
    ]
    status, ready = http_json("GET", f"{url}/ready")
    assert status == 503 and "scheduler raised" in ready["error"]
    status, answer, took = _timed_post(url)
    assert status == 503 and answer["error"]["code"] == "engine_unhealthy" and took < PROMPT_ANSWER_S


def test_a_memory_error_in_bookkeeping_fails_that_request_and_not_the_next(inproc: InProcessServer) -> None:
    engine, url = inproc.engine, inproc.url
    double = SchedulerDouble(engine.scheduler)
    engine.scheduler = double  # type: ignore[assignment]
    double.service_time_errors.append(MemoryError("no memory for the request's metrics"))
    status, answer, took = _timed_post(url)
    assert status == 500 and took < PROMPT_ANSWER_S
    assert answer["error"]["message"] == (
        "generation failed: MemoryError in the engine's bookkeeping of this request: "
        "no memory for the request's metrics"
    )
    status, answer, _ = _timed_post(url)
    assert status == 200 and answer["choices"][0]["finish_reason"] == "length"
    status, body = _health(url)
    assert status == 200 and body["engines"][0]["loop_errors_total"] == 1
