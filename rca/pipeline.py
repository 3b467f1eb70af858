"""The RCA pipeline as one call: inputs -> evidence (`collect`) -> ranked root causes (`engine`) -> Report.

`gpuobs diagnose` (with or without `--bundle`), the incident corpus and its benchmark, and chaos game
days call `diagnose`; `gpuobs bundle` calls its first stage, `collect`, to archive what diagnose reads.
"""

from __future__ import annotations

import re

from gpuobs.errors import InputError
from gpuobs.rca.catalog import Catalog
from gpuobs.rca.collect import collect
from gpuobs.rca.engine import MAX_CAUSES, diagnose_evidence
from gpuobs.rca.inputs import DiagnoseInputs
from gpuobs.rca.report import Report

__all__ = ["diagnose"]


def diagnose(
    inputs: DiagnoseInputs, *, catalog: Catalog | None = None, max_causes: int = MAX_CAUSES
) -> Report:
    """Read every input, then name the root causes with their evidence and remediation.

    `catalog` defaults to the bundled signatures (`catalog_with_overrides` adds a site's own). Raises
    InputError for a bad input the caller named (a missing, binary or malformed file, a damaged bundle)
    and when every source asked for failed, so that nothing could be read: a healthy verdict would then
    be a lie. A source that fails while others answer is listed in `Report.problems`.
    """
    inputs = inputs.resolved()
    collected = collect(inputs, catalog=catalog)
    if not collected.evidence and collected.unread and not inputs.live:
        # Nothing read at all: "no known failure signature" would hide that the inputs were not understood.
        raise InputError(f"no evidence could be read: {'; '.join(collected.unread + collected.problems)}")
    if not collected.evidence and collected.problems and not inputs.live:
        # plain "name: message" text: the CLI prints errors with rich markup, which eats "[name]"
        reasons = "; ".join(re.sub(r"^\[([^]]+)\] ", r"\1: ", p) for p in collected.problems)
        raise InputError(f"no evidence could be read: {reasons}")
    return diagnose_evidence(
        collected.evidence,
        catalog,
        problems=collected.problems,
        notes=[*collected.notes, *(f"not read: {u}" for u in collected.unread)],
        window=inputs.window.as_tuple(),
        max_causes=max_causes,
    )
