"""Which records are about the same GPU: one identity per GPU joined from UUIDs, PCI bus ids and indexes.

Logs name a GPU by its PCI address (dmesg), metrics by index and UUID, NVML by all three: the index
joins them (union-find over the identities each record carries), and fills in a lone host for records
that name none, so a signature scoped to one GPU sees every record about it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpuobs.evidence import Entity, Evidence

__all__ = ["EntityIndex", "Item", "normalise_pci"]

_PCI = re.compile(r"(?:[0-9a-f]{4,8}:)?([0-9a-f]{2}):([0-9a-f]{2})(?:\.[0-7])?\s*$", re.IGNORECASE)
_IDENTITY_ATTRS = frozenset({"gpu_index", "uuid", "UUID", "gpu_uuid", "pci", "pci_bus_id"})

Item = tuple[Evidence, int]
"""A record and its position in the diagnosis' evidence list (positions order records without a time)."""


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
            index = int(raw) if isinstance(raw, int | str) and str(raw).isdecimal() else None
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
