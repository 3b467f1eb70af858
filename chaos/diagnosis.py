"""The one place chaos calls the RCA pipeline: switch this adapter when `gpuobs.rca.diagnose` lands."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["diagnose_live"]


def diagnose_live(
    logs: Sequence[str] = (),
    prometheus: str | None = None,
    exporter: str | None = None,
    start: float | None = None,
    end: float | None = None,
) -> Any:
    """Diagnose the stack's own signals over [start, end]: a `gpuobs.rca.report.Report`."""
    from gpuobs.rca.engine import diagnose_sources

    return diagnose_sources(logs=list(logs), prometheus=prometheus, exporter=exporter, start=start, end=end)
