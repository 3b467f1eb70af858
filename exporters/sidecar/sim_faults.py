"""Faults of the simulated node by name: what `SimBackend.inject` and `POST /api/faults` apply.

They cover what the exporter must survive: XID codes, ECC errors, throttle reasons, temperature ramps,
clock drops, memory hogs, processes appearing and exiting, a GPU falling off the bus, NVML init failure
and per-field NVML errors. Every argument is checked (type and range; NaN and Infinity refused) before
the node changes, and a bad one raises `SimFaultError` with one line saying what was wanted.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import time
from typing import Any

from gpuobs.errors import ExporterError
from gpuobs.exporters.sidecar.samples import GpuSample, ProcessSample, SlowSample, XidEvent
from gpuobs.exporters.sidecar.sim_model import GIB, SimGpu, SimNode
from gpuobs.names.gpu import CLOCK_EVENT_REASONS

__all__ = ["FAULT_KINDS", "FIELD_ERRORS", "SimFaultError", "SimFaults"]

FIELD_ERRORS = ("not_supported", "no_permission", "unknown")
"""Per-field error kinds: not_supported/no_permission make the field None; unknown raises inside sample()."""

FAULT_KINDS = (
    "xid",
    "ecc",
    "throttle",
    "temperature_ramp",
    "clock_drop",
    "memory_hog",
    "process_start",
    "process_exit",
    "fall_off_bus",
    "nvml_failure",
    "field_error",
    "mig",
    "clear",
)


class SimFaultError(ExporterError, ValueError):
    """A fault request that names an unknown kind, GPU, field or argument."""


_MAX_XID_CODE = 65535
_MAX_ECC_ERRORS = 1_000_000_000
_MAX_PROCESS_GIB = 4096.0
_MAX_PID = 1 << 22  # Linux's largest pid_max
_MAX_MIG_INSTANCES = 7  # MIG devices an H100/H200 can be split into


def _bound(limit: float) -> str:
    """A limit as a reader writes it: 1048576, not 1.04858e+06 (which hides the real bound)."""
    return str(int(limit)) if float(limit).is_integer() else f"{limit:g}"


def _number(name: str, value: Any, low: float, high: float) -> float:
    """`value` as a float in [low, high]; anything else (NaN, Infinity, text, true) is a SimFaultError."""
    wanted = f"{name} must be a number from {_bound(low)} to {_bound(high)}"
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise SimFaultError(f"{wanted}, got {str(value)[:64]!r}")
    try:
        number = float(value)
    except (ValueError, OverflowError) as exc:
        raise SimFaultError(f"{wanted}, got {str(value)[:64]!r}") from exc
    if not math.isfinite(number) or not low <= number <= high:
        raise SimFaultError(f"{wanted}, got {number:g}")
    return number


def _integer(name: str, value: Any, low: int, high: int) -> int:
    """`value` as a whole number in [low, high] (7.0 is 7; 7.5, NaN and "7x" are SimFaultErrors)."""
    number = _number(name, value, low, high)
    if number != int(number):
        raise SimFaultError(f"{name} must be a whole number, got {number:g}")
    return int(number)


def _text(name: str, value: Any, limit: int) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise SimFaultError(f"{name} must be text of at most {limit} characters")
    return value


class SimFaults:
    """The faults of one `SimNode`, a `fault_<kind>` method each; `inject` applies one by name."""

    def __init__(self, node: SimNode) -> None:
        self.node = node

    def inject(self, kind: str, /, **args: Any) -> dict[str, Any]:
        """Apply one fault by name (see FAULT_KINDS); returns what was done. Raises SimFaultError for an
        unknown kind or argument and for a value out of its range (NaN and Infinity included)."""
        handler = getattr(self, f"fault_{kind}", None) if kind in FAULT_KINDS else None
        if handler is None:
            raise SimFaultError(f"unknown fault {str(kind)[:64]!r}; one of {', '.join(FAULT_KINDS)}")
        params = inspect.signature(handler).parameters
        unknown = sorted(str(k)[:64] for k in args if k not in params)
        if unknown:
            takes = ", ".join(params) or "no arguments"
            raise SimFaultError(f"unknown argument(s) {', '.join(unknown)} for {kind!r}; it takes {takes}")
        missing = [n for n, p in params.items() if p.default is inspect.Parameter.empty and n not in args]
        if missing:
            raise SimFaultError(f"fault {kind!r} needs {', '.join(missing)}")
        result = handler(**args)
        return {"fault": kind, **args, **(result or {})}

    def _gpu(self, gpu: Any) -> SimGpu:
        index = _integer("gpu", gpu, 0, 1 << 20)
        count = len(self.node.gpus)
        if not 0 <= index < count:
            raise SimFaultError(f"no gpu {index} on this {count}-GPU node")
        return self.node.gpus[index]

    def fault_xid(self, gpu: int, code: int, detail: str = "") -> None:
        """Report XID `code` on `gpu` through the event queue (as NVML's XID event set would)."""
        with self.node.lock:
            g = self._gpu(gpu)
            xid, detail = _integer("code", code, 0, _MAX_XID_CODE), _text("detail", detail, 512)
            g.last_xid = xid
            self.node.xids.put(XidEvent(gpu=g.index, code=xid, ts=time.time(), detail=detail))

    def fault_ecc(self, gpu: int, corrected: int = 0, uncorrected: int = 0) -> None:
        """Add ECC errors (volatile and aggregate); uncorrected ones also report XID 48, a pending remap."""
        corrected = _integer("corrected", corrected, 0, _MAX_ECC_ERRORS)
        uncorrected = _integer("uncorrected", uncorrected, 0, _MAX_ECC_ERRORS)
        with self.node.lock:
            g = self._gpu(gpu)
            g.ecc["sbe_v"] += corrected
            g.ecc["sbe_a"] += corrected
            g.ecc["dbe_v"] += uncorrected
            g.ecc["dbe_a"] += uncorrected
            g.sample = None
        if uncorrected:
            self.fault_xid(gpu, 48, "double-bit ECC error (simulated)")

    def fault_throttle(self, gpu: int, reason: str, active: bool = True) -> None:
        """Force a clock-event reason on or off."""
        known = [name for _, name in CLOCK_EVENT_REASONS]
        if not isinstance(reason, str) or reason not in known:
            raise SimFaultError(f"unknown throttle reason {str(reason)[:64]!r}; one of {', '.join(known)}")
        if not isinstance(active, bool):
            raise SimFaultError(f"active must be true or false, got {str(active)[:64]!r}")
        with self.node.lock:
            g = self._gpu(gpu)
            (g.forced_reasons.add if active else g.forced_reasons.discard)(reason)
            g.sample = None

    def fault_temperature_ramp(self, gpu: int, delta_c: float = 30.0, seconds: float = 10.0) -> None:
        """Raise the die's equilibrium temperature by `delta_c` over `seconds` (heat follows with its lag)."""
        delta_c = _number("delta_c", delta_c, -100.0, 200.0)
        seconds = _number("seconds", seconds, 0.0, 7 * 86400.0)
        with self.node.lock:
            g = self._gpu(gpu)
            g.ramp = (self.node.clock(), seconds, delta_c)
            if seconds <= 0:
                g.temperature += delta_c
            g.sample = None

    def fault_clock_drop(self, gpu: int, mhz: float = 600.0) -> None:
        """Cap the SM clock at `mhz` (reported with the hw_slowdown reason)."""
        mhz = _number("mhz", mhz, 1.0, 10_000.0)
        with self.node.lock:
            g = self._gpu(gpu)
            g.clock_cap_hz = mhz * 1e6
            g.sample = None

    def fault_memory_hog(
        self, gpu: int, gib: float = 40.0, pid: int | None = None, name: str = "memhog"
    ) -> dict[str, Any]:
        """A process that takes `gib` GiB of device memory."""
        return self.fault_process_start(gpu, pid=pid, name=name, gib=gib)

    def fault_process_start(
        self, gpu: int, pid: int | None = None, name: str = "python3", gib: float = 1.0
    ) -> dict[str, Any]:
        """A compute process appears on `gpu` holding `gib` GiB."""
        gib = _number("gib", gib, 0.0, _MAX_PROCESS_GIB)
        name = _text("name", name, 256)
        with self.node.lock:
            g = self._gpu(gpu)
            if pid is None:
                self.node.next_pid += 1
                pid = self.node.next_pid
            pid = _integer("pid", pid, 1, _MAX_PID)
            g.processes[pid] = ProcessSample(pid, name, int(gib * GIB))
            g.sample = None
            return {"pid": pid}

    def fault_process_exit(self, pid: int) -> None:
        """The process `pid` exits and frees its memory."""
        pid = _integer("pid", pid, 1, _MAX_PID)
        with self.node.lock:
            for g in self.node.gpus:
                if g.processes.pop(pid, None) is not None:
                    g.sample = None
                    return
        raise SimFaultError(f"no process {pid} on any gpu")

    def fault_fall_off_bus(self, gpu: int) -> None:
        """XID 79 and the GPU is lost: every later read of it raises GpuLostError."""
        with self.node.lock:
            g = self._gpu(gpu)
            g.lost = True
            self.node.xids.put(
                XidEvent(gpu=g.index, code=79, ts=time.time(), detail="GPU has fallen off the bus")
            )

    def fault_nvml_failure(self, init_failures: int = 3) -> None:
        """The driver stops answering; the next `init_failures` init attempts fail, then it comes back."""
        failures = _integer("init_failures", init_failures, 0, 1_000_000)
        with self.node.lock:
            self.node.unavailable = True
            self.node.initialised = False
            self.node.init_failures_left = failures

    def fault_field_error(self, gpu: int, field: str, error: str = "not_supported") -> None:
        """Make a field of `gpu` fail: not_supported/no_permission (None), unknown (sample raises), clear."""
        valid = {f.name for f in dataclasses.fields(GpuSample)} | {
            f.name for f in dataclasses.fields(SlowSample)
        }
        if not isinstance(field, str) or field not in valid - {"taken_at", "errors"}:
            raise SimFaultError(f"unknown field {str(field)[:64]!r}")
        with self.node.lock:
            g = self._gpu(gpu)
            if error == "clear":
                g.field_errors.pop(field, None)
            elif error in FIELD_ERRORS:
                g.field_errors[field] = error
            else:
                raise SimFaultError(
                    f"unknown field error {str(error)[:64]!r}; one of {', '.join(FIELD_ERRORS)}, clear"
                )

    def fault_mig(self, gpu: int, instances: int = 2) -> None:
        """Turn MIG on with `instances` MIG devices (0 turns it off; an H200 has at most 7)."""
        instances = _integer("instances", instances, 0, _MAX_MIG_INSTANCES)
        with self.node.lock:
            g = self._gpu(gpu)
            g.mig_instances = instances
            g.sample = None

    def fault_clear(self, gpu: int | None = None) -> None:
        """Undo every fault on `gpu` (or all GPUs), lost state included; ECC counts stay (counters)."""
        with self.node.lock:
            targets = self.node.gpus if gpu is None else [self._gpu(gpu)]
            for g in targets:
                g.forced_reasons.clear()
                g.ramp = None
                g.clock_cap_hz = None
                g.field_errors.clear()
                g.lost = False
                g.mig_instances = 0
                g.processes = {p: s for p, s in g.processes.items() if p == g.main_pid}
                g.sample = None
                if not (math.isfinite(g.temperature) and math.isfinite(g.util)):
                    # a state no fault should leave behind, but if one did: back to equilibrium
                    g.settle(self.node.clock())
            if gpu is None:
                self.node.init_failures_left = 0
                self.node.unavailable = False
                self.node.initialised = True
