"""Test doubles for the serving engine's parts: a scheduler that raises on command.

A double of the scheduler object the engine loop calls (everything else is the real scheduler), so that a
scheduler bug or a MemoryError in per-request bookkeeping happens at the moment a test chooses.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SchedulerDouble"]


class SchedulerDouble:
    """The engine's real scheduler behind a switch: `schedule()` or `observe_service_time()` raise on demand.

    Install with `engine.scheduler = SchedulerDouble(engine.scheduler)`; set `schedule_error` to make every
    later `schedule()` raise it, append to `service_time_errors` to make the next finished requests'
    bookkeeping raise (one error per request).
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.schedule_error: BaseException | None = None
        self.service_time_errors: list[BaseException] = []

    def schedule(self, now: float) -> Any:
        if self.schedule_error is not None:
            raise self.schedule_error
        return self._inner.schedule(now)

    def observe_service_time(self, seconds: float) -> None:
        if self.service_time_errors:
            raise self.service_time_errors.pop(0)
        self._inner.observe_service_time(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
