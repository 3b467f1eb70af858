"""Layers that tools wrap around every line of a paste, peeled off before any parser reads the lines.

`docker compose up` prefixes each line with its service (`webui-1  | `), k9s and rich draw box borders
(`│ ... │`), a paste copied from a numbered view carries `[1824] ` line numbers, and progress bars
(tqdm, Lightning, accelerate) redraw with carriage returns so that the next log message lands on the
same line as the bar (`Epoch 0: 6%|██ | 320/5001 [...][E ProcessGroupNCCL.cpp:458] ...`). `unwrap`
returns the lines without those layers, one for one (line numbers keep their meaning), and the
service names it saw (docker compose services are containers).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Unwrapped", "progress_bar_span", "unwrap"]

# `svc  | message` (compose v1 and v2); the name must repeat on several lines to count as a service.
_COMPOSE_RE = re.compile(r"^(?P<svc>[A-Za-z0-9][\w.-]{0,62})\s+\|(?: |$)", re.M)
_COMPOSE_MIN_LINES = 2
_COMPOSE_SAMPLE = 20_000
# `[1824] text` where the numbers count up by one from line to line.
_NUMBERED_RE = re.compile(r"^\[(?P<n>\d{1,7})\] ?")
# Box-drawing borders of k9s panes and rich panels / tracebacks.
_BORDER_CHARS = "│┃║|"
# A tqdm-style bar: `45%|█████     | 45/100 [00:10<00:12, 4.5it/s, loss=2.6]` (Lightning and accelerate
# print the same bar after an `Epoch 0: ` label). Found from its `%|`, which a plain line rarely holds.
_BAR_TAIL_RE = re.compile(r"%\|[^|\n]{0,200}\|\s*[\d.]+[kMG]?/[\d.?]+[kMG]?\s*(?:\[[^\]\n]{0,400}\])?")
_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ .-")


@dataclass
class Unwrapped:
    """The cleaned lines (one per input line) and what was peeled off."""

    lines: list[str]
    services: dict[int, str] = field(default_factory=dict)
    layers: list[str] = field(default_factory=list)


def unwrap(lines: Sequence[str]) -> Unwrapped:
    """The lines without compose prefixes, box borders, paste line numbers and glued progress bars."""
    out = Unwrapped(lines=list(lines))
    if not lines:
        return out
    text = "\n".join(lines)
    services = _compose_services(text)
    if services:
        out.layers.append("docker compose")
        for i, line in enumerate(out.lines):
            m = _COMPOSE_RE.match(line)
            if m and m["svc"] in services:
                out.services[i] = m["svc"]
                out.lines[i] = line[m.end() :]
    if _numbered(out.lines):
        out.layers.append("numbered paste")
        out.lines = [_NUMBERED_RE.sub("", line, count=1) for line in out.lines]
    if "│" in text or "┃" in text or "║" in text:
        stripped = [_strip_border(line) for line in out.lines]
        if stripped != out.lines:
            out.layers.append("box borders")
            out.lines = stripped
    if "%|" in text or "\r" in text:
        changed = False
        for i, line in enumerate(out.lines):
            if "\r" in line or ("%|" in line and not line.rstrip().endswith("]")):
                # a bar alone ends with its `[elapsed<left, rate]`: only a glued message needs the work
                clean = _drop_progress(line)
                if clean != line:
                    out.lines[i] = clean
                    changed = True
        if changed:
            out.layers.append("progress bars")
    return out


def _compose_services(text: str) -> set[str]:
    """Service names that prefix at least two lines as `name | ` (compose output), else none.

    Compose prefixes every line it relays, so a service shows in the first lines already: only the
    head of the text (and of a long text, a second sample further on) is searched.
    """
    if " |" not in text and "\t|" not in text:
        return set()
    samples = (text[:_COMPOSE_SAMPLE], text[len(text) // 2 : len(text) // 2 + _COMPOSE_SAMPLE])
    counts = Counter(m["svc"] for sample in samples for m in _COMPOSE_RE.finditer(sample))
    return {svc for svc, n in counts.items() if n >= _COMPOSE_MIN_LINES and not svc.isdigit()}


def _numbered(lines: Sequence[str]) -> bool:
    """True when the first lines carry `[n] ` numbers counting up by one (a paste from a numbered view)."""
    numbers = []
    for line in lines[:50]:
        if not line.strip():
            continue
        m = _NUMBERED_RE.match(line)
        if not m:
            return False
        numbers.append(int(m["n"]))
    return len(numbers) >= 3 and all(b == a + 1 for a, b in itertools.pairwise(numbers))


def _strip_border(line: str) -> str:
    """A line without the box border characters that open and close it (`│ text │`)."""
    stripped = line.strip()
    if len(stripped) < 2 or stripped[0] not in _BORDER_CHARS[:3]:
        return line
    inner = stripped[1:]
    if inner.rstrip() and inner.rstrip()[-1] in _BORDER_CHARS[:3]:
        inner = inner.rstrip()[:-1]
    return inner.strip(" " + _BORDER_CHARS[:3])


def progress_bar_span(segment: str) -> tuple[int, int] | None:
    """(start, end) of the first progress bar in the text, its `Epoch 0: ` label included, else None."""
    i = segment.find("%|")
    while i != -1:
        j = i
        while j > 0 and segment[j - 1].isdigit() and i - j < 3:
            j -= 1
        m = _BAR_TAIL_RE.match(segment, i) if j < i else None
        if m:
            return _label_start(segment, j), m.end()
        i = segment.find("%|", i + 2)
    return None


def _label_start(segment: str, bar: int) -> int:
    """Where a `Label: ` right before the bar begins (at most 40 characters), else the bar itself."""
    head = segment[:bar].rstrip()
    if not head.endswith(":"):
        return bar
    k = len(head) - 1
    while k > 0 and len(head) - k <= 40 and head[k - 1] in _LABEL_CHARS:
        k -= 1
    return k


def _drop_progress(line: str) -> str:
    """The text a redrawn progress bar glued onto this line, or the bar itself when nothing else is there."""
    segments = [s for s in line.split("\r") if s.strip()]
    if not segments:
        return ""
    kept = []
    for segment in segments:
        rest = segment
        for _ in range(8):
            span = progress_bar_span(rest)
            if span is None or not rest[span[1] :].strip():
                break
            rest = rest[: span[0]] + rest[span[1] :]
        kept.append(rest)
    meaningful = [s for s in kept if not _only_progress(s)]
    return " ".join(s.strip() for s in meaningful) if meaningful else kept[-1]


def _only_progress(segment: str) -> bool:
    span = progress_bar_span(segment)
    return span is not None and not segment[: span[0]].strip(" :") and not segment[span[1] :].strip()
