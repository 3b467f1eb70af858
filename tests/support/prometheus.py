"""A real Prometheus server (Debian package) on loopback with a temporary config, for tests.

Usage: `with PrometheusServer(tmp_path, targets=["127.0.0.1:9400"]) as prom: prom.wait_for_up()`.
Target discovery is throttled (~6 s to the first sample whatever the interval), so tests poll.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from support.procs import stop_process, wait_http_ready

__all__ = ["PrometheusServer", "free_port", "prometheus_available"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prometheus_available() -> bool:
    return shutil.which("prometheus") is not None and shutil.which("promtool") is not None


class PrometheusServer:
    """Starts `prometheus` scraping the given targets every `interval`; stops on exit."""

    def __init__(
        self,
        workdir: Path,
        targets: list[str],
        interval: str = "200ms",
        scheme: str = "http",
        extra_job_config: dict[str, Any] | None = None,
        rule_files: list[Path] | None = None,
        storage: Path | None = None,
    ) -> None:
        self.workdir = Path(workdir)
        self.targets = targets
        self.interval = interval
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.scheme = scheme
        self.extra_job_config = extra_job_config or {}
        self.rule_files = rule_files or []
        self.storage = storage or self.workdir / "prom-data"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.workdir / "prometheus.log"

    def _write_config(self) -> Path:
        job: dict[str, Any] = {
            "job_name": "gpuobs",
            "scheme": self.scheme,
            "static_configs": [{"targets": self.targets}],
        }
        job.update(self.extra_job_config)
        config = {
            "global": {"scrape_interval": self.interval, "evaluation_interval": self.interval},
            "rule_files": [str(p) for p in self.rule_files],
            "scrape_configs": [job],
        }
        path = self.workdir / "prometheus.yml"
        # JSON is valid YAML, so no YAML dependency is needed.
        path.write_text(json.dumps(config, indent=2))
        return path

    def __enter__(self) -> PrometheusServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self._write_config()
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={self.storage}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--web.enable-lifecycle",
                "--storage.tsdb.retention.time=1d",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        wait_http_ready(self.proc, f"{self.url}/-/ready", "prometheus", self.log_path)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            stop_process(self.proc)

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """Instant query; returns the result vector (raises on a PromQL error)."""
        params = {"query": expr}
        if at is not None:
            params["time"] = str(at)
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as resp:
            body = json.loads(resp.read())
        if body.get("status") != "success":
            raise RuntimeError(f"query {expr!r} failed: {body}")
        result = body["data"]["result"]
        return result if isinstance(result, list) else [result]

    def wait_for(self, expr: str, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Poll an instant query until it returns at least one series."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(expr)
            if result:
                return result
            if time.monotonic() > deadline:
                raise TimeoutError(f"no series for {expr!r} after {timeout} s")
            time.sleep(0.25)

    def wait_for_up(self, timeout: float = 30.0) -> None:
        """Wait until every target has been scraped successfully."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ups = self.query("up")
            if len(ups) >= len(self.targets) and all(r["value"][1] == "1" for r in ups):
                return
            time.sleep(0.25)
        raise TimeoutError(f"targets not up after {timeout} s; last: {self.query('up')}")
