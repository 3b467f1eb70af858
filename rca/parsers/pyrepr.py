"""Pretty-printed Python structures -> the facts they hold: PyTorch caching-allocator snapshots and stats.

When an OOM is being debugged, people paste `pprint(torch.cuda.memory_snapshot())` (segments with their
blocks) or `torch.cuda.memory_stats()`. From a snapshot: segments that hold both live and free blocks
(split), the free bytes stranded inside them, and segments seen whole and free in one dump and split
into small live blocks in a later one. From stats: how much reserved memory is inactive in split
blocks, and how often the allocator had to free its cache and retry. A dump cut off mid-structure (the
usual paste) is read as far as it goes: the reader scans `'key': value` pairs, it does not evaluate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpuobs.evidence import Evidence, EvidenceKind
from gpuobs.rca import keys

__all__ = ["PYREPR_CUES", "looks_like_pyrepr", "parse_pyrepr"]

_ADDRESS_RE = re.compile(r"'address':\s*(?P<v>\d+)")
_TOTAL_RE = re.compile(r"'total_size':\s*(?P<v>\d+)")
_BLOCK_RE = re.compile(
    r"'size':\s*(?P<size>\d+),\s*'state':\s*'(?P<state>\w+)'|'state':\s*'(?P<state2>\w+)',\s*'size':\s*(?P<size2>\d+)"
)
_STAT_RE = re.compile(
    r"'(?P<key>num_alloc_retries|num_ooms|inactive_split_bytes\.all\.current|reserved_bytes\.all\.current|"
    r"allocated_bytes\.all\.current|active_bytes\.all\.current)':\s*(?P<v>\d+)"
)


@dataclass
class _Segment:
    address: int | None
    total: int | None = None
    blocks: list[tuple[int, str]] = field(default_factory=list)
    line: int = 0

    @property
    def split(self) -> bool:
        states = {state for _, state in self.blocks}
        return "inactive" in states and any(s.startswith("active") for s in states)

    @property
    def free_bytes(self) -> int:
        return sum(size for size, state in self.blocks if state == "inactive")

    @property
    def all_free(self) -> bool:
        return bool(self.blocks) and all(state == "inactive" for _, state in self.blocks)


# Substrings one of which a pprint'ed allocator snapshot or memory_stats dict holds.
PYREPR_CUES = ("'segment_type'", "'blocks'", "'num_alloc_retries'")


def looks_like_pyrepr(text: str) -> bool:
    """True when the text holds a pprint'ed allocator snapshot or memory_stats dict."""
    return any(cue in text for cue in PYREPR_CUES)


def parse_pyrepr(lines: Sequence[str], source: str = "snapshot") -> tuple[list[Evidence], set[int]]:
    """One `allocator_snapshot` record for the snapshot/stats found in the lines, and the lines read."""
    segments: list[_Segment] = []
    stats: dict[str, int] = {}
    used: set[int] = set()
    current: _Segment | None = None
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line.startswith(("{", "'", "[", "}", "]")) and "': " not in line:
            current = None
            continue
        if "'" not in line and line.strip("{}[], ") == "":
            used.add(i)
            continue
        used.add(i)
        for m in _STAT_RE.finditer(line):
            stats[m["key"]] = int(m["v"])
        if line.startswith(("{'", "[{'")) and (
            "'active_size'" in line or "'address'" in line or "'blocks'" in line
        ):
            current = _Segment(address=None, line=i)
            segments.append(current)
        if current is None and ("'blocks'" in line or "'state'" in line):
            current = _Segment(address=None, line=i)
            segments.append(current)
        if current is None:
            continue
        a = _ADDRESS_RE.search(line)
        if a:
            current.address = int(a["v"])
        t = _TOTAL_RE.search(line)
        if t:
            current.total = int(t["v"])
        for b in _BLOCK_RE.finditer(line):
            size = int(b["size"] or b["size2"])
            state = b["state"] or b["state2"]
            current.blocks.append((size, state))
    segments = [s for s in segments if s.blocks]
    if not segments and not stats:
        return [], set()
    attrs: dict[str, object] = {"line": (segments[0].line if segments else min(used, default=0)) + 1}
    if segments:
        split = [s for s in segments if s.split]
        first_free: dict[int, _Segment] = {}
        resplit = 0
        for s in segments:
            if s.address is None:
                continue
            if s.all_free and s.address not in first_free:
                first_free[s.address] = s
            elif s.split and s.address in first_free:
                resplit += 1
        attrs.update(
            {
                "segments": len(segments),
                "split_segments": len(split),
                "resplit_segments": resplit,
                "free_in_split_bytes": sum(s.free_bytes for s in split),
                "reserved_bytes": sum(s.total or sum(size for size, _ in s.blocks) for s in segments),
                "active_bytes": sum(
                    size for s in segments for size, st in s.blocks if st.startswith("active")
                ),
            }
        )
    if stats:
        attrs.update(
            {
                "alloc_retries": stats.get("num_alloc_retries"),
                "ooms": stats.get("num_ooms"),
                "inactive_split_bytes": stats.get("inactive_split_bytes.all.current"),
                "reserved_bytes": stats.get("reserved_bytes.all.current", attrs.get("reserved_bytes")),
            }
        )
        reserved = stats.get("reserved_bytes.all.current")
        inactive = stats.get("inactive_split_bytes.all.current")
        if reserved and inactive is not None:
            attrs["inactive_split_ratio"] = round(inactive / reserved, 4)
    if segments:
        reserved_b = attrs.get("reserved_bytes")
        if isinstance(reserved_b, int) and reserved_b > 0:
            attrs["free_in_split_ratio"] = round(int(attrs["free_in_split_bytes"]) / reserved_b, 4)  # type: ignore[call-overload]
    summary = ", ".join(f"{k}={v}" for k, v in attrs.items() if k != "line" and v is not None)
    record = Evidence(
        kind=EvidenceKind.STATE,
        key=keys.ALLOCATOR_SNAPSHOT,
        value=len(segments) or None,
        source=source,
        raw=f"CUDA caching allocator dump: {summary}",
        attrs={k: v for k, v in attrs.items() if v is not None},
    )
    return [record], used
