"""The root-cause engine: align evidence by entity and time, score every catalog signature, rank causes.

Steps: (1) derive anomalies (trends, peers, counter increases) from the evidence; (2) build an
entity index that joins a GPU's UUID, PCI bus id and index (and fills a lone host in); (3) for
each signature, split the records it reads by its scope (one slice per GPU, host, pod or model,
records that name no such entity joining every slice) and evaluate it on each slice; a signature
that raises is recorded as a problem and the run goes on; (4) drop candidates that another
candidate explains (its explains-matchers cover all their anchor records, on the same entity, and
they did not start clearly before it: an XID before the application's CUDA errors makes the XID
the cause) and list them under it; (5) rank by confidence, severity and time. With no candidate
the report says "no known failure signature" and lists the strongest anomalies; it never invents
a cause. Deterministic: same evidence, same report.
"""

from __future__ import annotations

import json
import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.rca.anomalies import ANOMALY_PREFIX, INCREASE_PREFIX, detect_anomalies
from gpuobs.rca.catalog import Catalog, load_catalog
from gpuobs.rca.report import (
    Anomaly,
    Cause,
    EvidenceItem,
    Report,
    Symptom,
    entity_dict,
    evidence_line,
    format_time,
)
from gpuobs.rca.signature import Match, Scope, Severity, Signature, clear_text_cache, precedes

__all__ = ["EntityIndex", "diagnose", "diagnose_sources", "normalise_pci"]

logger = logging.getLogger(__name__)

_SEVERITY_RANK = {Severity.CRITICAL: 3, Severity.HIGH: 2, Severity.MEDIUM: 1, Severity.LOW: 0}
_PCI = re.compile(r"(?:[0-9a-f]{4,8}:)?([0-9a-f]{2}):([0-9a-f]{2})(?:\.[0-7])?\s*$", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"\{(gpu|uuid|pci|host|pod|namespace|container|model)\}")
# An explained symptom may precede its cause by this much (clocks of dmesg and app logs differ).
CLOCK_SLACK_S = 2.0
MAX_CAUSES = 5
GENERIC_TAG = "generic"
_IDENTITY_ATTRS = frozenset({"gpu_index", "uuid", "UUID", "gpu_uuid", "pci", "pci_bus_id"})
MAX_EVIDENCE_ITEMS = 12


def normalise_pci(value: object) -> str | None:
    """`bus:device` of a PCI address in any of its spellings (0000:3b:00.0, 00000000:3B:00.0, 3b:00)."""
    if value is None:
        return None
    text = str(value).strip().removeprefix("PCI:").removeprefix("pci:")
    m = _PCI.search(text)
    return f"{m.group(1).lower()}:{m.group(2).lower()}" if m else None


def _label(ev: Evidence, *names: str) -> object:
    labels = ev.attrs.get("labels")
    for name in names:
        if isinstance(labels, dict) and labels.get(name) not in (None, ""):
            return labels[name]
        if ev.attrs.get(name) not in (None, ""):
            return ev.attrs[name]
    return None


class EntityIndex:
    """Joins the identities of each GPU (UUID, PCI bus id, index per host) seen across all records."""

    def __init__(self, evidence: Sequence[Evidence]) -> None:
        hosts = {ev.entity.host for ev in evidence if ev.entity.host}
        self.only_host = next(iter(hosts)) if len(hosts) == 1 else None
        self._parent: dict[str, str] = {}
        self._nodes: list[tuple[str, ...]] = []
        # Many records share one identity (every metric sample of a GPU): resolve each identity once.
        seen: dict[tuple[object, ...], tuple[tuple[str, ...], Entity]] = {}
        for ev in evidence:
            ident = self._identity(ev)
            if ident not in seen:
                gpu = self._gpu_entity(ev)
                nodes = self._identity_nodes(gpu)
                seen[ident] = (nodes, gpu)
                for other in nodes[1:]:
                    self._union(nodes[0], other)
            self._nodes.append(seen[ident][0])
        self._group_entity: dict[str, Entity] = {}
        for nodes, gpu in seen.values():
            if nodes:
                root = self._find(nodes[0])
                self._group_entity[root] = self._group_entity.get(root, Entity()).merged(gpu)
        self._root: dict[tuple[str, ...], str] = {}

    def host(self, ev: Evidence) -> str | None:
        return ev.entity.host or self.only_host

    @staticmethod
    def _identity(ev: Evidence) -> tuple[object, ...]:
        e = ev.entity
        extra: tuple[object, ...] = ()
        attrs = ev.attrs
        # A UUID names its GPU on its own; the first record of each identity links the rest.
        if (
            e.gpu_uuid is None
            and (e.gpu_index is None or e.pci_bus_id is None)
            and attrs
            and ("labels" in attrs or not _IDENTITY_ATTRS.isdisjoint(attrs))
        ):
            extra = tuple(
                None if (v := _label(ev, n)) is None else str(v)
                for n in ("gpu_index", "uuid", "UUID", "gpu_uuid", "pci", "pci_bus_id")
            )
        return (e.host, e.gpu_uuid, e.gpu_index, e.pci_bus_id, extra)

    def _gpu_entity(self, ev: Evidence) -> Entity:
        e = ev.entity
        index = e.gpu_index
        if index is None:
            raw = _label(ev, "gpu_index")
            index = int(raw) if isinstance(raw, int | str) and str(raw).isdigit() else None
        uuid = e.gpu_uuid or _label(ev, "uuid", "UUID", "gpu_uuid")
        pci = e.pci_bus_id or _label(ev, "pci", "pci_bus_id")
        return Entity(
            host=self.host(ev),
            gpu_uuid=str(uuid) if uuid else None,
            gpu_index=index,
            pci_bus_id=str(pci) if pci else None,
        )

    @staticmethod
    def _identity_nodes(gpu: Entity) -> tuple[str, ...]:
        host = gpu.host or ""
        nodes = []
        if gpu.gpu_uuid:
            nodes.append(f"u:{gpu.gpu_uuid.lower()}")
        pci = normalise_pci(gpu.pci_bus_id)
        if pci:
            nodes.append(f"p:{host}|{pci}")
        if gpu.gpu_index is not None:
            nodes.append(f"i:{host}|{gpu.gpu_index}")
        return tuple(nodes)

    def _find(self, node: str) -> str:
        parent = self._parent.setdefault(node, node)
        if parent != node:
            parent = self._parent[node] = self._find(parent)
        return parent

    def _union(self, a: str, b: str) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra != rb:
            self._parent[max(ra, rb)] = min(ra, rb)

    def gpu_group(self, position: int) -> str | None:
        nodes = self._nodes[position]
        if not nodes:
            return None
        root = self._root.get(nodes)
        if root is None:
            root = self._root[nodes] = self._find(nodes[0])
        return root

    def group_entity(self, group: str) -> Entity:
        return self._group_entity.get(group, Entity())

    def complete(self, position: int, ev: Evidence) -> Entity:
        """The record's entity with its GPU identity filled in from the other records about that GPU."""
        entity = (
            ev.entity
            if ev.entity.host or not self.only_host
            else ev.entity.merged(Entity(host=self.only_host))
        )
        group = self.gpu_group(position)
        if group is None:
            return entity
        gpu = self.group_entity(group)
        return entity.merged(gpu)


Item = tuple[Evidence, int]


def _slices(scope: Scope, items: Sequence[Item], index: EntityIndex) -> list[tuple[Entity, list[Item]]]:
    """The evidence split by the signature's scope; records naming no such entity join every slice."""
    if scope is Scope.GLOBAL:
        return [(Entity(), list(items))]
    groups: dict[str, list[Item]] = defaultdict(list)
    entities: dict[str, Entity] = {}
    shared: list[Item] = []
    for ev, pos in items:
        if scope is Scope.GPU:
            key = index.gpu_group(pos)
            if key is not None:
                entities.setdefault(key, index.group_entity(key))
        elif scope is Scope.HOST:
            host = index.host(ev)
            key = host
            if host:
                entities.setdefault(host, Entity(host=host))
        elif scope is Scope.POD:
            key = f"{ev.entity.namespace or ''}/{ev.entity.pod}" if ev.entity.pod else None
            if key:
                entities.setdefault(
                    key, Entity(host=index.host(ev), pod=ev.entity.pod, namespace=ev.entity.namespace)
                )
        else:
            key = ev.entity.model or (str(ev.attrs["model"]) if ev.attrs.get("model") else None)
            if key:
                entities.setdefault(key, Entity(model=key))
        if key is None:
            shared.append((ev, pos))
        else:
            groups[key].append((ev, pos))
    if not groups:
        return [(Entity(), list(items))]
    out = []
    for key in sorted(groups):
        entity = entities[key]
        joined = [it for it in shared if entity.host is None or index.host(it[0]) in (None, entity.host)]
        out.append((entity, sorted(groups[key] + joined, key=lambda it: it[1])))
    return out


@dataclass
class _Candidate:
    match: Match
    entity: Entity
    entities: list[Entity]
    confidence: float
    explained: list[_Candidate]

    @property
    def signature(self) -> Signature:
        return self.match.signature

    @property
    def first(self) -> Item:
        return self.match.first

    def sort_key(self) -> tuple[float, int, int, float, str]:
        first = self.first[0].time
        return (
            -round(self.confidence, 6),
            -_SEVERITY_RANK[self.signature.severity],
            -self.signature.priority,
            first if first is not None else float("inf"),
            self.signature.id,
        )


def _evaluate(
    signature: Signature, evidence: Sequence[Evidence], by_key: dict[str, list[int]], index: EntityIndex
) -> _Candidate | None:
    keys = signature.match_keys()
    if any(not m.keys for m in signature.matchers()):
        positions: Iterable[int] = range(len(evidence))
    else:
        lists = [by_key[k] for k in keys if k in by_key]
        positions = lists[0] if len(lists) == 1 else sorted(p for lst in lists for p in lst)
    items = [(evidence[p], p) for p in positions]
    if not items:
        return None
    best: tuple[Match, Entity] | None = None
    entities: list[Entity] = []
    for entity, sliced in _slices(signature.scope, items, index):
        match = signature.evaluate(sliced)
        if match is None:
            continue
        anchored = _common(entity, [index.complete(pos, ev) for ev, pos in match.anchors])
        entities.append(anchored)
        if best is None or (match.confidence, -(match.first[0].time or 0.0)) > (
            best[0].confidence,
            -(best[0].first[0].time or 0.0),
        ):
            best = (match, anchored)
    if best is None:
        return None
    return _Candidate(
        match=best[0], entity=best[1], entities=entities, confidence=best[0].confidence, explained=[]
    )


def _common(base: Entity, entities: Sequence[Entity]) -> Entity:
    """`base` filled with the fields on which all the given entities that know them agree."""
    values: dict[str, object] = {}
    conflicting: set[str] = set()
    for e in set(entities):
        for name, value in entity_dict(e).items():
            if name in values and values[name] != value:
                conflicting.add(name)
            values.setdefault(name, value)
    agreed = {k: v for k, v in values.items() if k not in conflicting}
    return base.merged(Entity.from_dict(agreed))


def _explains(a: _Candidate, b: _Candidate, index: EntityIndex) -> bool:
    """Whether candidate a accounts for all of b's anchor records, on the same entity, not after them.

    A job-wide symptom (global scope: NCCL timeouts, engine death, deadline errors) may be explained by a
    cause on any one of the job's hosts or GPUs: one failed rank stalls every collective.
    """
    if not a.signature.explains or GENERIC_TAG in a.signature.tags:
        # A generic signature (a crash loop, an engine death, a timeout) is itself a symptom: it may list
        # the records it covers but never hides another candidate.
        return False
    if not all(a.signature.explains_record(ev) for ev, _ in b.match.anchors):
        return False
    if b.signature.scope is not Scope.GLOBAL and not a.entity.overlaps(b.entity):
        return False
    b_first, a_first = b.first, a.first
    b_before = precedes(b_first, a_first, slack_s=0.0)
    a_before = precedes(a_first, b_first, slack_s=CLOCK_SLACK_S)
    return not (b_before is True and a_before is False)


def _resolve(candidates: list[_Candidate], index: EntityIndex) -> list[_Candidate]:
    """Nest explained candidates under their cause; return the causes, ranked."""
    edges: dict[int, set[int]] = defaultdict(set)
    for i, a in enumerate(candidates):
        for j, b in enumerate(candidates):
            if i != j and _explains(a, b, index):
                edges[i].add(j)
    order = {
        i: rank
        for rank, i in enumerate(sorted(range(len(candidates)), key=lambda i: _tiebreak(candidates[i])))
    }
    for i in list(edges):
        for j in list(edges[i]):
            if i in edges.get(j, set()):
                # Mutual: the earlier record is the cause; with no order, the better-ranked one.
                first_i, first_j = candidates[i].first, candidates[j].first
                i_first = precedes(first_i, first_j, slack_s=0.0)
                j_first = precedes(first_j, first_i, slack_s=0.0)
                if i_first and not j_first:
                    edges[j].discard(i)
                elif j_first and not i_first:
                    edges[i].discard(j)
                elif order[i] < order[j]:
                    edges[j].discard(i)
                else:
                    edges[i].discard(j)
    incoming: dict[int, set[int]] = defaultdict(set)
    for i, targets in edges.items():
        for j in targets:
            incoming[j].add(i)
    roots = [i for i in range(len(candidates)) if not incoming[i]]
    attached: set[int] = set()
    while True:
        for root in sorted(roots, key=lambda i: order[i]):
            if root in attached:
                continue
            attached.add(root)
            stack = [root]
            while stack:
                node = stack.pop()
                for child in sorted(edges.get(node, ())):
                    if child not in attached:
                        attached.add(child)
                        candidates[root].explained.append(candidates[child])
                        stack.append(child)
        left = [i for i in range(len(candidates)) if i not in attached]
        if not left:
            break
        roots.append(min(left, key=lambda i: order[i]))  # a cycle: break it at the best-ranked candidate
    for root in roots:
        cand = candidates[root]
        cand.confidence = min(0.99, cand.confidence + 0.03 * min(3, len(cand.explained)))
    return sorted((candidates[i] for i in roots), key=lambda c: c.sort_key())


def _tiebreak(c: _Candidate) -> tuple[int, float, int, str]:
    return (-c.signature.priority, -c.confidence, -_SEVERITY_RANK[c.signature.severity], c.signature.id)


def _fill(step: str, entity: Entity) -> str:
    values = {
        "gpu": entity.gpu_index,
        "uuid": entity.gpu_uuid,
        "pci": entity.pci_bus_id,
        "host": entity.host,
        "pod": entity.pod,
        "namespace": entity.namespace,
        "container": entity.container,
        "model": entity.model,
    }

    def sub(m: re.Match[str]) -> str:
        value = values.get(m.group(1))
        return str(value) if value is not None else f"<{m.group(1)}>"

    return _PLACEHOLDER.sub(sub, step)


def _symptoms(
    cand: _Candidate, evidence: Sequence[Evidence], index: EntityIndex, by_key: dict[str, list[int]]
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
    anchors = {pos for _, pos in cand.match.anchors}
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
    text = f"{head} = {values} ({len(samples)} samples{span})"
    return EvidenceItem(
        time=item.time, source=item.source, text=text, key=item.key, role=role, entity=item.entity
    )


def _cause(
    cand: _Candidate, evidence: Sequence[Evidence], index: EntityIndex, by_key: dict[str, list[int]]
) -> Cause:
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
        remediation=tuple(_fill(step, cand.entity) for step in sig.remediation),
        explained_symptoms=tuple(_symptoms(cand, evidence, index, by_key)),
        entities=tuple(entities),
        first_seen=cand.first[0].time,
    )


def _anomalies(evidence: Sequence[Evidence], known_keys: set[str], limit: int = 8) -> list[Anomaly]:
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


def diagnose(
    evidence: Sequence[Evidence],
    catalog: Catalog | None = None,
    *,
    problems: Sequence[str] = (),
    notes: Sequence[str] = (),
    window: tuple[float | None, float | None] = (None, None),
    max_causes: int = MAX_CAUSES,
) -> Report:
    """Diagnose a set of evidence records against the signature catalog (default: the bundled one)."""
    catalog = catalog if catalog is not None else load_catalog()
    issues = [*problems, *catalog.problems]
    records = list(evidence)
    records.extend(detect_anomalies(records, issues))
    by_key: dict[str, list[int]] = defaultdict(list)
    for pos, ev in enumerate(records):
        by_key[ev.key].append(pos)
    index = EntityIndex(records)
    candidates: list[_Candidate] = []
    for signature in catalog.signatures:
        try:
            cand = _evaluate(signature, records, by_key, index)
        except Exception as exc:  # one broken signature must not stop the diagnosis; it is reported
            logger.warning("signature %s failed: %s", signature.id, exc)
            issues.append(f"[{signature.id}] {type(exc).__name__}: {exc}")
            continue
        if cand is not None:
            candidates.append(cand)
    causes = _resolve(candidates, index)[:max_causes]
    known = {k for s in catalog.signatures for k in s.evidence_keys()}
    sources: dict[str, int] = defaultdict(int)
    for ev in evidence:
        sources[ev.source or "unknown"] += 1
    times = [ev.time for ev in evidence if ev.time is not None]
    start = window[0] if window[0] is not None else (min(times) if times else None)
    end = window[1] if window[1] is not None else (max(times) if times else None)
    built = tuple(_cause(c, records, index, by_key) for c in causes)
    anomalies = tuple(_anomalies(records, known))
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


def diagnose_sources(
    *,
    logs: Sequence[str] = (),
    prometheus: str | None = None,
    exporter: str | None = None,
    traces: Sequence[str] = (),
    k8s_namespace: str | None = None,
    start: float | None = None,
    end: float | None = None,
    live: bool = False,
    catalog: Catalog | None = None,
) -> Report:
    """Collect evidence from the given sources and diagnose it: `gpuobs diagnose` as one library call.

    For callers such as chaos game days that inject a fault and then ask what broke. Input errors
    (a missing file) raise `gpuobs.errors.InputError`; a source that fails is a problem in the report.
    """
    from gpuobs.rca.collect import collect_evidence

    collected = collect_evidence(
        logs=list(logs),
        prometheus=prometheus,
        exporter=exporter,
        traces=list(traces),
        k8s_namespace=k8s_namespace,
        start=start,
        end=end,
        live=live,
    )
    return diagnose(
        collected.evidence,
        catalog,
        problems=collected.problems,
        notes=getattr(collected, "notes", ()),
        window=(start, end),
    )
