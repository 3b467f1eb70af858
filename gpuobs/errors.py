"""Errors gpuobs raises on purpose: one base, one base per component, and the user's input errors.

The CLI prints any of them as one line and exits with the class's `exit_code`: 2 for a usage or input
error (`InputError`, `MissingExtraError`), 74 for an output that could not be written for want of room or a
device error (`OutputWriteError`, sysexits' EX_IOERR), 1 for anything else that failed (a full queue, a lost
GPU).
A component's error that is also the user's input error derives from both, e.g.
`class CatalogFileError(RcaError, InputError)`.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "ChaosError",
    "DashboardError",
    "ExporterError",
    "GpuobsError",
    "InputError",
    "KernelError",
    "MissingExtraError",
    "OutputWriteError",
    "RcaError",
    "ServingError",
]


class GpuobsError(Exception):
    """Base of every error gpuobs raises on purpose."""

    exit_code: ClassVar[int] = 1


class InputError(GpuobsError):
    """A bad input from the user: a flag, a file, a URL. The message says what and how to fix it."""

    exit_code: ClassVar[int] = 2


class MissingExtraError(GpuobsError):
    """A heavy optional dependency is not installed."""

    exit_code: ClassVar[int] = 2


class OutputWriteError(GpuobsError):
    """A file gpuobs writes for the user (a report, a bundle, generated rules) could not be written: a full
    disk, a quota, a size limit or a device error. Nothing the user had there was changed."""

    exit_code: ClassVar[int] = 74


class ExporterError(GpuobsError):
    """Base of the exporters' errors: the node sidecar (`gpuobs export`) and in-process instrumentation."""


class RcaError(GpuobsError):
    """Base of the root-cause analysis errors (`gpuobs diagnose`, `gpuobs bundle`, the catalog)."""


class ServingError(GpuobsError):
    """Base of the reference serving stack's errors (`gpuobs serve`, the engine, the load tester)."""


class KernelError(GpuobsError):
    """Base of the Triton kernels' errors."""


class ChaosError(GpuobsError):
    """Base of the chaos and game-day errors (`gpuobs gameday`)."""


class DashboardError(GpuobsError):
    """Base of the dashboard and alert-rule generation errors."""
