"""Benchmark of `gpuobs export`: scrape cost, exporter RSS/CPU, and on a GPU machine NVML vs nvidia-smi.

Run: `python -m bench.exporter` (sim rows everywhere; NVML rows when a driver answers), `--json FILE` for
the figures, `--self-check` to also print the exporter's values beside nvidia-smi's.

Rows (each with its baseline measured in the same run):
- sim scrape at 1, 8, 64 GPUs: our text exposition vs prometheus_client's generate_latest of the same
  registry (target: 64 GPUs under 20 ms);
- exporter process at a 1 s scrape interval over HTTP: RSS (target under 80 MB) and CPU;
- NVML full scrape (every field of every GPU, rendered) vs `nvidia-smi --query-gpu=<same fields>
  --format=csv` (target: at most 1 ms median and at least 25x faster), plus per-call NVML costs.

Under connection load (50 new-connection scrapers, slow clients) and over TLS: `bench/exporter_load.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from prometheus_client import generate_latest
from prometheus_client.registry import CollectorRegistry

from bench.report import cell, table
from gpuobs.exporters.sidecar.backend import GpuBackend
from gpuobs.exporters.sidecar.collector import GpuCollector, render
from gpuobs.exporters.sidecar.core import CoreSettings, ExporterCore
from gpuobs.exporters.sidecar.samples import GpuSample

__all__ = ["main"]


def _median_ms(fn: Callable[[], Any], runs: int, warmup: int = 5) -> tuple[float, float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.99))]


def _registry(backend: GpuBackend, naming: str = "native") -> tuple[ExporterCore, CollectorRegistry]:
    core = ExporterCore(backend, CoreSettings(slow_interval_s=3600, history_interval_s=3600), host="bench")
    core.start()
    core.poll_slow_once()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GpuCollector(core, naming))
    return core, registry


def bench_sim(sizes: list[int], runs: int) -> list[dict[str, Any]]:
    from gpuobs.exporters.sidecar.sim import SimBackend

    rows = []
    for n in sizes:
        # min_step_s=0: every scrape recomputes the node, as scrapes seconds apart would.
        core, registry = _registry(SimBackend(gpus=n, min_step_s=0.0))
        try:
            ours, ours_p99 = _median_ms(lambda r=registry: render(r), runs)
            stock, _ = _median_ms(lambda r=registry: generate_latest(r), runs)
            read, _ = _median_ms(core.read, runs)
            samples = render(registry).count(b"\n") - 2 * len(list(registry.collect()))
        finally:
            core.stop()
        rows.append(
            {
                "backend": "sim",
                "gpus": n,
                "scrape_ms_median": ours,
                "scrape_ms_p99": ours_p99,
                "per_gpu_ms": ours / n,
                "read_ms": read,
                "baseline_generate_latest_ms": stock,
                "samples": samples,
                "target_ms": 20.0 if n == 64 else None,
                "meets_target": (ours < 20.0) if n == 64 else None,
            }
        )
    return rows


def _proc_stat(pid: int) -> tuple[float, float]:
    """(CPU seconds used, RSS MiB) of a process from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    rss_kib = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss_kib = int(line.split()[1])
    return cpu, rss_kib / 1024


def bench_process(backend: str, gpus: int, seconds: float) -> dict[str, Any]:
    """Run `gpuobs export` as a process, scrape it every second, measure RSS, CPU and HTTP scrape time."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cli = [
        sys.executable,
        "-m",
        "gpuobs",
        "export",
        "--backend",
        backend,
        "--gpus",
        str(gpus),
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    # Fallback when the full CLI cannot start here (another verb missing a dependency on this machine).
    lib = [
        sys.executable,
        "-c",
        "from gpuobs.exporters.sidecar.service import ExporterConfig, run_until_signal; "
        f"run_until_signal(ExporterConfig(backend={backend!r}, gpus={gpus}, port={port}))",
    ]
    runner = "cli"
    proc = subprocess.Popen(
        cli,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "GPUOBS_CONFIG": os.devnull},
    )
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ""
                if runner == "lib":
                    raise RuntimeError(f"exporter exited: {err}")
                print(
                    f"CLI exporter exited ({err.strip()[-300:]}); using the library runner", file=sys.stderr
                )
                runner = "lib"
                proc = subprocess.Popen(lib, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                continue
            try:
                urllib.request.urlopen(url, timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        time.sleep(1.0)
        cpu0, _ = _proc_stat(proc.pid)
        t0 = time.monotonic()
        http_ms, rss = [], []
        while time.monotonic() - t0 < seconds:
            t = time.perf_counter()
            with urllib.request.urlopen(url, timeout=5) as resp:
                assert resp.status == 200
                resp.read()
            http_ms.append((time.perf_counter() - t) * 1000)
            rss.append(_proc_stat(proc.pid)[1])
            time.sleep(max(0.0, 1.0 - (time.perf_counter() - t)))
        cpu1, _ = _proc_stat(proc.pid)
        wall = time.monotonic() - t0
    finally:
        proc.terminate()
        rc = proc.wait(timeout=10)
    return {
        "backend": backend,
        "gpus": gpus,
        "seconds": round(wall, 1),
        "scrapes": len(http_ms),
        "http_scrape_ms_median": statistics.median(http_ms),
        "rss_mib_max": max(rss),
        "cpu_percent": 100.0 * (cpu1 - cpu0) / wall,
        "rss_target_mib": 80.0,
        "meets_target": max(rss) < 80.0,
        "clean_exit": rc == 0,
    }


def bench_nvml(runs: int, smi_runs: int) -> dict[str, Any]:
    from gpuobs.exporters.sidecar.nvml import NvmlBackend
    from gpuobs.exporters.sidecar.selfcheck import SMI_FIELDS, nvidia_smi_query

    backend = NvmlBackend()
    core, registry = _registry(backend)
    try:
        devices = core.devices
        scrape, scrape_p99 = _median_ms(lambda: render(registry), runs)
        read, _ = _median_ms(core.read, runs)
        nv, h = backend.nv, backend._handle(0)
        scratch = GpuSample()
        calls: dict[str, Callable[[], Any]] = {
            "sample (all fast fields, 1 GPU)": lambda: backend.sample(0),
            "temperature": lambda: backend._first(
                0, "t", [("nvmlDeviceGetTemperatureV", (h, 0)), ("nvmlDeviceGetTemperature", (h, 0))]
            ),
            "power usage": lambda: nv.nvmlDeviceGetPowerUsage(h),
            "utilization": lambda: nv.nvmlDeviceGetUtilizationRates(h),
            "memory info v2": lambda: nv.nvmlDeviceGetMemoryInfo(h, nv.nvmlMemory_v2),
            "clocks event reasons": lambda: backend._first(
                0,
                "c",
                [
                    ("nvmlDeviceGetCurrentClocksEventReasons", (h,)),
                    ("nvmlDeviceGetCurrentClocksThrottleReasons", (h,)),
                ],
            ),
            "compute processes": lambda: backend.q(0, "p", nv.nvmlDeviceGetComputeRunningProcesses, h),
            "ECC total (1 of 4)": lambda: backend.q(0, "e", nv.nvmlDeviceGetTotalEccErrors, h, 0, 0),
            "remapped rows": lambda: backend.q(0, "r", nv.nvmlDeviceGetRemappedRows, h),
            "field values (mem temp, replay, nvlink)": lambda: backend._read_fields(0, h, scratch),
            "slow sample (energy, GPM or PCIe)": lambda: backend.slow_sample(0),
        }
        per_call = {}
        for name, fn in calls.items():
            n = 5 if name.startswith("slow") else 200
            try:
                per_call[name] = _median_ms(fn, n, warmup=2)[0] * 1000  # microseconds
            except Exception as exc:
                per_call[name] = f"error: {exc}"
        slow = backend.slow_sample(0)
    finally:
        core.stop()
    smi = shutil.which("nvidia-smi")
    smi_ms = None
    if smi:
        _, dropped = nvidia_smi_query(SMI_FIELDS, smi)
        fields = [f for f in SMI_FIELDS if f not in dropped]
        query = [smi, f"--query-gpu={','.join(fields)}", "--format=csv"]
        smi_ms, _ = _median_ms(
            lambda: subprocess.run(query, capture_output=True, check=True), smi_runs, warmup=1
        )
    return {
        "backend": "nvml",
        "gpus": len(devices),
        "model": devices[0].name if devices else None,
        "driver": devices[0].driver_version if devices else None,
        "scrape_ms_median": scrape,
        "scrape_ms_p99": scrape_p99,
        "read_ms": read,
        "baseline_nvidia_smi_ms": smi_ms,
        "speedup_vs_nvidia_smi": (smi_ms / scrape) if smi_ms else None,
        "meets_target": (scrape <= 1.0 and smi_ms is not None and smi_ms / scrape >= 25),
        "per_call_us": per_call,
        "reader_costs_us": backend.reader_costs_us,
        "slow_readers": list(backend.slow_readers),
        "gpm": {
            k: getattr(slow, k)
            for k in (
                "sm_active_ratio",
                "tensor_active_ratio",
                "dram_active_ratio",
                "pcie_tx_bytes_per_second",
                "nvlink_tx_bytes_per_second",
            )
        },
    }


def _fmt(v: Any) -> str:
    return cell(v, below=10, small=".3f", large=".1f")


def _table(title: str, rows: list[dict[str, Any]], cols: list[str]) -> str:
    return table(title, rows, cols, _fmt)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=200, help="scrapes per timing (median)")
    parser.add_argument("--smi-runs", type=int, default=10, help="nvidia-smi runs (median)")
    parser.add_argument("--process-seconds", type=float, default=20.0, help="how long to scrape the process")
    parser.add_argument("--sizes", default="1,8,64", help="simulated GPU counts")
    parser.add_argument("--json", dest="json_path", help="write all figures to this file")
    parser.add_argument(
        "--self-check", action="store_true", help="also compare with nvidia-smi field by field"
    )
    parser.add_argument("--no-sim", action="store_true", help="skip the simulated rows")
    args = parser.parse_args(argv)

    from gpuobs.exporters.sidecar.nvml import probe_nvml

    has_gpu, why = probe_nvml()
    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "nvml_status": why,
    }
    if not args.no_sim:
        out["sim"] = bench_sim([int(x) for x in args.sizes.split(",")], args.runs)
        out["process_sim"] = bench_process("sim", 8, args.process_seconds)
    if has_gpu:
        out["nvml"] = bench_nvml(args.runs, args.smi_runs)
        out["process_nvml"] = bench_process("nvml", 1, args.process_seconds)
    if args.self_check and has_gpu:
        from gpuobs.exporters.sidecar.selfcheck import run_self_check

        report = run_self_check()
        out["self_check"] = report.to_dict()
        print(
            _table(
                f"self-check vs nvidia-smi ({report.agreeing}/{len(report.rows)} agree)",
                [r.__dict__ for r in report.rows],
                ["gpu", "field", "smi", "ours", "tolerance", "agree"],
            )
        )
    if args.json_path:
        with open(args.json_path, "w") as f:
            json.dump(out, f, indent=2, default=str)
    print(f"\n{out['date']} on {out['machine']}, Python {out['python']}; NVML: {why}")
    if "nvml" in out:
        n = out["nvml"]
        print(
            _table(
                "NVML per-call cost (us, median)",
                [{"call": k, "us": v} for k, v in n["per_call_us"].items()],
                ["call", "us"],
            )
        )
        print(
            _table(
                "NVML readers timed at init (us; over 50 us -> slow poller)",
                [
                    {"reader": k, "us": v, "slow": k in n["slow_readers"]}
                    for k, v in n["reader_costs_us"].items()
                ],
                ["reader", "us", "slow"],
            )
        )
        print(
            _table(
                f"NVML full scrape vs nvidia-smi ({n['model']}, driver {n['driver']})",
                [n],
                [
                    "gpus",
                    "scrape_ms_median",
                    "scrape_ms_p99",
                    "read_ms",
                    "baseline_nvidia_smi_ms",
                    "speedup_vs_nvidia_smi",
                    "meets_target",
                ],
            )
        )
    if "sim" in out:
        print(
            _table(
                "sim scrape (ms): ours vs prometheus_client generate_latest",
                out["sim"],
                [
                    "gpus",
                    "samples",
                    "scrape_ms_median",
                    "scrape_ms_p99",
                    "per_gpu_ms",
                    "read_ms",
                    "baseline_generate_latest_ms",
                    "meets_target",
                ],
            )
        )
    procs = [out[k] for k in ("process_sim", "process_nvml") if k in out]
    if procs:
        print(
            _table(
                "exporter process at 1 s scrape interval",
                procs,
                [
                    "backend",
                    "gpus",
                    "scrapes",
                    "http_scrape_ms_median",
                    "rss_mib_max",
                    "cpu_percent",
                    "meets_target",
                    "clean_exit",
                ],
            )
        )
    ok = all(r.get("meets_target") is not False for r in [*out.get("sim", []), *procs, out.get("nvml", {})])
    if "self_check" in out:
        ok = ok and out["self_check"]["ok"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
