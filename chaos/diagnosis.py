"""The one place chaos calls the RCA pipeline (`gpuobs.rca.diagnose`, the same call as `gpuobs diagnose`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

__all__ = ["diagnose_live", "signatures_matching"]


def _inputs(
    logs: Sequence[str], prometheus: str | None, exporter: str | None, start: float | None, end: float | None
) -> Any:
    from gpuobs.rca import DiagnoseInputs, TimeWindow

    return DiagnoseInputs(
        logs=tuple(logs), prometheus=prometheus, exporter=exporter, live=False, window=TimeWindow(start, end)
    )


def _catalog_without(exclude: Collection[str]) -> Any:
    from gpuobs.rca import Catalog, load_catalog

    full = load_catalog()
    if not exclude:
        return full
    return Catalog(
        signatures=tuple(s for s in full.signatures if s.id not in set(exclude)), problems=full.problems
    )


def diagnose_live(
    logs: Sequence[str] = (),
    prometheus: str | None = None,
    exporter: str | None = None,
    start: float | None = None,
    end: float | None = None,
    exclude: Collection[str] = (),
) -> Any:
    """Diagnose the stack's own signals over [start, end]: a `gpuobs.rca.Report`.

    `exclude` leaves signatures out of the catalog (known pre-existing conditions), so that they
    neither rank first nor absorb the new fault's evidence as their symptoms.
    """
    from gpuobs.rca import diagnose

    return diagnose(_inputs(logs, prometheus, exporter, start, end), catalog=_catalog_without(exclude))


def signatures_matching(
    ids: set[str],
    logs: Sequence[str] = (),
    prometheus: str | None = None,
    exporter: str | None = None,
    start: float | None = None,
    end: float | None = None,
) -> set[str]:
    """Which of the signatures `ids` match on their own over [start, end] (no ranking, no merging of causes).

    A game-day reuses its stack, and some node state persists after a fault is cleared (ECC totals, a
    pending row remap): a signature that already matched before the fault is not this fault's cause.
    """
    if not ids:
        return set()
    from gpuobs.rca import Catalog, DiagnoseInputs, collect, diagnose, load_catalog

    collected = collect(_inputs(logs, prometheus, exporter, start, end))
    found = set()
    for signature in load_catalog().signatures:
        if signature.id not in ids:
            continue
        alone = Catalog(signatures=(signature,), problems=())
        if diagnose(DiagnoseInputs(evidence=tuple(collected.evidence), live=False), catalog=alone).causes:
            found.add(signature.id)
    return found
