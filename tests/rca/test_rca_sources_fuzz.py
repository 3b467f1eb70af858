"""Fuzzing the log parsers with hypothesis: random and mutated lines never crash a parser (strict mode
lets a parser exception through) and every record is well formed. The suite runs a few hundred examples;
`bench/rca_parsers.py --fuzz 10000` runs ten thousand."""

# ruff: noqa: E501  (real log lines and Kubernetes messages are longer than the code line limit)

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.rca_corpus import FAILURE_LINES, NOISE_LINES

from gpuobs.evidence import Evidence
from gpuobs.rca import keys
from gpuobs.rca.parsers import parse_text
from gpuobs.rca.parsers.apps import STATS_LINE_GAUGES
from gpuobs.rca.parsers.document import parse_document
from gpuobs.rca.parsers.prefix import split_prefix

SEEDS = (
    FAILURE_LINES
    + NOISE_LINES
    + (
        "6,2565,102258085667,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
        "NVRM: The NVIDIA GPU 0000:18:00.0\nNVRM: (PCI ID: 10de:2901) installed in this system has\n"
        "NVRM: fallen off the bus and is not responding to commands.",
        "python3 invoked oom-killer: gfp_mask=0x280da\noom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
        "mems_allowed=0,oom_memcg=/docker/c,task_memcg=/docker/c,task=postgres,pid=12345,uid=1000",
        "[0.1] Kernel panic - not syncing: Fatal Machine check\n[0.2] CPU: 3 PID: 1234 Comm: systemd Tainted: G",
        'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: bad',
        "nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 28 sourcetrack timeout error (First)",
        "NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 08 (0x004505c6 0x00000000 0x00000000)",
    )
)

# log keys, and the serving gauges vLLM's periodic stats line prints (read as metric readings)
_ALLOWED_KEYS = set(keys.ALL_LOG_KEYS) | set(STATS_LINE_GAUGES)


def _mutate(seed: str, ops: list[tuple[int, int, str]]) -> str:
    text = seed
    for kind, pos, chunk in ops:
        if not text:
            text = chunk
            continue
        p = pos % (len(text) + 1)
        if kind == 0:
            text = text[:p] + chunk + text[p:]
        elif kind == 1:
            text = text[:p] + text[p + len(chunk) + 1 :]
        elif kind == 2:
            text = text[:p]
        else:
            text = text[:p] + chunk + text[p + len(chunk) :]
    return text


mutated_lines = st.builds(
    _mutate,
    st.sampled_from(SEEDS),
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.integers(0, 400),
            st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
        ),
        max_size=6,
    ),
)
random_lines = st.text(alphabet=st.characters(codec="utf-8"), max_size=300)
structured_noise = st.one_of(
    st.dictionaries(
        st.sampled_from(["ts", "level", "msg", "cuda_error_code", "device_id", "model_id", "time"]),
        st.one_of(
            st.integers(-(2**63), 2**63),
            st.floats(allow_nan=True),
            st.text(max_size=20),
            st.none(),
            st.booleans(),
        ),
        max_size=6,
    ).map(json.dumps),
    st.from_regex(
        r"\[?\d{1,4}[-/ ]\d{1,2}[-/ ]\d{1,4}[T ]\d{1,2}:\d{1,2}:\d{1,2}[.,]?\d{0,9}[Z+-]?\d{0,4}\]? .{0,40}",
        fullmatch=True,
    ),
)


def _check(evs: list[Evidence]) -> None:
    for e in evs:
        assert e.key in _ALLOWED_KEYS, e.key
        assert e.time is None or (isinstance(e.time, float) and math.isfinite(e.time))
        json.dumps(e.to_dict(), default=str)
        assert Evidence.from_dict(e.to_dict()).key == e.key


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(mutated_lines, random_lines, structured_noise), min_size=1, max_size=8))
@example(lines=['{"msg":"","":0,"":0,"cuda_error_code":"\\u00b2"}'])  # found by a CI-like run
def test_fuzz_parse_text_never_crashes(lines: list[str]) -> None:
    _check(parse_text("\n".join(lines), source="fuzz", year=2026, strict=True))


@pytest.mark.parametrize(
    "text",
    [
        '{"msg":"boom","cuda_error_code":"\\u00b2"}',
        "NVRM: Xid (PCI:0000:01:00): 79, pid=\u00b2, name=python, GPU has fallen off the bus.",
        "Name: p\nContainers:\n  c:\n    State:          Terminated\n      Reason:       Error\n"
        "      Exit Code:    \u00b2",
    ],
    ids=["json-cuda-code", "xid-pid", "describe-exit-code"],
)
def test_digits_that_are_no_decimal_numbers_are_not_read_as_numbers(text: str) -> None:
    """str.isdigit() holds for superscripts and other digit characters that int() refuses ("\u00b2"): a
    field guarded by it crashed the parse. Such a field is no number; the rest of the line is still read."""
    _check(parse_text(text + "\n", source="digits", year=2026, strict=True))
    _check(parse_document("digits.log", text + "\n"))


@settings(max_examples=300, deadline=None)
@given(st.one_of(mutated_lines, random_lines, structured_noise))
def test_fuzz_split_prefix_is_total(line: str) -> None:
    pre = split_prefix(line, year=2026)
    assert isinstance(pre.message, str)
    assert pre.time is None or math.isfinite(pre.time)


def test_every_key_constant_is_listed() -> None:
    names = [n for n in keys.__all__ if isinstance(getattr(keys, n), str)]
    assert [n for n in names if getattr(keys, n) not in keys.ALL_LOG_KEYS] == []
