"""A fitted model's weights file and slot: loaded once, swappable for another model or for none.

The prose and semantic tiers each read a weights file that a bench script fits; cross-validation folds and
tests diagnose with a fold's model, or with the tier off, inside a `use` block.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar

__all__ = ["FittedSlot", "read_weights"]

M = TypeVar("M")


def read_weights(path: Path, parse: Callable[[dict[str, Any]], M]) -> M | None:
    """The model a bench script fitted into `path` (a JSON table), or None when the file is absent (the
    tier is then off). `parse` raises ValueError for a malformed table."""
    if not path.exists():
        return None
    return parse(json.loads(path.read_text(encoding="utf-8")))


class FittedSlot(Generic[M]):
    """The model a tier reads: the bundled one (loaded on first use) or the one a `use` block put in place."""

    def __init__(self, load: Callable[[], M | None]) -> None:
        self._load = load
        self._models: list[M | None] = []

    def get(self) -> M | None:
        """The model in place (None: the tier is off or has no weights)."""
        if not self._models:
            self._models.append(self._load())
        return self._models[0]

    @contextmanager
    def use(self, model: M | None) -> Iterator[None]:
        """Diagnose with another model (a cross-validation fold's) or none (tier off) inside the block."""
        previous = list(self._models)
        self._models[:] = [model]
        try:
            yield
        finally:
            self._models[:] = previous
