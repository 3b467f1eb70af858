"""The RCA pipeline as one call: inputs -> evidence (`collect`) -> ranked root causes (`engine`) -> Report.

`gpuobs diagnose` (with or without `--bundle`), the incident corpus and its benchmark, and chaos game
days call `diagnose`; `gpuobs bundle` calls its first stage, `collect`, to archive what diagnose reads.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable
from dataclasses import replace

from gpuobs.errors import InputError
from gpuobs.evidence import Evidence
from gpuobs.rca.catalog import Catalog
from gpuobs.rca.collect import collect
from gpuobs.rca.embedding import SemanticUnavailable, encoder_installed
from gpuobs.rca.engine import MAX_CAUSES, diagnose_evidence
from gpuobs.rca.inputs import DiagnoseInputs
from gpuobs.rca.readers.files import MAX_EXPANDED_BYTES
from gpuobs.rca.report import Report
from gpuobs.rca.semantic import default_semantic_model, semantic_records, semantic_switch

__all__ = ["diagnose"]

logger = logging.getLogger(__name__)


def diagnose(
    inputs: DiagnoseInputs,
    *,
    catalog: Catalog | None = None,
    max_causes: int = MAX_CAUSES,
    semantic: bool | None = None,
) -> Report:
    """Read every input, then name the root causes with their evidence and remediation.

    `catalog` defaults to the bundled signatures (`catalog_with_overrides` adds a site's own). `semantic`
    sets the last-resort semantic tier (`semantic_switch`: None = on when its extra is installed, unless
    GPUOBS_SEMANTIC says otherwise). Raises InputError for a bad input the caller named (a missing, binary
    or malformed file, a damaged bundle, the semantic tier asked for without its extra) and when every
    source asked for failed, so that nothing could be read: a healthy verdict would then be a lie. A
    source that fails while others answer is listed in `Report.problems`.
    """
    inputs = inputs.resolved()
    try:
        reader = _semantic_reader(inputs, semantic_switch(semantic))
    except SemanticUnavailable as exc:
        raise InputError(str(exc)) from exc
    if reader is not None and "-" in inputs.logs and inputs.stdin is None:
        # Standard input reads once: keep its bytes, so that the semantic tier can read a pasted text too.
        inputs = replace(inputs, stdin=sys.stdin.buffer.read(MAX_EXPANDED_BYTES + 1))
        reader = _semantic_reader(inputs, semantic_switch(semantic))
    collected = collect(inputs, catalog=catalog)
    if not collected.evidence and reader is not None and (collected.unread or collected.problems):
        # Nothing any other tier could read: the semantic tier may still read the words.
        try:
            found = reader()
            collected.evidence.extend(found)
            if found:  # read after all, by meaning: "not read" would now be wrong
                collected.notes.extend(
                    f"read by the semantic tier only: {u.split(': ', 1)[0]} (no parser or known wording "
                    "recognised a line of it)"
                    for u in collected.unread
                )
                collected.unread.clear()
        except SemanticUnavailable as exc:
            collected.problems.append(f"[semantic] {exc}")
        except Exception as exc:  # as a crashed source: listed, and the diagnosis goes on
            logger.exception("semantic tier crashed")
            collected.problems.append(f"[semantic] unexpected {type(exc).__name__}: {exc}")
        reader = None
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
        fallback=reader,
    )


def _semantic_reader(inputs: DiagnoseInputs, setting: bool | None) -> Callable[[], list[Evidence]] | None:
    """The semantic tier over the log inputs' texts (a bundle's archived logs included), to be called only
    when no other tier named a cause; None when it is off, not installed (in auto mode) or there is no log
    text."""
    if setting is False or not (inputs.logs or inputs.bundle):
        return None
    if not encoder_installed():
        if setting:
            raise SemanticUnavailable("the semantic tier needs its extra: pip install 'gpuobs[semantic]'")
        return None

    def read() -> list[Evidence]:
        from gpuobs.rca.readers.bundle import bundle_log_texts
        from gpuobs.rca.readers.files import log_heads

        if default_semantic_model() is None:  # no fitted weights: the tier has nothing to say
            return []
        texts = log_heads(list(inputs.logs), inputs.stdin)
        if inputs.bundle:
            texts += bundle_log_texts(inputs.bundle)
        return semantic_records(texts)

    return read
