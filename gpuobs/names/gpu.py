"""Metric names of the GPU domain: each per-GPU metric of `gpuobs export`, native, DCGM and OTel names.

Native names use base units (bytes, hertz, watts, joules, celsius, ratios 0..1). `dcgm_scale` turns the
native value into dcgm-exporter's unit (MiB, MHz, mJ, percent). `otel`/`otel_unit`/`otel_scale` follow the
OpenTelemetry hardware semantic conventions (`hw.gpu.*`, `hw.*`); `extra["otel.attr.<key>"]` holds the
fixed attributes a point carries under that name (e.g. `hw.gpu.task`).

Labels: every per-GPU metric carries `GPU_LABELS` in native naming (`DCGM_LABELS` in DCGM naming), plus
`POD_LABELS` when the GPU is attributed to a pod; `labels` on each spec lists the full native label set.
`extra["source"]` says where the value comes from: `fast` (read on every scrape), `slow` (background
poller, served from cache with its age), `event` (XID event thread).

Over 500 lines on purpose: it is one table (a spec per GPU metric, each with its docstring), and
splitting a table by line count would scatter the one place producers and consumers look names up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Final

from gpuobs.names.spec import MetricKind, MetricSpec, register

__all__ = [
    "CLOCK_EVENT_ACTIVE",
    "CLOCK_EVENT_REASONS",
    "COMPUTE_MODE",
    "DCGM_LABELS",
    "DECODER_UTILIZATION",
    "DRAM_ACTIVE",
    "ECC_DBE_AGGREGATE",
    "ECC_DBE_VOLATILE",
    "ECC_SBE_AGGREGATE",
    "ECC_SBE_VOLATILE",
    "ENCODER_UTILIZATION",
    "ENERGY",
    "FAN_SPEED",
    "GPU_INFO",
    "GPU_LABELS",
    "GPU_TEMPERATURE",
    "GPU_UTILIZATION",
    "GR_ENGINE_ACTIVE",
    "HW_SLOWDOWN_REASONS",
    "MEMORY_CLOCK",
    "MEMORY_COPY_UTILIZATION",
    "MEMORY_FREE",
    "MEMORY_RESERVED",
    "MEMORY_TEMPERATURE",
    "MEMORY_TOTAL",
    "MEMORY_USED",
    "MIG_DEVICE_MEMORY_TOTAL",
    "MIG_DEVICE_MEMORY_USED",
    "MIG_LABELS",
    "MIG_MODE",
    "NVLINK_BANDWIDTH",
    "NVLINK_RATE",
    "NVLINK_RX_RATE",
    "NVLINK_TX_RATE",
    "PCIE_REPLAYS",
    "PCIE_RX_RATE",
    "PCIE_TX_RATE",
    "POD_LABELS",
    "POWER_LIMIT",
    "POWER_USAGE",
    "PROCESS_LABELS",
    "PROCESS_MEMORY_USED",
    "PSTATE",
    "ROWS_REMAPPED_CORRECTABLE",
    "ROWS_REMAPPED_UNCORRECTABLE",
    "ROW_REMAP_FAILURE",
    "ROW_REMAP_PENDING",
    "SM_ACTIVE",
    "SM_CLOCK",
    "SM_OCCUPANCY",
    "TENSOR_ACTIVE",
    "XID_ERRORS",
    "XID_LAST",
    "clock_event_mask",
    "clock_event_reasons",
]

GPU_LABELS: Final = ("gpu", "uuid", "host", "model_name")
"""Native per-GPU labels: index, UUID, host name, model name."""
POD_LABELS: Final = ("pod", "namespace", "container")
"""Added when the kubelet pod-resources API attributes the GPU to a container."""
DCGM_LABELS: Final = (
    "gpu",
    "UUID",
    "pci_bus_id",
    "device",
    "modelName",
    "hostname",
    "DCGM_FI_DRIVER_VERSION",
)
"""dcgm-exporter's per-GPU labels (`hostname` since 2026; the driver version is a label, as in its CSV)."""
PROCESS_LABELS: Final = ("pid", "process_name")
MIG_LABELS: Final = ("mig_uuid", "gpu_instance_id", "compute_instance_id")

CLOCK_EVENT_REASONS: Final = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)
"""NVML clock-event (throttle) reason bits and the `reason` label value of each."""
HW_SLOWDOWN_REASONS: Final = frozenset({"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"})
"""Reasons that are the hardware protecting itself (heat, power brake), not a setting or a software cap."""


def clock_event_reasons(mask: float) -> tuple[str, ...]:
    """The `reason` values set in an NVML clock-event (throttle) bitmask, in bit order: the one decoder."""
    bits = int(mask)
    return tuple(reason for bit, reason in CLOCK_EVENT_REASONS if bits & bit)


def clock_event_mask(reasons: Iterable[str]) -> int:
    """The NVML bitmask of `reason` values (the inverse of `clock_event_reasons`); KeyError if unknown."""
    bits = {reason: bit for bit, reason in CLOCK_EVENT_REASONS}
    mask = 0
    for reason in reasons:
        mask |= bits[reason]
    return mask


_G = GPU_LABELS
_MIB = 1.0 / (1024 * 1024)


def _otel_attrs(**attrs: str) -> dict[str, str]:
    return {f"otel.attr.{k.replace('__', '.')}": v for k, v in attrs.items()}


def _gauge(
    native: str,
    help: str,
    unit: str,
    dcgm: str | None = None,
    dcgm_scale: float = 1.0,
    otel: str | None = None,
    otel_unit: str | None = None,
    source: str = "fast",
    labels: tuple[str, ...] = (),
    otel_instrument: str | None = None,
    **otel_attrs: str,
) -> MetricSpec:
    extra = {"source": source, **_otel_attrs(**otel_attrs)}
    if otel_instrument:
        extra["otel.instrument"] = otel_instrument  # semconv's instrument when it is not a gauge
    return MetricSpec(
        native=native,
        kind=MetricKind.GAUGE,
        help=help,
        unit=unit,
        labels=_G + labels,
        dcgm=dcgm,
        dcgm_kind=MetricKind.GAUGE if dcgm else None,
        dcgm_scale=dcgm_scale,
        otel=otel,
        otel_unit=otel_unit,
        extra=extra,
    )


def _counter(
    native: str,
    help: str,
    unit: str,
    dcgm: str | None = None,
    dcgm_scale: float = 1.0,
    otel: str | None = None,
    otel_unit: str | None = None,
    source: str = "fast",
    labels: tuple[str, ...] = (),
    **otel_attrs: str,
) -> MetricSpec:
    return MetricSpec(
        native=native,
        kind=MetricKind.COUNTER,
        help=help,
        unit=unit,
        labels=_G + labels,
        dcgm=dcgm,
        dcgm_kind=MetricKind.COUNTER if dcgm else None,
        dcgm_scale=dcgm_scale,
        otel=otel,
        otel_unit=otel_unit,
        extra={"source": source, **_otel_attrs(**otel_attrs)},
    )


GPU_INFO: Final = MetricSpec(
    native="gpuobs_gpu_info",
    kind=MetricKind.GAUGE,
    unit="",
    help="Static GPU identity, always 1 (pci_bus_id, device, driver_version as labels).",
    labels=(*_G, "pci_bus_id", "device", "driver_version"),
    extra={"source": "fast"},
)
"""Gauge, no unit. nvidia-smi: name, pci.bus_id, driver_version."""

# Clocks
SM_CLOCK: Final = _gauge(
    "gpuobs_gpu_sm_clock_hertz", "SM clock frequency.", "hertz", "DCGM_FI_DEV_SM_CLOCK", 1e-6
)
"""Gauge, Hz. nvidia-smi: clocks.sm (MHz). DCGM MHz."""
MEMORY_CLOCK: Final = _gauge(
    "gpuobs_gpu_memory_clock_hertz", "Memory clock frequency.", "hertz", "DCGM_FI_DEV_MEM_CLOCK", 1e-6
)
"""Gauge, Hz. nvidia-smi: clocks.mem (MHz). DCGM MHz."""

# Temperatures
GPU_TEMPERATURE: Final = _gauge(
    "gpuobs_gpu_temperature_celsius",
    "GPU die temperature.",
    "celsius",
    "DCGM_FI_DEV_GPU_TEMP",
    otel="hw.temperature",
    otel_unit="Cel",
    hw__type="gpu",
    hw__sensor_location="gpu",
)
"""Gauge, Cel. nvidia-smi: temperature.gpu."""
MEMORY_TEMPERATURE: Final = _gauge(
    "gpuobs_gpu_memory_temperature_celsius",
    "HBM temperature.",
    "celsius",
    "DCGM_FI_DEV_MEMORY_TEMP",
    otel="hw.temperature",
    otel_unit="Cel",
    hw__type="gpu",
    hw__sensor_location="memory",
)
"""Gauge, Cel. nvidia-smi: temperature.memory."""

# Power and energy
POWER_USAGE: Final = _gauge(
    "gpuobs_gpu_power_usage_watts",
    "Power draw.",
    "watts",
    "DCGM_FI_DEV_POWER_USAGE",
    otel="hw.power",
    otel_unit="W",
    hw__type="gpu",
)
"""Gauge, W. nvidia-smi: power.draw."""
POWER_LIMIT: Final = _gauge(
    "gpuobs_gpu_power_limit_watts", "Enforced power limit.", "watts", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"
)
"""Gauge, W. nvidia-smi: enforced.power.limit."""
ENERGY: Final = _counter(
    "gpuobs_gpu_energy_joules",
    "Energy consumed since the driver loaded.",
    "joules",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    1000.0,
    otel="hw.energy",
    otel_unit="J",
    source="slow",
    hw__type="gpu",
)
"""Counter, J (slow: ~3 ms per NVML call). DCGM mJ."""

# PCIe
PCIE_REPLAYS: Final = _counter(
    "gpuobs_gpu_pcie_replays", "PCIe replays (retries).", "", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
)
"""Counter. nvidia-smi: pcie.link... (none); NVML field PCIE_REPLAY_COUNTER."""
PCIE_TX_RATE: Final = _gauge(
    "gpuobs_gpu_pcie_transmit_bytes_per_second",
    "PCIe transmit rate.",
    "bytes_per_second",
    "DCGM_FI_PROF_PCIE_TX_BYTES",
    source="slow",
)
"""Gauge, By/s (slow: GPM or the 20 ms NVML throughput sample)."""
PCIE_RX_RATE: Final = _gauge(
    "gpuobs_gpu_pcie_receive_bytes_per_second",
    "PCIe receive rate.",
    "bytes_per_second",
    "DCGM_FI_PROF_PCIE_RX_BYTES",
    source="slow",
)
"""Gauge, By/s (slow)."""

# Utilization
GPU_UTILIZATION: Final = _gauge(
    "gpuobs_gpu_utilization_ratio",
    "Fraction of the last sample period a kernel was running.",
    "ratio",
    "DCGM_FI_DEV_GPU_UTIL",
    100.0,
    otel="hw.gpu.utilization",
    otel_unit="1",
    hw__type="gpu",
    hw__gpu__task="general",
)
"""Gauge, 0..1. nvidia-smi: utilization.gpu (%). DCGM percent."""
MEMORY_COPY_UTILIZATION: Final = _gauge(
    "gpuobs_gpu_memory_copy_utilization_ratio",
    "Fraction of the last sample period device memory was read or written.",
    "ratio",
    "DCGM_FI_DEV_MEM_COPY_UTIL",
    100.0,
)
"""Gauge, 0..1. nvidia-smi: utilization.memory (%)."""
ENCODER_UTILIZATION: Final = _gauge(
    "gpuobs_gpu_encoder_utilization_ratio",
    "Video encoder utilization.",
    "ratio",
    "DCGM_FI_DEV_ENC_UTIL",
    100.0,
    otel="hw.gpu.utilization",
    otel_unit="1",
    hw__type="gpu",
    hw__gpu__task="encoder",
)
"""Gauge, 0..1. nvidia-smi: utilization.encoder (%)."""
DECODER_UTILIZATION: Final = _gauge(
    "gpuobs_gpu_decoder_utilization_ratio",
    "Video decoder utilization.",
    "ratio",
    "DCGM_FI_DEV_DEC_UTIL",
    100.0,
    otel="hw.gpu.utilization",
    otel_unit="1",
    hw__type="gpu",
    hw__gpu__task="decoder",
)
"""Gauge, 0..1. nvidia-smi: utilization.decoder (%)."""

# Framebuffer memory
MEMORY_FREE: Final = _gauge(
    "gpuobs_gpu_memory_free_bytes", "Framebuffer memory free.", "bytes", "DCGM_FI_DEV_FB_FREE", _MIB
)
"""Gauge, By. nvidia-smi: memory.free (MiB). DCGM MiB."""
MEMORY_USED: Final = _gauge(
    "gpuobs_gpu_memory_used_bytes",
    "Framebuffer memory used.",
    "bytes",
    "DCGM_FI_DEV_FB_USED",
    _MIB,
    otel="hw.gpu.memory.usage",
    otel_unit="By",
    otel_instrument="updowncounter",
    hw__type="gpu",
)
"""Gauge, By. nvidia-smi: memory.used (MiB). DCGM MiB."""
MEMORY_RESERVED: Final = _gauge(
    "gpuobs_gpu_memory_reserved_bytes",
    "Framebuffer memory reserved by the driver.",
    "bytes",
    "DCGM_FI_DEV_FB_RESERVED",
    _MIB,
)
"""Gauge, By. nvidia-smi: memory.reserved (MiB). DCGM MiB."""
MEMORY_TOTAL: Final = _gauge(
    "gpuobs_gpu_memory_total_bytes",
    "Framebuffer memory total.",
    "bytes",
    "DCGM_FI_DEV_FB_TOTAL",
    _MIB,
    otel="hw.gpu.memory.limit",
    otel_unit="By",
    otel_instrument="updowncounter",
    hw__type="gpu",
)
"""Gauge, By. nvidia-smi: memory.total (MiB). DCGM MiB."""

# ECC, row remapping
ECC_SBE_VOLATILE: Final = _counter(
    "gpuobs_gpu_ecc_corrected_volatile_errors",
    "Single-bit (corrected) ECC errors since the driver loaded.",
    "",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    otel="hw.errors",
    otel_unit="{error}",
    hw__type="gpu",
    error__type="ecc_corrected",
)
"""Counter. nvidia-smi: ecc.errors.corrected.volatile.total."""
ECC_DBE_VOLATILE: Final = _counter(
    "gpuobs_gpu_ecc_uncorrected_volatile_errors",
    "Double-bit (uncorrected) ECC errors since the driver loaded.",
    "",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    otel="hw.errors",
    otel_unit="{error}",
    hw__type="gpu",
    error__type="ecc_uncorrected",
)
"""Counter. nvidia-smi: ecc.errors.uncorrected.volatile.total."""
ECC_SBE_AGGREGATE: Final = _counter(
    "gpuobs_gpu_ecc_corrected_aggregate_errors",
    "Single-bit (corrected) ECC errors over the GPU's life.",
    "",
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
)
"""Counter. nvidia-smi: ecc.errors.corrected.aggregate.total."""
ECC_DBE_AGGREGATE: Final = _counter(
    "gpuobs_gpu_ecc_uncorrected_aggregate_errors",
    "Double-bit (uncorrected) ECC errors over the GPU's life.",
    "",
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
)
"""Counter. nvidia-smi: ecc.errors.uncorrected.aggregate.total."""
ROWS_REMAPPED_CORRECTABLE: Final = _counter(
    "gpuobs_gpu_rows_remapped_correctable",
    "Memory rows remapped for correctable errors.",
    "",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
)
"""Counter. nvidia-smi: remapped_rows.correctable."""
ROWS_REMAPPED_UNCORRECTABLE: Final = _counter(
    "gpuobs_gpu_rows_remapped_uncorrectable",
    "Memory rows remapped for uncorrectable errors.",
    "",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
)
"""Counter. nvidia-smi: remapped_rows.uncorrectable."""
ROW_REMAP_PENDING: Final = _gauge(
    "gpuobs_gpu_row_remap_pending",
    "1 when a row remap waits for a GPU reset.",
    "",
    "DCGM_FI_DEV_ROW_REMAP_PENDING",
)
"""Gauge 0/1. nvidia-smi: remapped_rows.pending."""
ROW_REMAP_FAILURE: Final = _gauge(
    "gpuobs_gpu_row_remap_failure", "1 when a row remap has failed.", "", "DCGM_FI_DEV_ROW_REMAP_FAILURE"
)
"""Gauge 0/1. nvidia-smi: remapped_rows.failure."""

# NVLink
NVLINK_BANDWIDTH: Final = _counter(
    "gpuobs_gpu_nvlink_traffic_bytes",
    "NVLink bytes sent and received over all links, headers included.",
    "bytes",
    source="slow",
)
"""Counter, By. NVML fields NVLINK_THROUGHPUT_RAW_TX/RX (KiB)."""
NVLINK_RATE: Final = dataclasses.replace(
    _gauge(
        "gpuobs_gpu_nvlink_bytes_per_second",
        "NVLink rate over all links, both directions (GPM).",
        "bytes_per_second",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        1.0 / 1024,
        source="slow",
    ),
    dcgm_kind=MetricKind.COUNTER,
)
"""Gauge, By/s. DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL is a rate in KiB/s that dcgm-exporter declares a counter
(NVIDIA/deepops#810, dcgm-exporter#472); DCGM naming keeps both quirks so its dashboards read it right."""
NVLINK_TX_RATE: Final = _gauge(
    "gpuobs_gpu_nvlink_transmit_bytes_per_second",
    "NVLink transmit rate (GPM).",
    "bytes_per_second",
    "DCGM_FI_PROF_NVLINK_TX_BYTES",
    source="slow",
)
"""Gauge, By/s (slow, Hopper GPM)."""
NVLINK_RX_RATE: Final = _gauge(
    "gpuobs_gpu_nvlink_receive_bytes_per_second",
    "NVLink receive rate (GPM).",
    "bytes_per_second",
    "DCGM_FI_PROF_NVLINK_RX_BYTES",
    source="slow",
)
"""Gauge, By/s (slow, Hopper GPM)."""

# State
PSTATE: Final = _gauge("gpuobs_gpu_pstate", "Performance state (0 = P0, fastest).", "", "DCGM_FI_DEV_PSTATE")
"""Gauge. nvidia-smi: pstate."""
FAN_SPEED: Final = _gauge(
    "gpuobs_gpu_fan_speed_ratio",
    "Fan speed as a fraction of its maximum.",
    "ratio",
    "DCGM_FI_DEV_FAN_SPEED",
    100.0,
    otel="hw.fan.speed_ratio",
    otel_unit="1",
    hw__type="gpu",
)
"""Gauge, 0..1. nvidia-smi: fan.speed (%). Absent on passively cooled boards (NotSupported)."""
COMPUTE_MODE: Final = _gauge(
    "gpuobs_gpu_compute_mode",
    "Compute mode (0 default, 1 exclusive thread, 2 prohibited, 3 exclusive process).",
    "",
    "DCGM_FI_DEV_COMPUTE_MODE",
)
"""Gauge. nvidia-smi: compute_mode."""
CLOCK_EVENT_ACTIVE: Final = _gauge(
    "gpuobs_gpu_clock_event_active",
    "1 while a clock-event (throttle) reason holds the clocks down.",
    "",
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
    labels=("reason",),
)
"""Gauge 0/1, one series per reason (CLOCK_EVENT_REASONS). DCGM naming emits NVML's bitmask instead.
nvidia-smi: clocks_event_reasons.*."""

# XID (event thread)
XID_LAST: Final = _gauge(
    "gpuobs_gpu_last_xid",
    "Code of the last XID error seen (0: none).",
    "",
    "DCGM_FI_DEV_XID_ERRORS",
    source="event",
)
"""Gauge. DCGM_FI_DEV_XID_ERRORS semantics: the value of the last XID."""
XID_ERRORS: Final = _counter(
    "gpuobs_gpu_xid_errors", "XID errors seen, by XID code.", "", source="event", labels=("code",)
)
"""Counter, one series per XID code."""

# Processes and MIG
PROCESS_MEMORY_USED: Final = _gauge(
    "gpuobs_gpu_process_memory_used_bytes",
    "GPU memory used by a compute process.",
    "bytes",
    labels=PROCESS_LABELS,
)
"""Gauge, By. nvidia-smi: --query-compute-apps=pid,process_name,used_memory."""
MIG_MODE: Final = _gauge("gpuobs_gpu_mig_mode", "1 when MIG is enabled.", "")
"""Gauge 0/1. nvidia-smi: mig.mode.current."""
MIG_DEVICE_MEMORY_USED: Final = _gauge(
    "gpuobs_mig_device_memory_used_bytes", "Memory used by a MIG device.", "bytes", labels=MIG_LABELS
)
"""Gauge, By, one series per MIG device."""
MIG_DEVICE_MEMORY_TOTAL: Final = _gauge(
    "gpuobs_mig_device_memory_total_bytes", "Memory of a MIG device.", "bytes", labels=MIG_LABELS
)
"""Gauge, By, one series per MIG device."""

# Hopper GPM profiling metrics (what dcgm-exporter needs DCGM's profiling module for)
GR_ENGINE_ACTIVE: Final = _gauge(
    "gpuobs_gpu_graphics_engine_active_ratio",
    "Fraction of time the graphics/compute engine was active (GPM).",
    "ratio",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    source="slow",
)
"""Gauge, 0..1 (slow, GPM GRAPHICS_UTIL)."""
SM_ACTIVE: Final = _gauge(
    "gpuobs_gpu_sm_active_ratio",
    "Fraction of SMs busy (GPM).",
    "ratio",
    "DCGM_FI_PROF_SM_ACTIVE",
    source="slow",
)
"""Gauge, 0..1 (slow, GPM SM_UTIL)."""
SM_OCCUPANCY: Final = _gauge(
    "gpuobs_gpu_sm_occupancy_ratio",
    "Resident warps over the maximum (GPM).",
    "ratio",
    "DCGM_FI_PROF_SM_OCCUPANCY",
    source="slow",
)
"""Gauge, 0..1 (slow, GPM SM_OCCUPANCY)."""
TENSOR_ACTIVE: Final = _gauge(
    "gpuobs_gpu_tensor_active_ratio",
    "Fraction of time any tensor pipe was active (GPM).",
    "ratio",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    source="slow",
)
"""Gauge, 0..1 (slow, GPM ANY_TENSOR_UTIL)."""
DRAM_ACTIVE: Final = _gauge(
    "gpuobs_gpu_dram_active_ratio",
    "DRAM bandwidth used over the maximum (GPM).",
    "ratio",
    "DCGM_FI_PROF_DRAM_ACTIVE",
    source="slow",
)
"""Gauge, 0..1 (slow, GPM DRAM_BW_UTIL)."""

register(
    GPU_INFO,
    SM_CLOCK,
    MEMORY_CLOCK,
    GPU_TEMPERATURE,
    MEMORY_TEMPERATURE,
    POWER_USAGE,
    POWER_LIMIT,
    ENERGY,
    PCIE_REPLAYS,
    PCIE_TX_RATE,
    PCIE_RX_RATE,
    GPU_UTILIZATION,
    MEMORY_COPY_UTILIZATION,
    ENCODER_UTILIZATION,
    DECODER_UTILIZATION,
    MEMORY_FREE,
    MEMORY_USED,
    MEMORY_RESERVED,
    MEMORY_TOTAL,
    ECC_SBE_VOLATILE,
    ECC_DBE_VOLATILE,
    ECC_SBE_AGGREGATE,
    ECC_DBE_AGGREGATE,
    ROWS_REMAPPED_CORRECTABLE,
    ROWS_REMAPPED_UNCORRECTABLE,
    ROW_REMAP_PENDING,
    ROW_REMAP_FAILURE,
    NVLINK_BANDWIDTH,
    NVLINK_TX_RATE,
    NVLINK_RX_RATE,
    NVLINK_RATE,
    PSTATE,
    FAN_SPEED,
    COMPUTE_MODE,
    CLOCK_EVENT_ACTIVE,
    XID_LAST,
    XID_ERRORS,
    PROCESS_MEMORY_USED,
    MIG_MODE,
    MIG_DEVICE_MEMORY_USED,
    MIG_DEVICE_MEMORY_TOTAL,
    GR_ENGINE_ACTIVE,
    SM_ACTIVE,
    SM_OCCUPANCY,
    TENSOR_ACTIVE,
    DRAM_ACTIVE,
)
