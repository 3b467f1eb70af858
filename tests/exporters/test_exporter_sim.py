"""The simulated backend and the exporter core: seeded dynamics, faults, init backoff, lost GPUs."""

from __future__ import annotations

import statistics
import time

import pytest
from prometheus_client.registry import CollectorRegistry

from gpuobs.exporters.sidecar.backend import BackendUnavailableError, GpuLostError
from gpuobs.exporters.sidecar.collector import GpuCollector, render
from gpuobs.exporters.sidecar.core import CoreSettings, ExporterCore
from gpuobs.exporters.sidecar.history import FlightRecorder
from gpuobs.exporters.sidecar.sim import SimBackend, SimFaultError
from gpuobs.names import exporter as ex
from gpuobs.names import gpu as g


class FakeClock:
    """Drives the simulator's time by hand (the simulator takes its clock as a parameter)."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _trace(seed: int, steps: int = 120) -> list[tuple[float, float, float, float]]:
    clock = FakeClock()
    sim = SimBackend(gpus=2, seed=seed, clock=clock)
    sim.init()
    out = []
    for _ in range(steps):
        clock.t += 1.0
        s = sim.sample(0)
        assert s.utilization_ratio is not None and s.power_w is not None and s.temperature_c is not None
        assert s.memory_used_bytes is not None
        out.append((s.utilization_ratio, s.power_w, s.temperature_c, s.memory_used_bytes))
    return out


def test_sim_is_seeded_and_dynamics_are_coupled() -> None:
    a, b, c = _trace(7), _trace(7), _trace(8)
    assert [x[0] for x in a] == [x[0] for x in b], "same seed must give the same utilization trace"
    assert [x[0] for x in a] != [x[0] for x in c]
    util = [x[0] for x in a]
    power = [x[1] for x in a]
    mem = [x[3] for x in a]
    assert max(util) - min(util) > 0.2, "utilization should move"
    assert statistics.correlation(util, power) > 0.9, "power follows utilization"
    assert statistics.correlation(util, mem) > 0.5, "memory (KV cache) follows utilization"
    # Temperature follows power with a lag: it correlates with power smoothed over the thermal time constant.
    temps = [x[2] for x in a]
    smoothed, acc = [], power[0]
    for p in power:
        acc += (p - acc) / 20.0
        smoothed.append(acc)
    assert statistics.correlation(smoothed[20:], temps[20:]) > 0.8
    assert all(0 <= u <= 1 for u in util) and all(88 <= p <= 700 for p in power)


def test_sim_h200_figures() -> None:
    sim = SimBackend(gpus=1)
    devices = sim.init()
    s = sim.sample(0)
    assert devices[0].name == "NVIDIA H200" and devices[0].uuid.startswith("GPU-")
    assert s.memory_total_bytes == 143771 * 1024**2 and s.power_limit_w == 700.0
    assert s.memory_clock_hz == 3201e6 and s.sm_clock_hz is not None and s.sm_clock_hz <= 1980e6
    assert s.memory_used_bytes is not None and s.memory_free_bytes is not None
    assert s.memory_used_bytes + s.memory_free_bytes + (s.memory_reserved_bytes or 0) == pytest.approx(
        s.memory_total_bytes
    )


def test_fault_injection_api() -> None:
    clock = FakeClock()
    sim = SimBackend(gpus=4, clock=clock)
    sim.init()
    sim.inject("ecc", gpu=1, corrected=3, uncorrected=1)
    clock.t += 1
    s = sim.sample(1)
    assert (s.ecc_sbe_volatile, s.ecc_dbe_volatile, s.ecc_sbe_aggregate, s.ecc_dbe_aggregate) == (3, 1, 3, 1)
    assert s.row_remap_pending == 1.0
    event = sim.wait_xid(0.1)
    assert event is not None and (event.gpu, event.code) == (1, 48)

    sim.inject("throttle", gpu=2, reason="hw_power_brake_slowdown")
    assert (sim.sample(2).clock_event_mask or 0) & 0x80
    sim.inject("clock_drop", gpu=2, mhz=500)
    assert sim.sample(2).sm_clock_hz == pytest.approx(495e6, abs=15e6)

    before = sim.sample(3).temperature_c or 0.0
    sim.inject("temperature_ramp", gpu=3, delta_c=40, seconds=5)
    for _ in range(60):
        clock.t += 1
        sim.sample(3)
    after = sim.sample(3)
    assert (after.temperature_c or 0) > before + 25
    assert (after.clock_event_mask or 0) & 0x20, "a hot die reports sw_thermal_slowdown"

    hog = sim.inject("memory_hog", gpu=0, gib=20)
    clock.t += 1
    procs = {p.pid: p for p in sim.sample(0).processes or []}
    assert procs[hog["pid"]].name == "memhog" and procs[hog["pid"]].used_memory_bytes == 20 * 1024**3
    sim.inject("process_exit", pid=hog["pid"])
    assert hog["pid"] not in {p.pid for p in sim.sample(0).processes or []}

    sim.inject("mig", gpu=0, instances=3)
    s0 = sim.sample(0)
    assert s0.mig_mode == 1.0 and s0.mig_devices is not None and len(s0.mig_devices) == 3

    sim.inject("field_error", gpu=0, field="fan_speed_ratio", error="not_supported")
    assert sim.sample(0).fan_speed_ratio is None
    sim.inject("fall_off_bus", gpu=3)
    with pytest.raises(GpuLostError):
        sim.sample(3)
    sim.inject("nvml_failure", init_failures=1)
    with pytest.raises(BackendUnavailableError):
        sim.sample(0)

    for bad in (
        {"kind": "nope"},
        {"kind": "xid", "gpu": 9, "code": 1},
        {"kind": "xid", "gpu": 0},
        {"kind": "throttle", "gpu": 0, "reason": "bogus"},
    ):
        kind = bad.pop("kind")
        with pytest.raises(SimFaultError):
            sim.inject(str(kind), **bad)


def _core(sim: SimBackend, **settings: float) -> ExporterCore:
    base = {"slow_interval_s": 0.05, "history_interval_s": 0.1, "init_backoff_s": 0.05, "xid_wait_s": 0.05}
    base.update(settings)
    return ExporterCore(sim, CoreSettings(**base), host="node-1")  # type: ignore[arg-type]


def _wait(predicate: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


def test_core_init_failure_backs_off_and_recovers() -> None:
    sim = SimBackend(gpus=2)
    sim.inject("nvml_failure", init_failures=3)
    core = _core(sim)
    core.start()
    try:
        assert core.read().nvml_up is False and core.read().readings == []
        _wait(lambda: core.nvml_up)
        assert core.init_failures == 3
        assert len(core.read().readings) == 2
        # A driver that stops answering later: down, then re-init with backoff.
        sim.inject("nvml_failure", init_failures=2)
        snap = core.read()
        assert snap.nvml_up is False and snap.collector_ok["gpu"] is False
        _wait(lambda: core.nvml_up)
        assert core.init_failures == 5
    finally:
        core.stop()


def test_core_lost_gpu_others_report_and_xid_counted() -> None:
    sim = SimBackend(gpus=3)
    core = _core(sim)
    core.start()
    try:
        sim.inject("xid", gpu=0, code=13)
        sim.inject("xid", gpu=0, code=13)
        sim.inject("fall_off_bus", gpu=1)
        _wait(
            lambda: sum(core.read().readings[0].xid_counts.values()) == 2 and core.read().readings[1].xid_last
        )
        snap = core.read()
        assert [r.up for r in snap.readings] == [True, False, True]
        assert snap.readings[1].sample is None and snap.readings[2].sample is not None
        assert snap.readings[0].xid_counts == {13: 2} and snap.readings[1].xid_last == 79
        _wait(lambda: len(core.history) >= 2)
        hist = core.history.to_json(0, core.host)
        assert any(e["code"] == 79 and e["gpu"] == 1 for e in hist["events"])
        last = hist["samples"][-1]["gpus"]
        assert last[1]["up"] is False and last[0]["values"][g.POWER_USAGE.native] > 0
    finally:
        core.stop()


def test_collector_never_raises_and_marks_failed_part() -> None:
    sim = SimBackend(gpus=2)
    core = _core(sim)
    core.start()
    try:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(GpuCollector(core, "native"))
        sim.inject("field_error", gpu=1, field="power_w", error="unknown")
        text = render(registry).decode()
        assert f'{ex.COLLECTOR_SUCCESS.native}{{collector="gpu"}} 0.0' in text
        assert f'{g.POWER_USAGE.native}{{gpu="0"' in text and f'{g.POWER_USAGE.native}{{gpu="1"' not in text

        def broken() -> None:
            raise RuntimeError("backend exploded")

        core.read = broken  # type: ignore[method-assign]
        text = render(registry).decode()
        assert f'{ex.COLLECTOR_SUCCESS.native}{{collector="gpu"}} 0.0' in text
    finally:
        core.stop()


def test_flight_recorder_is_bounded() -> None:
    rec = FlightRecorder(retention_s=60, interval_s=10)
    assert rec._samples.maxlen == 7
