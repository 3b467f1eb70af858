"""Engine liveness at the engine's own level: the heartbeat, stalls, deaths and failures the loop survives.

The slowness each test needs is made (the `hang` fault, a scheduler double that raises on command), and
every wait is a bounded poll: nothing depends on how fast this machine is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from support.engine_doubles import SchedulerDouble
from support.serving_model import Collector

from gpuobs.serving.engine import Engine, GenerationRequest, SamplingParams
from gpuobs.serving.errors import EngineUnhealthyError, ServingError
from gpuobs.serving.liveness import STALL_BUDGET_FLOOR_S, Heartbeat, default_stall_budget_s


def _go(engine: Engine, rid: str, n: int = 4) -> Collector:
    c = Collector()
    engine.submit(GenerationRequest(rid, [5, 6, 7], SamplingParams(max_tokens=n, ignore_eos=True)), c)
    return c


def _until(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def test_default_stall_budget_is_sized_for_the_model() -> None:
    tiny = default_stall_budget_s(300_000, 4096 + 16, "cpu")
    assert tiny == STALL_BUDGET_FLOOR_S == 30.0
    one_b_cpu = default_stall_budget_s(1_100_000_000, 4096 + 16, "cpu")
    assert 1800 < one_b_cpu < 7200  # a 4096-token prefill of 1.1B parameters on CPU takes minutes
    assert default_stall_budget_s(1_100_000_000, 4096 + 16, "cuda:0") == STALL_BUDGET_FLOOR_S
    assert default_stall_budget_s(70_000_000_000, 4096 + 16, "cuda") > 100


def test_heartbeat_states_from_a_manual_clock() -> None:
    now = [100.0]
    hb = Heartbeat(5.0, clock=lambda: now[0])
    assert hb.check(started=False, thread_alive=False, stopping=False).state == "not_started"
    hb.beat()
    assert hb.check(True, True, False).alive
    with hb.step("decode"):
        now[0] += 6.0
        h = hb.check(True, True, False)
        assert (h.alive, h.state, h.step_phase) == (False, "stalled", "decode")
        assert h.reason == "a decode step has run for 6.0 s, past the stall budget of 5 s"
    assert hb.check(True, True, False).alive  # the step returned: the stall is over
    now[0] += 6.0
    assert "has not turned for 6.0 s" in str(hb.check(True, True, False).reason)
    assert hb.check(True, False, True).state == "stopped"
    dead = hb.check(True, False, False)
    assert (dead.alive, dead.state) == (False, "dead") and "exited" in str(dead.reason)
    hb.fail("the scheduler raised: RuntimeError: x")
    hb.fail("a later reason is not kept")
    assert hb.check(True, True, True).reason == "the scheduler raised: RuntimeError: x"
    with pytest.raises(ValueError):
        Heartbeat(0)


def test_an_idle_engine_is_alive(engine_factory: Callable[..., Engine]) -> None:
    engine = engine_factory()
    _until(lambda: engine.health().loop_age_s is not None)
    health = engine.health()
    assert health.alive and health.state == "running" and health.reason is None
    assert health.stall_budget_s == STALL_BUDGET_FLOOR_S  # the tiny model's default
    assert engine_factory(stall_budget_s=2.5).health().stall_budget_s == 2.5


def test_hang_makes_the_engine_stalled_and_clearing_it_recovers(
    engine_factory: Callable[..., Engine],
) -> None:
    engine = engine_factory(stall_budget_s=0.5)
    engine.faults.inject("hang", hang_s=120)
    stuck = _go(engine, "stuck", n=3)
    _until(lambda: engine.health().state == "stalled")
    health = engine.health()
    assert not health.alive and health.step_phase == "prefill"
    assert "prefill step has run for" in str(health.reason) and "stall budget of 0.5 s" in str(health.reason)
    t0 = time.monotonic()
    with pytest.raises(EngineUnhealthyError, match="stall budget"):
        _go(engine, "refused")
    assert time.monotonic() - t0 < 5  # refused at once, not queued behind the hang
    engine.faults.clear("hang")
    final = stuck.wait(30)
    assert final.finish_reason == "length" and len(stuck.tokens) == 3
    _until(lambda: engine.health().alive)
    assert _go(engine, "after", n=2).wait(30).finish_reason == "length"


def test_a_scheduler_that_raises_kills_the_engine_loudly_and_fails_its_requests(
    engine_factory: Callable[..., Engine], logs: Any
) -> None:
    engine = engine_factory()
    double = SchedulerDouble(engine.scheduler)
    engine.scheduler = double  # type: ignore[assignment]
    engine.faults.inject("hang", hang_s=120)  # hold a request in flight until the scheduler breaks
    inflight = _go(engine, "inflight", n=50)
    _until(lambda: engine.health().step_phase == "prefill")
    double.schedule_error = RuntimeError("scheduler bug: bucket index out of range")
    engine.faults.clear("hang")
    final = inflight.wait(30)
    assert final.finish_reason == "error"
    assert "the engine died: the scheduler raised: RuntimeError: scheduler bug" in str(final.error)
    health = engine.health()
    assert (health.alive, health.state) == (False, "dead")
    assert health.reason == "the scheduler raised: RuntimeError: scheduler bug: bucket index out of range"
    t0 = time.monotonic()
    with pytest.raises(EngineUnhealthyError, match="scheduler raised"):
        _go(engine, "next")
    assert time.monotonic() - t0 < 5
    assert engine.stats().errors_total.get("engine_dead") == 1
    dead = [r for r in logs.records() if r.get("event") == "engine_dead"]
    assert len(dead) == 1 and dead[0]["level"] == "critical" and "scheduler bug" in dead[0]["msg"]
    engine.stop(drain=True, timeout_s=1)  # stopping a dead engine neither hangs nor raises
    assert engine.health().state == "dead"


def test_a_memory_error_in_bookkeeping_fails_that_request_and_not_the_next(
    engine_factory: Callable[..., Engine], logs: Any
) -> None:
    engine = engine_factory()
    double = SchedulerDouble(engine.scheduler)
    engine.scheduler = double  # type: ignore[assignment]
    double.service_time_errors.append(MemoryError("cannot allocate the request's metrics"))
    first = _go(engine, "first", n=3).wait(30)
    assert first.finish_reason == "error"
    assert first.error == (
        "MemoryError in the engine's bookkeeping of this request: cannot allocate the request's metrics"
    )
    second = _go(engine, "second", n=3)
    final = second.wait(30)
    assert final.finish_reason == "length" and len(second.tokens) == 3
    health = engine.health()
    assert health.alive and health.loop_errors_total == 1
    assert engine.stats().errors_total.get("engine_bookkeeping") == 1
    assert engine.stats().running == 0 and engine.blocks.num_free == engine.blocks.num_blocks
    failed = [r for r in logs.records() if r.get("event") == "engine_error"]
    assert len(failed) == 1 and failed[0]["request_id"] == "first" and failed[0]["level"] == "error"


def test_the_thread_crash_fault_makes_the_engine_dead(engine_factory: Callable[..., Engine]) -> None:
    engine = engine_factory()
    engine.faults.inject("worker_crash", mode="thread")
    final = _go(engine, "boom", n=4).wait(30)
    assert final.finish_reason == "error" and "the engine died: the engine loop raised" in str(final.error)
    assert "cudaErrorIllegalAddress" in str(final.error)
    health = engine.health()
    assert health.state == "dead" and "EngineThreadCrash" in str(health.reason)
    _until(lambda: engine._thread is not None and not engine._thread.is_alive())
    with pytest.raises(EngineUnhealthyError) as info:
        _go(engine, "after")
    assert isinstance(info.value, ServingError) and info.value.exit_code == 1
