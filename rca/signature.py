"""The failure-signature interface: declarative matchers over Evidence, and a signature built from them.

A `Matcher` selects evidence records (by key, kind, value, numeric bounds, text, attributes and
metric labels). A `Clause` is a named any-of group of matchers with a minimum count and time
relations to other clauses. A `Signature` is the catalog entry: the clauses that must all hold,
the evidence that raises confidence, the evidence that rules it out, and the symptoms it explains.
Signatures are data (see `gpuobs.rca.catalog`); this module only knows how to evaluate them on a
slice of evidence that the engine has already aligned by entity.
"""

from __future__ import annotations

import enum
import importlib
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuobs.errors import RcaError
from gpuobs.evidence import Evidence, EvidenceKind, EvidenceTier
from gpuobs.rca.keys import (
    GPU_FALLEN_OFF_BUS,
    GPU_RESET_REQUIRED,
    HUNG_TASK,
    KERNEL_PANIC,
    MACHINE_CHECK,
    PCIE_AER,
    SOFT_LOCKUP,
    SXID,
    TEXT_MATCH,
    XID,
)

__all__ = [
    "TEXT_MIN_SCORE",
    "TEXT_VARIANT",
    "Clause",
    "Match",
    "Matcher",
    "Relation",
    "Scope",
    "Severity",
    "Signature",
    "SignatureError",
    "Variant",
    "clear_text_cache",
    "evidence_text",
    "precedes",
    "resolve_metric",
    "text_confidence",
]


class SignatureError(RcaError, ValueError):
    """A catalog entry that cannot be built (unknown field, bad regex, unknown metric constant)."""


class Severity(enum.StrEnum):
    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Scope(enum.StrEnum):
    """What a signature is about: evidence is aligned per GPU, host, pod or model, or taken whole."""

    GPU = "gpu"
    HOST = "host"
    POD = "pod"
    MODEL = "model"
    GLOBAL = "global"


def resolve_metric(ref: str) -> str:
    """The native metric name behind `domain.CONSTANT` (a MetricSpec in gpuobs.names.<domain>)."""
    domain, _, constant = ref.partition(".")
    if not domain or not constant:
        raise SignatureError(f"metric reference {ref!r} is not of the form domain.CONSTANT")
    try:
        module = importlib.import_module(f"gpuobs.names.{domain}")
    except ImportError as exc:
        raise SignatureError(f"metric reference {ref!r}: no module gpuobs.names.{domain}") from exc
    spec = getattr(module, constant, None)
    native = getattr(spec, "native", None)
    if not isinstance(native, str):
        raise SignatureError(f"metric reference {ref!r}: gpuobs.names.{domain} has no MetricSpec {constant}")
    return native


_TEXT_CACHE: dict[int, tuple[Evidence, str]] = {}
_TEXT_CACHE_MAX = 500_000


def evidence_text(ev: Evidence) -> str:
    """The text a `text` pattern is searched in: the raw line plus the message-like attributes."""
    hit = _TEXT_CACHE.get(id(ev))
    if hit is not None and hit[0] is ev:
        return hit[1]
    text = _evidence_text(ev)
    if len(_TEXT_CACHE) >= _TEXT_CACHE_MAX:
        _TEXT_CACHE.clear()
    _TEXT_CACHE[id(ev)] = (ev, text)
    return text


def clear_text_cache() -> None:
    """Forget cached texts (the engine calls it after each diagnosis so records can be freed)."""
    _TEXT_CACHE.clear()


def _evidence_text(ev: Evidence) -> str:
    parts = [ev.raw]
    for name in ("message", "process", "reason", "method", "model"):
        value = ev.attrs.get(name)
        if isinstance(value, str) and value not in ev.raw:
            parts.append(value)
    if isinstance(ev.value, str) and ev.value not in ev.raw:
        parts.append(ev.value)
    return "\n".join(parts)


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return None if math.isnan(float(value)) else float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _norm(value: Any) -> str:
    """Values compare as text so that 79, 79.0 and "79" are the same XID."""
    number = _as_number(value)
    if number is not None and number.is_integer():
        return str(int(number))
    return str(value).strip().lower()


# Entity fields an attribute condition may name when the record carries no attribute of that name: a
# `kubectl describe` state line names its pod only in the entity the reader filled from the header.
_ENTITY_FIELDS = frozenset({"pod", "namespace", "container"})


def _label(ev: Evidence, name: str) -> Any:
    labels = ev.attrs.get("labels")
    if isinstance(labels, Mapping) and name in labels:
        return labels[name]
    if name in ev.attrs:
        return ev.attrs[name]
    if name in _ENTITY_FIELDS:
        return getattr(ev.entity, name, None)
    return None


@dataclass(frozen=True)
class Matcher:
    """Selects evidence records; every given condition must hold (an empty condition is ignored)."""

    keys: tuple[str, ...] = ()
    kinds: tuple[EvidenceKind, ...] = ()
    values: frozenset[str] = frozenset()
    not_values: frozenset[str] = frozenset()
    min: float | None = None
    max: float | None = None
    text: re.Pattern[str] | None = None
    not_text: re.Pattern[str] | None = None
    attrs: tuple[tuple[str, re.Pattern[str]], ...] = ()
    not_attrs: tuple[tuple[str, re.Pattern[str]], ...] = ()
    attr_min: tuple[tuple[str, float], ...] = ()
    attr_max: tuple[tuple[str, float], ...] = ()
    weight: float = 0.0
    label: str = ""

    def matches(self, ev: Evidence, negatives: bool = True) -> bool:
        """Whether the record is selected; with `negatives=False` the not_* conditions are ignored (is the
        record of the kind this matcher looks for, whatever its exclusions then decided)."""
        if self.keys and ev.key not in self.keys:
            return False
        if self.kinds and ev.kind not in self.kinds:
            return False
        if self.values and _norm(ev.value) not in self.values:
            return False
        if negatives and self.not_values and _norm(ev.value) in self.not_values:
            return False
        if self.min is not None or self.max is not None:
            number = _as_number(ev.value)
            if number is None:
                return False
            if self.min is not None and number < self.min:
                return False
            if self.max is not None and number > self.max:
                return False
        if self.text is not None or (negatives and self.not_text is not None):
            text = evidence_text(ev)
            if self.text is not None and not self.text.search(text):
                return False
            if negatives and self.not_text is not None and self.not_text.search(text):
                return False
        for name, pattern in self.attrs:
            value = _label(ev, name)
            if value is None or not pattern.search(str(value)):
                return False
        for name, pattern in self.not_attrs if negatives else ():
            value = _label(ev, name)
            if value is not None and pattern.search(str(value)):
                return False
        for name, bound in self.attr_min:
            number = _as_number(_label(ev, name))
            if number is None or number < bound:
                return False
        for name, bound in self.attr_max:
            number = _as_number(_label(ev, name))
            if number is None or number > bound:
                return False
        return True

    def select(self, evidence: Iterable[Evidence]) -> list[Evidence]:
        return [ev for ev in evidence if self.matches(ev)]


class Relation(enum.StrEnum):
    BEFORE = "before"
    AFTER = "after"
    NEAR = "near"


def _repeats(ev: Evidence) -> int:
    """How many identical lines one record stands for (sources fold repeats into `attrs["repeats"]`)."""
    value = ev.attrs.get("repeats")
    return value if isinstance(value, int) and value > 1 else 1


@dataclass(frozen=True)
class Clause:
    """Any of `matchers`, at least `count` records (or `distinct` values of an attribute), over `sustained_s`.

    `relation`/`other`/`within_s`: this clause's first record must come before/after the first
    record of clause `other` (within `within_s` seconds when given). Records without a time
    satisfy a relation only by their order in the same source.
    """

    name: str
    matchers: tuple[Matcher, ...]
    count: int = 1
    distinct: str = ""
    sustained_s: float = 0.0
    relation: Relation | None = None
    other: str = ""
    within_s: float | None = None

    def keys(self) -> set[str]:
        return {k for m in self.matchers for k in m.keys}

    def select(self, evidence: Iterable[Evidence]) -> list[Evidence]:
        return [ev for ev in evidence if any(m.matches(ev) for m in self.matchers)]

    def holds(self, selected: Sequence[Evidence]) -> bool:
        if self.distinct:
            seen = {
                str(_label(ev, self.distinct)) for ev in selected if _label(ev, self.distinct) is not None
            }
            if len(seen) < max(self.count, 2):
                return False
        elif sum(_repeats(ev) for ev in selected) < self.count:
            return False
        if self.sustained_s > 0:
            times = [ev.time for ev in selected if ev.time is not None]
            if len(times) < 2 or max(times) - min(times) < self.sustained_s:
                return False
        return True


_STATE_KINDS = (EvidenceKind.METRIC, EvidenceKind.STATE)
# Records of the kernel's log (dmesg, journalctl -k): the driver's Xid and SXid reports, AER, MCE, panics,
# lockups. Pasted into one excerpt without timestamps beside a program's output, they keep a clock of their
# own: a person pastes the error they saw, then "dmesg shows ...", so the paste's order across the two logs
# says what was shown first, not what happened. (An OOM kill is left out: Slurm and the kubelet report it in
# their own logs too, on the program's clock.) A record read off a line the NVIDIA kernel module printed
# ("NVRM" in it: RmInitAdapter failed, a GSP boot timeout, an API mismatch) is the kernel's too, whatever its
# key.
_KERNEL_LOG_KEYS = frozenset(
    {
        XID,
        SXID,
        GPU_FALLEN_OFF_BUS,
        GPU_RESET_REQUIRED,
        PCIE_AER,
        MACHINE_CHECK,
        KERNEL_PANIC,
        HUNG_TASK,
        SOFT_LOCKUP,
    }
)


def precedes(a: tuple[Evidence, int], b: tuple[Evidence, int], slack_s: float = 1.0) -> bool | None:
    """Whether a comes no later than b: by time, else by line (or position) in one log of one source;
    None if unknown.

    Metric and state readings say what held when they were read (a snapshot, a window summary), not
    when it began: they are never ordered against other records. Nor are untimed kernel-log records
    against a program's records of the same paste (two logs, two clocks).
    """
    (ea, ia), (eb, ib) = a, b
    if ea.kind in _STATE_KINDS or eb.kind in _STATE_KINDS:
        return None
    if ea.time is not None and eb.time is not None:
        return ea.time <= eb.time + slack_s
    if ea.source == eb.source and _from_kernel_log(ea) == _from_kernel_log(eb):
        la, lb = ea.attrs.get("line"), eb.attrs.get("line")
        if isinstance(la, int) and isinstance(lb, int):
            return la <= lb
        return ia <= ib
    return None


def _from_kernel_log(ev: Evidence) -> bool:
    """Whether the record was read off the kernel's log (its key, or a line of the NVIDIA kernel module)."""
    return ev.key in _KERNEL_LOG_KEYS or "NVRM" in (ev.raw or "")


# The text tier (parsers.text): a signature holds on its wording alone when the phrases found near each
# other score at least TEXT_MIN_SCORE (noisy-OR of the phrases' weights); its confidence then stays in
# [TEXT_CONFIDENCE_LOW, TEXT_CONFIDENCE_HIGH], under what most exact variants give, so a structured
# fact outranks a paraphrase. The two figures were chosen on the tune split of the real-text corpus.
TEXT_VARIANT = "text"
TEXT_MIN_SCORE = 0.6
TEXT_CONFIDENCE_LOW = 0.35
TEXT_CONFIDENCE_HIGH = 0.55
# An exact match that the text tier agrees with gains this much (it breaks ties between exact causes).
TEXT_AGREEMENT_BONUS = 0.02


def text_confidence(score: float) -> float:
    """The confidence of a cause that rests on the text tier alone, from its phrase score (0..1)."""
    span = max(1e-9, 1.0 - TEXT_MIN_SCORE)
    share = min(1.0, max(0.0, (score - TEXT_MIN_SCORE) / span))
    return round(TEXT_CONFIDENCE_LOW + (TEXT_CONFIDENCE_HIGH - TEXT_CONFIDENCE_LOW) * share, 4)


def _text_score(ev: Evidence) -> float:
    score = ev.attrs.get("score")
    return float(score) if isinstance(score, int | float) and not isinstance(score, bool) else 0.0


@dataclass(frozen=True)
class Variant:
    """One way a signature can hold: clauses that must all hold, with its own base confidence."""

    name: str
    require: tuple[Clause, ...]
    base: float
    rule_out: tuple[Matcher, ...] = ()


@dataclass(frozen=True)
class Match:
    """A signature that held on one aligned slice of evidence."""

    signature: Signature
    confidence: float
    anchors: tuple[tuple[Evidence, int], ...]
    variant: str
    supporting: tuple[tuple[Evidence, int], ...]
    matched_support: tuple[str, ...]

    @property
    def first(self) -> tuple[Evidence, int]:
        return _earliest(self.anchors)


def _earliest(items: Sequence[tuple[Evidence, int]]) -> tuple[Evidence, int]:
    timed = [it for it in items if it[0].time is not None]
    if timed:
        return min(timed, key=lambda it: (it[0].time, it[1]))
    return min(items, key=lambda it: it[1])


@dataclass(frozen=True)
class Signature:
    """One catalog entry. `evaluate` returns a Match on the given evidence slice, or None."""

    id: str
    title: str
    severity: Severity
    scope: Scope
    explanation: str
    remediation: tuple[str, ...]
    variants: tuple[Variant, ...]
    support: tuple[Matcher, ...] = ()
    rule_out: tuple[Matcher, ...] = ()
    explains: tuple[Matcher, ...] = ()
    priority: int = 50
    tags: tuple[str, ...] = field(default_factory=tuple)
    explains_signatures: tuple[str, ...] = ()
    explained_by: tuple[str, ...] = ()
    phrases: tuple[tuple[str, float], ...] = ()

    def evidence_keys(self) -> set[str]:
        """Every evidence key the signature reads, the symptoms it explains included."""
        return self.match_keys() | {k for m in self.explains for k in m.keys}

    def match_keys(self) -> set[str]:
        """The evidence keys that decide whether the signature holds (require, support, rule-out)."""
        keys = {k for m in self.matchers() for k in m.keys}
        if self.phrases:
            keys.add(TEXT_MATCH)
        return keys

    def declares_explaining(self, other: Signature) -> bool:
        """Whether the catalog states that this signature, when it holds, is the cause of `other`."""
        return other.id in self.explains_signatures or self.id in other.explained_by

    def explains_record(self, ev: Evidence) -> bool:
        return any(m.matches(ev) for m in self.explains)

    def matchers(self) -> list[Matcher]:
        return [m for v in self.variants for c in v.require for m in c.matchers] + [
            *(m for v in self.variants for m in v.rule_out),
            *self.support,
            *self.rule_out,
        ]

    def evaluate(self, indexed: Sequence[tuple[Evidence, int]]) -> Match | None:
        """Score the signature on one entity's evidence (records paired with their global position).

        The holding variant with the highest base gives the anchors and base confidence; any rule-out record
        drops the signature; each support matcher with a hit adds its weight.
        """
        by_key: dict[str, list[tuple[Evidence, int]]] = {}
        for it in indexed:
            by_key.setdefault(it[0].key, []).append(it)

        def candidates(matchers: Sequence[Matcher]) -> list[tuple[Evidence, int]]:
            keys = {k for m in matchers for k in m.keys}
            if any(not m.keys for m in matchers):
                return list(indexed)
            return sorted((it for k in keys for it in by_key.get(k, ())), key=lambda it: it[1])

        for matcher in self.rule_out:
            if any(matcher.matches(ev) for ev, _ in candidates([matcher])):
                return None
        best: tuple[Variant, list[tuple[Evidence, int]]] | None = None
        for variant in self.variants:
            anchors = self._variant_anchors(variant, candidates)
            if anchors is not None and (best is None or variant.base > best[0].base):
                best = (variant, anchors)
        worded = [
            it
            for it in by_key.get(TEXT_MATCH, ())
            if it[0].value == self.id and it[0].tier is EvidenceTier.TEXT
        ]
        if best is None:
            return self._text_match(worded)
        variant, anchors = best
        confidence = variant.base
        supporting: list[tuple[Evidence, int]] = []
        matched: list[str] = []
        if any(_text_score(ev) >= TEXT_MIN_SCORE for ev, _ in worded):
            confidence += TEXT_AGREEMENT_BONUS
            supporting.extend(sorted(worded, key=lambda it: -_text_score(it[0]))[:3])
            matched.append("the text tier names it too")
        for matcher in self.support:
            hits = [it for it in candidates([matcher]) if matcher.matches(it[0])]
            if hits:
                confidence += matcher.weight
                supporting.extend(hits[:5])
                matched.append(matcher.label or ",".join(matcher.keys) or "support")
        return Match(
            signature=self,
            confidence=max(0.05, min(0.99, confidence)),
            anchors=tuple(_dedupe(anchors)),
            variant=variant.name,
            supporting=tuple(_dedupe(supporting)),
            matched_support=tuple(matched),
        )

    def _text_match(self, worded: Sequence[tuple[Evidence, int]]) -> Match | None:
        """The text-tier match: the best-scoring wording of this signature, if it reaches the threshold."""
        strong = [it for it in worded if _text_score(it[0]) >= TEXT_MIN_SCORE]
        if not strong:
            return None
        best = max(_text_score(ev) for ev, _ in strong)
        return Match(
            signature=self,
            confidence=text_confidence(best),
            anchors=tuple(_dedupe(strong)),
            variant=TEXT_VARIANT,
            supporting=(),
            matched_support=(),
        )

    def _variant_anchors(
        self,
        variant: Variant,
        candidates: Callable[[Sequence[Matcher]], list[tuple[Evidence, int]]],
    ) -> list[tuple[Evidence, int]] | None:
        for matcher in variant.rule_out:
            if any(matcher.matches(ev) for ev, _ in candidates([matcher])):
                return None
        chosen: dict[str, list[tuple[Evidence, int]]] = {}
        for clause in variant.require:
            selected = [
                it for it in candidates(clause.matchers) if any(m.matches(it[0]) for m in clause.matchers)
            ]
            if not selected or not clause.holds([ev for ev, _ in selected]):
                return None
            chosen[clause.name] = selected
        for clause in variant.require:
            if clause.relation is None:
                continue
            if clause.other not in chosen:
                raise SignatureError(f"{self.id}: clause {clause.name} relates to unknown {clause.other}")
            if not self._relation_holds(clause, chosen[clause.name], chosen[clause.other]):
                return None
        return [it for items in chosen.values() for it in items]

    @staticmethod
    def _relation_holds(
        clause: Clause, mine: Sequence[tuple[Evidence, int]], theirs: Sequence[tuple[Evidence, int]]
    ) -> bool:
        # Some pair of records must satisfy the relation (and the window, when both are timed).
        for a in mine:
            for b in theirs:
                ta, tb = a[0].time, b[0].time
                if clause.relation is Relation.NEAR:
                    if ta is None or tb is None or clause.within_s is None or abs(ta - tb) <= clause.within_s:
                        return True
                    continue
                first, second = (a, b) if clause.relation is Relation.BEFORE else (b, a)
                if precedes(first, second, slack_s=0.0) is False:
                    continue
                t1, t2 = first[0].time, second[0].time
                if (
                    clause.within_s is not None
                    and t1 is not None
                    and t2 is not None
                    and t2 - t1 > clause.within_s
                ):
                    continue
                return True
        return False


def _dedupe(items: Iterable[tuple[Evidence, int]]) -> list[tuple[Evidence, int]]:
    seen: set[int] = set()
    out = []
    for it in sorted(items, key=lambda it: it[1]):
        if it[1] not in seen:
            seen.add(it[1])
            out.append(it)
    return out
