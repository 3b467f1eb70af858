"""Shared fixtures: the compat fixtures folder, free ports and a real Prometheus server."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.prometheus import PrometheusServer, free_port, prometheus_available

REPO_ROOT = Path(__file__).resolve().parents[1]

# `python -m pytest` from the repository puts its root first on sys.path (the `pytest` command, as
# `make test` runs it, does not). There the repository's own `kernels/` folder shadows Hugging Face's
# `kernels` package, which recent transformers import, and every test that loads transformers fails: the
# suite runs with the path the `pytest` command gives, however it was started.
sys.path[:] = [entry for entry in sys.path if entry not in ("", ".") and Path(entry).resolve() != REPO_ROOT]

# The semantic tier (rca/semantic.py) is off for the suite unless a test turns it on: its own tests
# (tests/rca/test_rca_semantic.py, and the real corpus run with it) do, while every other test pins the
# tiers it is about, and a `gpuobs diagnose` subprocess that ends with no cause would pay seconds of torch
# import for nothing it checks. Set here, so that subprocesses inherit it.
os.environ.setdefault("GPUOBS_SEMANTIC", "off")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def compat_dir() -> Path:
    """Other projects' fixtures, copied into the repo with their licenses (see its README.md)."""
    return REPO_ROOT / "tests" / "fixtures" / "compat"


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def spans() -> Iterator[tuple[Any, Any]]:
    """An OpenTelemetry SDK TracerProvider that keeps finished spans in memory: (provider, exporter)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[Callable[..., PrometheusServer]]:
    """Factory: `prom = prometheus(targets=[...])` starts a real server that stops after the test."""
    if not prometheus_available():
        pytest.fail("prometheus/promtool not installed: run `make test`, which installs them")
    started: list[PrometheusServer] = []

    def start(targets: list[str], **kwargs: Any) -> PrometheusServer:
        server = PrometheusServer(tmp_path / f"prom{len(started)}", targets, **kwargs)
        started.append(server.__enter__())
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)
