"""A real Alertmanager and a Prometheus with named scrape jobs and alerting, for rule and game-day tests."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

from support.procs import stop_process, wait_http_ready
from support.prometheus import PrometheusServer, free_port

__all__ = ["ALERTMANAGER", "Alertmanager", "JobsPrometheus", "http_get_json", "http_post_json"]

ALERTMANAGER = "prometheus-alertmanager"


def http_get_json(url: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.loads(resp.read())


def http_post_json(url: str, body: dict[str, Any], timeout: float = 30.0) -> Any:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read() or b"null")


class Alertmanager:
    """`prometheus-alertmanager` on loopback with one receiver that drops notifications; alerts it
    received are read back from its API v2."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = workdir / "alertmanager.log"

    def start(self) -> Alertmanager:
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "alertmanager.yml"
        config.write_text(json.dumps({
            "route": {"receiver": "blackhole", "group_by": ["alertname", "signature"]},
            "receivers": [{"name": "blackhole"}],
        }))
        self.proc = subprocess.Popen(
            [ALERTMANAGER, f"--config.file={config}", f"--storage.path={self.workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address="],
            stdout=self.log.open("wb"), stderr=subprocess.STDOUT,
        )
        wait_http_ready(self.proc, f"{self.url}/-/ready", "alertmanager", self.log)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)

    def alerts(self) -> list[dict[str, Any]]:
        result = http_get_json(f"{self.url}/api/v2/alerts")
        return list(result)


class JobsPrometheus(PrometheusServer):
    """PrometheusServer with one scrape job per name (the rules select jobs) and an Alertmanager."""

    def __init__(self, workdir: Path, jobs: dict[str, list[str]], alertmanager: str, **kwargs: Any) -> None:
        super().__init__(workdir, [t for targets in jobs.values() for t in targets], **kwargs)
        self.jobs = jobs
        self.alertmanager = alertmanager

    def _write_config(self) -> Path:
        config = {
            "global": {"scrape_interval": self.interval, "evaluation_interval": self.interval},
            "rule_files": [str(p) for p in self.rule_files],
            "alerting": {"alertmanagers": [{"static_configs": [{"targets": [self.alertmanager]}]}]},
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": targets}]}
                               for job, targets in self.jobs.items()],
        }
        path = self.workdir / "prometheus.yml"
        path.write_text(json.dumps(config, indent=2))
        return path

    def alerts(self) -> list[dict[str, Any]]:
        """Alerts of Prometheus's rule evaluation (pending and firing)."""
        return list(http_get_json(f"{self.url}/api/v1/alerts")["data"]["alerts"])
