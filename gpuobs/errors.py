"""Error types that the CLI turns into a clear one-line message and exit code 2."""

from __future__ import annotations

__all__ = ["GpuobsError", "InputError", "MissingExtraError"]


class GpuobsError(Exception):
    """Base of every error gpuobs raises on purpose."""


class InputError(GpuobsError):
    """A bad input from the user: a flag, a file, a URL. The message says what and how to fix it."""


class MissingExtraError(GpuobsError):
    """A heavy optional dependency is not installed."""
