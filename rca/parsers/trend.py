"""A failure shown by a trend rather than a message: memory readings that keep growing, line after line.

Training and serving logs print memory per step (`memory: 3562`, `gpu_mem=12.3G`, `Memory Allocated:
10.2 GB`, a progress bar's `mem=...`); when the same reading only grows over the log, the process is
accumulating memory (a leak, tensors kept alive) and the OOM that ends it is its consequence. This
reader turns such a series into the engine's `anomaly.memory_growth` record, placed at the first
reading, so `cuda_oom_leak` can hold on a pasted log with no metrics at all.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections import defaultdict
from collections.abc import Sequence

from gpuobs.evidence import Evidence, EvidenceKind
from gpuobs.rca.anomalies import ANOMALY_PREFIX
from gpuobs.rca.parsers.lowered import LowerText, lower_text
from gpuobs.rca.parsers.prefix import split_prefix, strip_decorations

__all__ = ["MIN_READINGS", "memory_trend"]

MIN_READINGS = 5
_MIN_GROWTH = 1.3  # last / first
_MIN_RISING = 0.8  # share of steps that do not go down
_UNITS = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_TAIL = r"[ \t]*[:=][ \t]*(?P<v>\d+(?:\.\d+)?)[ \t]*(?P<u>[kmgt]i?b|[kmgt]\b)?"
# One pattern per leading literal (matched on the lower-cased text): the regex engine then jumps from one
# occurrence of the literal to the next instead of trying an alternation at every position.
_READING_RES = (
    re.compile(r"(?P<key>mem(?:ory)?(?:[ _](?:allocated|reserved|used|usage))?)" + _TAIL),
    re.compile(r"(?P<key>allocated)" + _TAIL),
    re.compile(r"(?P<key>reserved)" + _TAIL),
)
_QUALIFIER_RE = re.compile(r"(?:gpu|cuda|max|peak)[ _]?$")


def memory_trend(
    lines: Sequence[str], source: str = "text", year: int | None = None, view: LowerText | None = None
) -> list[Evidence]:
    """`anomaly.memory_growth` records for memory readings that grow steadily over the lines."""
    if not lines:
        return []
    view = view if view is not None else lower_text(lines)
    low, starts = view.text, view.starts
    if "mem" not in low and "allocated" not in low and "reserved" not in low:
        return []
    if not view.aligned:
        return []  # lower() changed lengths (rare Unicode): positions would not map back to lines
    found: list[tuple[int, str, float]] = []
    for regex in _READING_RES:
        for m in regex.finditer(low):
            if m.start() > 0 and low[m.start() - 1].isalpha() and low[m.start() - 1] not in "_ ":
                continue  # inside a longer word ("unreserved", "preallocated")
            unit = m["u"] or ""
            q = _QUALIFIER_RE.search(low, max(0, m.start() - 5), m.start())
            key = re.sub(r"[ _]+", "_", (q.group(0) if q else "") + m["key"]) + (
                ":" + unit[:1] if unit else ""
            )
            found.append((m.start(), key, float(m["v"]) * (_UNITS.get(unit[:1], 1) if unit else 1)))
    series: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for pos, key, value in sorted(found):
        series[key].append((bisect.bisect_right(starts, pos) - 1, value))
    out = []
    for key, readings in sorted(series.items()):
        growth = _growth(readings)
        if growth is None:
            continue
        (first_line, first), (_, last) = readings[0], readings[-1]
        head = split_prefix(strip_decorations(lines[first_line][:300]), year)
        out.append(
            Evidence(
                kind=EvidenceKind.EVENT,
                key=ANOMALY_PREFIX + "memory_growth",
                value=last - first,
                source=source,
                time=head.time,
                raw=f"{key.split(':')[0]} grew from {first:.4g} to {last:.4g} over {len(readings)} readings "
                f"(lines {first_line + 1}-{readings[-1][0] + 1})",
                attrs={"start": first, "end": last, "readings": len(readings), "line": first_line + 1},
            )
        )
    return out


def _growth(readings: list[tuple[int, float]]) -> float | None:
    """How much a series grew, when it grew steadily enough to be a trend, else None."""
    if len(readings) < MIN_READINGS:
        return None
    values = [v for _, v in readings]
    first, last = values[0], values[-1]
    if first <= 0 or last < _MIN_GROWTH * first:
        return None
    rising = sum(1 for a, b in itertools.pairwise(values) if b >= a)
    if rising < _MIN_RISING * (len(values) - 1):
        return None
    return last - first
