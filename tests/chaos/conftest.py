"""Fixtures for the tests of chaos: one embedded local stack per module (serve --supervise, a simulated
exporter and, when installed, Prometheus), started through the game-day's own LocalStack."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support import paths

from gpuobs.chaos.gameday.stack import LocalStack
from gpuobs.chaos.incident import current

ARTIFACTS = paths.ARTIFACTS / "chaos"


@pytest.fixture(scope="module")
def stack(request: pytest.FixtureRequest) -> Iterator[LocalStack]:
    """The stack's folder (logs, kernel log, Prometheus data) is kept in build/test-artifacts/chaos/."""
    import shutil

    workdir = ARTIFACTS / f"stack-{request.module.__name__.rsplit('.', 1)[-1]}"
    shutil.rmtree(workdir, ignore_errors=True)
    local = LocalStack(workdir, prometheus=True)
    local.start()
    try:
        yield local
    finally:
        current().undo_all()
        local.stop()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
