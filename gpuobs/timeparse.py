"""Times and durations as people and tools write them: the one parser of every verb, endpoint and config.

Durations: a number with a unit, or several in decreasing order: `500ms`, `90s`, `1m30s`, `2h`, `1.5h`,
`1d`, `1w`, `1y` (`w` is 7 days and `y` 365 days, as Prometheus counts them); a bare number is seconds.

Times, absolute:
- RFC 3339 / ISO 8601: `2026-11-29T21:00:00Z`, `2026-11-29T23:00:00+02:00`, `2026-11-29 21:00:00`,
  `2026-11-29` (midnight). A time without an offset is UTC, never the local time of the machine that
  reads it: a fleet spans time zones and hosts set to local time, and the same string must name the same
  instant in `gpuobs diagnose --start` on a laptop and in `/api/history?since=` on every node.
- Unix epoch seconds: `1795986292`, `1795986292.5` (a value that only makes sense as milliseconds is
  refused, not guessed).

Times, relative to now: `now`, `now-30m`, `now+5m`, `-30m`, or a bare duration with its unit (`30m`),
which means that long ago.

Every error is a ValueError whose one-line message quotes the input and names the accepted forms.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import re
import time

__all__ = ["DURATION_FORMS", "TIME_FORMS", "parse_duration", "parse_instant", "parse_time"]

DURATION_FORMS = "e.g. 90s, 1m30s, 2h, 1.5h, 1d or 500ms (a bare number is seconds)"
TIME_FORMS = (
    "use RFC 3339 (2026-11-29T21:00:00Z; no offset means UTC), epoch seconds, now, now-30m, "
    "or a duration ago (30m)"
)

# Longest first where one unit is a prefix of another (ms before m).
_UNIT_S = {"y": 31_536_000.0, "w": 604_800.0, "d": 86_400.0, "h": 3_600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_ORDER = {unit: rank for rank, unit in enumerate(_UNIT_S)}
_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ms|y|w|d|h|m|s)")
# Epoch seconds past this (year 5138) are milliseconds or nanoseconds someone forgot to convert.
_MAX_EPOCH_S = 1e11


# A plain decimal number in ASCII digits: Python's float() also takes `1_000`, `infinity` and other scripts'
# digits, which no tool writes as a time or duration.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _number(text: str) -> float | None:
    if not _NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _duration_or_none(text: str) -> float | None:
    """Seconds of a duration written with units (`1m30s`), or None when `text` is not one."""
    compact = text.replace(" ", "").lower()
    parts = _PART.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        return None
    ranks = [_ORDER[unit] for _, unit in parts]
    if any(b <= a for a, b in itertools.pairwise(ranks)):
        return None  # units must decrease and not repeat: `30m1h` and `1m1m` are typos, not durations
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def parse_duration(text: str | float, *, allow_zero: bool = False) -> float:
    """Seconds in a duration (see the module docstring); zero only with `allow_zero`, never negative."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        value: float | None = float(text) if math.isfinite(text) else None
    else:
        raw = str(text).strip()
        value = _number(raw) if raw else None
        if value is None and raw:
            value = _duration_or_none(raw)
    if value is None:
        raise ValueError(f"invalid duration {text!r}: {DURATION_FORMS}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"invalid duration {text!r}: must be {'zero or ' if allow_zero else ''}positive")
    return value


def parse_instant(text: str) -> float:
    """Epoch seconds of an absolute time: RFC 3339 / ISO 8601 (no offset: UTC) or epoch seconds."""
    raw = text.strip()
    number = _number(raw)
    if number is not None:
        if number < 0:
            raise ValueError(f"invalid time {text!r}: epoch seconds cannot be negative")
        if number > _MAX_EPOCH_S:
            raise ValueError(f"invalid time {text!r}: looks like milliseconds; give epoch seconds")
        return number
    try:
        # RFC 3339 allows lower-case t and z; fromisoformat wants them upper-case.
        parsed = dt.datetime.fromisoformat(raw.upper())
    except ValueError:
        raise ValueError(f"invalid time {text!r}: {TIME_FORMS}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


def parse_time(text: str, *, now: float | None = None) -> float:
    """Epoch seconds of an absolute or relative time (see the module docstring)."""
    raw = text.strip()
    if not raw:
        raise ValueError(f"invalid time {text!r}: empty; {TIME_FORMS}")
    now = time.time() if now is None else now
    low = raw.lower()
    if low == "now":
        return now
    if low.startswith("now") and low[3:4] in ("-", "+"):
        offset = _relative(raw[4:], text)
        return _clamped(now - offset if low[3] == "-" else now + offset)
    if low.startswith("-"):
        return _clamped(now - _relative(raw[1:], text))
    ago = _duration_or_none(raw)
    if ago is not None:
        return _clamped(now - ago)
    return parse_instant(raw)


def _clamped(when: float) -> float:
    """A relative time kept between the epoch and _MAX_EPOCH_S: `now-99999999d` means "from the start", and a
    time before year 1 or after 9999 cannot be shown as a date."""
    return min(max(when, 0.0), _MAX_EPOCH_S)


def _relative(offset: str, text: str) -> float:
    try:
        return parse_duration(offset, allow_zero=True)
    except ValueError:
        raise ValueError(f"invalid time {text!r}: the offset is not a duration ({DURATION_FORMS})") from None
