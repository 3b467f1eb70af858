"""The one-pass multi-string scan the exact and text tiers share, and the tool readers' cue prefilter.

The scan has three paths (ahocorasick-rs on bytes for ASCII text, on str otherwise, and a `str.find`
loop); they must find the same matches, or a log with one accented character would read differently.
"""

from __future__ import annotations

import random
from pathlib import Path

from support.rca_corpus import make_log

from gpuobs.rca import keys
from gpuobs.rca.parsers.document import TOOL_READERS, parse_log_text
from gpuobs.rca.parsers.scan import MultiScanner

REAL_CORPUS = Path(__file__).parent / "real_corpus" / "tune"
INCIDENTS = Path(__file__).parent / "incidents"


def _matches(scanner: MultiScanner, text: str) -> list[tuple[int, int, int]]:
    return sorted(map(tuple, scanner.find_all(text)))  # type: ignore[arg-type]


def test_ascii_unicode_and_find_paths_agree() -> None:
    patterns = ["xid", "error", "rr", "r", "°c", "gpu fell", "é", "ror: c"]
    fast, slow = MultiScanner(patterns), MultiScanner(patterns, automaton=False)
    rng = random.Random(7)
    alphabet = [*"xiderorgpu fl:c\n", "°", "é", "\u2714"]
    texts = ["", "error: cuda error", "temp 91°c, gpu fell off", "é" * 5]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 300))) for _ in range(300)]
    for text in texts:
        assert _matches(fast, text) == _matches(slow, text), text
    # positions are characters, not bytes, on non-ASCII text
    assert _matches(fast, "é error") == [(1, 2, 7), (2, 3, 5), (3, 3, 4), (3, 4, 5), (3, 6, 7), (6, 0, 1)]


def test_an_empty_pattern_list_finds_nothing() -> None:
    assert MultiScanner([]).find_all("anything at all") == []


def test_tool_reader_runs_only_where_a_cue_is_present() -> None:
    """A reader's own check never says yes on text without one of its cues (the prefilter is exact)."""
    texts = [p.read_text(errors="replace") for p in sorted(REAL_CORPUS.glob("*/excerpt.log"))]
    texts += [p.read_text(errors="replace") for p in sorted(INCIDENTS.rglob("*.log"))]
    assert len(texts) > 300
    said_yes = 0
    for text in texts:
        for cues, looks_like, _ in TOOL_READERS:
            if looks_like(text):
                said_yes += 1
                assert any(cue in text for cue in cues), (looks_like.__name__, text[:200])
    assert said_yes > 20  # the readers were asked real tool output, not only noise


def test_documents_read_the_same_with_the_find_scan() -> None:
    """The exact and text tiers give the same records whichever scan path finds the strings."""
    from gpuobs.rca.parsers import lines

    fallen = "GPU at 91°C: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."
    text = f"{make_log(3000, 0.2)}\n{fallen}\n"
    fast = parse_log_text("app.log", text)
    automaton = lines._SCANNER
    lines._SCANNER = MultiScanner(automaton.patterns, automaton=False)
    try:
        slow = parse_log_text("app.log", text)
    finally:
        lines._SCANNER = automaton
    assert [(ev.key, ev.attrs.get("line")) for ev in fast] == [(ev.key, ev.attrs.get("line")) for ev in slow]
    assert any(ev.key == keys.XID for ev in fast)
