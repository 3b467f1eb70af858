"""Regenerate the incident cases captured from the reference serving stack (`gpuobs serve`) on this CPU.

Each case starts `gpuobs serve` (the embedded tiny model) with fault injection on loopback, drives
it with real HTTP requests, injects a fault through `/admin/faults`, and saves the server's own JSON
log (stderr) and its `/metrics` text into `tests/rca/incidents/<case>/`. The server logs each injection
as a `fault_injected` event; those lines are dropped from the saved log so that a case carries only
what a real incident would leave behind. Run: `.venv/bin/python tests/support/capture_serving_incidents.py`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
INCIDENTS = ROOT / "tests" / "rca" / "incidents"
MODEL = "gpuobs-tiny-llama"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self) -> None:
        self.port = _port()
        self.log = Path(f"/tmp/gpuobs-serve-{self.port}.log")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gpuobs",
                "serve",
                "--port",
                str(self.port),
                "--address",
                "127.0.0.1",
                "--enable-fault-injection",
                "--memory-budget-bytes",
                "2000000000",
            ],
            stdout=subprocess.DEVNULL,
            stderr=self.log.open("w"),
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/ready", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:  # refused while starting, 503 while the model loads
                pass
            time.sleep(0.3)
        raise RuntimeError("gpuobs serve did not become ready")

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                raw = r.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode()

    def complete(self, prompt: str, max_tokens: int = 8) -> Any:
        return self.call(
            "POST", "/v1/completions", {"model": MODEL, "prompt": prompt, "max_tokens": max_tokens}
        )

    def save(self, case: str) -> None:
        time.sleep(0.5)  # let the last request lines reach the log
        folder = INCIDENTS / case
        folder.mkdir(parents=True, exist_ok=True)
        kept = [line for line in self.log.read_text().splitlines() if '"event": "fault_injected"' not in line]
        (folder / "gpuobs-serve.jsonl").write_text("\n".join(kept) + "\n")
        (folder / "metrics.prom").write_text(self.call("GET", "/metrics"))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)


def hot_swap(srv: Server) -> None:
    for i in range(4):
        srv.complete(f"request {i} before the swap")
    path = str(Path.home() / ".cache" / "gpuobs" / "models" / "gpuobs-tiny-llama-v1")
    srv.call("POST", "/admin/models/load", {"model": path, "name": MODEL, "wait": True, "timeout_s": 60})
    # The new engine runs out of device memory on its first steps (the old copy is still resident
    # on a real GPU): the injected OOM fails those steps exactly as PyTorch would.
    srv.call("POST", "/admin/faults/cuda_oom", {"repeat": True, "tried_bytes": 2 * 1024**3})
    for i in range(3):
        srv.complete(f"request {i} after the swap")
    srv.save("cuda_oom_hot_swap_serving")


def tokenizer(srv: Server) -> None:
    srv.complete("a normal request")
    srv.call("POST", "/admin/faults/tokenizer_mismatch", {})
    for i in range(3):
        srv.complete(f"request {i} with the wrong tokenizer")
    srv.save("tokenizer_mismatch_serving")


def healthy(srv: Server) -> None:
    for i in range(12):
        srv.complete(f"healthy request number {i}", max_tokens=16)
    srv.call("POST", "/v1/completions", {"model": "no-such-model", "prompt": "x"})  # a client error
    srv.save("healthy_serving_stack")


CASES: dict[str, Callable[[Server], None]] = {
    "hot_swap": hot_swap,
    "tokenizer": tokenizer,
    "healthy": healthy,
}


def main(names: list[str]) -> None:
    for name in names or list(CASES):
        srv = Server()
        try:
            CASES[name](srv)
        finally:
            srv.stop()
        print(f"captured {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
