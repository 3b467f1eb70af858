"""The embedded local stack a game-day breaks: `gpuobs serve --supervise` (HTTP and gRPC Predict), a
simulated-node exporter and, when installed, a Prometheus on loopback with the project's generated alert
rules; or a stack the user names.

Everything listens on 127.0.0.1 with free ports; logs go to files in the work folder, where the RCA
probes read them (the serve JSON log, the kernel-log file the node actions write).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["LocalStack", "StackTarget", "alert_rules"]

logger = logging.getLogger(__name__)


@dataclass
class StackTarget:
    """Where a game-day's experiments point: URLs and the log files the diagnosis reads."""

    serving_url: str = "http://127.0.0.1:8000"
    exporter_url: str = ""
    prometheus_url: str = ""
    serve_log: str = ""
    kernel_log: str = ""
    exporter_log: str = ""
    grpc_target: str = ""
    """host:port of serve's gRPC Predict (`--grpc-port`); empty when it serves HTTP only."""
    extra: dict[str, Any] = field(default_factory=dict)

    def configuration(self) -> dict[str, Any]:
        """The experiment configuration values (they override each experiment's defaults)."""
        out = {
            "serving_url": self.serving_url,
            "exporter_url": self.exporter_url,
            "prometheus_url": self.prometheus_url,
            "serve_log": self.serve_log,
            "kernel_log": self.kernel_log,
            "exporter_log": self.exporter_log,
        }
        if self.grpc_target:
            out["grpc_target"] = self.grpc_target
        return {**out, **self.extra}


def _free_ports(n: int) -> list[int]:
    """`n` distinct free loopback ports (held open together, so no two are the same)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def _get(url: str, timeout: float = 2.0) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return int(resp.status)
    except OSError:
        return 0


def alert_rules(workdir: Path, serving_job: str = "serving", exporter_job: str = "exporter") -> list[Path]:
    """Write the project's generated recording and alert rules (gpuobs.dashboards) into `workdir/rules`.

    Every `for:` is cut to 1 s and event alerts look back 1 min, so that an alert fires within a
    game-day's seconds; the expressions are the ones a deployment loads.
    """
    from gpuobs.dashboards.options import Options
    from gpuobs.dashboards.rules.prometheus import dump_yaml, rule_files

    options = Options(
        exporter_job=exporter_job, serving_job=serving_job, for_override="1s", event_window="1m"
    )
    folder = workdir / "rules"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, document in rule_files(options).items():
        path = folder / name
        path.write_text(dump_yaml(document), encoding="utf-8")
        paths.append(path)
    return paths


class LocalStack:
    """Starts and stops the embedded stack in `workdir`; `target` says where it is."""

    def __init__(self, workdir: Path, prometheus: bool = True, gpus: int = 4, scrape_interval: str = "500ms"):
        self.workdir = Path(workdir).resolve()  # the parts run with it as their working directory
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.gpus = gpus
        self.scrape_interval = scrape_interval
        self.want_prometheus = prometheus and shutil.which("prometheus") is not None
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.serve_port, self.grpc_port, self.export_port, prom_port = _free_ports(4)
        self.prom_port = prom_port if self.want_prometheus else 0
        self.target = StackTarget(
            serving_url=f"http://127.0.0.1:{self.serve_port}",
            exporter_url=f"http://127.0.0.1:{self.export_port}",
            prometheus_url=f"http://127.0.0.1:{self.prom_port}" if self.want_prometheus else "",
            serve_log=str(self.workdir / "serve.log"),
            kernel_log=str(self.workdir / "kernel.log"),
            exporter_log=str(self.workdir / "export.log"),
            grpc_target=f"127.0.0.1:{self.grpc_port}",
        )

    def _spawn(self, name: str, argv: list[str], log: Path) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with log.open("ab") as fh:
            self.procs[name] = subprocess.Popen(
                argv, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=self.workdir, start_new_session=True
            )

    def _prometheus_config(self) -> Path:
        rules = alert_rules(self.workdir)
        config = {
            "global": {"scrape_interval": self.scrape_interval, "evaluation_interval": self.scrape_interval},
            "rule_files": [str(p) for p in rules],
            "scrape_configs": [
                {"job_name": "serving", "static_configs": [{"targets": [f"127.0.0.1:{self.serve_port}"]}]},
                {"job_name": "exporter", "static_configs": [{"targets": [f"127.0.0.1:{self.export_port}"]}]},
            ],
        }
        path = self.workdir / "prometheus.yml"
        path.write_text(json.dumps(config, indent=1))
        return path

    def start(self, timeout_s: float = 180.0) -> StackTarget:
        """Start every part and wait until each answers; raises RuntimeError with the log tail if not."""
        py = [sys.executable, "-m", "gpuobs"]
        Path(self.target.kernel_log).touch()
        self._spawn(
            "serve",
            [
                *py,
                "serve",
                "--supervise",
                "--enable-fault-injection",
                "--address",
                "127.0.0.1",
                "--port",
                str(self.serve_port),
                "--grpc-port",
                str(self.grpc_port),
                # a small simulated device (on CPU), so that a leak fills it within a game-day's seconds
                "--memory-budget-bytes",
                str(256 * 1024**2),
                "--device",
                "cpu",
                # a stalled step shows on /health within seconds, and the supervisor logs why; a hang
                # fault (20 s) ends before the restart would
                "-E",
                "stall_budget_s=4",
                "--unhealthy-restart-s",
                "60",
            ],
            Path(self.target.serve_log),
        )
        self._spawn(
            "export",
            [
                *py,
                "export",
                "--backend",
                "sim",
                "--gpus",
                str(self.gpus),
                "--enable-fault-injection",
                "--address",
                "127.0.0.1",
                "--port",
                str(self.export_port),
                "--history-interval",
                "0.5",
                "--slow-interval",
                "0.5",
                "--log-level",
                "info",
            ],
            self.workdir / "export.log",
        )
        deadline = time.monotonic() + timeout_s
        self._wait_ready(
            {"serve": f"{self.target.serving_url}/ready", "export": f"{self.target.exporter_url}/healthz"},
            deadline,
            timeout_s,
        )
        if self.want_prometheus:
            # started once its targets answer, so that their start-up is no scrape failure in its data
            self._spawn(
                "prometheus",
                [
                    "prometheus",
                    f"--config.file={self._prometheus_config()}",
                    f"--storage.tsdb.path={self.workdir / 'prometheus-data'}",
                    f"--web.listen-address=127.0.0.1:{self.prom_port}",
                    "--log.level=warn",
                ],
                self.workdir / "prometheus.log",
            )
            self._wait_ready({"prometheus": f"{self.target.prometheus_url}/-/ready"}, deadline, timeout_s)
        return self.target

    def _wait_ready(self, checks: dict[str, str], deadline: float, timeout_s: float) -> None:
        pending = dict(checks)
        while pending and time.monotonic() < deadline:
            for name, url in list(pending.items()):
                proc = self.procs[name]
                if proc.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"{name} exited with {proc.returncode}: {self.log_tail(name)}")
                if _get(url) == 200:
                    del pending[name]
            time.sleep(0.2)
        if pending:
            self.stop()
            raise RuntimeError(f"not ready after {timeout_s:.0f} s: {', '.join(pending)}")

    def log_tail(self, name: str, chars: int = 2000) -> str:
        path = {
            "serve": Path(self.target.serve_log),
            "export": self.workdir / "export.log",
            "prometheus": self.workdir / "prometheus.log",
        }[name]
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def stop(self, timeout_s: float = 20.0) -> None:
        """SIGTERM every part (the supervisor drains its worker), then SIGKILL what is left."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name, proc in self.procs.items():
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                logger.warning("%s did not stop in %.0f s; killing it", name, timeout_s)
                proc.kill()
                proc.wait()
        self.procs.clear()

    def __enter__(self) -> LocalStack:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
