"""A real `gpuobs serve` subprocess on loopback for tests: free ports, readiness wait, logs, clean stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

from support.procs import json_lines, stop_process
from support.prometheus import free_port

if TYPE_CHECKING:
    import grpc

    from gpuobs.serving.grpc_api import PredictClient

__all__ = ["ServeProcess", "http_json", "overload_grpc"]


def http_json(method: str, url: str, body: Any = None, timeout: float = 30) -> tuple[int, Any]:
    """(status, parsed JSON body) of one request; HTTP errors are returned, not raised."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw)
        except ValueError:
            return exc.code, raw.decode(errors="replace")


def overload_grpc(server: ServeProcess, client: PredictClient, calls: int) -> list[grpc.StatusCode]:
    """The status codes of `calls` Predict calls made at once (3 s deadline each) while the server's gRPC
    handlers hang on the grpc_block fault, which is cleared again on the way out whatever happens.

    Calls past what the server admits in flight are refused (RESOURCE_EXHAUSTED); the admitted ones wait
    on the blocked handlers until their deadline (DEADLINE_EXCEEDED). Needs `--enable-fault-injection`.
    """
    import grpc

    status, body = http_json("POST", f"{server.url}/admin/faults/grpc_block", {"hang_s": 20})
    assert status == 200, body
    codes: list[grpc.StatusCode] = []

    def call() -> None:
        try:
            client.predict([[1]], timeout=3)
            codes.append(grpc.StatusCode.OK)
        except grpc.RpcError as exc:
            codes.append(exc.code())

    threads = [threading.Thread(target=call) for _ in range(calls)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    finally:
        http_json("DELETE", f"{server.url}/admin/faults/grpc_block")
    return codes


class ServeProcess:
    """`python -m gpuobs serve --port P --grpc-port G ARGS...`, stopped with SIGTERM on exit."""

    def __init__(
        self,
        workdir: Path,
        *args: str,
        env: dict[str, str] | None = None,
        grpc: bool = True,
        port_flag: bool = True,
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.grpc_port = free_port() if grpc else None
        self.url = f"http://127.0.0.1:{self.port}"
        self.grpc_target = f"127.0.0.1:{self.grpc_port}"
        self.log_path = self.workdir / f"serve-{self.port}.log"
        argv = [sys.executable, "-m", "gpuobs", "serve", "--address", "127.0.0.1"]
        if port_flag:  # else the test sets the port another way (environment, config file)
            argv += ["--port", str(self.port)]
        if self.grpc_port:
            argv += ["--grpc-port", str(self.grpc_port)]
        self.argv = argv + list(args)
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120) -> ServeProcess:
        if self.proc is not None and self.proc.poll() is None:
            # a second server on the same ports would fail to bind while /ready still answered from the
            # first, which stop() would then never stop
            raise RuntimeError(f"gpuobs serve is already running (pid {self.proc.pid})")
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            self.argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=self.workdir
        )
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"gpuobs serve exited {self.proc.returncode}: {self.logs()[-3000:]}")
            try:
                status, body = http_json("GET", f"{self.url}/ready", timeout=2)
                if status == 200:
                    return dict(body)
            except OSError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"gpuobs serve not ready after {timeout} s: {self.logs()[-3000:]}")

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def json_logs(self) -> list[dict[str, Any]]:
        return json_lines(self.logs())

    def metrics(self) -> str:
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=10) as resp:
            return resp.read().decode()

    def stop(self, timeout: float = 20) -> int:
        if self.proc is None:
            return 0
        return stop_process(self.proc, signal.SIGTERM, timeout)

    def __enter__(self) -> ServeProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
