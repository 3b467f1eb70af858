"""The Grafana dashboards, one module each, and the registry that `build` writes out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grafana_foundation_sdk.models.dashboard import Dashboard

    from gpuobs.dashboards.options import Options

__all__ = ["BoardSpec", "boards"]


@dataclass(frozen=True)
class BoardSpec:
    """One dashboard: its uid, the file it is written to, and the function that builds it."""

    uid: str
    file: str
    build: Callable[[Options], Dashboard]


def boards() -> list[BoardSpec]:
    """Every gpuobs dashboard (imported here so that the SDK loads only when dashboards are built)."""
    from gpuobs.dashboards.boards import fleet, gpu_detail, incident, serving

    modules: tuple[ModuleType, ...] = (fleet, gpu_detail, serving, incident)
    return [BoardSpec(m.UID, m.FILE, m.dashboard) for m in modules]
