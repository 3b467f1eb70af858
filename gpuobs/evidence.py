"""The one `Evidence` record that every RCA source produces and every signature reads."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["Entity", "Evidence", "EvidenceKind", "EvidenceTier"]


class EvidenceKind(enum.StrEnum):
    """What sort of observation a piece of evidence is."""

    METRIC = "metric"
    LOG = "log"
    SPAN = "span"
    EVENT = "event"
    STATE = "state"


class EvidenceTier(enum.StrEnum):
    """Which kind of matcher produced a record, so a report can say why its confidence is what it is.

    EXACT: a parser or reader extracted a structured fact (an Xid code, a CUDA error, bytes, a rank).
    TEXT: the robust text tier recognised a known failure's wording (a paraphrase, an unknown log format)
    without extracting a fact; causes resting on it get a lower confidence.
    PROSE: the prose tier's bag-of-words model named a failure in text where neither tier recognised a
    line (a user's own description); it is heard only when nothing else found a cause, at the lowest
    confidence.
    SEMANTIC: the semantic tier's sentence encoder read the whole text as a known failure's description
    where no other tier named a cause; a guess by meaning, at the lowest confidence of all.
    """

    EXACT = "exact"
    TEXT = "text"
    PROSE = "prose"
    SEMANTIC = "semantic"


@dataclass(frozen=True)
class Entity:
    """What an observation is about; every field is optional because sources know different things."""

    host: str | None = None
    gpu_uuid: str | None = None
    gpu_index: int | None = None
    pci_bus_id: str | None = None
    pod: str | None = None
    namespace: str | None = None
    container: str | None = None
    model: str | None = None
    tenant: str | None = None

    # The field names come from _ENTITY_FIELDS, not dataclasses.fields(): the engine compares entities
    # thousands of times per diagnosis and fields() cost as much as the comparison.
    def is_empty(self) -> bool:
        return all(getattr(self, name) is None for name in _ENTITY_FIELDS)

    def overlaps(self, other: Entity) -> bool:
        """True when no field that both know disagrees (unknown fields never rule out a match)."""
        if self is other:
            return True
        for name in _ENTITY_FIELDS:
            a = getattr(self, name)
            if a is not None:
                b = getattr(other, name)
                if b is not None and a != b:
                    return False
        return True

    def merged(self, other: Entity) -> Entity:
        """This entity with the gaps filled from `other`."""
        values = {name: getattr(self, name) for name in _ENTITY_FIELDS}
        for name, value in values.items():
            if value is None:
                values[name] = getattr(other, name)
        return Entity(**values)

    def to_dict(self) -> dict[str, Any]:
        # not dataclasses.asdict: its deep copy costs more than the rest of a record's serialisation
        return {name: value for name in _ENTITY_FIELDS if (value := getattr(self, name)) is not None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Entity:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


_ENTITY_FIELDS = tuple(f.name for f in fields(Entity))


@dataclass(frozen=True)
class Evidence:
    """One observation: a metric sample, a log line, a span, a Kubernetes event or a state reading.

    `time` is seconds since the epoch (UTC) or None when the source gave no timestamp (pasted
    excerpts often have none). `key` is a stable identifier of what was observed (e.g.
    `xid`, `cuda_error`, `gpuobs_gpu_temperature_celsius`), `value` its value, `raw` the original
    text so that reports can quote it, `tier` the kind of matcher that produced it.
    """

    kind: EvidenceKind
    key: str
    value: float | str | None
    source: str
    time: float | None = None
    entity: Entity = field(default_factory=Entity)
    raw: str = ""
    attrs: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    tier: EvidenceTier = EvidenceTier.EXACT

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "key": self.key,
            "value": self.value,
            "source": self.source,
            "time": self.time,
            "entity": self.entity.to_dict(),
            "raw": self.raw,
            "attrs": self.attrs,
            "tier": self.tier.value,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
        return cls(
            kind=EvidenceKind(data["kind"]),
            key=str(data["key"]),
            value=data.get("value"),
            source=str(data.get("source", "")),
            time=data.get("time"),
            entity=Entity.from_dict(data.get("entity") or {}),
            raw=str(data.get("raw", "")),
            attrs=dict(data.get("attrs") or {}),
            tier=EvidenceTier(data.get("tier") or EvidenceTier.EXACT),
        )
