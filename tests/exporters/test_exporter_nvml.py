"""The NVML backend's funnel on a machine without a GPU.

No NVIDIA driver exists here, so NVML itself is a boundary nothing here provides: `FakeNvmlLibrary` below
stands in for the `pynvml` module (the binding's own NVMLError class is used, so error codes map as on a
real driver). The real check runs on the H200 (bench/exporter.py, `gpuobs export --self-check`). The real
binding is tested too: without a driver it must fail init cleanly.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest

from gpuobs.exporters.sidecar.backend import BackendInitError, BackendUnavailableError, GpuLostError
from gpuobs.exporters.sidecar.nvml import NvmlBackend, probe_nvml


def _err(code: int) -> pynvml.NVMLError:
    return pynvml.NVMLError(code)


class FakeNvmlLibrary:
    """Fake of the `pynvml` module boundary: 2 GPUs, an older driver (no NVML 13 calls), GPU 1 lost."""

    NVMLError = pynvml.NVMLError
    nvmlMemory_v2 = pynvml.nvmlMemory_v2
    nvmlEventTypeXidCriticalError = 8

    def __init__(self, init_error: int | None = None) -> None:
        self.init_error = init_error
        self.lost = {1}
        self.down = False
        self.events: list[Any] = []

    def _h(self, h: int) -> int:
        if self.down:
            raise _err(pynvml.NVML_ERROR_UNINITIALIZED)
        if h in self.lost:
            raise _err(pynvml.NVML_ERROR_GPU_IS_LOST)
        return h

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise _err(self.init_error)

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlSystemGetDriverVersion(self) -> bytes:
        return b"535.104.05"

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetUUID(self, h: int) -> bytes:
        return f"GPU-0000000{h}-aaaa-bbbb-cccc-dddddddddddd".encode()

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return b"NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetPciInfo(self, h: int) -> Any:
        return SimpleNamespace(busId=f"00000000:{h + 0x18:02X}:00.0".encode())

    def nvmlDeviceGetMinorNumber(self, h: int) -> int:
        return h + 4

    def nvmlDeviceGetClockInfo(self, h: int, clock: int) -> int:
        return {1: 1980, 2: 2619}[clock] if self._h(h) == 0 else 0

    # Older driver: only the deprecated temperature and throttle calls exist.
    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        return 41

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: int) -> int:
        return 0x4

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return 123_456

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return 700_000

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        return SimpleNamespace(gpu=37, memory=12)

    def nvmlDeviceGetEncoderUtilization(self, h: int) -> tuple[int, int]:
        raise _err(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetDecoderUtilization(self, h: int) -> tuple[int, int]:
        return (0, 167000)

    def nvmlDeviceGetMemoryInfo(self, h: int, version: int | None = None) -> Any:
        if version is not None:
            raise _err(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)  # older driver: no _v2
        return SimpleNamespace(total=80 * 2**30, free=70 * 2**30, used=10 * 2**30)

    def nvmlDeviceGetFieldValues(self, h: int, ids: list[Any]) -> list[Any]:
        raise _err(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetPcieReplayCounter(self, h: int) -> int:
        return 3

    def nvmlDeviceGetTotalEccErrors(self, h: int, etype: int, counter: int) -> int:
        return {(0, 0): 5, (1, 0): 0, (0, 1): 50, (1, 1): 1}[(etype, counter)]

    def nvmlDeviceGetRemappedRows(self, h: int) -> tuple[int, int, int, int]:
        return (0, 2, 0, 0)

    def nvmlDeviceGetPerformanceState(self, h: int) -> int:
        return 0

    def nvmlDeviceGetFanSpeed(self, h: int) -> int:
        raise _err(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetComputeMode(self, h: int) -> int:
        raise _err(pynvml.NVML_ERROR_NO_PERMISSION)

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[Any]:
        return [SimpleNamespace(pid=4242, usedGpuMemory=2**30), SimpleNamespace(pid=4343, usedGpuMemory=None)]

    def nvmlSystemGetProcessName(self, pid: int) -> bytes:
        return b"/usr/bin/python3"

    def nvmlDeviceGetMigMode(self, h: int) -> tuple[int, int]:
        return (0, 0)

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int:
        return 9_000_000

    def nvmlDeviceGetPcieThroughput(self, h: int, counter: int) -> int:
        return 1500 if counter == 0 else 2500

    def nvmlEventSetCreate(self) -> str:
        return "set"

    def nvmlDeviceRegisterEvents(self, h: int, types: int, event_set: str) -> None:
        self._h(h)

    def nvmlEventSetWait_v2(self, event_set: str, timeout_ms: int) -> Any:
        if not self.events:
            raise _err(pynvml.NVML_ERROR_TIMEOUT)
        return self.events.pop(0)

    def nvmlDeviceGetIndex(self, h: int) -> int:
        return h


def _backend(lib: FakeNvmlLibrary) -> NvmlBackend:
    return NvmlBackend(lib)  # type: ignore[arg-type]


def test_real_binding_without_driver_fails_init_cleanly() -> None:
    ok, why = probe_nvml()
    assert ok is False and "NVML" in why
    with pytest.raises(BackendInitError):
        NvmlBackend().init()


def test_funnel_none_not_zero_and_fallbacks() -> None:
    lib = FakeNvmlLibrary()
    backend = _backend(lib)
    devices = backend.init()
    assert [d.uuid for d in devices] == [
        "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd",
        "GPU-00000001-aaaa-bbbb-cccc-dddddddddddd",
    ]
    assert devices[0].driver_version == "535.104.05" and devices[1].device == "nvidia5"
    assert devices[0].pci_bus_id == "00000000:18:00.0"
    s = backend.sample(0)
    assert s.temperature_c == 41.0, "falls back to nvmlDeviceGetTemperature on older drivers"
    assert s.clock_event_mask == 0x4, "falls back to the ThrottleReasons call"
    assert s.sm_clock_hz == 1980e6 and s.memory_clock_hz == 2619e6
    assert s.power_w == pytest.approx(123.456) and s.power_limit_w == 700.0
    assert s.utilization_ratio == 0.37 and s.memory_copy_utilization_ratio == 0.12
    assert s.fan_speed_ratio is None and s.compute_mode is None and s.encoder_utilization_ratio is None
    assert s.decoder_utilization_ratio == 0.0
    assert s.memory_used_bytes == 10 * 2**30 and s.memory_reserved_bytes is None
    # Field values and aggregate ECC are slow readers: absent until the slow poller ran once.
    assert set(backend.slow_readers) == {"fields", "ecc_aggregate"}
    assert s.pcie_replays is None and s.ecc_sbe_aggregate is None
    assert (s.ecc_sbe_volatile, s.ecc_dbe_volatile) == (5, 0)
    backend.slow_sample(0)
    s = backend.sample(0)
    assert s.memory_temperature_c is None and s.pcie_replays == 3.0
    assert (s.ecc_sbe_volatile, s.ecc_dbe_volatile, s.ecc_sbe_aggregate, s.ecc_dbe_aggregate) == (5, 0, 50, 1)
    assert s.rows_remapped_uncorrectable == 2.0 and s.mig_mode == 0.0
    assert s.processes is not None and [(p.pid, p.name, p.used_memory_bytes) for p in s.processes] == [
        (4242, "python3", 2**30),
        (4343, "python3", None),
    ]
    slow = backend.slow_sample(0)
    assert slow.energy_joules == 9000.0
    assert (slow.pcie_tx_bytes_per_second, slow.pcie_rx_bytes_per_second) == (1.5e6, 2.5e6)
    assert slow.tensor_active_ratio is None, "no GPM on this fake: None, never 0"


class SlowEncoderLibrary(FakeNvmlLibrary):
    """The same fake, with an encoder query that takes 2 ms (as some NVML calls do on some boards)."""

    calls = 0

    def nvmlDeviceGetEncoderUtilization(self, h: int) -> tuple[int, int]:
        SlowEncoderLibrary.calls += 1
        time.sleep(0.002)
        return (10, 167000)


def test_slow_readers_are_measured_at_init_and_leave_the_scrape_path() -> None:
    backend = _backend(SlowEncoderLibrary())
    backend.init()
    assert "codec" in backend.slow_readers and "codec" not in backend.fast_readers
    assert backend.reader_costs_us["codec"] >= 2000 and backend.reader_costs_us["power"] < 2000
    before = SlowEncoderLibrary.calls
    t0 = time.perf_counter()
    s = backend.sample(0)
    assert time.perf_counter() - t0 < 0.002 and SlowEncoderLibrary.calls == before
    assert s.encoder_utilization_ratio is None
    backend.slow_sample(0)
    assert backend.sample(0).encoder_utilization_ratio == 0.10, "served from the slow poller's cache"


def test_lost_gpu_and_driver_gone_are_typed() -> None:
    lib = FakeNvmlLibrary()
    backend = _backend(lib)
    backend.init()
    with pytest.raises(GpuLostError) as info:
        backend.sample(1)
    assert info.value.index == 1
    lib.down = True
    with pytest.raises(BackendUnavailableError):
        backend.sample(0)


def test_init_failure_is_backend_init_error() -> None:
    with pytest.raises(BackendInitError, match="Driver Not Loaded"):
        _backend(FakeNvmlLibrary(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)).init()
    ok, why = probe_nvml(FakeNvmlLibrary(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED))  # type: ignore[arg-type]
    assert ok is False and "Driver Not Loaded" in why


def test_xid_events() -> None:
    lib = FakeNvmlLibrary()
    backend = _backend(lib)
    backend.init()
    assert backend.wait_xid(0.01) is None
    lib.events.append(SimpleNamespace(device=0, eventData=79, eventType=8))
    event = backend.wait_xid(0.01)
    assert event is not None and (event.gpu, event.code) == (0, 79)


def test_self_check_covers_fields_served_from_the_slow_poller(tmp_path: Any) -> None:
    """Readers moved off the scrape path must still be compared (they once read N/A on the H200).

    nvidia-smi is a real executable script here that prints what the fake library reports, in
    nvidia-smi's own spellings; NVML is the named fake of the module boundary above.
    """
    import json
    import stat
    import sys

    from gpuobs.exporters.sidecar.selfcheck import _CHECKS, run_self_check

    lib = FakeNvmlLibrary()
    lib.lost = set()
    reference = NvmlBackend(lib, fast_budget_us=1e9)  # every reader on the scrape path
    devices = reference.init()
    spellings = {"pstate": lambda v: f"P{int(v)}", "compute_mode": lambda v: "Default",
                 "mig.mode.current": lambda v: "Enabled" if v else "Disabled",
                 "clocks_event_reasons.active": lambda v: f"0x{int(v):016x}"}
    rows = []
    for d in devices:
        s = reference.sample(d.index)
        row = {}
        for name, get, _tol in _CHECKS:
            value = get(d, s)
            row[name] = "[N/A]" if value is None else spellings.get(name, str)(value)
        rows.append(row)
    reference.shutdown()
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"rows = json.load(open({str(tmp_path / 'rows.json')!r}))\n"
        "fields = sys.argv[1].split('=', 1)[1].split(',')\n"
        "for r in rows: print(', '.join(r[f] for f in fields))\n"
    )
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)

    report = run_self_check(smi=str(smi), backend=NvmlBackend(lib, fast_budget_us=0.0))
    compared = [r for r in report.rows if r.smi != "[N/A]"]
    assert len(compared) >= 15
    missing = [r.field for r in compared if r.ours == "N/A"]
    assert not missing, f"fields read N/A although the fake reports them: {missing}"
    assert all(r.agree for r in compared), [r for r in compared if not r.agree]
