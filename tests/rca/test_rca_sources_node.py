"""Live node state: NVML through the exporter's backend interface (the simulated GPUs stand in for a
driver, which this machine does not have), the no-driver path, and pasted-log details (ANSI colours,
a watchdog line wrapped by a terminal)."""

from __future__ import annotations

from typing import Any

from gpuobs.evidence import EvidenceKind
from gpuobs.exporters.sidecar.sim import SimBackend
from gpuobs.names import gpu as g
from gpuobs.rca import DiagnoseInputs, collect, keys
from gpuobs.rca.parsers import parse_text
from gpuobs.rca.readers.node import live_nvml_state


def test_live_state_from_a_backend() -> None:
    backend: Any = SimBackend(gpus=2, seed=1)
    backend.init()
    backend.inject("throttle", gpu=1, reason="hw_power_brake_slowdown")
    backend.inject("process_start", gpu=0, pid=4242, name="python3", gib=8.0)
    backend.shutdown()
    evs, notes = live_nvml_state(backend)
    assert notes == []
    assert all(e.kind is EvidenceKind.STATE and e.source == "nvml" for e in evs)
    temps = {e.entity.gpu_index: e for e in evs if e.key == g.GPU_TEMPERATURE.native}
    assert set(temps) == {0, 1} and temps[0].entity.gpu_uuid and temps[0].entity.pci_bus_id
    reasons = [
        (e.entity.gpu_index, e.attrs["labels"]["reason"]) for e in evs if e.key == g.CLOCK_EVENT_ACTIVE.native
    ]
    assert (1, "hw_power_brake_slowdown") in reasons
    procs = [e for e in evs if e.key == g.PROCESS_MEMORY_USED.native]
    assert any(e.attrs["labels"]["pid"] == "4242" and e.value == float(8 << 30) for e in procs)


def test_no_driver_means_nothing_and_a_note() -> None:
    evs, notes = live_nvml_state()  # the real NVML binding; this machine has no NVIDIA driver
    assert evs == [] and len(notes) == 1 and "not available" in notes[0]
    result = collect(DiagnoseInputs(live=True))
    assert not any(e.source == "nvml" for e in result.evidence)
    assert any("NVML" in n for n in result.notes) and not any("nvml" in p for p in result.problems)


def test_ansi_coloured_and_wrapped_lines() -> None:
    text = (
        "\x1b[1;31mERROR\x1b[0m 05-12 01:48:42 [core.py:586] EngineCore failed to start.\n"
        "[rank1]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective "
        "operation timeout:\n"
        "WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, NumelOut=68124672, "
        "Timeout(ms)=600000) ran for 600061 milliseconds before timing out.\n"
    )
    evs = parse_text(text, year=2026)
    dead = [e for e in evs if e.key == keys.VLLM_ENGINE_DEAD]
    assert len(dead) == 1 and dead[0].attrs["phase"] == "startup" and dead[0].attrs["level"] == "error"
    timeouts = [e for e in evs if e.key == keys.NCCL_TIMEOUT]
    assert timeouts and timeouts[0].attrs["op"] == "_REDUCE_SCATTER_BASE" and timeouts[0].attrs["rank"] == 1
    assert timeouts[0].attrs["seq"] == 7753
