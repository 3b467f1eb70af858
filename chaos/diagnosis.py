"""The one place chaos calls the RCA pipeline: switch this adapter when `gpuobs.rca.diagnose` lands."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

__all__ = ["diagnose_live", "signatures_matching"]


def diagnose_live(
    logs: Sequence[str] = (),
    prometheus: str | None = None,
    exporter: str | None = None,
    start: float | None = None,
    end: float | None = None,
    exclude: Collection[str] = (),
) -> Any:
    """Diagnose the stack's own signals over [start, end]: a `gpuobs.rca.report.Report`.

    `exclude` leaves signatures out of the catalog (known pre-existing conditions), so that they
    neither rank first nor absorb the new fault's evidence as their symptoms.
    """
    from gpuobs.rca.catalog import Catalog, load_catalog
    from gpuobs.rca.engine import diagnose_sources

    catalog = None
    if exclude:
        full = load_catalog()
        kept = tuple(s for s in full.signatures if s.id not in set(exclude))
        catalog = Catalog(signatures=kept, problems=full.problems)
    return diagnose_sources(
        logs=list(logs), prometheus=prometheus, exporter=exporter, start=start, end=end, catalog=catalog
    )


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
    from gpuobs.rca.catalog import Catalog, load_catalog
    from gpuobs.rca.collect import collect_evidence
    from gpuobs.rca.engine import diagnose

    collected = collect_evidence(
        logs=list(logs),
        prometheus=prometheus,
        exporter=exporter,
        traces=[],
        k8s_namespace=None,
        start=start,
        end=end,
        live=False,
    )
    found = set()
    for signature in load_catalog().signatures:
        if (
            signature.id in ids
            and diagnose(collected.evidence, Catalog(signatures=(signature,), problems=())).causes
        ):
            found.add(signature.id)
    return found
