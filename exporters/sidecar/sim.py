"""`--backend sim`: a simulated node of N H200-like GPUs behind the `GpuBackend` interface.

Three parts, one module each: the node's GPUs and their seeded, coupled dynamics (sim_model.py); the
faults that change them by name (sim_faults.py: XID codes, ECC errors, throttle reasons, temperature
ramps, clock drops, memory hogs, processes appearing and exiting, a GPU falling off the bus, NVML init
failure and per-field NVML errors); and here the backend that reads the node the way NVML reads a GPU,
so those faults reach the exporter as NVML's errors would (`SimBackend.inject(kind, **args)`, also
`POST /api/faults` when the exporter runs with `--enable-fault-injection`).
"""

from __future__ import annotations

import dataclasses
import queue
import time
from collections.abc import Callable
from typing import Any

from gpuobs.exporters.sidecar.backend import (
    BackendInitError,
    BackendUnavailableError,
    GpuBackend,
    GpuLostError,
)
from gpuobs.exporters.sidecar.samples import DeviceInfo, GpuSample, SlowSample, XidEvent
from gpuobs.exporters.sidecar.sim_faults import FAULT_KINDS, FIELD_ERRORS, SimFaultError, SimFaults
from gpuobs.exporters.sidecar.sim_model import SimGpu, SimNode

__all__ = ["FAULT_KINDS", "FIELD_ERRORS", "SimBackend", "SimFaultError"]


class SimBackend(GpuBackend):
    """A seeded simulated node. `clock` is injectable so tests can drive time."""

    name = "sim"

    def __init__(
        self,
        gpus: int = 8,
        seed: int = 0,
        clock: Callable[[], float] = time.monotonic,
        model: str = "NVIDIA H200",
        min_step_s: float = 0.05,
    ) -> None:
        self.node = SimNode(gpus, seed, clock, model)
        self.faults = SimFaults(self.node)
        self.gpus = gpus
        self.seed = seed
        self.model = model
        self._min_step = min_step_s

    def init(self) -> list[DeviceInfo]:
        node = self.node
        with node.lock:
            if node.init_failures_left > 0:
                node.init_failures_left -= 1
                raise BackendInitError("NVML init failed (simulated): NVML_ERROR_DRIVER_NOT_LOADED")
            node.unavailable = False
            node.initialised = True
            return list(node.devices)

    def shutdown(self) -> None:
        with self.node.lock:
            self.node.initialised = False

    def sample(self, index: int) -> GpuSample:
        with self.node.lock:
            g = self._check(index)
            now = self.node.clock()
            if g.sample is None or now - g.last_t >= self._min_step:
                g.advance(now)
                g.sample = g.build_sample(self.node.devices[index].uuid)
            errors = g.field_errors
            if not errors:
                return g.sample
            if any(kind == "unknown" for kind in errors.values()):
                bad = next(f for f, kind in errors.items() if kind == "unknown")
                raise RuntimeError(f"simulated NVML_ERROR_UNKNOWN reading {bad} of gpu {index}")
            return dataclasses.replace(g.sample, **dict.fromkeys(errors, None))

    def slow_sample(self, index: int) -> SlowSample:
        with self.node.lock:
            g = self._check(index)
            g.advance(self.node.clock())
            s = g.build_slow_sample()
            for name in list(g.field_errors):
                if hasattr(s, name):
                    setattr(s, name, None)
            return s

    def wait_xid(self, timeout_s: float) -> XidEvent | None:
        try:
            return self.node.xids.get(timeout=max(0.0, timeout_s))
        except queue.Empty:
            return None

    def devices(self) -> list[DeviceInfo]:
        return list(self.node.devices)

    def inject(self, kind: str, /, **args: Any) -> dict[str, Any]:
        """Apply one fault by name (see FAULT_KINDS and `SimFaults`); returns what was done. Raises
        SimFaultError for an unknown kind or argument and for a value out of its range."""
        return self.faults.inject(kind, **args)

    def _check(self, index: int) -> SimGpu:
        """GPU `index` if the driver answers and the GPU is there, else the error NVML would give."""
        if self.node.unavailable or not self.node.initialised:
            raise BackendUnavailableError("NVML is not initialised (simulated driver failure)")
        if not 0 <= index < self.gpus:
            raise IndexError(f"no gpu {index}")
        g = self.node.gpus[index]
        if g.lost:
            raise GpuLostError(index, "GPU has fallen off the bus (simulated)")
        return g
