"""The lower-cased text of a document's lines, computed once and shared by the passes that scan it.

The exact tier's anchor scan, the text tier's phrase scan and the memory-trend reader all search the
lower-cased text and map positions back to line numbers; on a 100,000-line log joining, lowering and
indexing the lines costs as much as a scan, so it is done once.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["LowerText", "lower_text", "plain"]

# Same length in, same length out: positions in the lowered text stay positions in the lines.
_PLAIN = (("\u2018", "'"), ("\u2019", "'"), ("\u201c", '"'), ("\u201d", '"'), ("\t", " "), ("\xa0", " "))


def plain(text: str) -> str:
    """Typographic quotes, tabs and no-break spaces made plain, one `str.replace` per character present
    (`str.translate` falls back to a slow path on any non-ASCII text, such as a progress bar's blocks)."""
    for fancy, simple in _PLAIN:
        if fancy in text:
            text = text.replace(fancy, simple)
    return text


@dataclass(frozen=True)
class LowerText:
    """`text`: the lines joined by newlines, lower-cased, typographic quotes and tabs made plain;
    `starts[i]`: where line i begins in it; `aligned`: False when lower-casing changed a length (rare
    Unicode), in which case positions do not map back and callers go line by line."""

    text: str
    starts: list[int]
    aligned: bool

    def line_of(self, position: int) -> int:
        """The 0-based line holding a position of `text`."""
        return bisect.bisect_right(self.starts, position) - 1


def lower_text(lines: Sequence[str]) -> LowerText:
    """The shared lower-cased view of the lines."""
    text = plain("\n".join(lines).lower())
    # each line's length plus its newline, summed in C (no Python call per line)
    starts = list(itertools.accumulate(map((1).__add__, map(len, lines)), initial=0))
    return LowerText(text=text, starts=starts, aligned=len(text) == starts[-1] - 1)
