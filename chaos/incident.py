"""The running incident as the chaos activities see it: when the fault went in, each phase, what to undo.

Activities run in one process (`chaos run` or `gpuobs gameday`), so a module-level record lets a fault
action leave its time and its undo for the probes and rollbacks that follow, and lets the game-day
watch the phases live. Every fault action registers an undo; rollbacks and the experiment control
(`gpuobs.chaos.control`) run whatever is still pending, also after a failure, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PHASES", "Incident", "current"]

logger = logging.getLogger("chaostoolkit")

PHASES = ("fault", "detected", "diagnosed", "recovered")


@dataclass
class Incident:
    """Phase times (wall clock, seconds since the epoch), details and the pending undos."""

    marks: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    _undos: list[tuple[str, Callable[[], Any]]] = field(default_factory=list)
    _listeners: list[Callable[[str, float, Any], None]] = field(default_factory=list)
    watched: list[str] = field(default_factory=list)
    offsets: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        """Forget the last incident (undos are run first, so nothing is left broken)."""
        self.undo_all()
        with self._lock:
            self.marks.clear()
            self.details.clear()
            self.watched.clear()
            self.offsets.clear()

    def watch(self, paths: list[str]) -> None:
        """Log files whose size is noted at the fault: the diagnosis reads only what came after."""
        with self._lock:
            self.watched.extend(p for p in paths if p and p not in self.watched)

    def mark(self, phase: str, detail: Any = None, at: float | None = None) -> float:
        """Record `phase` (the first time only) and tell listeners; returns its time."""
        with self._lock:
            if phase == "fault" and phase not in self.marks:
                for path in self.watched:
                    try:
                        self.offsets[path] = os.path.getsize(path)
                    except OSError:
                        self.offsets[path] = 0
            when = self.marks.setdefault(phase, time.time() if at is None else at)
            if detail is not None:
                self.details.setdefault(phase, detail)
            listeners = list(self._listeners)
        for listener in listeners:
            listener(phase, when, detail)
        return when

    def since_fault(self) -> float | None:
        return self.marks.get("fault")

    def fault_refused(self, reason: str) -> None:
        """A fault action found, before injecting, that the target cannot take its fault (fault injection
        off, not a gpuobs server): the probes after it fail at once with `reason`, rather than waiting out
        their timeouts for a deviation no fault will cause."""
        with self._lock:
            self.details.setdefault("fault_refused", reason)

    def no_fault_reason(self) -> str | None:
        """Why no fault went in, when a fault action said so (see fault_refused) and none went in since."""
        with self._lock:
            return None if "fault" in self.marks else self.details.get("fault_refused")

    def add_undo(self, name: str, undo: Callable[[], Any]) -> None:
        with self._lock:
            self._undos.append((name, undo))

    def pop_undos(self, prefix: str = "") -> list[tuple[str, Callable[[], Any]]]:
        with self._lock:
            taken = [u for u in self._undos if u[0].startswith(prefix)]
            self._undos = [u for u in self._undos if not u[0].startswith(prefix)]
        return taken

    def pending(self) -> list[str]:
        with self._lock:
            return [name for name, _ in self._undos]

    def undo_all(self, prefix: str = "") -> list[str]:
        """Run every pending undo (newest first); a failing undo is logged and the others still run."""
        done = []
        for name, undo in reversed(self.pop_undos(prefix)):
            try:
                undo()
                done.append(name)
            except Exception as exc:  # an undo that fails must not stop the others; it is reported
                logger.error("undo %s failed: %s", name, exc)
        return done

    def listen(self, listener: Callable[[str, float, Any], None]) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove


_CURRENT = Incident()


def current() -> Incident:
    """The process-wide incident record."""
    return _CURRENT
