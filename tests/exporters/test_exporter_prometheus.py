"""A real Prometheus scrapes `gpuobs export` subprocesses: the DCGM dashboard and a native query set work."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.exporter import SIM_NODE, ExporterProcess
from support.prometheus import PrometheusServer

from gpuobs.names import exporter as ex
from gpuobs.names import gpu as g

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

# Native names, one query per metric family the exporter serves on a simulated node.
NATIVE_QUERIES = [
    *(
        f"{spec.native}"
        for spec in (
            g.SM_CLOCK,
            g.MEMORY_CLOCK,
            g.GPU_TEMPERATURE,
            g.MEMORY_TEMPERATURE,
            g.POWER_USAGE,
            g.POWER_LIMIT,
            g.PCIE_TX_RATE,
            g.PCIE_RX_RATE,
            g.GPU_UTILIZATION,
            g.MEMORY_COPY_UTILIZATION,
            g.ENCODER_UTILIZATION,
            g.DECODER_UTILIZATION,
            g.MEMORY_FREE,
            g.MEMORY_USED,
            g.MEMORY_RESERVED,
            g.MEMORY_TOTAL,
            g.ROW_REMAP_PENDING,
            g.ROW_REMAP_FAILURE,
            g.NVLINK_TX_RATE,
            g.NVLINK_RX_RATE,
            g.NVLINK_RATE,
            g.PSTATE,
            g.FAN_SPEED,
            g.COMPUTE_MODE,
            g.XID_LAST,
            g.PROCESS_MEMORY_USED,
            g.MIG_MODE,
            g.GR_ENGINE_ACTIVE,
            g.SM_ACTIVE,
            g.SM_OCCUPANCY,
            g.TENSOR_ACTIVE,
            g.DRAM_ACTIVE,
            g.GPU_INFO,
            ex.NVML_UP,
            ex.GPU_UP,
            ex.SLOW_FIELD_AGE,
            ex.HISTORY_SAMPLES,
        )
    ),
    *(
        f"rate({spec.exposed_native}[5s])"
        for spec in (
            g.ENERGY,
            g.PCIE_REPLAYS,
            g.ECC_SBE_VOLATILE,
            g.ECC_DBE_VOLATILE,
            g.ECC_SBE_AGGREGATE,
            g.ECC_DBE_AGGREGATE,
            g.ROWS_REMAPPED_CORRECTABLE,
            g.ROWS_REMAPPED_UNCORRECTABLE,
            g.NVLINK_BANDWIDTH,
        )
    ),
    f'{g.CLOCK_EVENT_ACTIVE.native}{{reason="sw_thermal_slowdown"}} == 1',
    f'{g.XID_ERRORS.exposed_native}{{code="13"}}',
    f"{g.MIG_DEVICE_MEMORY_TOTAL.native}",
    f'{ex.COLLECTOR_SUCCESS.native}{{collector="gpu"}} == 1',
    f'{ex.SCRAPE_DURATION.native}{{collector="total"}} < 0.5',
    f"sum by (host) ({g.POWER_USAGE.native})",
]


def _dashboard_queries(compat_dir: Path) -> list[str]:
    board = json.loads((compat_dir / "dcgm" / "dcgm-exporter-dashboard.json").read_text())
    exprs: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("expr"), str):
                exprs.append(node["expr"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(board)
    return [e.replace("$instance", ".*").replace("$gpu", ".*") for e in exprs]


def _sim_exporter(*args: str) -> ExporterProcess:
    return ExporterProcess(*SIM_NODE, "--gpus", "8", "--slow-interval", "0.5", *args)


@pytest.fixture
def exporters() -> Iterator[dict[str, ExporterProcess]]:
    with (
        _sim_exporter("--naming", "dcgm") as dcgm,
        _sim_exporter("--naming", "native", "--enable-fault-injection") as native,
    ):
        yield {"dcgm": dcgm, "native": native}
    for exp in (dcgm, native):
        assert exp.returncode == 0, exp.logs()


def test_prometheus_scrapes_dcgm_dashboard_and_native_queries(
    exporters: dict[str, ExporterProcess], prometheus: Callable[..., PrometheusServer], compat_dir: Path
) -> None:
    native = exporters["native"].target
    exporters["native"].fault(fault="xid", gpu=2, code=13)
    exporters["native"].fault(fault="temperature_ramp", gpu=4, delta_c=70, seconds=0)
    exporters["native"].fault(fault="mig", gpu=7, instances=2)
    prom = prometheus(targets=[exporters["dcgm"].target, native], interval="250ms")
    prom.wait_for_up(timeout=40)
    queries = _dashboard_queries(compat_dir)
    assert len(queries) >= 8, "the dashboard fixture should hold the DCGM panels' queries"
    # Scoped to the DCGM-named exporter: DCGM names must come from it alone.
    prom.wait_for(f'DCGM_FI_DEV_GPU_TEMP{{instance="{exporters["dcgm"].target}"}}', timeout=30)
    missing = [q for q in queries if not prom.query(q)]
    assert not missing, f"dashboard queries without series: {missing}"
    dcgm = prom.query(f'DCGM_FI_DEV_FB_USED{{instance="{exporters["dcgm"].target}"}}')
    assert len(dcgm) == 8
    labels = dcgm[0]["metric"]
    for key in ("gpu", "UUID", "pci_bus_id", "device", "modelName", "hostname", "DCGM_FI_DRIVER_VERSION"):
        assert key in labels, f"DCGM label {key} missing: {labels}"
    assert float(dcgm[0]["value"][1]) > 1000, "DCGM FB is in MiB"
    assert not prom.query(f'DCGM_FI_DEV_GPU_TEMP{{instance="{native}"}}'), "native naming emits no DCGM names"

    # rate() needs two samples of the counters: wait until the energy rate is there.
    prom.wait_for(f"rate({g.ENERGY.exposed_native}[5s])", timeout=30)
    missing = [q for q in NATIVE_QUERIES if not prom.query(q)]
    assert not missing, f"native queries without series: {missing}"
    temp = prom.query(f'{g.GPU_TEMPERATURE.native}{{gpu="0"}}')[0]["metric"]
    assert set(g.GPU_LABELS) <= set(temp), temp
