"""Self-check on a GPU machine: the NVML backend's values beside `nvidia-smi --query-gpu` for the same fields.

Each field has a tolerance that fits how it moves (identity and configuration exact; temperature a few
degrees; power, clocks and utilization a band, since the two reads are milliseconds apart). Fields that
both sides report as unsupported agree. `SMI_FIELDS` is also the query the benchmark times.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from gpuobs.errors import InputError
from gpuobs.exporters.sidecar.samples import DeviceInfo, GpuSample

if TYPE_CHECKING:
    from gpuobs.exporters.sidecar.nvml import NvmlBackend

__all__ = ["SMI_FIELDS", "CheckRow", "SelfCheckReport", "nvidia_smi_query", "run_self_check"]

_MIB = 1024 * 1024
_COMPUTE_MODES = {"default": 0.0, "exclusive_thread": 1.0, "prohibited": 2.0, "exclusive_process": 3.0}

# (nvidia-smi field, how to read ours, tolerance (abs, rel) or None for exact text)
Getter = Callable[[DeviceInfo, GpuSample], Any]
_CHECKS: list[tuple[str, Getter, tuple[float, float] | None]] = [
    ("name", lambda d, s: d.name, None),
    ("uuid", lambda d, s: d.uuid, None),
    ("pci.bus_id", lambda d, s: d.pci_bus_id, None),
    ("driver_version", lambda d, s: d.driver_version, None),
    ("temperature.gpu", lambda d, s: s.temperature_c, (3.0, 0.0)),
    ("temperature.memory", lambda d, s: s.memory_temperature_c, (3.0, 0.0)),
    ("power.draw", lambda d, s: s.power_w, (30.0, 0.15)),
    ("enforced.power.limit", lambda d, s: s.power_limit_w, (1.0, 0.0)),
    ("clocks.sm", lambda d, s: None if s.sm_clock_hz is None else s.sm_clock_hz / 1e6, (0.0, 0.10)),
    ("clocks.mem", lambda d, s: None if s.memory_clock_hz is None else s.memory_clock_hz / 1e6, (0.0, 0.02)),
    ("utilization.gpu", lambda d, s: _pct(s.utilization_ratio), (25.0, 0.0)),
    ("utilization.memory", lambda d, s: _pct(s.memory_copy_utilization_ratio), (25.0, 0.0)),
    ("memory.total", lambda d, s: _mib(s.memory_total_bytes), (1.0, 0.0)),
    ("memory.reserved", lambda d, s: _mib(s.memory_reserved_bytes), (1.0, 0.0)),
    ("memory.used", lambda d, s: _mib(s.memory_used_bytes), (64.0, 0.02)),
    ("memory.free", lambda d, s: _mib(s.memory_free_bytes), (64.0, 0.02)),
    ("pstate", lambda d, s: s.pstate, (0.0, 0.0)),
    ("fan.speed", lambda d, s: _pct(s.fan_speed_ratio), (5.0, 0.0)),
    ("compute_mode", lambda d, s: s.compute_mode, (0.0, 0.0)),
    ("ecc.errors.corrected.volatile.total", lambda d, s: s.ecc_sbe_volatile, (0.0, 0.0)),
    ("ecc.errors.uncorrected.volatile.total", lambda d, s: s.ecc_dbe_volatile, (0.0, 0.0)),
    ("ecc.errors.corrected.aggregate.total", lambda d, s: s.ecc_sbe_aggregate, (0.0, 0.0)),
    ("ecc.errors.uncorrected.aggregate.total", lambda d, s: s.ecc_dbe_aggregate, (0.0, 0.0)),
    ("clocks_event_reasons.active", lambda d, s: s.clock_event_mask, (0.0, 0.0)),
    ("mig.mode.current", lambda d, s: s.mig_mode, (0.0, 0.0)),
]
SMI_FIELDS: tuple[str, ...] = tuple(name for name, _, _ in _CHECKS)
"""The nvidia-smi --query-gpu fields the exporter also reads (self-check and benchmark baseline)."""


def _pct(ratio: float | None) -> float | None:
    return None if ratio is None else ratio * 100.0


def _mib(value: float | None) -> float | None:
    return None if value is None else value / _MIB


@dataclass
class CheckRow:
    gpu: int
    field: str
    smi: str
    ours: str
    tolerance: str
    agree: bool


@dataclass
class SelfCheckReport:
    driver: str
    fields: list[str]
    rows: list[CheckRow] = field(default_factory=list)
    dropped_fields: list[str] = field(default_factory=list)

    @property
    def agreeing(self) -> int:
        return sum(r.agree for r in self.rows)

    @property
    def ok(self) -> bool:
        return bool(self.rows) and all(r.agree for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        return {
            "driver": self.driver,
            "ok": self.ok,
            "agreeing": self.agreeing,
            "total": len(self.rows),
            "dropped_fields": self.dropped_fields,
            "rows": [asdict(r) for r in self.rows],
        }


def _smi_value(text: str, name: str) -> Any:
    text = text.strip()
    if text.startswith("[") or text in ("N/A", "") or "Not Supported" in text:
        return None
    if name == "pstate":
        return float(text.lstrip("P"))
    if name == "compute_mode":
        return _COMPUTE_MODES.get(text.lower(), text)
    if name == "mig.mode.current":
        return 1.0 if text.lower() == "enabled" else 0.0
    if name == "clocks_event_reasons.active":
        return int(text, 16)
    try:
        return float(text)
    except ValueError:
        return text


def nvidia_smi_query(
    fields: tuple[str, ...] | list[str], smi: str = "nvidia-smi", timeout_s: float = 30.0
) -> tuple[list[dict[str, str]], list[str]]:
    """Rows of `nvidia-smi --query-gpu` (raw strings) and the fields this nvidia-smi does not know."""
    fields = list(fields)
    dropped: list[str] = []

    def run(names: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [smi, f"--query-gpu={','.join(names)}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )

    out = run(fields)
    if out.returncode != 0:
        dropped = [f for f in fields if run([f]).returncode != 0]
        fields = [f for f in fields if f not in dropped]
        out = run(fields)
        if out.returncode != 0:
            raise InputError(f"nvidia-smi failed: {out.stderr.strip() or out.stdout.strip()}")
    rows = []
    for values in csv.reader(io.StringIO(out.stdout), skipinitialspace=True):
        if values:
            rows.append(dict(zip(fields, values, strict=False)))
    return rows, dropped


def _agree(smi: Any, ours: Any, tol: tuple[float, float] | None) -> bool:
    if smi is None or ours is None:
        return smi is None and ours is None
    if tol is None or isinstance(smi, str) or isinstance(ours, str):
        return str(smi).strip().lower() == str(ours).strip().lower()
    abs_tol, rel_tol = tol
    return abs(float(smi) - float(ours)) <= max(abs_tol, rel_tol * abs(float(smi)))


def run_self_check(smi: str = "nvidia-smi", backend: NvmlBackend | None = None) -> SelfCheckReport:
    """Read every GPU through the NVML backend, then nvidia-smi, and compare field by field."""
    from gpuobs.exporters.sidecar.backend import BackendInitError
    from gpuobs.exporters.sidecar.nvml import NvmlBackend

    if shutil.which(smi) is None:
        raise InputError(f"self-check needs {smi} on PATH (a machine with the NVIDIA driver)")
    backend = backend or NvmlBackend()
    try:
        devices = backend.init()
    except BackendInitError as exc:
        raise InputError(f"self-check needs an NVIDIA driver: {exc}") from exc
    try:
        # Fields that the backend moved off the scrape path are served from the slow poller's
        # cache: take one slow round first so the comparison covers them too.
        for d in devices:
            backend.slow_sample(d.index)
        ours = [backend.sample(d.index) for d in devices]
    finally:
        backend.shutdown()
    smi_rows, dropped = nvidia_smi_query(SMI_FIELDS, smi)
    report = SelfCheckReport(
        driver=devices[0].driver_version if devices else "?",
        fields=[f for f in SMI_FIELDS if f not in dropped],
        dropped_fields=dropped,
    )
    for d, s, raw in zip(devices, ours, smi_rows, strict=False):
        for name, get, tol in _CHECKS:
            if name not in raw:
                continue
            smi_value = _smi_value(raw[name], name)
            our_value = get(d, s)
            if name == "pci.bus_id" and isinstance(smi_value, str):
                smi_value = smi_value.upper()
                our_value = str(our_value).upper()
            tol_text = (
                "exact"
                if not tol or tol == (0.0, 0.0)
                else (f"±{tol[0]:g}" + (f" or ±{tol[1]:.0%}" if tol[1] else ""))
            )
            report.rows.append(
                CheckRow(
                    gpu=d.index,
                    field=name,
                    smi=raw[name].strip(),
                    ours="N/A"
                    if our_value is None
                    else (
                        f"{our_value:g}"
                        if isinstance(our_value, float)
                        else (hex(our_value) if name.startswith("clocks_event") else str(our_value))
                    ),
                    tolerance=tol_text,
                    agree=_agree(smi_value, our_value, tol),
                )
            )
    return report
