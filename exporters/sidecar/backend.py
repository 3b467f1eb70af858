"""The one interface every GPU backend implements (NVML, simulated), and the errors they raise.

Backends return plain dataclasses (`gpuobs.exporters.sidecar.samples`) in base units; they never import
prometheus_client. A field a device does not support is `None`. A lost GPU raises `GpuLostError`;
a driver that stops answering raises `BackendUnavailableError` (the exporter then re-inits with backoff).
"""

from __future__ import annotations

import abc

from gpuobs.errors import ExporterError
from gpuobs.exporters.sidecar.samples import DeviceInfo, GpuSample, SlowSample, XidEvent

__all__ = ["BackendError", "BackendInitError", "BackendUnavailableError", "GpuBackend", "GpuLostError"]


class BackendError(ExporterError):
    """Base of the errors a backend raises on purpose."""


class BackendInitError(BackendError):
    """The backend could not start (no driver, NVML init failure). The exporter retries with backoff."""


class BackendUnavailableError(BackendError):
    """The backend stopped answering after init (driver unloaded). The exporter re-inits."""


class GpuLostError(BackendError):
    """One GPU is lost (NVML_ERROR_GPU_IS_LOST: fallen off the bus); the others keep reporting."""

    def __init__(self, index: int, detail: str = "GPU is lost") -> None:
        super().__init__(f"gpu {index}: {detail}")
        self.index = index


class GpuBackend(abc.ABC):
    """A source of GPU samples. Thread-safe: scrape, slow poller and XID thread call it at once."""

    name: str = "backend"

    @abc.abstractmethod
    def init(self) -> list[DeviceInfo]:
        """Start the backend and return the GPUs it sees; raise BackendInitError when it cannot."""

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Release the backend (safe to call twice and after a failed init)."""

    @abc.abstractmethod
    def sample(self, index: int) -> GpuSample:
        """The cheap fields of GPU `index` (microseconds per field). Raises GpuLostError."""

    @abc.abstractmethod
    def slow_sample(self, index: int) -> SlowSample:
        """The slow fields of GPU `index` (energy, PCIe throughput, GPM rates). Raises GpuLostError."""

    @abc.abstractmethod
    def wait_xid(self, timeout_s: float) -> XidEvent | None:
        """Block up to `timeout_s` for the next XID event; None when none came."""
