"""The root-cause engine: align evidence by entity and time, score every catalog signature, rank causes.

The pipeline's second stage (`gpuobs.rca.diagnose` collects the evidence first). Steps: (1) derive
anomalies (trends, peers, counter increases) from the evidence (`anomalies`); (2) build an entity
index that joins a GPU's UUID, PCI bus id and index and fills a lone host in (`entities`); (3) for
each signature, split the records it reads by its scope (one slice per GPU, host, pod or model,
records that name no such entity joining every slice) and evaluate it on each slice; a signature
that raises is recorded as a problem and the run goes on (`ranking`); (4) drop candidates that another
candidate explains (its explains-matchers cover all their anchor records, on the same entity, and
they did not start clearly before it: an XID before the application's CUDA errors makes the XID
the cause) and list them under it; (5) rank by confidence, severity and time; (6) write each cause's
evidence chain and remediation (`findings`). With no candidate the report says "no known failure
signature" and lists the strongest anomalies; it never invents a cause. Deterministic: same
evidence, same report. Only when no signature holds does the prose tier get a say: its `prose_match`
records (a document's words likelier under one signature than under any other text, `rca.prose`)
become causes at a low confidence (`prose_candidates`). Only when that names nothing either is the
`fallback` asked (the pipeline's semantic tier, `rca.semantic`): its `semantic_match` records become causes
at the lowest confidence of all (`semantic_candidates`). It is not asked when the exact tier read the kernel's
or driver's own hardware reports (`DEVICE_REPORT_KEYS`) and no signature held on them: the catalog judged
them benign (a corrected AER, a non-fatal SXid), and the report's notes say so. When fewer than TOP_SLOTS
causes were named, `runners_up` (the same tier, ungated: the other tiers already read an incident) fills the
remaining slots with the signatures it finds likeliest, after them and at its confidence: on real text the
loudest fact is often a consequence, and a reader weighs the first three causes. The one exception to "after
them": the likeliest of those goes first when the catalog declares it the cause of the first cause named and
the tier reads it confidently (`_declared_cause_first`: the OOM is a fact, the leak is told). When every
cause named rests on words alone (the text or prose tier) and `incident` (the same tier's incident reading)
says the text tells of no incident (under GUESS_MIN_INCIDENT), those causes are withheld and the notes say
which: a question or a feature request that uses a failure's words names no failure. They are withheld as
well, one by one, where `support` (the same tier's probability of the cause's signature) is under
GUESS_MIN_SUPPORT: the words name a failure the text's meaning does not bear out (when none is left, the
last resort still reads the text, under its own gates).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence

from gpuobs.evidence import Entity, Evidence, EvidenceTier
from gpuobs.rca.anomalies import detect_anomalies
from gpuobs.rca.catalog import Catalog, load_catalog
from gpuobs.rca.entities import EntityIndex
from gpuobs.rca.findings import build_cause, strongest_anomalies
from gpuobs.rca.keys import DEVICE_REPORT_KEYS, PROSE_MATCH, SEMANTIC_MATCH, XID
from gpuobs.rca.prose import PROSE_CONFIDENCE_LOW, PROSE_VARIANT
from gpuobs.rca.ranking import Candidate, evaluate, resolve
from gpuobs.rca.report import Report
from gpuobs.rca.semantic import (
    GUESS_MIN_INCIDENT,
    GUESS_MIN_SUPPORT,
    SEMANTIC_CONFIDENCE_LOW,
    SEMANTIC_VARIANT,
)
from gpuobs.rca.signature import TEXT_VARIANT, Match, clear_text_cache

__all__ = [
    "MAX_CAUSES",
    "TOP_SLOTS",
    "WITHHELD_NOTE",
    "diagnose_evidence",
    "prose_candidates",
    "semantic_candidates",
]

logger = logging.getLogger(__name__)

MAX_CAUSES = 5
# The first causes a reader weighs (top-3): fewer causes named get alternatives up to this many.
TOP_SLOTS = 3


def diagnose_evidence(
    evidence: Sequence[Evidence],
    catalog: Catalog | None = None,
    *,
    problems: Sequence[str] = (),
    notes: Sequence[str] = (),
    window: tuple[float | None, float | None] = (None, None),
    max_causes: int = MAX_CAUSES,
    fallback: Callable[[], tuple[list[Evidence], list[str]]] | None = None,
    runners_up: Callable[[frozenset[str], int], tuple[list[Evidence], list[str]]] | None = None,
    incident: Callable[[], tuple[float | None, list[str]]] | None = None,
    support: Callable[[Sequence[str]], tuple[list[float | None], list[str]]] | None = None,
) -> Report:
    """Diagnose evidence records already collected against the catalog (default: the bundled one).

    The pipeline's second stage: `gpuobs.rca.diagnose` collects the inputs and calls this. `fallback`
    gives the last-resort tier's records and the problems it met; it is called only when no other tier
    named a cause. `runners_up(named, count)` gives that tier's records for up to `count` other signatures;
    it is called only when some cause but fewer than TOP_SLOTS were named. `incident()` gives that tier's
    incident reading of the text; it is called only when the word tiers alone named the causes.
    `support(signatures)` gives that tier's probability of each signature in the text; it is called once,
    for the causes, when the word tiers alone named them and the incident reading kept them.
    """
    catalog = catalog if catalog is not None else load_catalog()
    issues = [*problems, *catalog.problems]
    records = list(evidence)
    records.extend(detect_anomalies(records, issues))
    by_key: dict[str, list[int]] = defaultdict(list)
    for pos, ev in enumerate(records):
        by_key[ev.key].append(pos)
    index = EntityIndex(records)
    candidates: list[Candidate] = []
    for signature in catalog.signatures:
        try:
            cand = evaluate(signature, records, by_key, index)
        except Exception as exc:  # one broken signature must not stop the diagnosis; it is reported
            logger.warning("signature %s failed: %s", signature.id, exc)
            issues.append(f"[{signature.id}] {type(exc).__name__}: {exc}")
            continue
        if cand is not None:
            candidates.append(cand)
    causes = resolve(candidates, index)[:max_causes]
    if not causes:
        causes = prose_candidates(records, catalog)[:max_causes]
    notes = list(notes)
    withheld = False
    if incident is not None and causes and all(c.match.variant in _WORD_VARIANTS for c in causes):
        reading, met = incident()
        issues.extend(met)
        if reading is not None and reading < GUESS_MIN_INCIDENT:
            notes.append(_withheld_note(causes, reading))
            causes, withheld = [], True
    if support is not None and causes and all(c.match.variant in _WORD_VARIANTS for c in causes):
        probabilities, met = support([c.signature.id for c in causes])
        issues.extend(met)
        unsupported = [
            (cause, p)
            for cause, p in zip(causes, probabilities, strict=False)  # no reading: none for any
            if p is not None and p < GUESS_MIN_SUPPORT
        ]
        if unsupported:  # the last resort may still read the text, under its own gates
            notes.append(_unsupported_note(unsupported))
            causes = [c for c in causes if all(c is not u for u, _ in unsupported)]
    slots = min(TOP_SLOTS, max_causes)
    if runners_up is not None and 0 < len(causes) < slots:
        named = frozenset(c.signature.id for c in causes)
        found, met = runners_up(named, slots - len(causes))
        records.extend(found)
        issues.extend(met)
        others = [c for c in semantic_candidates(records, catalog) if c.signature.id not in named]
        causes = _declared_cause_first(causes, others)[:slots]
    judged = _judged_device_reports(records, catalog) if not causes and fallback is not None else []
    if judged:
        notes.append(
            "semantic tier not asked: the device's own reports were read and no signature holds on them "
            f"({', '.join(judged)})"
        )
    elif not causes and fallback is not None and not withheld:  # its gate is far above the reading
        found, met = fallback()
        records.extend(found)
        issues.extend(met)
    if not causes:
        causes = semantic_candidates(records, catalog)[:max_causes]
    known = {k for s in catalog.signatures for k in s.evidence_keys()}
    sources: dict[str, int] = defaultdict(int)
    for ev in evidence:
        sources[ev.source or "unknown"] += 1
    times = [ev.time for ev in evidence if ev.time is not None]
    start = window[0] if window[0] is not None else (min(times) if times else None)
    end = window[1] if window[1] is not None else (max(times) if times else None)
    built = tuple(build_cause(c, records, index, by_key) for c in causes)
    anomalies = tuple(strongest_anomalies(records, known))
    clear_text_cache()
    return Report(
        causes=built,
        anomalies=anomalies,
        problems=tuple(issues),
        evidence_count=len(evidence),
        sources=dict(sorted(sources.items())),
        window=(start, end),
        signatures_evaluated=len(catalog.signatures),
        notes=tuple(notes),
    )


# The variants of causes named from words alone, whose guesses the incident reading checks.
_WORD_VARIANTS = (TEXT_VARIANT, PROSE_VARIANT)
# How the report's note on causes withheld begins.
WITHHELD_NOTE = "withheld: "


def _withheld_note(causes: Sequence[Candidate], reading: float) -> str:
    """What was withheld and why, for the report's notes."""
    named = ", ".join(f"{c.signature.id} ({c.match.variant} tier)" for c in causes)
    return (
        f"{WITHHELD_NOTE}{named}; the text reads as no incident (semantic incident reading {reading:.2f}, "
        f"under {GUESS_MIN_INCIDENT}): a question, a feature request or a healthy log that uses a "
        "failure's words"
    )


def _unsupported_note(unsupported: Sequence[tuple[Candidate, float]]) -> str:
    """What was withheld because the text's meaning does not bear it out, for the report's notes."""
    named = ", ".join(
        f"{c.signature.id} ({c.match.variant} tier, semantic probability {p:.3f})" for c, p in unsupported
    )
    return (
        f"{WITHHELD_NOTE}{named}; the text's meaning does not bear it out (under {GUESS_MIN_SUPPORT}): its "
        "words name a failure it does not tell of"
    )


def _judged_device_reports(records: Sequence[Evidence], catalog: Catalog) -> list[str]:
    """The kernel's and driver's own hardware reports the exact tier read (`DEVICE_REPORT_KEYS`), as
    "key value" labels. No signature held on them, so the catalog judged them benign (a corrected AER, a
    non-fatal SXid, an Xid 31 from a desktop process); a guess by meaning must not overrule that. An Xid
    code no signature mentions was never judged: it does not count."""
    known_xids = {
        v for s in catalog.signatures for m in (*s.matchers(), *s.explains) if XID in m.keys for v in m.values
    }
    seen: dict[str, None] = {}
    for ev in records:
        if ev.key not in DEVICE_REPORT_KEYS or ev.tier is not EvidenceTier.EXACT:
            continue
        if ev.key == XID and str(ev.value) not in known_xids:
            continue
        seen.setdefault(f"{ev.key} {ev.value}" if ev.value is not None else ev.key)
    return list(seen)[:5]


def _declared_cause_first(causes: list[Candidate], others: list[Candidate]) -> list[Candidate]:
    """The named causes, then the meaning's alternatives; but the likeliest alternative goes first when the
    catalog says it causes the first cause named (`explains_signatures` / `explained_by`), the semantic tier
    reads it confidently (`confident`: its own fitted bar), and the exact tier has not already nested it under
    that cause (an Xid 31 logged after the application's illegal access is its symptom, by the clock). An OOM
    read as a fact in a story of memory growing epoch after epoch is a leak, not capacity."""
    if not causes or not others:
        return [*causes, *others]
    first, best = causes[0], others[0]
    record = best.match.anchors[0][0]
    nested = {c.signature.id for c in first.explained}  # `resolve` puts every descendant under its root
    if (
        best.signature.declares_explaining(first.signature)
        and record.attrs.get("confident") is True
        and best.signature.id not in nested
    ):
        return [best, *causes, *others[1:]]
    return [*causes, *others]


def prose_candidates(records: Sequence[Evidence], catalog: Catalog) -> list[Candidate]:
    """The prose tier's calls as candidates, one per signature named (its most confident record), best
    first; heard only when no signature held, so it never overrides an exact or text-tier cause."""
    return _tier_candidates(
        records, catalog, PROSE_MATCH, EvidenceTier.PROSE, PROSE_VARIANT, PROSE_CONFIDENCE_LOW
    )


def semantic_candidates(records: Sequence[Evidence], catalog: Catalog) -> list[Candidate]:
    """The semantic tier's calls as candidates, best first; heard only when no other tier named a cause."""
    return _tier_candidates(
        records, catalog, SEMANTIC_MATCH, EvidenceTier.SEMANTIC, SEMANTIC_VARIANT, SEMANTIC_CONFIDENCE_LOW
    )


def _tier_candidates(
    records: Sequence[Evidence], catalog: Catalog, key: str, tier: EvidenceTier, variant: str, low: float
) -> list[Candidate]:
    """The records of a last-resort tier (`key`, `tier`) as candidates, one per signature named (its most
    confident record), best first, each resting on that record alone under `variant`."""
    by_id = catalog.by_id()
    best: dict[str, tuple[float, int]] = {}
    for pos, ev in enumerate(records):
        if ev.key != key or ev.tier is not tier or str(ev.value) not in by_id:
            continue
        raw = ev.attrs.get("confidence")
        confidence = float(raw) if isinstance(raw, int | float) else low
        sig = str(ev.value)
        if sig not in best or confidence > best[sig][0]:
            best[sig] = (confidence, pos)
    out = []
    for sig, (confidence, pos) in sorted(best.items(), key=lambda it: (-it[1][0], it[0])):
        match = Match(
            signature=by_id[sig],
            confidence=confidence,
            anchors=((records[pos], pos),),
            variant=variant,
            supporting=(),
            matched_support=(),
        )
        out.append(Candidate(match=match, entity=Entity(), entities=[], confidence=confidence, explained=[]))
    return out
