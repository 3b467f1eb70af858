"""Candidates and their ranking: each signature evaluated per entity slice, explained symptoms nested
under their cause, the rest ordered by confidence, severity, priority and time.

A candidate `a` explains `b` when its explains-matchers cover all of b's anchor records, or the catalog
states that a's signature causes b's (`explains_signatures` / `explained_by`: a flood of requests explains
the engine death it caused, a memory leak the capacity OOM it ends in), on the same entity, and b did not
start clearly before it (an XID before the application's CUDA errors makes the XID the cause); a
job-wide symptom (global scope) may be explained by a cause on any one host or GPU. So the ranking
prefers the cause over the loudest consequence.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpuobs.evidence import Entity, Evidence
from gpuobs.rca.entities import EntityIndex, Item
from gpuobs.rca.report import entity_dict
from gpuobs.rca.signature import TEXT_VARIANT, Match, Scope, Severity, Signature, precedes

__all__ = ["CLOCK_SLACK_S", "GENERIC_TAG", "SEVERITY_RANK", "Candidate", "evaluate", "resolve"]

SEVERITY_RANK = {Severity.CRITICAL: 3, Severity.HIGH: 2, Severity.MEDIUM: 1, Severity.LOW: 0}
# An explained symptom may precede its cause by this much (clocks of dmesg and app logs differ).
CLOCK_SLACK_S = 2.0
GENERIC_TAG = "generic"


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
class Candidate:
    """A signature's best match over its entity slices, the entities it matched on, what it explains."""

    match: Match
    entity: Entity
    entities: list[Entity]
    confidence: float
    explained: list[Candidate]

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
            -SEVERITY_RANK[self.signature.severity],
            -self.signature.priority,
            first if first is not None else float("inf"),
            self.signature.id,
        )


def evaluate(
    signature: Signature, evidence: Sequence[Evidence], by_key: dict[str, list[int]], index: EntityIndex
) -> Candidate | None:
    """The signature evaluated on each entity slice of the records it reads; None when no slice matches."""
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
    return Candidate(
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


def _explains(a: Candidate, b: Candidate, index: EntityIndex) -> bool:
    """Whether candidate a accounts for all of b's anchor records, on the same entity, not after them.

    A job-wide symptom (global scope: NCCL timeouts, engine death, deadline errors) may be explained by a
    cause on any one of the job's hosts or GPUs: one failed rank stalls every collective.
    """
    declared = a.signature.declares_explaining(b.signature)
    if not declared:
        if a.match.variant == TEXT_VARIANT and GENERIC_TAG not in b.signature.tags:
            # a cause known only by its wording explains another candidate only where the catalog says so,
            # or when that candidate is a generic symptom (an engine death, a timeout) it covers
            return False
        if not a.signature.explains or GENERIC_TAG in a.signature.tags:
            # A generic signature (a crash loop, an engine death, a timeout) is itself a symptom: it may
            # list the records it covers but never hides another candidate.
            return False
        if not all(a.signature.explains_record(ev) for ev, _ in b.match.anchors):
            return False
    if b.signature.scope is not Scope.GLOBAL and not a.entity.overlaps(b.entity):
        return False
    if declared and a.match.variant == TEXT_VARIANT:
        return True  # a cause known by its wording: prose tells a story in any order, lines are no clock
    b_first, a_first = b.first, a.first
    b_before = precedes(b_first, a_first, slack_s=0.0)
    a_before = precedes(a_first, b_first, slack_s=CLOCK_SLACK_S)
    return not (b_before is True and a_before is False)


def resolve(candidates: list[Candidate], index: EntityIndex) -> list[Candidate]:
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


def _tiebreak(c: Candidate) -> tuple[int, float, int, str]:
    return (-c.signature.priority, -c.confidence, -SEVERITY_RANK[c.signature.severity], c.signature.id)
