"""A real `gpuobs export` subprocess on loopback for tests: a free port, /healthz wait, logs, clean stop.

    with ExporterProcess(*SIM_NODE, "--gpus", "2") as exp:
        exp.get("/metrics")
    assert exp.returncode == 0, exp.logs()

The process gets a clean environment: no inherited `GPUOBS_*` variable, no config file and no terminal
width (`COLUMNS`) unless the test passes them, so a developer's own settings never leak into a test.
A command line that must fail at start-up runs to its exit with `run()`.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from support.procs import json_lines, stop_process
from support.prometheus import free_port

__all__ = ["SIM_NODE", "ExporterProcess"]

SIM_NODE = ("--backend", "sim", "--pod-resources-socket", "none")
"""Flags for a simulated node that needs no kubelet: add `--gpus N` and the rest per test."""


class ExporterProcess:
    """`python -m gpuobs export [--port P] ARGS...`; ready once /healthz answers, stopped with SIGTERM."""

    def __init__(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        port: int | None = None,
        port_flag: bool = True,
        ssl_context: ssl.SSLContext | None = None,
        log_dir: Path | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.port = port or free_port()
        self.target = f"127.0.0.1:{self.port}"
        self.url = f"{'https' if ssl_context else 'http'}://{self.target}"
        self.ssl_context = ssl_context
        argv = [sys.executable, "-m", "gpuobs", "export"]
        if port_flag:
            argv += ["--port", str(self.port)]
        self.argv = argv + list(args)
        clean = {k: v for k, v in os.environ.items() if not k.startswith("GPUOBS_") and k != "COLUMNS"}
        self.env = {**clean, "GPUOBS_CONFIG": os.devnull, **(env or {})}
        folder = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="gpuobs-export-"))
        self.log_path = folder / f"export-{self.port}.log"
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None
        self.returncode: int | None = None

    def start(self, timeout: float = 60.0) -> ExporterProcess:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=self.cwd
            )
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def run(self, timeout: float = 60.0) -> subprocess.CompletedProcess[bytes]:
        """Run the command line to its exit with stdout and stderr captured, waiting for no readiness:
        for start-ups that must fail. Past `timeout` it is killed and TimeoutExpired raised."""
        return subprocess.run(
            self.argv, capture_output=True, timeout=timeout, check=False, env=self.env, cwd=self.cwd
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Poll /healthz until it answers 200; an exit or the timeout raises with the log's tail."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None, "not started"
            if self.proc.poll() is not None:
                raise RuntimeError(f"gpuobs export exited {self.proc.returncode}: {self.logs()[-3000:]}")
            try:
                if self.request("GET", "/healthz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"gpuobs export not healthy after {timeout} s: {self.logs()[-3000:]}")

    def request(
        self, method: str, path: str, body: Any = None, timeout: float = 10.0
    ) -> tuple[int, bytes]:
        """(status, body) of one request; HTTP error statuses are returned, not raised."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self.ssl_context) as resp:
                return int(resp.status), bytes(resp.read())
        except urllib.error.HTTPError as err:
            return int(err.code), bytes(err.read())

    def get(self, path: str, timeout: float = 10.0) -> bytes:
        """The body of GET `path`, which must answer 200."""
        status, body = self.request("GET", path, timeout=timeout)
        assert status == 200, f"GET {path}: {status} {body[:300]!r}"
        return body

    def metrics(self) -> str:
        return self.get("/metrics").decode()

    def fault(self, **body: object) -> None:
        """Inject a fault of the simulated backend (needs `--enable-fault-injection`)."""
        status, answer = self.request("POST", "/api/faults", body)
        assert status == 200, f"POST /api/faults {body}: {status} {answer[:300]!r}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def json_logs(self) -> list[dict[str, Any]]:
        return json_lines(self.logs())

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 15.0) -> int:
        """Send `sig` and wait; kill it past `timeout`. Returns (and keeps) the exit code."""
        if self.proc is None:
            return 0
        self.returncode = stop_process(self.proc, sig, timeout)
        return self.returncode

    def __enter__(self) -> ExporterProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
