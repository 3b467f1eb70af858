"""Child processes of the tests (Prometheus, Alertmanager, gpuobs export/serve): ready checks, stop, logs."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["json_lines", "like_a_terminal", "stop_process", "wait_http_ready"]


def like_a_terminal() -> None:
    """`preexec_fn` for a child that a test will Ctrl-C: SIGINT back to its default disposition.

    A shell starts background jobs with SIGINT ignored and exec keeps that, so under `make test &` (or a
    CI runner that does the same) Python never turns SIGINT into KeyboardInterrupt and a Ctrl-C test
    waits forever. A user's terminal delivers SIGINT to a process with the default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_http_ready(proc: subprocess.Popen[bytes], url: str, name: str, log_path: Path,
                    timeout: float = 20) -> None:
    """Poll `url` until it answers 200; an exit (with the log's tail) or the timeout raises."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited: {log_path.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=1) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{name} did not become ready in {timeout:g} s")


def stop_process(proc: subprocess.Popen[bytes], sig: signal.Signals = signal.SIGTERM,
                 timeout: float = 10) -> int:
    """Send `sig` to a running process and wait; kill it past `timeout`. Returns its exit code."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return int(proc.returncode)


def json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects among a log's lines (other lines skipped)."""
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out
