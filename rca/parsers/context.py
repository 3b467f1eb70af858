"""The state one pass over a log text carries, shared by every line parser.

A line parser is a pure function `(message, prefix, ctx) -> None` that calls `ctx.emit(...)` for
each piece of evidence it recognises. Multi-line patterns (kernel OOM reports, multi-line
"fallen off the bus" messages, tracebacks, panics) keep their state in `ctx.state`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.rca.parsers.prefix import LinePrefix, split_prefix, strip_decorations

__all__ = ["LineParser", "ParseContext", "Trigger"]

_MAX_RAW = 2000
# A line without a timestamp inherits the time of a timestamped line at most this many lines above
# (traceback and continuation lines); further away the relation is too weak to claim a time.
_INHERIT_LINES = 50


@dataclass
class ParseContext:
    """Mutable state of one pass: where output goes, the lines (for look-ahead) and per-parser state."""

    source: str
    lines: list[str]
    year: int | None = None
    host: str | None = None
    index: int = 0
    out: list[Evidence] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    _time_cache: dict[int, float | None] = field(default_factory=dict)

    def inherited_time(self) -> float | None:
        """The time of the nearest timestamped line above the current one (at most _INHERIT_LINES up)."""
        for i in range(self.index - 1, max(-1, self.index - 1 - _INHERIT_LINES), -1):
            if i in self._time_cache:
                t = self._time_cache[i]
            else:
                raw = self.lines[i]
                t = split_prefix(strip_decorations(raw[:300]), self.year).time if raw.strip() else None
                self._time_cache[i] = t
            if t is not None:
                return t
        return None

    def lookahead(self, count: int = 3) -> str:
        """The messages of the next `count` lines joined by spaces (for wrapped lines)."""
        parts = []
        for raw in self.lines[self.index + 1 : self.index + 1 + count]:
            message = split_prefix(strip_decorations(raw), self.year).message.strip()
            if not message:
                break
            parts.append(message)
        return " ".join(parts)

    def entity(self, prefix: LinePrefix, **known: Any) -> Entity:
        fields_ = prefix.fields
        if not fields_:
            host = prefix.host or self.host
            if not known:
                return Entity(host=host) if host else _EMPTY
            simple = {k: v for k, v in known.items() if v is not None}
            simple.setdefault("host", host)
            return Entity(**simple)
        values: dict[str, Any] = {
            "host": prefix.host or _str(fields_.get("host")) or self.host,
            "pod": _str(fields_.get("pod") or fields_.get("k8s.pod.name")),
            "namespace": _str(fields_.get("namespace") or fields_.get("k8s.namespace.name")),
            "container": _str(fields_.get("container")),
            # the served name first: Prometheus (`model_name`) and spans (gen_ai.request.model) use it
            "model": _str(fields_.get("model_name") or fields_.get("model_id") or fields_.get("model")),
            "tenant": _str(fields_.get("tenant")),
            "gpu_uuid": _str(fields_.get("uuid") or fields_.get("gpu_uuid")),
        }
        device = fields_.get("device_id", fields_.get("gpu"))
        if isinstance(device, str) and device.startswith("cuda:"):
            device = device[5:]
        if (isinstance(device, int) and not isinstance(device, bool)) or (
            isinstance(device, str) and device.isdecimal()
        ):
            values["gpu_index"] = int(device)
        values.update({k: v for k, v in known.items() if v is not None})
        return Entity(**{k: v for k, v in values.items() if v is not None})

    def emit(
        self,
        key: str,
        value: float | str | None,
        prefix: LinePrefix,
        raw: str,
        attrs: dict[str, Any] | None = None,
        kind: EvidenceKind = EvidenceKind.LOG,
        **entity: Any,
    ) -> int:
        """Append one Evidence for the current line; returns its index in `out` (to amend it later)."""
        attrs = dict(attrs or {})
        when = prefix.time
        if when is None:
            when = self.inherited_time()
            if when is not None:
                attrs["time_inferred"] = True
        if prefix.level and "level" not in attrs:
            attrs["level"] = prefix.level
        if prefix.rank is not None and "rank" not in attrs:
            attrs["rank"] = prefix.rank
        if prefix.boot_seconds is not None:
            attrs["boot_seconds"] = prefix.boot_seconds  # dmesg / kmsg time since boot (orders kernel lines)
        attrs.setdefault("line", self.index + 1)
        self.out.append(
            Evidence(
                kind=kind,
                key=key,
                value=value,
                source=self.source,
                time=when,
                entity=self.entity(prefix, **entity),
                raw=raw.strip()[:_MAX_RAW],
                attrs=attrs,
            )
        )
        return len(self.out) - 1

    def emitted_here(self, key: str) -> bool:
        """True when a record with `key` was already emitted for the current line."""
        return self.emitted_index(key) is not None

    def emitted_index(self, key: str) -> int | None:
        """Index in `out` of the record with `key` emitted for the current line, else None."""
        line = self.index + 1
        for i in range(len(self.out) - 1, -1, -1):
            ev = self.out[i]
            if ev.attrs.get("line") != line:
                return None
            if ev.key == key:
                return i
        return None

    def amend(self, index: int, attrs: dict[str, Any] | None = None, **entity: Any) -> None:
        """Merge attrs / entity fields into an already-emitted record (frozen, so it is replaced)."""
        old = self.out[index]
        new_attrs = dict(old.attrs)
        new_attrs.update({k: v for k, v in (attrs or {}).items() if v is not None})
        first = new_attrs.get("line")
        if isinstance(first, int) and self.index + 1 > first:
            # a multi-line report: the record covers the lines up to this one (the text tier leaves them)
            new_attrs["end_line"] = max(self.index + 1, int(new_attrs.get("end_line", first)))
        new_entity = old.entity
        if entity:
            new_entity = Entity(
                **{**old.entity.to_dict(), **{k: v for k, v in entity.items() if v is not None}}
            )
        self.out[index] = Evidence(
            kind=old.kind,
            key=old.key,
            value=old.value,
            source=old.source,
            time=old.time,
            entity=new_entity,
            raw=old.raw,
            attrs=new_attrs,
        )


_EMPTY = Entity()


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


LineParser = Callable[[str, LinePrefix, ParseContext], None]
# (substrings any of which must be in the raw line, parser): the cheap prefilter before any regex.
Trigger = tuple[tuple[str, ...], LineParser]
