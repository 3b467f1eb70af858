"""Engine liveness: a heartbeat the engine thread writes and `/health` reads, and the default stall budget.

The engine thread beats once per loop turn (an idle loop turns at least every 50 ms) and marks the start
and end of each model step. An engine is dead when its thread ended without being stopped or its loop
failed (the reason is kept), and stalled while a step or a loop turn has run past the stall budget; a stall
ends by itself when the step returns (the `hang` fault cleared), a death does not.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CPU_STEP_FLOPS",
    "CUDA_STEP_FLOPS",
    "STALL_BUDGET_FLOOR_S",
    "STALL_FACTOR",
    "EngineHealth",
    "Heartbeat",
    "default_stall_budget_s",
]

STALL_BUDGET_FLOOR_S = 30.0
"""No budget is shorter: a loaded 2-core CI machine or a first Triton compile can pause a tiny model's step
for seconds, and a false 503 restarts a healthy pod."""
CPU_STEP_FLOPS = 1e10
"""FLOP/s assumed on CPU when sizing the budget: what a busy 2-core machine sustains, not its peak."""
CUDA_STEP_FLOPS = 1e13
"""FLOP/s assumed on CUDA: about 1% of an H200's bf16 peak, so only a step that is stuck exceeds it."""
STALL_FACTOR = 4.0
"""The budget is this many times the estimated time of the largest step the engine may schedule."""


def default_stall_budget_s(num_params: int, max_step_tokens: int, device: str) -> float:
    """The stall budget for a model: max(30 s, 4 x the slowest plausible step), sized from the model.

    The largest step the engine schedules processes `max_step_tokens` tokens (a full prefill budget plus a
    decode batch) at about 2 FLOPs per parameter per token; at the assumed sustained rate of the device
    that is the slowest healthy step, and four times it (never under 30 s) is a stall. The embedded tiny
    model on CPU gets the 30 s floor; a 1B model prefilling 4096 tokens on CPU gets about an hour.
    """
    rate = CUDA_STEP_FLOPS if device.startswith("cuda") else CPU_STEP_FLOPS
    slowest_step_s = 2.0 * max(0, num_params) * max(1, max_step_tokens) / rate
    return max(STALL_BUDGET_FLOOR_S, STALL_FACTOR * slowest_step_s)


@dataclass(frozen=True)
class EngineHealth:
    """What `/health` reports for one engine. `alive` is false when dead or stalled; `reason` says why."""

    alive: bool
    state: str  # not_started | running | stalled | dead | stopped
    reason: str | None
    stall_budget_s: float
    loop_age_s: float | None  # seconds since the engine loop last turned
    step_phase: str | None  # prefill | decode while a model step runs
    step_running_s: float | None
    loop_errors_total: int  # exceptions the loop survived (each failed only the requests it concerned)

    def as_dict(self) -> dict[str, Any]:
        return {
            "alive": self.alive,
            "state": self.state,
            "reason": self.reason,
            "stall_budget_s": self.stall_budget_s,
            "loop_age_s": None if self.loop_age_s is None else round(self.loop_age_s, 3),
            "step_phase": self.step_phase,
            "step_running_s": None if self.step_running_s is None else round(self.step_running_s, 3),
            "loop_errors_total": self.loop_errors_total,
        }


class Heartbeat:
    """Written by the engine thread, read by any thread (plain attribute writes; the reader tolerates a
    value one turn old)."""

    def __init__(self, stall_budget_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not stall_budget_s > 0:
            raise ValueError(f"stall_budget_s must be > 0, got {stall_budget_s}")
        self.stall_budget_s = float(stall_budget_s)
        self._clock = clock
        self._loop_at: float | None = None
        self._step_started: float | None = None
        self._step_phase: str | None = None
        self._failure: str | None = None
        self._errors = 0
        self._lock = threading.Lock()

    def beat(self) -> None:
        """One engine loop turn."""
        self._loop_at = self._clock()

    @contextlib.contextmanager
    def step(self, phase: str) -> Iterator[None]:
        """Around one model step (prefill or decode)."""
        self._step_phase, self._step_started = phase, self._clock()
        try:
            yield
        finally:
            self._step_started = None
            self._step_phase = None
            self._loop_at = self._clock()

    def survived(self) -> None:
        """The loop caught an exception, failed the requests it concerned, and goes on."""
        with self._lock:
            self._errors += 1

    def fail(self, reason: str) -> None:
        """The loop cannot go on: liveness says dead from now on, with this reason (the first one kept)."""
        with self._lock:
            if self._failure is None:
                self._failure = reason

    @property
    def failure(self) -> str | None:
        return self._failure

    def check(self, started: bool, thread_alive: bool, stopping: bool) -> EngineHealth:
        """The engine's liveness now, from the heartbeat and the state of its thread."""
        now = self._clock()
        loop_age = None if self._loop_at is None else max(0.0, now - self._loop_at)
        step_started, phase = self._step_started, self._step_phase
        step_running = None if step_started is None else max(0.0, now - step_started)
        budget = self.stall_budget_s
        state, reason = "running", None
        if self._failure is not None:
            state, reason = "dead", self._failure
        elif stopping:
            state = "stopped"
        elif not started:
            state = "not_started"
        elif not thread_alive:
            state, reason = "dead", "the engine thread exited without being stopped"
        elif step_running is not None and step_running > budget:
            state = "stalled"
            reason = f"a {phase} step has run for {step_running:.1f} s, past the stall budget of {budget:g} s"
        elif loop_age is not None and loop_age > budget:
            state = "stalled"
            reason = f"the engine loop has not turned for {loop_age:.1f} s (stall budget {budget:g} s)"
        return EngineHealth(
            alive=state not in ("dead", "stalled"),
            state=state,
            reason=reason,
            stall_budget_s=budget,
            loop_age_s=loop_age,
            step_phase=phase if step_running is not None else None,
            step_running_s=step_running,
            loop_errors_total=self._errors,
        )
