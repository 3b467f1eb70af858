"""The report's findings from ranked candidates: each cause with its evidence chain, explained symptoms
and filled-in remediation, and the strongest anomalies when no signature matched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace

from gpuobs.evidence import Evidence, EvidenceKind, EvidenceTier
from gpuobs.rca.anomalies import ANOMALY_PREFIX, INCREASE_PREFIX
from gpuobs.rca.entities import EntityIndex, Item
from gpuobs.rca.prose import PROSE_VARIANT
from gpuobs.rca.ranking import CLOCK_SLACK_S, Candidate
from gpuobs.rca.report import Anomaly, Cause, EvidenceItem, Symptom, evidence_line, format_time
from gpuobs.rca.semantic import SEMANTIC_VARIANT
from gpuobs.rca.signature import TEXT_VARIANT, precedes

__all__ = ["MAX_EVIDENCE_ITEMS", "build_cause", "strongest_anomalies"]

_PLACEHOLDER = re.compile(r"\{(gpu|uuid|pci|host|pod|namespace|container|model)\}")
MAX_EVIDENCE_ITEMS = 12


_FIELDS = {
    "gpu": "gpu_index",
    "uuid": "gpu_uuid",
    "pci": "pci_bus_id",
    "host": "host",
    "pod": "pod",
    "namespace": "namespace",
    "container": "container",
    "model": "model",
}


def _known_values(cand: Candidate) -> dict[str, object]:
    """What the remediation may name: the cause's entity, and where it lacks a field (a kernel line has no
    host, a serving log no GPU), the one value every record of its evidence chain that has it agrees on."""
    records = [ev for ev, _ in (*cand.match.anchors, *cand.match.supporting)]
    values: dict[str, object] = {}
    for name, attr in _FIELDS.items():
        value = getattr(cand.entity, attr)
        if value is None:
            seen = {v for ev in records if (v := getattr(ev.entity, attr)) is not None}
            value = seen.pop() if len(seen) == 1 else None
        if value is not None:
            values[name] = value
    # Every {gpu} of the catalog is `nvidia-smi -i {gpu}`, which takes an index, a UUID or a PCI bus id.
    if "gpu" not in values:
        fallback = values.get("uuid", values.get("pci"))
        if fallback is not None:
            values["gpu"] = fallback
    return values


def _fill(step: str, values: dict[str, object]) -> str:
    def sub(m: re.Match[str]) -> str:
        value = values.get(m.group(1))
        return str(value) if value is not None else f"<{m.group(1)}>"

    return _PLACEHOLDER.sub(sub, step)


def _symptoms(
    cand: Candidate, evidence: Sequence[Evidence], index: EntityIndex, by_key: dict[str, list[int]]
) -> list[Symptom]:
    out = [
        Symptom(
            text=c.signature.title,
            count=len(c.match.anchors),
            time=c.first[0].time,
            id=c.signature.id,
            title=c.signature.title,
        )
        for c in cand.explained
    ]
    # records already in the evidence chain (anchors and support) are not listed again as symptoms
    anchors = {pos for _, pos in (*cand.match.anchors, *cand.match.supporting)}
    for child in cand.explained:
        anchors |= {pos for _, pos in child.match.anchors}
    quoted = {ev.raw.strip() for ev, _ in cand.match.anchors if ev.raw}
    keys = {k for m in cand.signature.explains for k in m.keys}
    positions = sorted({p for k in keys for p in by_key.get(k, ())}) if keys else range(len(evidence))
    groups: dict[tuple[str, str], list[Item]] = {}
    first = cand.first
    for pos in positions:
        ev = evidence[pos]
        if pos in anchors or ev.raw.strip() in quoted or not cand.signature.explains_record(ev):
            continue
        group = index.gpu_group(pos)
        if not ev.entity.overlaps(cand.entity) or (
            group is not None and not index.group_entity(group).overlaps(cand.entity)
        ):
            continue
        if (
            precedes((ev, pos), first, slack_s=0.0) is True
            and precedes(first, (ev, pos), CLOCK_SLACK_S) is False
        ):
            continue
        groups.setdefault((ev.key, str(ev.value)), []).append((ev, pos))
    for (key, _), items in groups.items():
        ev = items[0][0]
        out.append(Symptom(text=evidence_line(ev), count=len(items), time=ev.time, key=key, source=ev.source))
    return out


def _series_item(samples: list[Evidence], role: str) -> EvidenceItem:
    first = min(samples, key=lambda e: e.time if e.time is not None else float("inf"))
    item = EvidenceItem.of(first, role)
    if len(samples) == 1:
        return item
    numbers = [float(e.value) for e in samples if isinstance(e.value, int | float)]
    times = [e.time for e in samples if e.time is not None]
    head = item.text.rsplit(" ", 1)[0] if " " in item.text else item.text
    span = f" from {format_time(min(times))} to {format_time(max(times))}" if len(times) > 1 else ""
    if not numbers:
        values = "?"
    elif min(numbers) == max(numbers):
        values = f"{numbers[0]:g}"
    else:
        values = f"{min(numbers):g}..{max(numbers):g}"
    return replace(item, text=f"{head} = {values} ({len(samples)} samples{span})")


# The tier a cause rests on, by the name of the variant that held (every other variant is exact).
_TIERS = {
    TEXT_VARIANT: EvidenceTier.TEXT,
    PROSE_VARIANT: EvidenceTier.PROSE,
    SEMANTIC_VARIANT: EvidenceTier.SEMANTIC,
}


def build_cause(
    cand: Candidate, evidence: Sequence[Evidence], index: EntityIndex, by_key: dict[str, list[int]]
) -> Cause:
    """The report's cause for a ranked candidate: evidence chain (one line per metric series), explained
    symptoms and the remediation with the entity filled in."""
    items: list[EvidenceItem] = []
    seen: set[int] = set()
    series: dict[tuple[str, str, str], list[Evidence]] = {}
    for role, records in (("anchor", cand.match.anchors), ("support", cand.match.supporting)):
        for ev, pos in records:
            if pos in seen:
                continue
            seen.add(pos)
            if ev.kind in (EvidenceKind.METRIC, EvidenceKind.STATE):
                labels = ev.attrs.get("labels")
                ident = json.dumps(labels, sort_keys=True, default=str) if isinstance(labels, dict) else ""
                series.setdefault((role, ev.key, ident or repr(ev.entity)), []).append(ev)
            else:
                items.append(EvidenceItem.of(ev, role))
    # A metric series is one line of the chain (first sample's time, range of values), not one per sample.
    for (role, _, _), samples in series.items():
        items.append(_series_item(samples, role))
    items.sort(key=lambda e: (e.time is None, e.time or 0.0))
    if len(items) > MAX_EVIDENCE_ITEMS:
        items = [*items[: MAX_EVIDENCE_ITEMS - 1], items[-1]]
    sig = cand.signature
    known = _known_values(cand)
    entities = []
    for e in cand.entities:
        d = e.to_dict()
        if d and d not in entities:
            entities.append(d)
    return Cause(
        id=sig.id,
        title=sig.title,
        severity=sig.severity.value,
        confidence=cand.confidence,
        entity=cand.entity.to_dict(),
        explanation=sig.explanation,
        evidence=tuple(items),
        remediation=tuple(_fill(step, known) for step in sig.remediation),
        explained_symptoms=tuple(_symptoms(cand, evidence, index, by_key)),
        entities=tuple(entities),
        first_seen=cand.first[0].time,
        tier=_TIERS.get(cand.match.variant, EvidenceTier.EXACT).value,
    )


def strongest_anomalies(evidence: Sequence[Evidence], known_keys: set[str], limit: int = 8) -> list[Anomaly]:
    """The records most worth a look when nothing matched: detector anomalies, then catalog keys, by count."""
    groups: dict[tuple[str, str], list[Evidence]] = {}
    for ev in evidence:
        if ev.key.startswith(INCREASE_PREFIX) or ev.kind in (
            EvidenceKind.METRIC,
            EvidenceKind.STATE,
            EvidenceKind.SPAN,
        ):
            continue
        groups.setdefault((ev.key, str(ev.value)), []).append(ev)

    def score(item: tuple[tuple[str, str], list[Evidence]]) -> tuple[int, int, str, str]:
        (key, value), records = item
        weight = 3 if key.startswith(ANOMALY_PREFIX) else 2 if key in known_keys else 1
        return (-weight, -len(records), key, value)

    out = []
    for (key, value), records in sorted(groups.items(), key=score)[:limit]:
        times = [r.time for r in records if r.time is not None]
        first = records[0]
        out.append(
            Anomaly(
                key=key,
                value=None if value == "None" else value,
                count=len(records),
                first_time=min(times) if times else None,
                source=first.source,
                text=evidence_line(first),
                entity=first.entity.to_dict(),
            )
        )
    return out
