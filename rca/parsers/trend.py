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
from gpuobs.rca.parsers.prefix import split_prefix, strip_decorations

__all__ = ["MIN_READINGS", "memory_trend"]

MIN_READINGS = 5
_MIN_GROWTH = 1.3  # last / first
_MIN_RISING = 0.8  # share of steps that do not go down
_UNITS = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_READING_RE = re.compile(
    r"(?i)\b(?P<key>(?:gpu[ _]?|cuda[ _]?|max[ _]?|peak[ _]?)?mem(?:ory)?"
    r"(?:[ _](?:allocated|reserved|used|usage))?|"
    r"(?:memory[ _])?(?:allocated|reserved))\s*[:=]\s*(?P<v>\d+(?:\.\d+)?)\s*(?P<u>[KMGT]i?B|[KMGT]\b)?"
)


def memory_trend(lines: Sequence[str], source: str = "text", year: int | None = None) -> list[Evidence]:
    """`anomaly.memory_growth` records for memory readings that grow steadily over the lines."""
    if not lines:
        return []
    text = "\n".join(lines)
    low = text.lower()
    if "mem" not in low and "allocated" not in low and "reserved" not in low:
        return []
    starts = [0, *itertools.accumulate(len(line) + 1 for line in lines)]
    series: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for m in _READING_RE.finditer(text):
        unit = (m["u"] or "").lower()
        scale = _UNITS.get(unit[:1], 1) if unit else 1
        key = re.sub(r"[ _]+", "_", m["key"].lower()) + (":" + unit[:1] if unit else "")
        line = bisect.bisect_right(starts, m.start()) - 1
        series[key].append((line, float(m["v"]) * scale))
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
