"""The one serialisable diagnosis result: ranked causes with evidence and remediation, anomalies, problems.

`Report.to_dict()` is the `gpuobs diagnose --json` object; `to_markdown()` the `--markdown` file.
Rich terminal rendering lives in the CLI (gpuobs/cli/diagnose.py).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from gpuobs.evidence import Entity, Evidence, EvidenceTier
from gpuobs.rca.keys import SEMANTIC_READERS

__all__ = [
    "CJK_READER",
    "CJK_READ_NOTE",
    "Anomaly",
    "Cause",
    "EvidenceItem",
    "Report",
    "Symptom",
    "clip_words",
    "entity_dict",
    "format_time",
    "semantic_reader",
]

NO_CAUSE = "no known failure signature"
_, CJK_READER = SEMANTIC_READERS
# Why a CJK text's guess by meaning may differ from an English one's: said by every report form.
CJK_READ_NOTE = (
    "the text is written in Chinese, Japanese or Korean, so a multilingual sentence encoder read it beside "
    "the English one"
)


def format_time(t: float | None) -> str | None:
    """ISO-8601 UTC with milliseconds, or None for evidence that carried no timestamp."""
    if t is None:
        return None
    return dt.datetime.fromtimestamp(t, tz=dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_ENTITY_FIELDS = tuple(f.name for f in fields(Entity))


def entity_dict(entity: Entity) -> dict[str, Any]:
    """`Entity.to_dict()` without `dataclasses.asdict`'s deep copy (called once per evidence item)."""
    return {name: value for name in _ENTITY_FIELDS if (value := getattr(entity, name)) is not None}


def clip_words(text: str, limit: int) -> str:
    """`text` within `limit` characters, cut at a word boundary with an ellipsis (never mid-word)."""
    if len(text) <= limit:
        return text
    head = text[: limit - 2]
    cut = head.rfind(" ")
    return (head[:cut] if cut > limit // 2 else head).rstrip() + " …"


def evidence_line(ev: Evidence) -> str:
    """The quoted text of a record: its raw line, else a key=value summary."""
    if ev.raw:
        return clip_words(ev.raw.strip(), 400)
    parts = [ev.key]
    if ev.value is not None:
        parts.append(f"= {ev.value:g}" if isinstance(ev.value, float) else f"= {ev.value}")
    labels = ev.attrs.get("labels")
    if isinstance(labels, dict) and labels:
        parts.append("{" + ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) + "}")
    return " ".join(parts)


def semantic_reader(ev: Evidence) -> str | None:
    """Which semantic reader named a record (`SEMANTIC_READERS`), None for another tier's record."""
    reader = ev.attrs.get("reader") if ev.tier is EvidenceTier.SEMANTIC else None
    return reader if reader in SEMANTIC_READERS else None


@dataclass(frozen=True)
class EvidenceItem:
    """One quoted record in a cause's evidence chain; `role` is anchor, support or symptom; `tier` says
    whether an exact parser extracted it (`exact`), the text tier recognised its wording (`text`), the
    prose tier's model read it as a description of the failure (`prose`) or the semantic tier's encoder
    read the text as most like it (`semantic`). `reader` says which of the semantic tier's readers did
    (`default`, or `cjk` for Chinese, Japanese or Korean text, read with a multilingual encoder too); None
    for the other tiers."""

    time: float | None
    source: str
    text: str
    key: str
    role: str
    entity: dict[str, Any] = field(default_factory=dict)
    tier: str = EvidenceTier.EXACT.value
    reader: str | None = None

    @property
    def time_iso(self) -> str | None:
        return format_time(self.time)

    @classmethod
    def of(cls, ev: Evidence, role: str) -> EvidenceItem:
        return cls(
            time=ev.time,
            source=ev.source,
            text=evidence_line(ev),
            key=ev.key,
            role=role,
            entity=entity_dict(ev.entity),
            tier=ev.tier.value,
            reader=semantic_reader(ev),
        )

    @property
    def tier_label(self) -> str:
        """The tier as a table cell shows it: `semantic (cjk)` when the CJK reader read the text."""
        return f"{self.tier} ({self.reader})" if self.reader == CJK_READER else self.tier

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["time_iso"] = self.time_iso
        return out


@dataclass(frozen=True)
class Symptom:
    """Something a cause explains: another candidate signature (`id` set) or a group of records."""

    text: str
    count: int
    time: float | None
    id: str | None = None
    title: str | None = None
    key: str | None = None
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["time_iso"] = format_time(self.time)
        return out


@dataclass(frozen=True)
class Cause:
    id: str
    title: str
    severity: str
    confidence: float
    entity: dict[str, Any]
    explanation: str
    evidence: tuple[EvidenceItem, ...]
    remediation: tuple[str, ...]
    explained_symptoms: tuple[Symptom, ...] = ()
    entities: tuple[dict[str, Any], ...] = ()
    first_seen: float | None = None
    tier: str = EvidenceTier.EXACT.value

    @property
    def tier_note(self) -> str:
        """Why the confidence is what it is, in words (empty for an exact match)."""
        if self.tier == EvidenceTier.TEXT.value:
            return (
                "text tier: recognised by the wording of the lines quoted, no structured fact; "
                "lower confidence"
            )
        if self.tier == EvidenceTier.PROSE.value:
            return (
                "prose tier: no line was recognised; the words of the lines quoted are likeliest under "
                "this failure (a learned guess); low confidence"
            )
        if self.tier == EvidenceTier.SEMANTIC.value:
            return (
                "semantic tier: a sentence encoder reads the whole text as most like this failure, and the "
                "lines quoted read most like it (a guess by meaning, asked when no other tier named a cause "
                "or for alternatives when fewer than three causes were named, put first when the catalog "
                "declares it the cause of the first one named); lowest confidence" + self.reader_note
            )
        return ""

    @property
    def reader_note(self) -> str:
        """Why a CJK text's guess by meaning may differ from an English one's (empty otherwise)."""
        return f"; {CJK_READ_NOTE}" if any(item.reader == CJK_READER for item in self.evidence) else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "severity": self.severity,
            "confidence": round(self.confidence, 3),
            "tier": self.tier,
            "entity": self.entity,
            "entities": list(self.entities),
            "first_seen": self.first_seen,
            "first_seen_iso": format_time(self.first_seen),
            "explanation": self.explanation,
            "evidence": [e.to_dict() for e in self.evidence],
            "remediation": list(self.remediation),
            "explained_symptoms": [s.to_dict() for s in self.explained_symptoms],
        }


@dataclass(frozen=True)
class Anomaly:
    """A notable group of records that no signature claimed (shown when no cause is found)."""

    key: str
    value: str | None
    count: int
    first_time: float | None
    source: str
    text: str
    entity: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["first_time_iso"] = format_time(self.first_time)
        return out


@dataclass(frozen=True)
class Report:
    causes: tuple[Cause, ...]
    anomalies: tuple[Anomaly, ...]
    problems: tuple[str, ...]
    evidence_count: int
    sources: dict[str, int]
    window: tuple[float | None, float | None] = (None, None)
    signatures_evaluated: int = 0
    notes: tuple[str, ...] = ()

    @property
    def top(self) -> Cause | None:
        return self.causes[0] if self.causes else None

    @property
    def verdict(self) -> str:
        top = self.top
        return f"{top.id}: {top.title}" if top else NO_CAUSE

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "top_cause": self.top.id if self.top else None,
            "causes": [c.to_dict() for c in self.causes],
            "anomalies": [a.to_dict() for a in self.anomalies],
            "problems": list(self.problems),
            "notes": list(self.notes),
            "evidence_count": self.evidence_count,
            "sources": dict(self.sources),
            "window": {
                "start": self.window[0],
                "end": self.window[1],
                "start_iso": format_time(self.window[0]),
                "end_iso": format_time(self.window[1]),
            },
            "signatures_evaluated": self.signatures_evaluated,
        }

    def to_markdown(self) -> str:
        """The report as Markdown, for tickets and post-mortems."""
        lines = ["# gpuobs diagnose", ""]
        lines.append(f"**Verdict:** {self.verdict}")
        lines.append(
            f"Evidence: {self.evidence_count} records from "
            + (", ".join(f"{k} ({v})" for k, v in sorted(self.sources.items())) or "no source")
        )
        lines.append("")
        for rank, cause in enumerate(self.causes, 1):
            lines.append(f"## {rank}. {cause.title} (`{cause.id}`)")
            lines.append("")
            lines.append(
                f"- confidence: {cause.confidence:.2f}, severity: {cause.severity}, tier: {cause.tier}"
            )
            if cause.tier_note:
                lines.append(f"- {cause.tier_note}")
            if cause.entity:
                lines.append("- entity: " + ", ".join(f"{k}={v}" for k, v in cause.entity.items()))
            lines.append(f"- {cause.explanation}")
            lines.append("")
            lines.append("| time | source | role | tier | evidence |")
            lines.append("|---|---|---|---|---|")
            for item in cause.evidence:
                text = item.text.replace("|", "\\|").replace("\n", " ")
                lines.append(
                    f"| {item.time_iso or '-'} | {item.source} | {item.role} | {item.tier_label} | `{text}` |"
                )
            if cause.explained_symptoms:
                lines.append("")
                lines.append("Explained symptoms:")
                for s in cause.explained_symptoms:
                    label = f"`{s.id}` " if s.id else ""
                    lines.append(f"- {label}{s.text} (x{s.count})")
            lines.append("")
            lines.append("Remediation:")
            lines.append("")
            lines.extend(f"    {step}" for step in cause.remediation)
            lines.append("")
        if not self.causes and self.anomalies:
            lines.append("## Strongest anomalies")
            lines.append("")
            for a in self.anomalies:
                lines.append(f"- {format_time(a.first_time) or '-'} {a.key} x{a.count}: `{a.text}`")
            lines.append("")
        if self.problems:
            lines.append("## Problems")
            lines.extend(f"- {p}" for p in self.problems)
            lines.append("")
        if self.notes:  # what was not read, and why a tier was not asked: a post-mortem needs it too
            lines.append("## Notes")
            lines.extend(f"- {n}" for n in self.notes)
            lines.append("")
        return "\n".join(lines)
