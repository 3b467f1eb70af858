"""Fixtures of the dashboards tests: one build of every artefact, a real Alertmanager, a Prometheus with
named scrape jobs and alerting, and `gpuobs export` / `gpuobs serve` subprocesses."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.alertmanager import ALERTMANAGER, Alertmanager, JobsPrometheus
from support.exporter import SIM_NODE, ExporterProcess

from gpuobs.dashboards.build import BuildResult, build
from gpuobs.dashboards.options import Options


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuildResult:
    """Every artefact of the default options, with Kubernetes manifests in OUT/k8s."""
    out = tmp_path_factory.mktemp("dashboards-build")
    return build(out, Options(), out / "k8s")


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[Alertmanager]:
    if shutil.which(ALERTMANAGER) is None:
        pytest.fail(f"{ALERTMANAGER} not installed: run `make system-deps` (Debian prometheus-alertmanager)")
    am = Alertmanager(tmp_path / "alertmanager").start()
    yield am
    am.stop()


@pytest.fixture
def jobs_prometheus(tmp_path: Path) -> Iterator[Callable[..., JobsPrometheus]]:
    started: list[JobsPrometheus] = []

    def start(jobs: dict[str, list[str]], alertmanager: str, **kwargs: Any) -> JobsPrometheus:
        server = JobsPrometheus(tmp_path / "prometheus", jobs, alertmanager, **kwargs)
        started.append(server.__enter__())
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)


@pytest.fixture
def sim_exporter() -> Iterator[Callable[[int], ExporterProcess]]:
    """`gpuobs export` on a simulated node of N GPUs with fault injection, stopped after the test."""
    started: list[ExporterProcess] = []

    def start(gpus: int) -> ExporterProcess:
        exporter = ExporterProcess(*SIM_NODE, "--gpus", str(gpus), "--enable-fault-injection",
                                   "--slow-interval", "0.5", "--log-level", "warning").start()
        started.append(exporter)
        return exporter

    yield start
    for exporter in started:
        exporter.stop()
