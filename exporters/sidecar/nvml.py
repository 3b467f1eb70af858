"""The NVML backend: every NVML call goes through one funnel that turns errors into typed outcomes.

NotSupported / NoPermission / FunctionNotFound (an older driver) become `None`, never 0; GPU_IS_LOST becomes
`GpuLostError`; Uninitialized / DriverNotLoaded become `BackendUnavailableError`. NVML 13 names are tried
first (`nvmlDeviceGetTemperatureV`, `nvmlDeviceGetCurrentClocksEventReasons`) with the older calls as
fallbacks. Uses NVIDIA's official binding, nvidia-ml-py, which imports as `pynvml`.

Why this module is over 500 lines: it is one class, `NvmlBackend`. Every device read (clocks, ECC,
fields, GPM, MIG, processes, XID events) is a method that calls NVML through the instance's funnel
(`q`: error mapping, per-device budgets, the binding in use), so splitting the reads from the funnel
would only pass the instance around; the samples they fill are in samples.py.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

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

__all__ = ["DEFAULT_SLOW_READERS", "READERS", "NvmlBackend", "probe_nvml"]

logger = logging.getLogger(__name__)

# NVML return codes (stable across versions; duplicated so the funnel works with any binding).
_NOT_SUPPORTED, _NO_PERMISSION, _NOT_FOUND = 3, 4, 6
_UNINITIALIZED, _DRIVER_NOT_LOADED, _TIMEOUT, _LIB_NOT_FOUND, _FUNCTION_NOT_FOUND = 1, 9, 10, 12, 13
_GPU_IS_LOST, _NO_DATA, _ARGUMENT_VERSION_MISMATCH, _DEPRECATED = 15, 21, 25, 26
_NONE_CODES = {
    _NOT_SUPPORTED,
    _NO_PERMISSION,
    _NOT_FOUND,
    _FUNCTION_NOT_FOUND,
    _NO_DATA,
    _ARGUMENT_VERSION_MISMATCH,
    _DEPRECATED,
}
_DOWN_CODES = {_UNINITIALIZED, _DRIVER_NOT_LOADED, _LIB_NOT_FOUND}

# NVML field ids (nvmlFieldValue) and GPM metric ids.
_FI_MEMORY_TEMP = 82
_FI_PCIE_REPLAY_COUNTER = 94
_FI_NVLINK_THROUGHPUT_RAW_TX = 140
_FI_NVLINK_THROUGHPUT_RAW_RX = 141
_ALL_LINKS = 0xFFFFFFFF
_GPM = {
    "gr_engine_active_ratio": 1,
    "sm_active_ratio": 2,
    "sm_occupancy_ratio": 3,
    "tensor_active_ratio": 5,
    "dram_active_ratio": 10,
    "pcie_tx_bytes_per_second": 20,
    "pcie_rx_bytes_per_second": 21,
    "nvlink_rx_bytes_per_second": 60,
    "nvlink_tx_bytes_per_second": 61,
}
_GPM_RATE_FIELDS = {
    "pcie_tx_bytes_per_second",
    "pcie_rx_bytes_per_second",
    "nvlink_rx_bytes_per_second",
    "nvlink_tx_bytes_per_second",
}
_MIB = 1024 * 1024

READERS: tuple[str, ...] = (
    "clocks",
    "temperature",
    "power",
    "power_limit",
    "utilization",
    "codec",
    "memory",
    "fields",
    "ecc_volatile",
    "ecc_aggregate",
    "remapped_rows",
    "state",
    "fan",
    "clock_events",
    "processes",
    "mig",
)
"""Groups of NVML calls; each is on the scrape path unless it is slow."""
DEFAULT_SLOW_READERS: tuple[str, ...] = ("fields", "ecc_aggregate")
"""Slow by default: the field-values call (~460 us on an H200 with the PCIe replay and NVLink fields, measured
2026-11-29) and aggregate ECC (InfoROM). Others move there when init measures them over the budget."""


def _import_pynvml() -> ModuleType:
    import pynvml

    return pynvml


def probe_nvml(nvml: ModuleType | None = None) -> tuple[bool, str]:
    """Whether an NVIDIA driver answers: (True, "driver X, N GPUs") or (False, why not)."""
    try:
        nv = nvml or _import_pynvml()
    except ImportError as exc:
        return False, f"nvidia-ml-py is not installed ({exc})"
    try:
        nv.nvmlInit()
    except Exception as exc:
        return False, f"NVML did not initialise: {exc}"
    try:
        driver = _text(nv.nvmlSystemGetDriverVersion())
        return True, f"driver {driver}, {nv.nvmlDeviceGetCount()} GPUs"
    except Exception as exc:
        return False, f"NVML answered init but not queries: {exc}"
    finally:
        try:
            nv.nvmlShutdown()
        except Exception:
            logger.debug("nvmlShutdown failed after probe", exc_info=True)


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class NvmlBackend(GpuBackend):
    """GPU samples from NVML. `nvml` is the pynvml module (injectable only at that boundary, for tests)."""

    name = "nvml"

    def __init__(self, nvml: ModuleType | None = None, fast_budget_us: float = 50.0) -> None:
        self._nv = nvml
        self._handles: list[Any] = []
        self._devices: list[DeviceInfo] = []
        self._lock = threading.Lock()
        self._event_set: Any = None
        self._event_lock = threading.Lock()
        self._gpm_prev: dict[int, Any] = {}
        self._gpm_ok: dict[int, bool] = {}
        self._proc_names: dict[int, str] = {}
        self._slow_fields: dict[int, dict[str, Any]] = {}
        self.field_errors: dict[str, str] = {}
        self.fast_budget_us = fast_budget_us
        self.fast_readers: tuple[str, ...] = tuple(r for r in READERS if r not in DEFAULT_SLOW_READERS)
        self.slow_readers: tuple[str, ...] = DEFAULT_SLOW_READERS
        self.reader_costs_us: dict[str, float] = {}

    @property
    def nv(self) -> ModuleType:
        if self._nv is None:
            self._nv = _import_pynvml()
        return self._nv

    # --- the funnel ---------------------------------------------------------------------------------
    def _code(self, exc: BaseException) -> int | None:
        return getattr(exc, "value", None) if isinstance(exc, self.nv.NVMLError) else None

    def q(self, index: int, what: str, fn: Callable[..., Any] | None, *args: Any) -> Any:
        """Call NVML; None when the device cannot answer this, typed errors for a lost GPU or driver."""
        if fn is None:
            return None
        try:
            return fn(*args)
        except Exception as exc:
            code = self._code(exc)
            if code is None:
                if isinstance(exc, AttributeError | TypeError):
                    return None  # binding older than the call
                raise
            if code == _GPU_IS_LOST:
                raise GpuLostError(index, f"{what}: NVML_ERROR_GPU_IS_LOST") from exc
            if code in _DOWN_CODES:
                raise BackendUnavailableError(f"{what}: {exc}") from exc
            if code not in _NONE_CODES:
                self.field_errors[what] = str(exc)
                logger.debug("gpu %d %s: %s", index, what, exc)
            return None

    def _fn(self, *names: str) -> Callable[..., Any] | None:
        for name in names:
            fn = getattr(self.nv, name, None)
            if fn is not None:
                return fn  # type: ignore[no-any-return]
        return None

    def _first(self, index: int, what: str, calls: list[tuple[str, tuple[Any, ...]]]) -> Any:
        """Try NVML 13 names first, then older ones, until one answers."""
        for name, args in calls:
            value = self.q(index, what, self._fn(name), *args)
            if value is not None:
                return value
        return None

    # --- GpuBackend ---------------------------------------------------------------------------------
    def init(self) -> list[DeviceInfo]:
        with self._lock:
            try:
                nv = self.nv
            except ImportError as exc:
                raise BackendInitError(f"nvidia-ml-py is not installed: {exc}") from exc
            try:
                nv.nvmlInit()
                count = nv.nvmlDeviceGetCount()
                driver = _text(nv.nvmlSystemGetDriverVersion())
                handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            except Exception as exc:
                raise BackendInitError(f"NVML init failed: {exc}") from exc
            devices = []
            for i, h in enumerate(handles):
                uuid = _text(self.q(i, "uuid", nv.nvmlDeviceGetUUID, h) or f"GPU-unknown-{i}")
                name = _text(self.q(i, "name", nv.nvmlDeviceGetName, h) or "unknown")
                pci = self.q(i, "pci", self._fn("nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo"), h)
                bus_id = _text(getattr(pci, "busId", "") or getattr(pci, "busIdLegacy", "")) if pci else ""
                minor = self.q(i, "minor", self._fn("nvmlDeviceGetMinorNumber"), h)
                devices.append(
                    DeviceInfo(
                        index=i,
                        uuid=uuid,
                        name=name,
                        pci_bus_id=bus_id,
                        minor_number=int(minor) if minor is not None else i,
                        driver_version=driver,
                    )
                )
            self._handles, self._devices = handles, devices
            self._gpm_prev.clear()
            self._gpm_ok.clear()
            self._slow_fields.clear()
            self._event_set = self._register_xid_events()
            self._calibrate()
            return list(devices)

    def shutdown(self) -> None:
        with self._lock:
            if self._nv is None:
                return
            for sample in self._gpm_prev.values():
                self.q(-1, "gpm_free", self._fn("nvmlGpmSampleFree"), sample)
            self._gpm_prev.clear()
            with self._event_lock:  # never free the set under a thread waiting on it
                if self._event_set is not None:
                    self.q(-1, "event_free", self._fn("nvmlEventSetFree"), self._event_set)
                    self._event_set = None
            try:
                self.nv.nvmlShutdown()
            except Exception:
                logger.debug("nvmlShutdown failed", exc_info=True)
            self._handles = []

    def _handle(self, index: int) -> Any:
        if not self._handles:
            raise BackendUnavailableError("NVML is not initialised")
        return self._handles[index]

    # --- readers: groups of NVML calls, each filling some GpuSample fields ------------------------------
    def _r_clocks(self, index: int, h: Any, s: GpuSample) -> None:
        sm = self.q(index, "clock_sm", self.nv.nvmlDeviceGetClockInfo, h, 1)  # NVML_CLOCK_SM, MHz
        s.sm_clock_hz = None if sm is None else sm * 1e6
        mem_clk = self.q(index, "clock_mem", self.nv.nvmlDeviceGetClockInfo, h, 2)
        s.memory_clock_hz = None if mem_clk is None else mem_clk * 1e6

    def _r_temperature(self, index: int, h: Any, s: GpuSample) -> None:
        calls = [("nvmlDeviceGetTemperatureV", (h, 0)), ("nvmlDeviceGetTemperature", (h, 0))]
        temp = self._first(index, "temperature", calls)
        s.temperature_c = None if temp is None else float(temp)

    def _r_power(self, index: int, h: Any, s: GpuSample) -> None:
        power = self.q(index, "power", self.nv.nvmlDeviceGetPowerUsage, h)  # mW
        s.power_w = None if power is None else power / 1000.0

    def _r_power_limit(self, index: int, h: Any, s: GpuSample) -> None:
        calls = [("nvmlDeviceGetEnforcedPowerLimit", (h,)), ("nvmlDeviceGetPowerManagementLimit", (h,))]
        limit = self._first(index, "power_limit", calls)
        s.power_limit_w = None if limit is None else limit / 1000.0

    def _r_utilization(self, index: int, h: Any, s: GpuSample) -> None:
        util = self.q(index, "utilization", self.nv.nvmlDeviceGetUtilizationRates, h)
        if util is not None:
            s.utilization_ratio = util.gpu / 100.0
            s.memory_copy_utilization_ratio = util.memory / 100.0

    def _r_codec(self, index: int, h: Any, s: GpuSample) -> None:
        enc = self.q(index, "encoder", self._fn("nvmlDeviceGetEncoderUtilization"), h)
        s.encoder_utilization_ratio = None if enc is None else enc[0] / 100.0
        dec = self.q(index, "decoder", self._fn("nvmlDeviceGetDecoderUtilization"), h)
        s.decoder_utilization_ratio = None if dec is None else dec[0] / 100.0

    def _r_memory(self, index: int, h: Any, s: GpuSample) -> None:
        self._read_memory(index, h, s)

    def _r_fields(self, index: int, h: Any, s: GpuSample) -> None:
        self._read_fields(index, h, s)

    def _r_ecc_volatile(self, index: int, h: Any, s: GpuSample) -> None:
        self._read_ecc(index, h, s, aggregate=False)

    def _r_ecc_aggregate(self, index: int, h: Any, s: GpuSample) -> None:
        self._read_ecc(index, h, s, aggregate=True)

    def _r_remapped_rows(self, index: int, h: Any, s: GpuSample) -> None:
        rows = self.q(index, "remapped_rows", self._fn("nvmlDeviceGetRemappedRows"), h)
        if rows is not None:
            s.rows_remapped_correctable, s.rows_remapped_uncorrectable = float(rows[0]), float(rows[1])
            s.row_remap_pending, s.row_remap_failure = float(bool(rows[2])), float(bool(rows[3]))

    def _r_state(self, index: int, h: Any, s: GpuSample) -> None:
        pstate = self.q(index, "pstate", self._fn("nvmlDeviceGetPerformanceState"), h)
        s.pstate = None if pstate is None or pstate > 15 else float(pstate)
        mode = self.q(index, "compute_mode", self._fn("nvmlDeviceGetComputeMode"), h)
        s.compute_mode = None if mode is None else float(mode)

    def _r_fan(self, index: int, h: Any, s: GpuSample) -> None:
        fan = self.q(index, "fan", self._fn("nvmlDeviceGetFanSpeed"), h)
        s.fan_speed_ratio = None if fan is None else fan / 100.0

    def _r_clock_events(self, index: int, h: Any, s: GpuSample) -> None:
        calls = [
            ("nvmlDeviceGetCurrentClocksEventReasons", (h,)),
            ("nvmlDeviceGetCurrentClocksThrottleReasons", (h,)),
        ]
        mask = self._first(index, "clock_events", calls)
        s.clock_event_mask = None if mask is None else int(mask)

    def _r_processes(self, index: int, h: Any, s: GpuSample) -> None:
        s.processes = self._read_processes(index, h)

    def _r_mig(self, index: int, h: Any, s: GpuSample) -> None:
        self._read_mig(index, h, s)

    def _calibrate(self) -> None:
        """Time each fast reader on the first GPU; any over FAST_BUDGET_US moves to the slow poller."""
        self.reader_costs_us = {}
        if not self._handles:
            return
        h = self._handles[0]
        for name in READERS:
            fn = getattr(self, f"_r_{name}")
            best = float("inf")
            try:
                for _ in range(3):
                    t0 = time.perf_counter()
                    fn(0, h, GpuSample())
                    best = min(best, time.perf_counter() - t0)
            except (GpuLostError, BackendUnavailableError):
                return
            self.reader_costs_us[name] = round(best * 1e6, 1)
        slow = set(DEFAULT_SLOW_READERS) | {
            n for n, us in self.reader_costs_us.items() if us > self.fast_budget_us
        }
        self.slow_readers = tuple(n for n in READERS if n in slow)
        self.fast_readers = tuple(n for n in READERS if n not in slow)
        logger.info(
            "NVML readers on the scrape path: %s; from the slow poller: %s (costs us: %s)",
            ",".join(self.fast_readers),
            ",".join(self.slow_readers),
            self.reader_costs_us,
        )

    def sample(self, index: int) -> GpuSample:
        """The fast readers now, plus the slow readers' last values (refreshed by slow_sample)."""
        h = self._handle(index)
        s = GpuSample()
        for name in self.fast_readers:
            getattr(self, f"_r_{name}")(index, h, s)
        cached = self._slow_fields.get(index)
        if cached:
            for attr, value in cached.items():
                setattr(s, attr, value)
        return s

    def _read_memory(self, index: int, h: Any, s: GpuSample) -> None:
        nv = self.nv
        version = getattr(nv, "nvmlMemory_v2", None)
        mem = None
        if version is not None:
            mem = self.q(index, "memory_v2", nv.nvmlDeviceGetMemoryInfo, h, version)
        if mem is None:
            mem = self.q(index, "memory", nv.nvmlDeviceGetMemoryInfo, h)
        if mem is None:
            return
        s.memory_total_bytes = float(mem.total)
        s.memory_free_bytes = float(mem.free)
        s.memory_used_bytes = float(mem.used)
        reserved = getattr(mem, "reserved", None)
        s.memory_reserved_bytes = None if reserved is None else float(reserved)

    def _read_fields(self, index: int, h: Any, s: GpuSample) -> None:
        ids = [
            (_FI_MEMORY_TEMP, 0),
            (_FI_PCIE_REPLAY_COUNTER, 0),
            (_FI_NVLINK_THROUGHPUT_RAW_TX, _ALL_LINKS),
            (_FI_NVLINK_THROUGHPUT_RAW_RX, _ALL_LINKS),
        ]
        values = self.q(index, "field_values", self._fn("nvmlDeviceGetFieldValues"), h, ids)
        got: dict[int, float] = {}
        for v in values or ():
            if v.nvmlReturn == _GPU_IS_LOST:
                raise GpuLostError(index, "field values: NVML_ERROR_GPU_IS_LOST")
            if v.nvmlReturn == 0:
                got[int(v.fieldId)] = _field_value(v)
        s.memory_temperature_c = got.get(_FI_MEMORY_TEMP)
        s.pcie_replays = got.get(_FI_PCIE_REPLAY_COUNTER)
        if _FI_NVLINK_THROUGHPUT_RAW_TX in got and _FI_NVLINK_THROUGHPUT_RAW_RX in got:
            s.nvlink_traffic_bytes = (
                got[_FI_NVLINK_THROUGHPUT_RAW_TX] + got[_FI_NVLINK_THROUGHPUT_RAW_RX]
            ) * 1024
        if s.pcie_replays is None:  # field API missing (older driver): the dedicated call
            replay = self.q(index, "pcie_replay", self._fn("nvmlDeviceGetPcieReplayCounter"), h)
            s.pcie_replays = None if replay is None else float(replay)

    def _read_ecc(self, index: int, h: Any, s: GpuSample, aggregate: bool) -> None:
        fn = self._fn("nvmlDeviceGetTotalEccErrors")
        counter = 1 if aggregate else 0  # NVML_AGGREGATE_ECC / NVML_VOLATILE_ECC
        names = (
            ("ecc_sbe_aggregate", "ecc_dbe_aggregate")
            if aggregate
            else ("ecc_sbe_volatile", "ecc_dbe_volatile")
        )
        for attr, etype in zip(names, (0, 1), strict=True):  # corrected=0 / uncorrected=1
            value = self.q(index, attr, fn, h, etype, counter)
            if value is None:
                return  # ECC off or unsupported: skip the other call
            setattr(s, attr, float(value))

    def _read_processes(self, index: int, h: Any) -> list[ProcessSample] | None:
        procs = self.q(index, "processes", self._fn("nvmlDeviceGetComputeRunningProcesses"), h)
        if procs is None:
            return None
        out = []
        for p in procs:
            pid = int(p.pid)
            name = self._proc_names.get(pid)
            if name is None:
                name = self._process_name(index, pid)
                if len(self._proc_names) > 4096:
                    self._proc_names.clear()
                self._proc_names[pid] = name
            used = getattr(p, "usedGpuMemory", None)
            out.append(ProcessSample(pid, name, None if used is None else int(used)))
        return out

    def _process_name(self, index: int, pid: int) -> str:
        name = self.q(index, "process_name", self._fn("nvmlSystemGetProcessName"), pid)
        if name:
            return os.path.basename(_text(name))
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8") as f:
                return f.read().strip()
        except OSError:
            return "unknown"

    def _read_mig(self, index: int, h: Any, s: GpuSample) -> None:
        mode = self.q(index, "mig_mode", self._fn("nvmlDeviceGetMigMode"), h)
        if mode is None:
            return
        s.mig_mode = float(mode[0])
        if not mode[0]:
            s.mig_devices = []
            return
        nv, devices = self.nv, []
        count = self.q(index, "mig_count", self._fn("nvmlDeviceGetMaxMigDeviceCount"), h) or 0
        for k in range(int(count)):
            mh = self.q(index, "mig_handle", self._fn("nvmlDeviceGetMigDeviceHandleByIndex"), h, k)
            if mh is None:
                continue
            mem = self.q(index, "mig_memory", nv.nvmlDeviceGetMemoryInfo, mh)
            gi = self.q(index, "mig_gi", self._fn("nvmlDeviceGetGpuInstanceId"), mh)
            ci = self.q(index, "mig_ci", self._fn("nvmlDeviceGetComputeInstanceId"), mh)
            devices.append(
                MigSample(
                    uuid=_text(self.q(index, "mig_uuid", nv.nvmlDeviceGetUUID, mh) or f"MIG-{index}-{k}"),
                    gpu_instance_id=int(gi) if gi is not None else k,
                    compute_instance_id=int(ci or 0),
                    memory_used_bytes=None if mem is None else int(mem.used),
                    memory_total_bytes=None if mem is None else int(mem.total),
                )
            )
        s.mig_devices = devices

    def slow_sample(self, index: int) -> SlowSample:
        h = self._handle(index)
        s = SlowSample(taken_at=time.monotonic())
        if self.slow_readers:
            part = GpuSample()
            for name in self.slow_readers:
                getattr(self, f"_r_{name}")(index, h, part)
            self._slow_fields[index] = {k: v for k, v in vars(part).items() if v is not None}
        energy = self.q(index, "energy", self._fn("nvmlDeviceGetTotalEnergyConsumption"), h)  # mJ
        s.energy_joules = None if energy is None else energy / 1000.0
        self._read_gpm(index, h, s)
        if s.pcie_tx_bytes_per_second is None:
            fn = self._fn("nvmlDeviceGetPcieThroughput")  # KB/s, samples for ~20 ms
            tx = self.q(index, "pcie_tx", fn, h, 0)
            rx = self.q(index, "pcie_rx", fn, h, 1)
            s.pcie_tx_bytes_per_second = None if tx is None else tx * 1000.0
            s.pcie_rx_bytes_per_second = None if rx is None else rx * 1000.0
        return s

    def _read_gpm(self, index: int, h: Any, s: SlowSample) -> None:
        """Hopper GPM: metrics between the previous poll's sample and this one."""
        nv = self.nv
        if self._gpm_ok.get(index) is False:
            return
        if index not in self._gpm_ok:
            support = self.q(index, "gpm_support", self._fn("nvmlGpmQueryDeviceSupport"), h)
            self._gpm_ok[index] = bool(support is not None and getattr(support, "isSupportedDevice", 0))
            if not self._gpm_ok[index]:
                return
        sample = self.q(index, "gpm_alloc", self._fn("nvmlGpmSampleAlloc"))
        if sample is None or self.q(index, "gpm_sample", self._fn("nvmlGpmSampleGet"), h, sample) is None:
            self._gpm_ok[index] = False
            return
        prev = self._gpm_prev.get(index)
        self._gpm_prev[index] = sample
        if prev is None:
            return
        try:
            req = nv.c_nvmlGpmMetricsGet_t()
            req.version = nv.NVML_GPM_METRICS_GET_VERSION
            req.numMetrics = len(_GPM)
            req.sample1, req.sample2 = prev, sample
            for i, metric_id in enumerate(_GPM.values()):
                req.metrics[i].metricId = metric_id
            got = self.q(index, "gpm_metrics", self._fn("nvmlGpmMetricsGet"), req)
            if got is not None:
                for i, attr in enumerate(_GPM):
                    m = got.metrics[i]
                    if m.nvmlReturn != 0:
                        continue
                    value = float(m.value)
                    setattr(s, attr, value * _MIB if attr in _GPM_RATE_FIELDS else value / 100.0)
            if s.nvlink_tx_bytes_per_second is not None and s.nvlink_rx_bytes_per_second is not None:
                s.nvlink_bytes_per_second = s.nvlink_tx_bytes_per_second + s.nvlink_rx_bytes_per_second
        finally:
            self.q(index, "gpm_free", self._fn("nvmlGpmSampleFree"), prev)

    # --- XID events ---------------------------------------------------------------------------------
    def _register_xid_events(self) -> Any:
        nv = self.nv
        event_set = self.q(-1, "event_set", self._fn("nvmlEventSetCreate"))
        if event_set is None:
            return None
        xid_type = getattr(nv, "nvmlEventTypeXidCriticalError", 0x8)
        registered = 0
        for i, h in enumerate(self._handles):
            try:
                self.q(i, "register_events", self._fn("nvmlDeviceRegisterEvents"), h, xid_type, event_set)
            except GpuLostError:
                continue
            if "register_events" not in self.field_errors:
                registered += 1
        logger.info("listening for XID events on %d GPUs", registered)
        return event_set

    def wait_xid(self, timeout_s: float) -> XidEvent | None:
        event_set = self._event_set
        if event_set is None:
            time.sleep(timeout_s)
            return None
        fn = self._fn("nvmlEventSetWait_v2", "nvmlEventSetWait")
        if fn is None:
            time.sleep(timeout_s)
            return None
        try:
            with self._event_lock:
                if self._event_set is not event_set:
                    return None  # freed by shutdown meanwhile
                data = fn(event_set, int(timeout_s * 1000))
        except Exception as exc:
            code = self._code(exc)
            if code == _TIMEOUT:
                return None
            if code in _DOWN_CODES:
                raise BackendUnavailableError(f"event wait: {exc}") from exc
            if code is None:
                raise
            time.sleep(min(timeout_s, 0.5))
            return None
        index = self.q(-1, "event_index", self._fn("nvmlDeviceGetIndex"), data.device)
        return XidEvent(gpu=int(index) if index is not None else -1, code=int(data.eventData), ts=time.time())

    # --- for the self-check and bench ---------------------------------------------------------------
    def devices(self) -> list[DeviceInfo]:
        return list(self._devices)


def _field_value(v: Any) -> float:
    t = int(v.valueType)
    u = v.value
    return float(
        {0: u.dVal, 1: u.uiVal, 2: u.ulVal, 3: u.ullVal, 4: u.sllVal, 5: u.siVal, 6: u.usVal}.get(t, 0)
    )
