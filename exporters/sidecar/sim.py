"""A simulated node of N H200-like GPUs with seeded, coupled dynamics and a fault-injection API.

Utilization follows a seeded workload; memory, power, temperature and clocks follow utilization (power
heats the die with a time constant; heat and the power cap pull the clocks down and raise clock-event
reasons). Faults (`SimBackend.inject(kind, **args)`, also `POST /api/faults` when the exporter runs with
`--enable-fault-injection`) cover what the exporter must survive: XID codes, ECC errors, throttle
reasons, temperature ramps, clock drops, memory hogs, processes appearing and exiting, a GPU falling off
the bus, NVML init failure and per-field NVML errors.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpuobs.errors import ExporterError
from gpuobs.exporters.sidecar.backend import (
    BackendInitError,
    BackendUnavailableError,
    GpuBackend,
    GpuLostError,
)
from gpuobs.exporters.sidecar.samples import (
    DeviceInfo,
    GpuSample,
    MigSample,
    ProcessSample,
    SlowSample,
    XidEvent,
)
from gpuobs.names.gpu import CLOCK_EVENT_REASONS, clock_event_mask

__all__ = ["FAULT_KINDS", "FIELD_ERRORS", "SimBackend", "SimFaultError"]

GIB = 1024**3
MIB = 1024**2
H200_MEMORY_BYTES = 143771 * MIB
H200_RESERVED_BYTES = 545 * MIB
H200_POWER_LIMIT_W = 700.0
H200_IDLE_W = 88.0
H200_SM_MAX_HZ = 1980e6
H200_SM_IDLE_HZ = 345e6
H200_MEM_HZ = 3201e6
DRIVER_VERSION = "580.95.05"
AMBIENT_C = 28.0
THERMAL_TAU_S = 20.0
UTIL_TAU_S = 2.0

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


def _number(name: str, value: Any, low: float, high: float) -> float:
    """`value` as a float in [low, high]; anything else (NaN, Infinity, text, true) is a SimFaultError."""
    wanted = f"{name} must be a number from {low:g} to {high:g}"
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


@dataclass
class _Gpu:
    index: int
    rng: random.Random
    phase: float
    period_s: float
    base_memory: float
    util: float = 0.0
    walk: float = 0.0
    temperature: float = AMBIENT_C + 8.0
    energy_j: float = 0.0
    pcie_replays: float = 0.0
    nvlink_bytes: float = 0.0
    ecc: dict[str, float] = field(
        default_factory=lambda: {"sbe_v": 0.0, "dbe_v": 0.0, "sbe_a": 0.0, "dbe_a": 0.0}
    )
    forced_reasons: set[str] = field(default_factory=set)
    ramp: tuple[float, float, float] | None = None  # (start, seconds, delta_c)
    clock_cap_hz: float | None = None
    processes: dict[int, ProcessSample] = field(default_factory=dict)
    field_errors: dict[str, str] = field(default_factory=dict)
    lost: bool = False
    last_xid: int = 0
    mig_instances: int = 0
    last_t: float = 0.0
    sample: GpuSample | None = None


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
        if gpus < 1:
            raise ValueError("the simulated node needs at least one GPU")
        self.gpus = gpus
        self.seed = seed
        self.model = model
        self._clock = clock
        self._min_step = min_step_s
        self._lock = threading.RLock()
        self._xids: queue.Queue[XidEvent] = queue.Queue()
        self._init_failures_left = 0
        self._unavailable = False
        self._initialised = False
        self._next_pid = 4000
        master = random.Random(seed)
        t0 = clock()
        self._gpus: list[_Gpu] = []
        for i in range(gpus):
            rng = random.Random(master.getrandbits(64))
            g = _Gpu(
                index=i,
                rng=rng,
                phase=rng.uniform(0, 2 * math.pi),
                period_s=rng.uniform(40, 120),
                base_memory=rng.uniform(60, 110) * GIB,
                last_t=t0,
            )
            g.util = self._target(g, t0)
            g.temperature = AMBIENT_C + 0.075 * self._power(g)
            g.energy_j = rng.uniform(2e8, 9e8)
            g.processes[3000 + i] = ProcessSample(3000 + i, "python3", None)
            self._gpus.append(g)
        self._devices = [
            DeviceInfo(
                index=i,
                uuid=self._uuid(i),
                name=model,
                pci_bus_id=f"00000000:{0x18 + 0x10 * i:02X}:00.0",
                minor_number=i,
                driver_version=DRIVER_VERSION,
            )
            for i in range(gpus)
        ]

    # --- GpuBackend ---------------------------------------------------------------------------------
    def init(self) -> list[DeviceInfo]:
        with self._lock:
            if self._init_failures_left > 0:
                self._init_failures_left -= 1
                raise BackendInitError("NVML init failed (simulated): NVML_ERROR_DRIVER_NOT_LOADED")
            self._unavailable = False
            self._initialised = True
            return list(self._devices)

    def shutdown(self) -> None:
        with self._lock:
            self._initialised = False

    def sample(self, index: int) -> GpuSample:
        with self._lock:
            g = self._check(index)
            now = self._clock()
            if g.sample is None or now - g.last_t >= self._min_step:
                self._advance(g, now)
                g.sample = self._build(g)
            errors = g.field_errors
            if not errors:
                return g.sample
            if any(kind == "unknown" for kind in errors.values()):
                bad = next(f for f, kind in errors.items() if kind == "unknown")
                raise RuntimeError(f"simulated NVML_ERROR_UNKNOWN reading {bad} of gpu {index}")
            return dataclasses.replace(g.sample, **dict.fromkeys(errors, None))

    def slow_sample(self, index: int) -> SlowSample:
        with self._lock:
            g = self._check(index)
            self._advance(g, self._clock())
            u = g.util
            s = SlowSample(
                taken_at=time.monotonic(),
                energy_joules=g.energy_j,
                pcie_tx_bytes_per_second=2.0e9 * u + 5e6,
                pcie_rx_bytes_per_second=3.5e9 * u + 5e6,
                gr_engine_active_ratio=min(1.0, u * 0.98),
                sm_active_ratio=min(1.0, u * 0.9),
                sm_occupancy_ratio=0.45 * u,
                tensor_active_ratio=0.62 * u,
                dram_active_ratio=0.55 * u,
                nvlink_tx_bytes_per_second=60e9 * u,
                nvlink_rx_bytes_per_second=58e9 * u,
                nvlink_bytes_per_second=118e9 * u,
            )
            for name in list(g.field_errors):
                if hasattr(s, name):
                    setattr(s, name, None)
            return s

    def wait_xid(self, timeout_s: float) -> XidEvent | None:
        try:
            return self._xids.get(timeout=max(0.0, timeout_s))
        except queue.Empty:
            return None

    # --- model ----------------------------------------------------------------------------------------
    def devices(self) -> list[DeviceInfo]:
        return list(self._devices)

    def _uuid(self, i: int) -> str:
        r = random.Random(self.seed * 1000 + i)
        h = f"{r.getrandbits(128):032x}"
        return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def _check(self, index: int) -> _Gpu:
        if self._unavailable or not self._initialised:
            raise BackendUnavailableError("NVML is not initialised (simulated driver failure)")
        if not 0 <= index < self.gpus:
            raise IndexError(f"no gpu {index}")
        g = self._gpus[index]
        if g.lost:
            raise GpuLostError(index, "GPU has fallen off the bus (simulated)")
        return g

    def _target(self, g: _Gpu, t: float) -> float:
        wave = 0.5 + 0.4 * math.sin(2 * math.pi * t / g.period_s + g.phase)
        return min(1.0, max(0.0, wave + g.walk))

    def _power(self, g: _Gpu) -> float:
        return H200_IDLE_W + (H200_POWER_LIMIT_W * 0.93 - H200_IDLE_W) * g.util**0.9

    def _advance(self, g: _Gpu, now: float) -> None:
        dt = now - g.last_t
        if dt <= 0:
            return
        g.last_t = now
        step = min(dt, 5.0)
        g.walk = max(-0.3, min(0.3, g.walk * math.exp(-step / 30) + g.rng.gauss(0, 0.04) * math.sqrt(step)))
        target = self._target(g, now)
        g.util += (target - g.util) * (1 - math.exp(-dt / UTIL_TAU_S))
        power = self._power(g)
        g.energy_j += power * dt
        t_eq = AMBIENT_C + 0.075 * power + self._ramp_offset(g, now)
        g.temperature += (t_eq - g.temperature) * (1 - math.exp(-dt / THERMAL_TAU_S))
        if g.rng.random() < 0.002 * step:
            g.pcie_replays += 1
        g.nvlink_bytes += 60e9 * g.util * dt

    def _ramp_offset(self, g: _Gpu, now: float) -> float:
        if g.ramp is None:
            return 0.0
        start, seconds, delta = g.ramp
        frac = 1.0 if seconds <= 0 else min(1.0, (now - start) / seconds)
        return delta * frac

    def _build(self, g: _Gpu) -> GpuSample:
        u = g.util
        power = self._power(g) + g.rng.gauss(0, 4.0)
        reasons = set(g.forced_reasons)
        if u < 0.03:
            reasons.add("gpu_idle")
        if power >= H200_POWER_LIMIT_W * 0.98:
            reasons.add("sw_power_cap")
        temperature = g.temperature
        if temperature >= 87:
            reasons.add("sw_thermal_slowdown")
        if temperature >= 92:
            reasons.add("hw_thermal_slowdown")
        sm = H200_SM_IDLE_HZ if "gpu_idle" in reasons else H200_SM_MAX_HZ
        if reasons & {
            "sw_thermal_slowdown",
            "hw_thermal_slowdown",
            "sw_power_cap",
            "hw_slowdown",
            "hw_power_brake_slowdown",
        }:
            sm *= 0.72
        if g.clock_cap_hz is not None:
            sm = min(sm, g.clock_cap_hz)
            reasons.add("hw_slowdown")
        mask = clock_event_mask(reasons)
        procs = dict(g.processes)
        main_pid = 3000 + g.index
        kv = 0.85 * (H200_MEMORY_BYTES - H200_RESERVED_BYTES - g.base_memory) * min(1.0, u * 1.4)
        if main_pid in procs:
            procs[main_pid] = ProcessSample(main_pid, procs[main_pid].name, int(g.base_memory + kv))
        used = sum(p.used_memory_bytes or 0 for p in procs.values()) + 0.6 * GIB
        used = min(used, H200_MEMORY_BYTES - H200_RESERVED_BYTES)
        free = H200_MEMORY_BYTES - H200_RESERVED_BYTES - used
        mig: list[MigSample] = []
        if g.mig_instances:
            share = (H200_MEMORY_BYTES - H200_RESERVED_BYTES) // g.mig_instances
            for k in range(g.mig_instances):
                mig.append(
                    MigSample(
                        uuid=f"MIG-{self._devices[g.index].uuid[4:12]}-{k:04d}-sim",
                        gpu_instance_id=k + 1,
                        compute_instance_id=0,
                        memory_used_bytes=int(share * 0.4 * u),
                        memory_total_bytes=int(share),
                    )
                )
        return GpuSample(
            sm_clock_hz=round(sm / 15e6) * 15e6,
            memory_clock_hz=H200_MEM_HZ,
            temperature_c=float(round(temperature)),
            memory_temperature_c=float(round(temperature + 4 + 6 * u)),
            power_w=max(0.0, power),
            power_limit_w=H200_POWER_LIMIT_W,
            pcie_replays=g.pcie_replays,
            utilization_ratio=round(u * 100) / 100,
            memory_copy_utilization_ratio=round(u * 55) / 100,
            encoder_utilization_ratio=0.0,
            decoder_utilization_ratio=0.0,
            memory_free_bytes=float(free),
            memory_used_bytes=float(used),
            memory_reserved_bytes=float(H200_RESERVED_BYTES),
            memory_total_bytes=float(H200_MEMORY_BYTES),
            ecc_sbe_volatile=g.ecc["sbe_v"],
            ecc_dbe_volatile=g.ecc["dbe_v"],
            ecc_sbe_aggregate=g.ecc["sbe_a"],
            ecc_dbe_aggregate=g.ecc["dbe_a"],
            rows_remapped_correctable=0.0,
            rows_remapped_uncorrectable=float(min(g.ecc["dbe_a"], 8)),
            row_remap_pending=1.0 if g.ecc["dbe_v"] > 0 else 0.0,
            row_remap_failure=0.0,
            nvlink_traffic_bytes=g.nvlink_bytes,
            pstate=0.0,
            fan_speed_ratio=round(0.3 + 0.5 * max(0.0, (temperature - 30) / 60), 2),
            compute_mode=0.0,
            clock_event_mask=mask,
            mig_mode=1.0 if g.mig_instances else 0.0,
            processes=[p for p in procs.values() if p.used_memory_bytes is not None]
            + [p for p in procs.values() if p.used_memory_bytes is None and p.pid != main_pid],
            mig_devices=mig,
        )

    # --- fault injection ----------------------------------------------------------------------------
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

    def _gpu(self, gpu: Any) -> _Gpu:
        index = _integer("gpu", gpu, 0, 1 << 20)
        if not 0 <= index < self.gpus:
            raise SimFaultError(f"no gpu {index} on this {self.gpus}-GPU node")
        return self._gpus[index]

    def fault_xid(self, gpu: int, code: int, detail: str = "") -> None:
        """Report XID `code` on `gpu` through the event queue (as NVML's XID event set would)."""
        with self._lock:
            g = self._gpu(gpu)
            xid, detail = _integer("code", code, 0, _MAX_XID_CODE), _text("detail", detail, 512)
            g.last_xid = xid
            self._xids.put(XidEvent(gpu=g.index, code=xid, ts=time.time(), detail=detail))

    def fault_ecc(self, gpu: int, corrected: int = 0, uncorrected: int = 0) -> None:
        """Add ECC errors (volatile and aggregate); uncorrected ones also report XID 48, a pending remap."""
        corrected = _integer("corrected", corrected, 0, _MAX_ECC_ERRORS)
        uncorrected = _integer("uncorrected", uncorrected, 0, _MAX_ECC_ERRORS)
        with self._lock:
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
        with self._lock:
            g = self._gpu(gpu)
            (g.forced_reasons.add if active else g.forced_reasons.discard)(reason)
            g.sample = None

    def fault_temperature_ramp(self, gpu: int, delta_c: float = 30.0, seconds: float = 10.0) -> None:
        """Raise the die's equilibrium temperature by `delta_c` over `seconds` (heat follows with its lag)."""
        delta_c = _number("delta_c", delta_c, -100.0, 200.0)
        seconds = _number("seconds", seconds, 0.0, 7 * 86400.0)
        with self._lock:
            g = self._gpu(gpu)
            g.ramp = (self._clock(), seconds, delta_c)
            if seconds <= 0:
                g.temperature += delta_c
            g.sample = None

    def fault_clock_drop(self, gpu: int, mhz: float = 600.0) -> None:
        """Cap the SM clock at `mhz` (reported with the hw_slowdown reason)."""
        mhz = _number("mhz", mhz, 1.0, 10_000.0)
        with self._lock:
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
        with self._lock:
            g = self._gpu(gpu)
            if pid is None:
                self._next_pid += 1
                pid = self._next_pid
            pid = _integer("pid", pid, 1, _MAX_PID)
            g.processes[pid] = ProcessSample(pid, name, int(gib * GIB))
            g.sample = None
            return {"pid": pid}

    def fault_process_exit(self, pid: int) -> None:
        """The process `pid` exits and frees its memory."""
        pid = _integer("pid", pid, 1, _MAX_PID)
        with self._lock:
            for g in self._gpus:
                if g.processes.pop(pid, None) is not None:
                    g.sample = None
                    return
        raise SimFaultError(f"no process {pid} on any gpu")

    def fault_fall_off_bus(self, gpu: int) -> None:
        """XID 79 and the GPU is lost: every later read of it raises GpuLostError."""
        with self._lock:
            g = self._gpu(gpu)
            g.lost = True
            self._xids.put(
                XidEvent(gpu=g.index, code=79, ts=time.time(), detail="GPU has fallen off the bus")
            )

    def fault_nvml_failure(self, init_failures: int = 3) -> None:
        """The driver stops answering; the next `init_failures` init attempts fail, then it comes back."""
        failures = _integer("init_failures", init_failures, 0, 1_000_000)
        with self._lock:
            self._unavailable = True
            self._initialised = False
            self._init_failures_left = failures

    def fault_field_error(self, gpu: int, field: str, error: str = "not_supported") -> None:
        """Make a field of `gpu` fail: not_supported/no_permission (None), unknown (sample raises), clear."""
        valid = {f.name for f in dataclasses.fields(GpuSample)} | {
            f.name for f in dataclasses.fields(SlowSample)
        }
        if not isinstance(field, str) or field not in valid - {"taken_at", "errors"}:
            raise SimFaultError(f"unknown field {str(field)[:64]!r}")
        with self._lock:
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
        with self._lock:
            g = self._gpu(gpu)
            g.mig_instances = instances
            g.sample = None

    def fault_clear(self, gpu: int | None = None) -> None:
        """Undo every fault on `gpu` (or all GPUs), lost state included; ECC counts stay (counters)."""
        with self._lock:
            targets = self._gpus if gpu is None else [self._gpu(gpu)]
            for g in targets:
                g.forced_reasons.clear()
                g.ramp = None
                g.clock_cap_hz = None
                g.field_errors.clear()
                g.lost = False
                g.mig_instances = 0
                g.processes = {p: s for p, s in g.processes.items() if p == 3000 + g.index}
                g.sample = None
                if not (math.isfinite(g.temperature) and math.isfinite(g.util)):
                    # a state no fault should leave behind, but if one did: back to equilibrium
                    g.util = self._target(g, self._clock())
                    g.temperature = AMBIENT_C + 0.075 * self._power(g)
            if gpu is None:
                self._init_failures_left = 0
                self._unavailable = False
                self._initialised = True
