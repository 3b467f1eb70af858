"""gpuobs.timeparse: the one parser of durations and times (naive ISO means UTC everywhere)."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys

import pytest

from gpuobs.timeparse import parse_duration, parse_instant, parse_time

NOW = 1_795_986_292.0  # 2026-11-29T21:04:52Z


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("90", 90.0),
        ("1m30s", 90.0),
        ("2h", 7200.0),
        ("1d", 86400.0),
        ("1.5h", 5400.0),
        ("500ms", 0.5),
        ("1h30m15s", 5415.0),
        ("1w", 604800.0),
        ("1y", 31_536_000.0),
        (" 2H ", 7200.0),
        ("1m 30s", 90.0),
        ("2.5", 2.5),
        (".5s", 0.5),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "bad",
    ["", "soon", "-5m", "0s", "0", "30m1h", "1m1m", "5 parsecs", "nan", "1e999", "m", "1_000", "٣", "٣m"],
)
def test_bad_durations_name_the_input_and_the_forms(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid duration") as err:
        parse_duration(bad)
    assert repr(bad) in str(err.value) and "\n" not in str(err.value)


def test_zero_duration_only_when_allowed() -> None:
    assert parse_duration("0", allow_zero=True) == 0.0
    assert parse_duration("0s", allow_zero=True) == 0.0
    assert parse_duration(2) == 2.0
    with pytest.raises(ValueError, match="zero or positive"):
        parse_duration("-1", allow_zero=True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-29T21:04:52Z", NOW),
        ("2026-11-29t21:04:52z", NOW),
        ("2026-11-29T21:04:52+00:00", NOW),
        ("2026-11-29T23:04:52+02:00", NOW),
        ("2026-11-29T16:04:52-0500", NOW),
        ("2026-11-29T21:04:52", NOW),  # naive: UTC
        ("2026-11-29 21:04:52", NOW),
        ("2026-11-29T21:04:52.250Z", NOW + 0.25),
        ("2026-11-29", NOW - (21 * 3600 + 4 * 60 + 52)),
        ("1795986292", NOW),
        ("1795986292.5", NOW + 0.5),
    ],
)
def test_absolute_times(text: str, expected: float) -> None:
    assert parse_instant(text) == pytest.approx(expected)
    assert parse_time(text, now=0.0) == pytest.approx(expected)


def test_naive_iso_is_utc_whatever_the_local_zone() -> None:
    # A process in another zone must read a naive time as the same instant (the /api/history bug).
    code = "from gpuobs.timeparse import parse_time; print(parse_time('2026-11-29T21:04:52'))"
    for zone in ("UTC", "Asia/Kolkata", "America/Los_Angeles"):
        out = subprocess.run(
            [sys.executable, "-c", code], env={**os.environ, "TZ": zone}, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        assert float(out.stdout) == NOW, zone


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", NOW),
        ("NOW", NOW),
        ("now-30m", NOW - 1800),
        ("now-1m30s", NOW - 90),
        ("now+5m", NOW + 300),
        ("-30s", NOW - 30),
        ("30m", NOW - 1800),
        ("1.5h", NOW - 5400),
    ],
)
def test_relative_times(text: str, expected: float) -> None:
    assert parse_time(text, now=NOW) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"), [("now-99999999d", 0.0), ("99999999d", 0.0), ("now+99999999d", 1e11)]
)
def test_a_relative_time_past_the_epoch_or_the_far_future_is_clamped(text: str, expected: float) -> None:
    """`now-99999999d` is year -271764, which no date can show: `gpuobs diagnose --start now-99999999d` (or
    `--since 99999999d`) died with "ValueError: year -271764 is out of range" when the report printed its
    window. Before the epoch means from the start."""
    assert parse_time(text, now=NOW) == expected


def test_now_defaults_to_the_clock() -> None:
    before = dt.datetime.now(dt.UTC).timestamp()
    assert before - 1 <= parse_time("now") <= before + 60


@pytest.mark.parametrize(
    ("bad", "hint"),
    [
        ("yesterday", "RFC 3339"),
        ("", "empty"),
        ("now-soon", "offset is not a duration"),
        ("2026-13-01T00:00:00Z", "RFC 3339"),
        ("1795986292000", "milliseconds"),
        ("-", "offset is not a duration"),
        ("1_795_986_292", "RFC 3339"),  # float() took it as epoch seconds
    ],
)
def test_bad_times_say_what_is_wrong(bad: str, hint: str) -> None:
    with pytest.raises(ValueError, match="invalid time") as err:
        parse_time(bad, now=NOW)
    assert hint in str(err.value) and "\n" not in str(err.value)


def test_an_instant_is_never_relative() -> None:
    for relative in ("now", "30m", "-30s"):
        with pytest.raises(ValueError, match="invalid time"):
            parse_instant(relative)
    with pytest.raises(ValueError, match="cannot be negative"):
        parse_instant("-5")
