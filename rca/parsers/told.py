"""Figures people tell in prose: a model's load time written in a sentence ("the weights take 300+ seconds
to load", "loading the checkpoint took 25 minutes"), a GPU that slows down at a told temperature ("it
throttles down to hold 84 degrees").

Descriptions rarely hold a tool's own reading; they say how long it took or how hot it got. This reads such
sentences on the prose lines of a document in which nothing else was recognised (the same lines and window
as the prose tier, so a long log with facts costs nothing) and, when the told figure reaches a limit the
catalog or the vendor states, gives one `text_match` record of tier TEXT for it: a wording, ranked as the
text tier's are, under any structured fact.
"""

from __future__ import annotations

import re
from collections.abc import Container, Sequence

from gpuobs.evidence import Evidence, EvidenceKind, EvidenceTier
from gpuobs.rca import keys
from gpuobs.rca.prose import prose_window

__all__ = [
    "HOT_C",
    "LOAD_SLOW_S",
    "QUEUED_S",
    "told_hot_celsius",
    "told_load_seconds",
    "told_queue_seconds",
    "told_records",
]

# The load time from which `model_load_slow` holds (its rule's `min = 300` on `model_load` seconds).
LOAD_SLOW_S = 300.0
_LOAD_SLOW = "model_load_slow"
_SCORE = 0.7  # a told time over the limit: as telling as a fitted phrase of the signature
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?;])\s+")
# A figure, or one hour or minute told with an article ("takes an hour").
_DUR = (
    r"(?:(?P<n>\d+(?:\.\d+)?)\s*\+?\s*"
    r"(?P<u>ms|milliseconds?|hours?|hrs?|h|minutes?|mins?|mn|seconds?|secs?|s)\b"
    r"|(?P<one>an|a|one) (?P<word>hour|minute)\b)"
)


def _dur(m: re.Match[str]) -> float:
    """The seconds of a `_DUR` match."""
    if m["word"]:
        return _seconds("1", m["word"])
    return _seconds(m["n"], m["u"])


def _seconds(n: str, unit: str) -> float:
    if unit == "ms" or unit.startswith("milli"):
        return float(n) / 1000.0
    return float(n) * {"h": 3600.0, "m": 60.0}.get(unit[0], 1.0)


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
        rf"\b(?:load|loads|loaded|loading)\b[^.!?;,\n]{{0,80}}?\b(?:takes?|took|taking|needs?|needed|lasts?|"
        rf"lasted)\b[^.!?;,\n]{{0,30}}?{_DUR}"
    ),
    # "the model loads in 420 s", "loaded in about 25 minutes"
    re.compile(rf"\b(?:loads|loaded)\b (?:[\w.-]+ ){{0,4}}?in (?:about |around |over |roughly |~)?{_DUR}"),
    # "load time: 12 minutes", "loading time is over 600 seconds"
    re.compile(rf"\bload(?:ing)? time(?: of| is| was|:)? (?:about |around |over |~)?{_DUR}"),
)


# The time a request waited in the queue from which `queue_saturation` holds on a window summary (its rule's
# `min = 2.0` on serving.REQUEST_QUEUE_TIME): a queue time told in a sentence is held to the same limit.
QUEUED_S = 2.0
_QUEUED = "queue_saturation"
_QUEUE_RES = (
    # "queue time is 12 s", "the p99 queueing delay reached 40 seconds", "queue duration: 9.5s"
    re.compile(
        rf"\bqueu(?:e|ing|eing)[ -]?(?:time|duration|delay|latency|wait)s?\b{_SENTENCE}{{0,40}}?{_DUR}"
    ),
    # "requests wait 30 s in the queue", "sat for about 2 minutes in the queue"
    re.compile(
        rf"\b(?:wait(?:s|ed|ing)?|sit(?:s|ting)?|sat|spen(?:d|ds|t))\b{_SENTENCE}{{0,30}}?{_DUR}"
        rf"{_SENTENCE}{{0,15}}?\bin (?:the |a |its )?queue\b"
    ),
    # "they sit in the queue for 40 seconds"
    re.compile(rf"\bin (?:the |a |its )?queue (?:for )?(?:about |around |over |up to |~)?{_DUR}"),
)


# Waiting behind a long prefill is head-of-line blocking, which the queue rule rules out (its rule_out on
# anomaly.head_of_line): a sentence that tells it tells no saturated queue.
_BEHIND_RE = re.compile(r"\bbehind\b|\bprefill|\blong (?:prompts?|requests?|context)")


def told_queue_seconds(sentence: str) -> float | None:
    """The longest time in a queue a sentence tells (seconds), or None when it tells none."""
    low = sentence.lower()
    if "queu" not in low or _NEGATED_RE.search(low) or _BEHIND_RE.search(low):
        return None
    found = [_dur(m) for pattern in _QUEUE_RES for m in pattern.finditer(low)]
    return max(found) if found else None


# A GPU told to slow down while this hot: NVIDIA's GeForce cards lower their boost clocks at a temperature
# target of 83-84 C (GPU Boost), data-centre cards' "GPU Slowdown Temp" (nvidia-smi -q) is higher; at 80 C
# and above, a sentence that says the GPU throttles, slows or drops its clocks tells a thermal slowdown.
HOT_C = 80
_THERMAL = "thermal_throttling"
_TEMP_RE = re.compile(r"\b(?P<t>\d{2,3}(?:\.\d)?) ?(?:°|º)? ?(?:c\b|celsius\b|degrees?\b)")
_SLOWS_RE = re.compile(
    r"\bthrottl\w*|\bslow(?:s|ed|ing|er|downs?|s down|ed down| down)?\b|\bdown-?clock\w*|"
    r"\bclocks? (?:drop|fall|fell|go down)"
)


# A sentence that denies or retires what it tells ("85 C but no throttling", "no longer takes 20 minutes to
# load", "loads in 10 s instead of 20 minutes") tells no failure.
_NEGATED_RE = re.compile(r"\b(?:no|not|no longer|never|without|instead of)\b|n't\b")


def told_hot_celsius(sentence: str) -> float | None:
    """The highest temperature (C) a sentence that tells a slowdown gives, or None."""
    low = sentence.lower()
    if not _SLOWS_RE.search(low) or _NEGATED_RE.search(low):
        return None
    temps = [float(m["t"]) for m in _TEMP_RE.finditer(low)]
    return max(temps) if temps else None


def told_load_seconds(sentence: str) -> float | None:
    """The longest load time a sentence tells (seconds), or None when it tells none."""
    low = sentence.lower()
    if "load" not in low or _NEGATED_RE.search(low):
        return None
    found = [_dur(m) for pattern in _TOLD_RES for m in pattern.finditer(low)]
    return max(found) if found else None


def told_records(lines: Sequence[str], source: str, skip: Container[int] = ()) -> list[Evidence]:
    """`text_match` records for the first prose line (outside `skip`, 0-based lines the exact tier read)
    that tells a load time of at least `LOAD_SLOW_S` (`model_load_slow`), a time in the queue of at least
    `QUEUED_S` (`queue_saturation`) or a slowdown at `HOT_C` or hotter (`thermal_throttling`); none when no
    line tells one."""
    out: dict[str, Evidence] = {}
    for n, line in prose_window(lines, skip):
        for sentence in _SENTENCE_SPLIT_RE.split(line):
            if _LOAD_SLOW not in out and (seconds := told_load_seconds(sentence)) and seconds >= LOAD_SLOW_S:
                out[_LOAD_SLOW] = _told(
                    _LOAD_SLOW, "a load time told in prose", {"told_seconds": seconds}, n, line, source
                )
            if _QUEUED not in out and (queued := told_queue_seconds(sentence)) and queued >= QUEUED_S:
                out[_QUEUED] = _told(
                    _QUEUED, "a queue time told in prose", {"told_seconds": queued}, n, line, source
                )
            if _THERMAL not in out and (celsius := told_hot_celsius(sentence)) and celsius >= HOT_C:
                out[_THERMAL] = _told(
                    _THERMAL,
                    "a slowdown told at a hot temperature",
                    {"told_celsius": celsius},
                    n,
                    line,
                    source,
                )
    return list(out.values())


def _told(sig: str, phrase: str, figure: dict[str, object], n: int, line: str, source: str) -> Evidence:
    return Evidence(
        kind=EvidenceKind.LOG,
        key=keys.TEXT_MATCH,
        value=sig,
        source=source,
        raw=" ".join(line.split())[:400],
        attrs={"score": _SCORE, "phrases": [phrase], **figure, "line": n + 1, "lines": [n + 1]},
        tier=EvidenceTier.TEXT,
    )
