"""Regenerate the incident cases captured from the simulated exporter (`gpuobs export --backend sim`).

Each case starts a fresh exporter with fault injection on loopback, injects faults through
`POST /api/faults`, waits, and saves the exporter's real `/api/history` JSON and/or `/metrics` text
into `tests/rca/incidents/<case>/`. Run: `.venv/bin/python tests/support/capture_sim_incidents.py [case ...]`.
The saved files are committed; tests only read them.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # run as a script: make `support` importable

from support.exporter import SIM_NODE, ExporterProcess  # noqa: E402

INCIDENTS = ROOT / "tests" / "rca" / "incidents"


def _exporter(gpus: int = 4, seed: int = 7, interval: float = 0.5) -> ExporterProcess:
    return ExporterProcess(
        *SIM_NODE,
        "--gpus", str(gpus),
        "--enable-fault-injection",
        "--address", "127.0.0.1",
        "--history-interval", str(interval),
        "--slow-interval", "0.5",
        "--seed", str(seed),
        "--log-level", "info",
        cwd=ROOT,
    )


def _save(case: str, name: str, data: bytes | str) -> Path:
    folder = INCIDENTS / case
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def _history(exp: ExporterProcess, case: str) -> dict[str, object]:
    raw = exp.get("/api/history")
    _save(case, "exporter-history.json", json.dumps(json.loads(raw), indent=1))
    return json.loads(raw)


def thermal(exp: ExporterProcess) -> None:
    time.sleep(3)
    exp.fault(fault="temperature_ramp", gpu=2, delta_c=58.0, seconds=2.0)
    exp.fault(fault="throttle", gpu=2, reason="hw_thermal_slowdown")
    time.sleep(8)
    _history(exp, "thermal_throttling")


def power(exp: ExporterProcess) -> None:
    time.sleep(2)
    exp.fault(fault="throttle", gpu=1, reason="hw_power_brake_slowdown")
    time.sleep(3)
    _save("power_throttling", "metrics.prom", exp.get("/metrics"))


def fallen(exp: ExporterProcess) -> None:
    time.sleep(2)
    exp.fault(fault="fall_off_bus", gpu=3)
    time.sleep(3)
    _history(exp, "xid_79_sim_exporter")


def dbe(exp: ExporterProcess) -> None:
    time.sleep(2)
    exp.fault(fault="ecc", gpu=0, uncorrected=2)
    time.sleep(3)
    _history(exp, "xid_48_sim_exporter")


def corrected(exp: ExporterProcess) -> None:
    time.sleep(2)
    exp.fault(fault="ecc", gpu=1, corrected=1)
    time.sleep(3)
    _history(exp, "healthy_single_corrected_ecc")


def healthy(exp: ExporterProcess) -> None:
    time.sleep(6)
    _history(exp, "healthy_sim_node")
    _save("healthy_sim_node", "metrics.prom", exp.get("/metrics"))


def clock_drop(exp: ExporterProcess) -> None:
    """The board's hardware slowdown signal holds GPU 1 at 600 MHz (no thermal or power-brake reason)."""
    time.sleep(2)
    exp.fault(fault="clock_drop", gpu=1, mhz=600.0)
    time.sleep(4)
    _history(exp, "hw_slowdown")


def power_cap(exp: ExporterProcess) -> None:
    """Every GPU at its software power cap under full load: normal for a busy node, no slowdown seen."""
    time.sleep(1)
    for gpu in range(4):
        exp.fault(fault="throttle", gpu=gpu, reason="sw_power_cap")
    time.sleep(4)
    _history(exp, "healthy_power_cap_under_load")


def exporter_broken(exp: ExporterProcess) -> None:
    time.sleep(2)
    exp.fault(fault="nvml_failure", init_failures=1000)
    time.sleep(4)
    _save("gpu_driver_failure_sim_exporter", "exporter.log", exp.logs())
    _save("gpu_driver_failure_sim_exporter", "metrics.prom", exp.get("/metrics"))


SETUP: dict[str, dict[str, float]] = {"healthy": {"gpus": 2}}

CASES: dict[str, Callable[[ExporterProcess], None]] = {
    "thermal": thermal,
    "power": power,
    "fallen": fallen,
    "dbe": dbe,
    "corrected": corrected,
    "healthy": healthy,
    "power_cap": power_cap,
    "clock_drop": clock_drop,
    "exporter_broken": exporter_broken,
}


def main(names: list[str]) -> None:
    for name in names or list(CASES):
        setup = SETUP.get(name, {})
        with _exporter(gpus=int(setup.get("gpus", 4)), interval=float(setup.get("interval", 0.5))) as exp:
            CASES[name](exp)
        print(f"captured {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
