"""DCGM naming against NVIDIA's counter lists: each field NVML gives is served with DCGM's type and unit."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from gpuobs.exporters.sidecar.collector import GpuCollector, render
from gpuobs.exporters.sidecar.core import CoreSettings, ExporterCore
from gpuobs.exporters.sidecar.sim import SimBackend
from gpuobs.names import all_specs

# In dcgm-exporter's default list but not something NVML gives on bare metal (vGPU licensing).
NOT_FROM_NVML = {"DCGM_FI_DEV_VGPU_LICENSE_STATUS"}


def _counters(path: Path) -> list[tuple[str, str]]:
    rows = []
    for row in csv.reader(path.read_text().splitlines()):
        if not row or row[0].strip().startswith("#") or len(row) < 2:
            continue
        rows.append((row[0].strip(), row[1].strip()))
    return rows


@pytest.fixture(scope="module")
def dcgm_text() -> Iterator[str]:
    sim = SimBackend(gpus=2)
    core = ExporterCore(sim, CoreSettings(slow_interval_s=3600, history_interval_s=3600), host="n1")
    core.start()
    core.poll_slow_once()
    sim.inject("xid", gpu=0, code=43)
    core.record_xid(sim.wait_xid(1.0))  # type: ignore[arg-type]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GpuCollector(core, "dcgm"))
    yield render(registry).decode()
    core.stop()


@pytest.mark.parametrize("csv_name", ["default-counters.csv", "dcp-metrics-included.csv"])
def test_every_counter_nvml_can_give_is_served(csv_name: str, compat_dir: Path, dcgm_text: str) -> None:
    types = {}
    for line in dcgm_text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split()
            types[name] = typ
    wanted = _counters(compat_dir / "dcgm" / csv_name)
    assert len(wanted) >= 20
    for field, typ in wanted:
        if field in NOT_FROM_NVML:
            continue
        if typ == "label":
            assert f'{field}="' in dcgm_text, f"{field} should be a label on every series"
            continue
        assert field in types, f"{field} ({typ}) missing from DCGM naming"
        assert types[field] == typ, f"{field}: DCGM says {typ}, we say {types[field]}"


def test_dcgm_units_and_xid_semantics(dcgm_text: str) -> None:
    values = {}
    for fam in text_string_to_metric_families(dcgm_text):
        for s in fam.samples:
            if s.labels.get("gpu") == "0":
                # prometheus_client's parser appends _total to counter samples; DCGM's names have none.
                values[s.name.removesuffix("_total") if s.name.startswith("DCGM_") else s.name] = s.value
    assert values["DCGM_FI_DEV_FB_USED"] + values["DCGM_FI_DEV_FB_FREE"] + values[
        "DCGM_FI_DEV_FB_RESERVED"
    ] == (pytest.approx(143771))
    assert 300 <= values["DCGM_FI_DEV_SM_CLOCK"] <= 1980, "MHz"
    assert 0 <= values["DCGM_FI_DEV_GPU_UTIL"] <= 100, "percent"
    assert 0 <= values["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"] <= 1, "DCP metrics are ratios"
    assert values["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] > 1e8, "mJ"
    assert values["DCGM_FI_DEV_XID_ERRORS"] == 43, "the value of the last XID"


def test_every_dcgm_name_is_unique_and_scaled() -> None:
    specs = [s for s in all_specs() if s.dcgm]
    names = [s.dcgm for s in specs]
    assert len(names) == len(set(names))
    assert all(s.dcgm.startswith("DCGM_FI_") and s.dcgm_scale > 0 for s in specs)  # type: ignore[union-attr]
