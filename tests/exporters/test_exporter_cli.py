"""`gpuobs export` and `gpuobs demo` as a user runs them: exit codes, one-line errors, settings precedence."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from support.exporter import ExporterProcess
from support.prometheus import free_port


def _run(
    *args: str, env: dict[str, str] | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuobs", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "GPUOBS_CONFIG": os.devnull, **(env or {})},
    )


def test_demo_runs_and_stops_by_itself() -> None:
    t0 = time.monotonic()
    out = _run("demo", "--exporter-only", "--json", timeout=30)
    elapsed = time.monotonic() - t0
    assert out.returncode == 0, out.stderr
    assert elapsed < 15, f"demo took {elapsed:.1f} s"
    data = json.loads(out.stdout)
    assert data["ok"] is True and len(data["gpus"]) == 8
    by_gpu = {row["gpu"]: row for row in data["gpus"]}
    assert by_gpu[5]["xid_last"] == 13, "the demo's injected XID shows"
    assert by_gpu[3]["throttle_reasons"], "the demo's heated GPU throttles"
    assert all(row["up"] is True and row["power_w"] > 0 for row in data["gpus"])
    # Stable snake_case keys with numbers, not the table's display labels (`util%`, `mem GiB`).
    for row in data["gpus"]:
        assert all(re.fullmatch(r"[a-z][a-z0-9_]*", key) for key in row), sorted(row)
        assert isinstance(row["memory_used_gib"], float) and row["memory_used_gib"] <= row["memory_total_gib"]


def test_demo_table_for_people() -> None:
    out = _run("demo", "--exporter-only", "--scrapes", "1", timeout=30, env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    assert "What gpuobs export sees" in out.stdout and "NVIDIA H200" in out.stdout
    # The table fits 80 columns whole: every GPU's memory on one line, the last column (up) not cut.
    assert all(len(line.rstrip()) <= 80 for line in out.stdout.splitlines()), out.stdout
    assert len(re.findall(r" \d+/\d+ ", out.stdout)) == 8, out.stdout
    assert out.stdout.count(" yes") + out.stdout.count(" LOST") == 8, out.stdout


def test_auto_backend_without_driver_exits_2() -> None:
    out = _run("export", "--backend", "auto", "--port", str(free_port()))
    assert out.returncode == 2
    assert "no NVIDIA driver answered" in out.stderr and "--backend sim" in out.stderr
    assert "Traceback" not in out.stderr


def test_bad_input_is_one_line_exit_2() -> None:
    for args, needle in (
        (["--naming", "prom"], "--naming"),
        (["--backend", "cuda"], "--backend"),
        (["--gpus", "0", "--backend", "sim"], "--gpus"),
        (["--log-level", "loud"], "--log-level"),
        (["--self-check"], "nvidia-smi"),
        # Durations: 0 and negative used to start an exporter (an OTLP push every 0 s spins); nan and inf
        # every NUMBER option refuses (tests/core/test_help.py).
        (["--backend", "sim", "--otlp-interval", "0"], "--otlp-interval must be a positive number of s"),
        (["--backend", "sim", "--otlp-interval", "-1"], "--otlp-interval must be a positive"),
        (["--backend", "sim", "--slow-interval", "-0.5"], "--slow-interval must be a positive"),
        (["--backend", "sim", "--history-minutes", "0"], "--history-minutes must be a positive num"),
        # A nanosecond interval spun a core and grew the flight recorder without bound; so did a history of
        # a billion minutes, more slowly.
        (["--backend", "sim", "--history-interval", "1e-9"], "--history-interval must be at least 0.1 s"),
        (["--backend", "sim", "--otlp-interval", "0.01"], "--otlp-interval must be at least 0.1 s"),
        (["--backend", "sim", "--history-minutes", "1e9"], "the flight recorder keeps at most 100,000"),
    ):
        out = _run("export", *args, "--port", str(free_port()))
        assert out.returncode == 2, (args, out.stderr)
        assert needle in out.stderr and "Traceback" not in out.stderr, out.stderr
    out = _run("demo", "--exporter-only", "--scrapes", "50")
    assert out.returncode == 2 and "--scrapes" in out.stderr


def test_sighup_stops_the_exporter_cleanly() -> None:
    """SIGHUP (a closed terminal, a process manager's reload) ended the exporter by its default action, with
    no "stopped" line and the OTLP pusher not flushed; now it stops as SIGTERM does, exit 0."""
    exporter = ExporterProcess("--backend", "sim", "--gpus", "1", "--pod-resources-socket", "none").start()
    assert exporter.proc is not None
    exporter.proc.send_signal(signal.SIGHUP)
    assert exporter.proc.wait(timeout=30) == 0, exporter.logs()[-2000:]
    assert "received SIGHUP, stopping" in exporter.logs() and "export_stopped" in exporter.logs()


def test_port_in_use_exits_2() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        out = _run(
            "export", "--backend", "sim", "--port", str(s.getsockname()[1]), "--pod-resources-socket", "none"
        )
    assert out.returncode == 2 and "cannot listen" in out.stderr


def test_settings_come_from_env_and_config_file(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "config.toml"
    config.write_text(
        f'[export]\nbackend = "sim"\ngpus = 3\nport = {port}\nnaming = "native"\n'
        'pod-resources-socket = "none"\n'
    )
    env = {"GPUOBS_CONFIG": str(config), "GPUOBS_EXPORT_NAMING": "dcgm"}
    with ExporterProcess(env=env, port=port, port_flag=False) as exp:
        text = exp.metrics()
        assert "DCGM_FI_DEV_GPU_TEMP{" in text, "GPUOBS_EXPORT_NAMING beats the config file"
        assert text.count("DCGM_FI_DEV_GPU_TEMP{") == 3, "gpus = 3 from the config file"
    assert exp.returncode == 0, exp.logs()
