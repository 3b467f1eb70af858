"""Fast paths give what the slow paths give, on the inputs that could tell them apart.

A vLLM stats line that only the stats parser's trigger hit is skipped without peeling its prefix when
`quiet_stats_line` says no parser (nor the fallback) could record it; every prefix that can give an
error level, and every reading a rule selects, must send the line down the slow path.
"""

from __future__ import annotations

import dataclasses
import itertools
import random

import pytest

from gpuobs.evidence import Entity, Evidence
from gpuobs.rca.parsers import lines
from gpuobs.rca.parsers import text as text_tier
from gpuobs.rca.parsers.apps import quiet_stats_line
from gpuobs.rca.parsers.scan import MultiScanner

_QUIET_BODY = (
    "Engine 000: Avg prompt throughput: 1234.5 tokens/s, Avg generation throughput: 456.7 tokens/s, "
    "Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 41.2%"
)
_BODIES = (
    _QUIET_BODY,
    "Running: 4 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 12.0%",
    "Running: 4 reqs, Waiting: 3 reqs, GPU KV cache usage: 12.0%",  # a queue: recorded
    "Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 97.1%",  # nearly full: recorded
    "Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.2.3%",  # the parser fails on it
    "Running: 4 reqs, Waiting: 0 reqs",
    "Running: 1 reqs, Waiting: 0 reqs, then Running: 2 reqs, Waiting: 7 reqs",  # the second is a queue
    "Running: \x1b[1m4\x1b[0m reqs, Waiting: 5 reqs",  # colours hide the reading from the raw line
    "Running: 4 reqs, Waiting: 0 reqs ERROR",
    "Running: 4 reqs, Waiting: 0 reqs (error in scheduler)",
)
_PREFIXES = (
    "",
    "INFO 11-29 10:00:01 [loggers.py:123] ",
    "(APIServer pid=1) INFO 05-12 01:48:42 [loggers.py:123] ",
    "ERROR 11-29 10:00:01 [loggers.py:123] ",
    "CRITICAL 11-29 10:00:01 ",
    "INFO 11-29 10:00:01 ERROR 11-29 10:00:02 ",
    "E0822 08:51:42.925620       1 main.go:256] ",
    "F0822 08:51:42.925620       1 main.go:256] ",
    "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] ",
    "[F321 02:07:08.408271257 x.cpp:1] ",
    "ERRO[0000] ",
    "PANI[0000] ",
    "PANIC: ",
    "[error] ",
    "kern  :crit  : ",
    "kern  :err: ",
    "kern  :emerg : ",
    "kern  :alert : ",
    "kern  :info  : ",
    "<3>[  12.345678] ",
    "6,2565,102258085667,-;",
    "Nov 29 10:00:02 gpu-node-7 vllm[77]: ",
    "Nov 29 10:00:02 gpu-node-7 Running: ",
    "2026-11-29T10:00:00Z stderr F ",
    "> > ",
    "\x1b[31m",
    "time=2026-11-29T10:00:00Z level=err msg=",
    'time="2026-11-29T10:00:00Z" level=info msg="',
)


def _json_lines(body: str) -> list[str]:
    escaped = body.replace("\x1b", "\\u001b")
    return [
        f'{{"ts": "2026-11-29T10:00:00Z", "level": "{level}", "msg": "{escaped}"}}'
        for level in ("info", "error", "Error", "crit")
    ]


def _lines() -> list[str]:
    out = [prefix + body for prefix, body in itertools.product(_PREFIXES, _BODIES)]
    out += [line for body in _BODIES for line in _json_lines(body)]
    return out


def _parse(
    text_lines: list[str], quiet: bool, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[Evidence, dict[str, object]]]:
    with monkeypatch.context() as patch:
        if not quiet:
            patch.setattr(lines, "_QUIET", {})
        # Evidence compares without its attrs: compare them too
        return [(ev, ev.attrs) for ev in lines.parse_lines(text_lines, source="t", year=2026)]


def test_a_plain_quiet_stats_line_takes_the_fast_path() -> None:
    assert quiet_stats_line("INFO 11-29 10:00:01 [loggers.py:123] " + _QUIET_BODY)
    assert quiet_stats_line("(APIServer pid=1) INFO 05-12 01:48:42 [loggers.py:123] " + _QUIET_BODY)
    assert lines._QUIET, "the stats parser has a quiet-line check"


@pytest.mark.parametrize(
    "line",
    [
        "ERROR 11-29 10:00:01 [loggers.py:123] " + _QUIET_BODY,
        "E0822 08:51:42.925620       1 main.go:256] " + _QUIET_BODY,
        "[rank0]:[E321 02:07:08.408271257 x.cpp:1] " + _QUIET_BODY,
        "kern  :crit  : " + _QUIET_BODY,
        "INFO 11-29 10:00:01 Running: 4 reqs, Waiting: 2 reqs",
        "INFO 11-29 10:00:01 Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 90.0%",
        '{"level": "info", "msg": "Running: 4 reqs, Waiting: 0 reqs"}',
    ],
)
def test_lines_that_could_give_a_record_are_not_quiet(line: str) -> None:
    assert not quiet_stats_line(line)


def test_each_line_reads_the_same_with_and_without_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = 0
    for line in _lines():
        fast = _parse([line], quiet=True, monkeypatch=monkeypatch)
        assert fast == _parse([line], quiet=False, monkeypatch=monkeypatch), line
        recorded += bool(fast)
    assert recorded > len(_PREFIXES)  # the tricky lines do give records: the comparison is not vacuous


def test_a_log_of_them_reads_the_same_with_and_without_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # in one text: times inherited from the lines above and repeats collapsing must not change either
    text_lines = [line for line in _lines() for line in (line, "INFO 11-29 10:00:05 [x.py:1] " + _QUIET_BODY)]
    fast = _parse(text_lines, quiet=True, monkeypatch=monkeypatch)
    assert fast == _parse(text_lines, quiet=False, monkeypatch=monkeypatch)
    assert len(fast) > 10


def _reference_overlaps(a: Entity, b: Entity) -> bool:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x is not None and y is not None and x != y:
            return False
    return True


def test_entity_comparisons_agree_with_the_dataclass_fields() -> None:
    # Entity walks a tuple of its field names (dataclasses.fields() per call was half the comparison)
    rng = random.Random(11)
    options: dict[str, list[object]] = {
        "host": [None, "a", "b"],
        "gpu_uuid": [None, "GPU-1", "GPU-2"],
        "gpu_index": [None, 0, 1],
        "pod": [None, "p"],
        "namespace": [None, "ns", "other"],
        "model": [None, "m"],
    }
    assert set(options) < {f.name for f in dataclasses.fields(Entity)}
    entities = [Entity(**{k: rng.choice(v) for k, v in options.items()}) for _ in range(60)]  # type: ignore[arg-type]
    entities.append(Entity(tenant="t", container="c", pci_bus_id="0000:3b:00"))
    disagree = 0
    for a in entities:
        assert a.is_empty() == all(getattr(a, f.name) is None for f in dataclasses.fields(a))
        for b in entities:
            assert a.overlaps(b) == _reference_overlaps(a, b)
            disagree += not a.overlaps(b)
            filled = {
                f.name: getattr(a, f.name) if getattr(a, f.name) is not None else getattr(b, f.name)
                for f in dataclasses.fields(a)
            }
            assert a.merged(b) == Entity(**filled)
    assert disagree > 0 and Entity().is_empty() and not entities[-1].is_empty()


def test_a_scanner_builds_each_automaton_when_first_needed_in_either_order() -> None:
    # the str automaton is built only when a non-ASCII text comes: whichever text comes first, both
    # kinds find what the str.find loop finds
    patterns = ["gpu", "fell off", "°c", "é", "off"]
    texts = ["gpu fell off the bus", "temp 91°c, gpu fell off", "café off", "plain ascii gpu"]
    slow = MultiScanner(patterns, automaton=False)
    for order in (texts, texts[::-1]):
        fast = MultiScanner(patterns)
        for text in order:
            assert sorted(map(tuple, fast.find_all(text))) == sorted(map(tuple, slow.find_all(text))), text


def _reference_negated(before: str, phrase: str = "") -> bool:
    if phrase.startswith("-") or "=" in phrase:
        return False
    clause = text_tier._CLAUSE_RE.split(before)[-1]
    return any(word in text_tier._NEGATORS for word in clause.split()[-3:])


def test_every_negator_holds_a_cue_that_negated_looks_for_first() -> None:
    # the cues `negated` spells out
    assert text_tier._NEGATOR_CUES == ("no", "ne", "n't", "zero", "if", "unless", "whether")
    for word in text_tier._NEGATORS:
        assert any(cue in word for cue in text_tier._NEGATOR_CUES), word


def test_negated_agrees_with_the_clause_split_on_any_window() -> None:
    rng = random.Random(5)
    words = [
        *sorted(text_tier._NEGATORS),
        "the",
        "gpu",
        "one",
        "kernel",
        "node",
        "n",
        "t",
        "but",
        "then",
        "is",
    ]
    marks = ["", "", "", ",", ".", ";", " (", "'"]
    denied = 0
    for _ in range(3000):
        before = " ".join(rng.choice(words) + rng.choice(marks) for _ in range(rng.randint(0, 8))) + " "
        phrase = rng.choice(["memory leak", "--runtime=nvidia", "oom"])
        assert text_tier.negated(before, phrase) == _reference_negated(before, phrase), (before, phrase)
        denied += text_tier.negated(before, phrase)
    assert 0 < denied < 3000


def test_records_amended_after_the_pass_read_the_same_when_a_quiet_line_ends_the_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # nvrm.finish fills GPU UUIDs in with ctx.amend, which marks a record as reaching the current line:
    # a skipped stats line must still leave the pass where the slow path left it
    text_lines = [
        "Jun 01 10:00:00 gpu-7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1522, name=python, "
        "GPU has fallen off the bus.",
        "Jun 01 10:00:01 gpu-7 kernel: NVRM: GPU at PCI:0000:3b:00: GPU-6bb9e2a3-4c0f-8fd8-d2a1-03c7b0e1e8b8",
        "INFO 06-01 10:00:05 [loggers.py:123] " + _QUIET_BODY,
    ]
    assert quiet_stats_line(text_lines[-1])
    fast = _parse(text_lines, quiet=True, monkeypatch=monkeypatch)
    slow = _parse(text_lines, quiet=False, monkeypatch=monkeypatch)
    assert fast == slow
    assert any(attrs.get("end_line") == 3 for _, attrs in slow)


_PIECES = (
    "INFO 11-29 10:00:01 ",
    "ERROR 11-29 10:00:01 ",
    "WARNING ",
    "[loggers.py:123] ",
    "(APIServer pid=1) ",
    "Engine 000: ",
    "Running: 3 reqs, ",
    "Running: 3 reqs, Waiting: 0 reqs",
    "Running: 3 reqs, Swapped: 0 reqs, Pending: 0 reqs",
    "Waiting: 2 reqs",
    ", GPU KV cache usage: 12.5%",
    ", GPU KV cache usage: 95.0%",
    ", GPU KV cache usage: 9.9.9%",
    "E0822 08:51:42.925620 1 main.go:256] ",
    "[E321 02:07:08.4 x.cpp:1] ",
    "[F",
    "F1",
    "ERRO[0000] ",
    "kern  :crit  : ",
    "panic: ",
    "Alert ",
    "time=2026-11-29T10:00:00Z level=info msg=",
    "{",
    "}",
    '"',
    "\x1b[31m",
    "> ",
    "<4>",
    "6,2565,102258085667,-;",
    "Nov 29 10:00:02 gpu-node-7 vllm[77]: ",
    "2026-11-29T10:00:00Z ",
    "[  12.345678] ",
    " ",
    "\t",
)


def test_random_stats_lines_read_the_same_with_and_without_the_fast_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(3)
    text_lines = []
    for _ in range(1500):
        line = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 7)))
        text_lines.append(line if " reqs, " in line else line + "Running: 1 reqs, Waiting: 0 reqs")
    quiet = sum(quiet_stats_line(line) for line in text_lines)
    assert 100 < quiet < len(text_lines)  # both paths are taken
    for line in text_lines:
        assert _parse([line], quiet=True, monkeypatch=monkeypatch) == _parse(
            [line], quiet=False, monkeypatch=monkeypatch
        ), line
    assert _parse(text_lines, quiet=True, monkeypatch=monkeypatch) == _parse(
        text_lines, quiet=False, monkeypatch=monkeypatch
    )
