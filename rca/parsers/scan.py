"""Many fixed strings found in one pass over a long text (Aho-Corasick), with a fast path for ASCII.

The exact tier's trigger scan and the text tier's phrase scan look for a few hundred strings in the
whole log at once. ahocorasick-rs (Rust) does that in one pass, but its `str` interface converts byte
offsets back to character offsets and costs four times its `bytes` interface on a 10 MB log. Most logs
are ASCII, where byte offsets are character offsets: they go through the bytes automaton, any other
text through the str one. Without ahocorasick-rs (a declared dependency) one `str.find` loop per
string still finds the same matches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["MultiScanner"]


class MultiScanner:
    """Every occurrence, overlapping, of each of `patterns` in a text: (pattern index, start, end)."""

    def __init__(self, patterns: Sequence[str], automaton: bool = True) -> None:
        """`automaton=False` keeps to the `str.find` loop (the baseline a benchmark compares with)."""
        self.patterns = tuple(patterns)
        self._built = not automaton
        self._text_built = not automaton
        self._text_automaton: Any = None
        self._bytes_automaton: Any = None

    def _build(self) -> None:
        """The bytes automaton, for ASCII text (most logs)."""
        self._built = True
        module = _ahocorasick() if self.patterns else None
        if module is None:
            return
        # a non-ASCII pattern's UTF-8 bytes cannot occur in ASCII text: indices stay those of `patterns`
        self._bytes_automaton = module.BytesAhoCorasick(
            [p.encode("utf-8") for p in self.patterns],
            matchkind=module.MatchKind.Standard,
            implementation=module.Implementation.DFA,
        )

    def _build_text(self) -> None:
        """The str automaton, built when a non-ASCII text first comes: its DFA costs as long to build as
        the bytes one (about 40 ms for the text tier's phrases), which an ASCII log never needs."""
        self._text_built = True
        module = _ahocorasick() if self.patterns else None
        if module is None:
            return
        self._text_automaton = module.AhoCorasick(
            list(self.patterns), matchkind=module.MatchKind.Standard, implementation=module.Implementation.DFA
        )

    def find_all(self, text: str) -> list[tuple[int, int, int]]:
        """(pattern index, start, end) of every occurrence, positions in `text`'s characters."""
        if not self.patterns or not text:
            return []
        if text.isascii():
            if not self._built:
                self._build()
            if self._bytes_automaton is not None:
                found: list[tuple[int, int, int]] = self._bytes_automaton.find_matches_as_indexes(
                    text.encode("ascii"), overlapping=True
                )
                return found
        else:
            if not self._text_built:
                self._build_text()
            if self._text_automaton is not None:
                matches: list[tuple[int, int, int]] = self._text_automaton.find_matches_as_indexes(
                    text, overlapping=True
                )
                return matches
        return _find_each(text, self.patterns)


def _ahocorasick() -> Any:
    """The ahocorasick_rs module, or None without it."""
    try:
        import ahocorasick_rs
    except ImportError:  # pragma: no cover - a declared dependency; the str.find loop still works
        return None
    return ahocorasick_rs


def _find_each(text: str, patterns: Sequence[str]) -> list[tuple[int, int, int]]:
    out = []
    for pi, pattern in enumerate(patterns):
        i = text.find(pattern)
        while i != -1:
            out.append((pi, i, i + len(pattern)))
            i = text.find(pattern, i + 1)
    return out
