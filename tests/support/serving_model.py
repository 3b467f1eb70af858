"""Helpers for the serving engine tests: the tiny model in a per-session cache and event collectors."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Collector:
    """Collects an engine request's TokenEvents; `wait()` blocks (bounded) until the final one."""

    events: list[Any] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)

    def __call__(self, event: Any) -> None:
        self.events.append(event)
        if event.finished:
            self.done.set()

    def wait(self, timeout: float = 30.0) -> Any:
        assert self.done.wait(timeout), "request did not finish in time"
        return self.events[-1]

    @property
    def tokens(self) -> list[int]:
        return [e.token_id for e in self.events if not e.finished]


def greedy_reference(model: Any, prompt: list[int], n: int, stop: set[int] | None = None) -> list[int]:
    """Greedy tokens from the plain unbatched dense forward pass (recomputing the whole sequence)."""
    out = list(prompt)
    for _ in range(n):
        token = int(model.forward_dense(out)[-1].argmax())
        if stop and token in stop:
            break
        out.append(token)
    return out[len(prompt):]


def tiny_model_dir(root: Path) -> Path:
    from gpuobs.serving.model import ensure_tiny_model

    return ensure_tiny_model(root)
