"""Plain dataclasses that GPU backends return, in base units, so collectors never touch NVML or the simulator.

A field that the device does not support (NVML NotSupported/NoPermission) is `None`, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["DeviceInfo", "GpuSample", "MigSample", "ProcessSample", "SlowSample", "XidEvent"]


@dataclass(frozen=True)
class DeviceInfo:
    """Identity of one GPU, read once at backend init."""

    index: int
    uuid: str
    name: str
    pci_bus_id: str
    minor_number: int
    driver_version: str

    @property
    def device(self) -> str:
        """The device node name dcgm-exporter puts in its `device` label (`nvidia0`)."""
        return f"nvidia{self.minor_number}"


@dataclass(frozen=True)
class ProcessSample:
    """A compute process on a GPU and the memory it holds (bytes; None when NVML cannot say)."""

    pid: int
    name: str
    used_memory_bytes: int | None


@dataclass(frozen=True)
class MigSample:
    """One MIG device of a GPU in MIG mode."""

    uuid: str
    gpu_instance_id: int
    compute_instance_id: int
    memory_used_bytes: int | None
    memory_total_bytes: int | None


@dataclass
class GpuSample:
    """The cheap fields of one GPU, read on every scrape. Units in the field names; None = not supported."""

    sm_clock_hz: float | None = None
    memory_clock_hz: float | None = None
    temperature_c: float | None = None
    memory_temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    pcie_replays: float | None = None
    utilization_ratio: float | None = None
    memory_copy_utilization_ratio: float | None = None
    encoder_utilization_ratio: float | None = None
    decoder_utilization_ratio: float | None = None
    memory_free_bytes: float | None = None
    memory_used_bytes: float | None = None
    memory_reserved_bytes: float | None = None
    memory_total_bytes: float | None = None
    ecc_sbe_volatile: float | None = None
    ecc_dbe_volatile: float | None = None
    ecc_sbe_aggregate: float | None = None
    ecc_dbe_aggregate: float | None = None
    rows_remapped_correctable: float | None = None
    rows_remapped_uncorrectable: float | None = None
    row_remap_pending: float | None = None
    row_remap_failure: float | None = None
    nvlink_traffic_bytes: float | None = None
    pstate: float | None = None
    fan_speed_ratio: float | None = None
    compute_mode: float | None = None
    clock_event_mask: int | None = None
    mig_mode: float | None = None
    processes: list[ProcessSample] | None = None
    mig_devices: list[MigSample] | None = None


@dataclass
class SlowSample:
    """Fields too slow for the scrape path (energy ~3 ms, PCIe throughput ~20 ms, GPM), read by a poller.

    `taken_at` is the `time.monotonic()` of the read; the collector exposes its age.
    """

    taken_at: float
    energy_joules: float | None = None
    pcie_tx_bytes_per_second: float | None = None
    pcie_rx_bytes_per_second: float | None = None
    gr_engine_active_ratio: float | None = None
    sm_active_ratio: float | None = None
    sm_occupancy_ratio: float | None = None
    tensor_active_ratio: float | None = None
    dram_active_ratio: float | None = None
    nvlink_tx_bytes_per_second: float | None = None
    nvlink_rx_bytes_per_second: float | None = None
    nvlink_bytes_per_second: float | None = None
    errors: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class XidEvent:
    """One XID error reported by the driver (NVML event or injected)."""

    gpu: int
    code: int
    ts: float
    detail: str = ""
