"""Error types that the CLI turns into a clear one-line message and an exit code (2 unless a class says)."""

from __future__ import annotations

from typing import ClassVar

__all__ = ["GpuobsError", "InputError", "MissingExtraError"]


class GpuobsError(Exception):
    """Base of every error gpuobs raises on purpose; `exit_code` is what the CLI exits with."""

    exit_code: ClassVar[int] = 2  # a usage or input error, unless a component's base says otherwise


class InputError(GpuobsError):
    """A bad input from the user: a flag, a file, a URL. The message says what and how to fix it."""


class MissingExtraError(GpuobsError):
    """A heavy optional dependency is not installed."""
