"""The table that maps each plain GPU metric to the sample field it reads: one place for all three outputs.

The Prometheus collector, the flight recorder and the OTLP reader all walk `FIELDS`, so a metric is
added in exactly one line here (plus its MetricSpec in gpuobs.names.gpu). Metrics with their own shape
(info, per-reason, per-process, per-MIG-device, per-XID-code) are built by the collector itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuobs.names import gpu as g
from gpuobs.names.spec import MetricSpec

if TYPE_CHECKING:
    from gpuobs.exporters.sidecar.core import GpuReading

__all__ = ["FIELDS", "Field", "reading_values"]


@dataclass(frozen=True)
class Field:
    """A metric read from `attr` of the reading's fast sample (`slow=False`) or its slow cache."""

    spec: MetricSpec
    attr: str
    slow: bool = False


FIELDS: tuple[Field, ...] = (
    Field(g.SM_CLOCK, "sm_clock_hz"),
    Field(g.MEMORY_CLOCK, "memory_clock_hz"),
    Field(g.GPU_TEMPERATURE, "temperature_c"),
    Field(g.MEMORY_TEMPERATURE, "memory_temperature_c"),
    Field(g.POWER_USAGE, "power_w"),
    Field(g.POWER_LIMIT, "power_limit_w"),
    Field(g.PCIE_REPLAYS, "pcie_replays"),
    Field(g.GPU_UTILIZATION, "utilization_ratio"),
    Field(g.MEMORY_COPY_UTILIZATION, "memory_copy_utilization_ratio"),
    Field(g.ENCODER_UTILIZATION, "encoder_utilization_ratio"),
    Field(g.DECODER_UTILIZATION, "decoder_utilization_ratio"),
    Field(g.MEMORY_FREE, "memory_free_bytes"),
    Field(g.MEMORY_USED, "memory_used_bytes"),
    Field(g.MEMORY_RESERVED, "memory_reserved_bytes"),
    Field(g.MEMORY_TOTAL, "memory_total_bytes"),
    Field(g.ECC_SBE_VOLATILE, "ecc_sbe_volatile"),
    Field(g.ECC_DBE_VOLATILE, "ecc_dbe_volatile"),
    Field(g.ECC_SBE_AGGREGATE, "ecc_sbe_aggregate"),
    Field(g.ECC_DBE_AGGREGATE, "ecc_dbe_aggregate"),
    Field(g.ROWS_REMAPPED_CORRECTABLE, "rows_remapped_correctable"),
    Field(g.ROWS_REMAPPED_UNCORRECTABLE, "rows_remapped_uncorrectable"),
    Field(g.ROW_REMAP_PENDING, "row_remap_pending"),
    Field(g.ROW_REMAP_FAILURE, "row_remap_failure"),
    Field(g.NVLINK_BANDWIDTH, "nvlink_traffic_bytes"),
    Field(g.PSTATE, "pstate"),
    Field(g.FAN_SPEED, "fan_speed_ratio"),
    Field(g.COMPUTE_MODE, "compute_mode"),
    Field(g.MIG_MODE, "mig_mode"),
    Field(g.ENERGY, "energy_joules", slow=True),
    Field(g.PCIE_TX_RATE, "pcie_tx_bytes_per_second", slow=True),
    Field(g.PCIE_RX_RATE, "pcie_rx_bytes_per_second", slow=True),
    Field(g.GR_ENGINE_ACTIVE, "gr_engine_active_ratio", slow=True),
    Field(g.SM_ACTIVE, "sm_active_ratio", slow=True),
    Field(g.SM_OCCUPANCY, "sm_occupancy_ratio", slow=True),
    Field(g.TENSOR_ACTIVE, "tensor_active_ratio", slow=True),
    Field(g.DRAM_ACTIVE, "dram_active_ratio", slow=True),
    Field(g.NVLINK_TX_RATE, "nvlink_tx_bytes_per_second", slow=True),
    Field(g.NVLINK_RX_RATE, "nvlink_rx_bytes_per_second", slow=True),
    Field(g.NVLINK_RATE, "nvlink_bytes_per_second", slow=True),
)


def reading_values(reading: GpuReading) -> dict[str, float]:
    """Native metric name -> value (native units) of every plain field the reading has."""
    out: dict[str, float] = {}
    for f in FIELDS:
        source = reading.slow if f.slow else reading.sample
        if source is None:
            continue
        value = getattr(source, f.attr)
        if value is not None:
            out[f.spec.native] = float(value)
    if reading.sample is not None and reading.sample.clock_event_mask is not None:
        out[g.CLOCK_EVENT_ACTIVE.native] = float(reading.sample.clock_event_mask)
    out[g.XID_LAST.native] = float(reading.xid_last)
    return out
