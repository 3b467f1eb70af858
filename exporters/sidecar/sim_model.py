"""The simulated node behind `--backend sim`: H200-like GPUs with seeded, coupled dynamics.

Utilization follows a seeded workload; memory, power, temperature and clocks follow utilization (power
heats the die with a time constant; heat and the power cap pull the clocks down and raise clock-event
reasons). This module is the model and its state only: the faults that change the state are in
sim_faults.py, and the `GpuBackend` that reads it the way NVML would is `SimBackend` in sim.py.
"""

from __future__ import annotations

import math
import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gpuobs.exporters.sidecar.samples import (
    DeviceInfo,
    GpuSample,
    MigSample,
    ProcessSample,
    SlowSample,
    XidEvent,
)
from gpuobs.names.gpu import clock_event_mask

__all__ = ["GIB", "SimGpu", "SimNode"]

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
_SLOWDOWN_REASONS = frozenset(
    {"sw_thermal_slowdown", "hw_thermal_slowdown", "sw_power_cap", "hw_slowdown", "hw_power_brake_slowdown"}
)


@dataclass
class SimGpu:
    """One simulated GPU: its workload, thermal and counter state, and what faults have set on it."""

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

    @classmethod
    def seeded(cls, index: int, master: random.Random, t0: float) -> SimGpu:
        """GPU `index` of the node seeded by `master`: at equilibrium at `t0`, running its main process."""
        rng = random.Random(master.getrandbits(64))
        g = cls(
            index=index,
            rng=rng,
            phase=rng.uniform(0, 2 * math.pi),
            period_s=rng.uniform(40, 120),
            base_memory=rng.uniform(60, 110) * GIB,
            last_t=t0,
        )
        g.settle(t0)
        g.energy_j = rng.uniform(2e8, 9e8)
        g.processes[g.main_pid] = ProcessSample(g.main_pid, "python3", None)
        return g

    @property
    def main_pid(self) -> int:
        """The pid of the serving process every GPU runs (its memory follows utilization)."""
        return 3000 + self.index

    def target(self, t: float) -> float:
        """The workload's utilization at time `t` (a seeded wave plus a random walk), in [0, 1]."""
        wave = 0.5 + 0.4 * math.sin(2 * math.pi * t / self.period_s + self.phase)
        return min(1.0, max(0.0, wave + self.walk))

    def power(self) -> float:
        """Board power in watts at the current utilization (no noise)."""
        return H200_IDLE_W + (H200_POWER_LIMIT_W * 0.93 - H200_IDLE_W) * self.util**0.9

    def settle(self, now: float) -> None:
        """Jump to equilibrium: the workload's utilization at `now` and the temperature its power holds."""
        self.util = self.target(now)
        self.temperature = AMBIENT_C + 0.075 * self.power()

    def advance(self, now: float) -> None:
        """Move the state on to time `now`: utilization, energy and heat follow with their time constants."""
        dt = now - self.last_t
        if dt <= 0:
            return
        self.last_t = now
        step = min(dt, 5.0)
        drift = self.walk * math.exp(-step / 30) + self.rng.gauss(0, 0.04) * math.sqrt(step)
        self.walk = max(-0.3, min(0.3, drift))
        target = self.target(now)
        self.util += (target - self.util) * (1 - math.exp(-dt / UTIL_TAU_S))
        power = self.power()
        self.energy_j += power * dt
        t_eq = AMBIENT_C + 0.075 * power + self._ramp_offset(now)
        self.temperature += (t_eq - self.temperature) * (1 - math.exp(-dt / THERMAL_TAU_S))
        if self.rng.random() < 0.002 * step:
            self.pcie_replays += 1
        self.nvlink_bytes += 60e9 * self.util * dt

    def _ramp_offset(self, now: float) -> float:
        if self.ramp is None:
            return 0.0
        start, seconds, delta = self.ramp
        frac = 1.0 if seconds <= 0 else min(1.0, (now - start) / seconds)
        return delta * frac

    def build_sample(self, uuid: str) -> GpuSample:
        """The cheap fields as they stand (`uuid` names the MIG devices); draws the power noise."""
        u = self.util
        power = self.power() + self.rng.gauss(0, 4.0)
        reasons = set(self.forced_reasons)
        if u < 0.03:
            reasons.add("gpu_idle")
        if power >= H200_POWER_LIMIT_W * 0.98:
            reasons.add("sw_power_cap")
        temperature = self.temperature
        if temperature >= 87:
            reasons.add("sw_thermal_slowdown")
        if temperature >= 92:
            reasons.add("hw_thermal_slowdown")
        sm = H200_SM_IDLE_HZ if "gpu_idle" in reasons else H200_SM_MAX_HZ
        if reasons & _SLOWDOWN_REASONS:
            sm *= 0.72
        if self.clock_cap_hz is not None:
            sm = min(sm, self.clock_cap_hz)
            reasons.add("hw_slowdown")
        mask = clock_event_mask(reasons)
        procs = dict(self.processes)
        main_pid = self.main_pid
        kv = 0.85 * (H200_MEMORY_BYTES - H200_RESERVED_BYTES - self.base_memory) * min(1.0, u * 1.4)
        if main_pid in procs:
            procs[main_pid] = ProcessSample(main_pid, procs[main_pid].name, int(self.base_memory + kv))
        used = sum(p.used_memory_bytes or 0 for p in procs.values()) + 0.6 * GIB
        used = min(used, H200_MEMORY_BYTES - H200_RESERVED_BYTES)
        free = H200_MEMORY_BYTES - H200_RESERVED_BYTES - used
        mig: list[MigSample] = []
        if self.mig_instances:
            share = (H200_MEMORY_BYTES - H200_RESERVED_BYTES) // self.mig_instances
            for k in range(self.mig_instances):
                mig.append(
                    MigSample(
                        uuid=f"MIG-{uuid[4:12]}-{k:04d}-sim",
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
            pcie_replays=self.pcie_replays,
            utilization_ratio=round(u * 100) / 100,
            memory_copy_utilization_ratio=round(u * 55) / 100,
            encoder_utilization_ratio=0.0,
            decoder_utilization_ratio=0.0,
            memory_free_bytes=float(free),
            memory_used_bytes=float(used),
            memory_reserved_bytes=float(H200_RESERVED_BYTES),
            memory_total_bytes=float(H200_MEMORY_BYTES),
            ecc_sbe_volatile=self.ecc["sbe_v"],
            ecc_dbe_volatile=self.ecc["dbe_v"],
            ecc_sbe_aggregate=self.ecc["sbe_a"],
            ecc_dbe_aggregate=self.ecc["dbe_a"],
            rows_remapped_correctable=0.0,
            rows_remapped_uncorrectable=float(min(self.ecc["dbe_a"], 8)),
            row_remap_pending=1.0 if self.ecc["dbe_v"] > 0 else 0.0,
            row_remap_failure=0.0,
            nvlink_traffic_bytes=self.nvlink_bytes,
            pstate=0.0,
            fan_speed_ratio=round(0.3 + 0.5 * max(0.0, (temperature - 30) / 60), 2),
            compute_mode=0.0,
            clock_event_mask=mask,
            mig_mode=1.0 if self.mig_instances else 0.0,
            processes=[p for p in procs.values() if p.used_memory_bytes is not None]
            + [p for p in procs.values() if p.used_memory_bytes is None and p.pid != main_pid],
            mig_devices=mig,
        )

    def build_slow_sample(self) -> SlowSample:
        """The slow fields (energy, PCIe and NVLink throughput, GPM activity ratios) as they stand."""
        u = self.util
        return SlowSample(
            taken_at=time.monotonic(),
            energy_joules=self.energy_j,
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


def _uuid(seed: int, index: int) -> str:
    r = random.Random(seed * 1000 + index)
    h = f"{r.getrandbits(128):032x}"
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class SimNode:
    """`gpus` simulated GPUs and their driver: the state the faults change and the backend reads.

    Callers hold `lock` around every read and change: the exporter's scrape, slow poller and XID
    thread run at once. `clock` is injectable so tests can drive time.
    """

    def __init__(self, gpus: int, seed: int, clock: Callable[[], float], model: str) -> None:
        if gpus < 1:
            raise ValueError("the simulated node needs at least one GPU")
        self.seed = seed
        self.model = model
        self.clock = clock
        self.lock = threading.RLock()
        self.xids: queue.Queue[XidEvent] = queue.Queue()
        self.init_failures_left = 0
        self.unavailable = False  # the driver stopped answering
        self.initialised = False
        self.next_pid = 4000
        master = random.Random(seed)
        t0 = clock()
        self.gpus = [SimGpu.seeded(i, master, t0) for i in range(gpus)]
        self.devices = [
            DeviceInfo(
                index=i,
                uuid=_uuid(seed, i),
                name=model,
                pci_bus_id=f"00000000:{0x18 + 0x10 * i:02X}:00.0",
                minor_number=i,
                driver_version=DRIVER_VERSION,
            )
            for i in range(gpus)
        ]
