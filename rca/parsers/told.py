"""Figures people tell in prose: a model's load time written in a sentence ("the weights take 300+ seconds
to load", "loading the checkpoint took 25 minutes").

Descriptions of a slow load rarely hold a loader's own timing line; they say how long it took. This reads
such a sentence on the prose lines of a document in which nothing else was recognised (the same lines and
window as the prose tier, so a long log with facts costs nothing) and, when the told time reaches the
limit of `model_load_slow`'s rule, gives one `text_match` record of tier TEXT for it: a wording, ranked
as the text tier's are, under any structured fact.
"""

from __future__ import annotations

import re
from collections.abc import Container, Sequence

from gpuobs.evidence import Evidence, EvidenceKind, EvidenceTier
from gpuobs.rca import keys
from gpuobs.rca.prose import prose_window

__all__ = ["LOAD_SLOW_S", "told_load_seconds", "told_records"]

# The load time from which `model_load_slow` holds (its rule's `min = 300` on `model_load` seconds).
LOAD_SLOW_S = 300.0
_SIGNATURE = "model_load_slow"
_SCORE = 0.7  # a told time over the limit: as telling as a fitted phrase of the signature
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0}
_DUR = r"(?P<n>\d+(?:\.\d+)?)\s*\+?\s*(?P<u>hours?|hrs?|h|minutes?|mins?|mn|seconds?|secs?|s)\b"
# What may stand between "to" and "load": the thing loaded ("to load the model", "for the weights to load").
_LOADED = (
    r"(?:(?:the|a|my|our|this|its|it|them|whole|full|entire|model|models|weights|checkpoint|shards?|"
    r"safetensors?|file|files) ){0,3}"
)
_SENTENCE = r"[^.!?;\n]"
_TOLD_RES = (
    # "takes 300+ seconds to load", "took over 25 minutes for the weights to load"
    re.compile(
        rf"\b(?:takes?|took|taking|needs?|needed|spends?|spent|waited|waiting)\b{_SENTENCE}{{0,40}}?{_DUR}"
        rf"{_SENTENCE}{{0,25}}?\b(?:to|for) {_LOADED}(?:fully |completely )?(?:load|loading)\b"
    ),
    # "loading the checkpoint takes 12 minutes" (no comma between: "after loading, generation takes ...")
    re.compile(
        rf"\b(?:load|loads|loaded|loading)\b[^.!?;,\n]{{0,60}}?\b(?:takes?|took|taking|needs?|needed|lasts?|"
        rf"lasted)\b[^.!?;,\n]{{0,30}}?{_DUR}"
    ),
    # "the model loads in 420 s", "loaded in about 25 minutes"
    re.compile(rf"\b(?:loads|loaded)\b (?:[\w.-]+ ){{0,4}}?in (?:about |around |over |roughly |~)?{_DUR}"),
    # "load time: 12 minutes", "loading time is over 600 seconds"
    re.compile(rf"\bload(?:ing)? time(?: of| is| was|:)? (?:about |around |over |~)?{_DUR}"),
)


def told_load_seconds(sentence: str) -> float | None:
    """The longest load time a sentence tells (seconds), or None when it tells none."""
    low = sentence.lower()
    if "load" not in low:
        return None
    found = [
        float(m["n"]) * _UNITS[m["u"][0] if m["u"] != "mn" else "m"]
        for pattern in _TOLD_RES
        for m in pattern.finditer(low)
    ]
    return max(found) if found else None


def told_records(lines: Sequence[str], source: str, skip: Container[int] = ()) -> list[Evidence]:
    """One `text_match` record for `model_load_slow` on the first prose line (outside `skip`, 0-based lines
    the exact tier read) that tells a load time of at least `LOAD_SLOW_S`, or none."""
    for n, line in prose_window(lines, skip):
        seconds = told_load_seconds(line)
        if seconds is None or seconds < LOAD_SLOW_S:
            continue
        return [
            Evidence(
                kind=EvidenceKind.LOG,
                key=keys.TEXT_MATCH,
                value=_SIGNATURE,
                source=source,
                raw=" ".join(line.split())[:400],
                attrs={
                    "score": _SCORE,
                    "phrases": ["a load time told in prose"],
                    "told_seconds": seconds,
                    "line": n + 1,
                    "lines": [n + 1],
                },
                tier=EvidenceTier.TEXT,
            )
        ]
    return []
