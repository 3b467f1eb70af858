"""Cleaning pasted log lines: ANSI colours, quote markers, timestamps, hosts and PCI addresses.

Real logs reach `gpuobs diagnose` as excerpts people paste into tickets: with or without
timestamps, in a dozen timestamp formats, with `> ` quote markers and terminal colours. Every
parser sees lines through `split_prefix`, which peels those layers off and returns the message,
its time (epoch seconds, UTC, or None) and whatever the prefix said about the entity.
"""

from __future__ import annotations

import calendar
import contextlib
import functools
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

from gpuobs import json_input

__all__ = [
    "LinePrefix",
    "normalize_pci",
    "parse_timestamp",
    "split_prefix",
    "strip_decorations",
]

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[@-Z\\-_]")
_QUOTE_RE = re.compile(r"^(?:\s*>)+ ?")
_MONTHS = {
    m: i
    for i, m in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1
    )
}
_MON = r"(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_DOW = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_HMS = r"(?P<h>\d{1,2}):(?P<mi>\d{2}):(?P<s>\d{2})(?P<frac>[.,]\d+)?"

# kmsg record: "6,2565,102258085667,-;message" (extra comma fields allowed before ';').
_KMSG_RE = re.compile(r"^(?P<prio>\d{1,3}),(?P<seq>\d+),(?P<usec>\d+)(?:,[^;]*)?;")
# `dmesg --decode`: "kern  :warn  : ".
_FACILITY_RE = re.compile(r"^(?P<fac>[a-z]+)\s*:(?P<lvl>[a-z]+)\s*: ")
# "<4>" syslog priority.
_PRIO_RE = re.compile(r"^<\d{1,3}>")
_ISO_RE = re.compile(
    r"^\[?(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})[T ]" + _HMS + r"(?P<tz>Z|[+-]\d{2}:?\d{2})?\]?(?:\s+|$)"
)
_CTIME_RE = re.compile(r"^\[?" + _DOW + r" " + _MON + r" +(?P<d>\d{1,2}) " + _HMS + r" (?P<y>\d{4})\]?\s*")
# nv-fabricmanager: "[Feb 27 2025 15:10:02]".
_FM_RE = re.compile(r"^\[" + _MON + r" +(?P<d>\d{1,2}) (?P<y>\d{4}) " + _HMS + r"\]\s*")
# syslog / journalctl short: "Oct 16 20:47:19 host proc[pid]: ".
_SYSLOG_RE = re.compile(r"^" + _MON + r" +(?P<d>\d{1,2}) " + _HMS + r"\s+")
# Go klog (Kubernetes components, NVIDIA device plugin): "E0822 08:51:42.925620       1 main.go:256] ".
_KLOG_RE = re.compile(r"^(?P<lvl>[IWEF])(?P<mo>\d{2})(?P<d>\d{2}) " + _HMS + r"\s+\d+ [\w./-]+:\d+\] ")
# Go standard log: "2023/10/19 03:11:54 ".
_GOLOG_RE = re.compile(r"^(?P<y>\d{4})/(?P<mo>\d{2})/(?P<d>\d{2}) " + _HMS + r"\s+")
# logrus / logfmt: 'time="2021-05-12T17:31:12Z" level=error msg="..."'; Go's log/slog text handler writes the
# same keys with the time unquoted: 'time=2025-08-20T09:31:33.965Z level=INFO msg="..."'.
_LOGFMT_RE = re.compile(
    r'^time=(?:"(?P<t>[^"]+)"|(?P<tu>[^\s"]+))\s+level=(?P<lvl>\w+)\s+'
    r'msg=(?:"(?P<q>(?:[^"\\]|\\.)*)"|(?P<b>\S+))(?P<rest>.*)$'
)
# logrus text: "FATA[0000] message".
_LOGRUS_RE = re.compile(r"^(?P<lvl>DEBU|INFO|WARN|ERRO|FATA|PANI)\[\d+\]\s*")
# TensorRT logger: "[11/29/2026-10:00:00]".
_TRT_RE = re.compile(r"^\[(?P<mo>\d{2})/(?P<d>\d{2})/(?P<y>\d{4})-" + _HMS + r"\]\s*")
# dmesg relative "[  123.456]" (no absolute time).
_REL_RE = re.compile(r"^\[\s*(?P<rel>\d+(?:\.\d+)?)\]\s*")
# glog as printed by PyTorch c10d: "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] ".
_RANK_RE = re.compile(r"^\[rank(?P<rank>\d+)\]:")
# onnxruntime's logger: "[W:onnxruntime:Default, tensorrt_execution_provider.h:53 log] " (severity letter
# V/I/W/E/F, then the logger id, which may be empty, then the source location).
_ORT_RE = re.compile(r"^\[(?P<lvl>[VIWEF]):onnxruntime:[^\]]*\]\s*")
_ORT_LEVELS = {"V": "debug", "I": "info", "W": "warning", "E": "error", "F": "fatal"}
_GLOG_RE = re.compile(r"^\[?(?P<lvl>[IWEF])(?:(?P<mo>\d{1,2})(?P<d>\d{2}) " + _HMS + r")?\s+[^\]\s]*\]\s*")
# vLLM / Python: "(APIServer pid=1) ERROR 05-12 01:48:42 [api_router.py:72] ".
_PROC_TAG_RE = re.compile(r"^\((?P<proc>[\w.-]+)(?: pid=(?P<pid>\d+))?\)\s*")
_VLLM_RE = re.compile(
    r"^(?P<lvl>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\s+(?P<mo>\d{2})-(?P<d>\d{2}) "
    + _HMS
    + r"(?:\s+\[[^\]]*\])?\s*"
)
# CRI container log: "<iso> stderr F message".
_CRI_RE = re.compile(r"^(?:stdout|stderr) [FP] ")
# "host kernel: " / "host proc[123]: " after a syslog or ISO timestamp.
_HOST_PROC_RE = re.compile(r"^(?P<host>[A-Za-z0-9][\w.-]*) (?P<proc>[\w./@-]+?)(?:\[(?P<pid>\d+)\])?: ")
_LEVEL_RE = re.compile(r"^\[?(?P<lvl>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|PANIC)\]?[:\s]\s*")


@dataclass
class LinePrefix:
    """What the prefix of one line said: the message left, its time and entity hints."""

    message: str
    time: float | None = None
    host: str | None = None
    level: str | None = None
    rank: int | None = None
    process: str | None = None
    boot_seconds: float | None = None
    fields: dict[str, Any] = field(default_factory=dict)


_PLAIN_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def strip_decorations(line: str) -> str:
    """The line without ANSI escapes, CR, leading `> ` quote markers and typographic quotes."""
    if "\u2018" in line or "\u2019" in line or "\u201c" in line or "\u201d" in line:
        line = line.translate(_PLAIN_QUOTES)
    if "\x1b" in line:
        line = _ANSI_RE.sub("", line)
    if "\r" in line:
        line = line.replace("\r", "")
    if line[:1] == ">" or line[:2] == " >":
        line = _QUOTE_RE.sub("", line, count=1)
    return line


def _epoch(
    y: int, mo: int, d: int, h: int, mi: int, s: int, frac: str | None, tz: str | None
) -> float | None:
    try:
        value = float(_day_start(y, mo, d) + h * 3600 + mi * 60 + s)
    except (ValueError, OverflowError):
        return None
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 61):
        return None
    if frac:
        with contextlib.suppress(ValueError):
            value += float("0." + frac[1:])
    if tz and tz != "Z":
        sign = -1 if tz[0] == "-" else 1
        digits = tz[1:].replace(":", "")
        offset = int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60
        value -= sign * offset
    return value


@functools.lru_cache(maxsize=64)
def _day_start(y: int, mo: int, d: int) -> int:
    """Epoch seconds of a day's midnight, UTC: a log's lines share a few days, and `timegm` is linear
    in the hours, minutes and seconds, so a 100,000-line log pays for it a few times, not per line."""
    return calendar.timegm((y, mo, d, 0, 0, 0, 0, 0, 0))


def _match_epoch(m: re.Match[str], year: int, month: int, tz: str | None = None) -> float | None:
    """Epoch seconds from a timestamp match with groups d, h, mi, s, frac (year and month given)."""
    return _epoch(year, month, int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]), m["frac"], tz)


def _guess_year(mo: int, year: int | None) -> int:
    if year is not None:
        return year
    now_year, now_month = _year_month(int(time.time()) // 3600)
    # A month later than now most likely belongs to last year (logs are read after they are written).
    return now_year - 1 if mo > now_month + 1 else now_year


@functools.lru_cache(maxsize=2)
def _year_month(hour: int) -> tuple[int, int]:
    """(year, month) of an hour since the epoch, UTC: asked per line, changes once a month."""
    now = time.gmtime(hour * 3600)
    return now.tm_year, now.tm_mon


def parse_timestamp(text: str, year: int | None = None) -> float | None:
    """Epoch seconds of a timestamp string in any format `split_prefix` knows, else None."""
    return split_prefix(text.strip() + " x", year=year).time


def split_prefix(line: str, year: int | None = None) -> LinePrefix:
    """Peel timestamps, levels, hosts, ranks and process tags off the front of a cleaned line.

    `year` is used for formats that omit it (syslog, glog, vLLM); by default the current year.
    Naive timestamps are taken as UTC.
    """
    out = LinePrefix(message=line)
    rest = line.lstrip()
    if not rest:
        out.message = ""
        return out
    first = rest[0]
    if first == "{" and rest.rstrip().endswith("}"):
        parsed = _json_line(rest, year)
        if parsed is not None:
            return parsed
    # Layers can stack: "[rank0]:[E321 ...]", "kern :warn : <iso>", "<4>[123.4] ...".
    for _ in range(6):
        m = None
        first = rest[:1]
        if not first:
            break
        if first.isdigit():
            m = _KMSG_RE.match(rest)
            if m:
                out.fields["priority"] = int(m.group("prio")) & 7
                out.fields["seq"] = int(m.group("seq"))
                out.fields["usec"] = int(m.group("usec"))
                out.boot_seconds = int(m.group("usec")) / 1e6
                rest = rest[m.end() :]
                continue
            m = _GOLOG_RE.match(rest)
            if m:
                out.time = _match_epoch(m, int(m["y"]), int(m["mo"]))
                rest = rest[m.end() :]
                continue
            m = _ISO_RE.match(rest)
            if m:
                out.time = _match_epoch(m, int(m["y"]), int(m["mo"]), m["tz"])
                rest = rest[m.end() :]
                if rest.startswith(("stdout ", "stderr ")):
                    m2 = _CRI_RE.match(rest)
                    if m2:
                        rest = rest[m2.end() :]
                rest = _host_proc(rest, out)
                continue
            break
        if first == "[":
            m = _RANK_RE.match(rest)
            if m:
                out.rank = int(m["rank"])
                rest = rest[m.end() :]
                continue
            m = _ISO_RE.match(rest)
            if m:
                out.time = _match_epoch(m, int(m["y"]), int(m["mo"]), m["tz"])
                rest = rest[m.end() :]
                continue
            m = _CTIME_RE.match(rest)
            if m:
                out.time = _match_epoch(m, int(m["y"]), _MONTHS[m["mon"]])
                rest = _host_proc(rest[m.end() :], out)
                continue
            m = _FM_RE.match(rest)
            if m:
                out.time = _match_epoch(m, int(m["y"]), _MONTHS[m["mon"]])
                rest = rest[m.end() :]
                continue
            m = _REL_RE.match(rest)
            if m:
                out.boot_seconds = float(m["rel"])
                rest = rest[m.end() :]
                continue
            m = _TRT_RE.match(rest)
            if m:
                out.time = _match_epoch(m, int(m["y"]), int(m["mo"]))
                rest = rest[m.end() :]
                continue
            m = _ORT_RE.match(rest) if rest[2:3] == ":" else None
            if m:
                out.level = _ORT_LEVELS[m["lvl"]]
                rest = rest[m.end() :]
                continue
            m = _GLOG_RE.match(rest[1:]) if len(rest) > 2 and rest[1] in "IWEF" else None
            if m:
                out.level = {"I": "info", "W": "warning", "E": "error", "F": "fatal"}[m["lvl"]]
                if m["mo"]:
                    mo = int(m["mo"])
                    out.time = _match_epoch(m, _guess_year(mo, year), mo)
                rest = rest[1 + m.end() :]
                continue
            m = _LEVEL_RE.match(rest)
            if m:
                out.level = _level(m["lvl"])
                rest = rest[m.end() :]
                continue
            break
        if first == "<":
            m = _PRIO_RE.match(rest)
            if m:
                rest = rest[m.end() :]
                continue
            break
        if first == "(":
            m = _PROC_TAG_RE.match(rest)
            if m:
                out.process = m["proc"]
                rest = rest[m.end() :]
                continue
            break
        if first.isalpha():
            if first == "t" and rest.startswith("time="):
                m = _LOGFMT_RE.match(rest)
                if m:
                    out.time = split_prefix((m["t"] or m["tu"]) + " x", year).time
                    out.level = _level(m["lvl"])
                    msg = m["q"] if m["q"] is not None else m["b"]
                    rest = (msg.replace('\\"', '"') + m["rest"]).strip()
                    break
            if first in "IWEF" and len(rest) > 5 and rest[1].isdigit():
                m = _KLOG_RE.match(rest)
                if m:
                    out.level = {"I": "info", "W": "warning", "E": "error", "F": "fatal"}[m["lvl"]]
                    mo = int(m["mo"])
                    out.time = _match_epoch(m, _guess_year(mo, year), mo)
                    rest = rest[m.end() :]
                    continue
            if first in "DIWEFP" and len(rest) > 5 and rest[4] == "[":
                m = _LOGRUS_RE.match(rest)
                if m:
                    out.level = {
                        "DEBU": "debug",
                        "INFO": "info",
                        "WARN": "warning",
                        "ERRO": "error",
                        "FATA": "fatal",
                        "PANI": "fatal",
                    }[m["lvl"]]
                    rest = rest[m.end() :]
                    continue
            if first in "JFMASOND":
                m = _SYSLOG_RE.match(rest)
                if m:
                    mo = _MONTHS[m["mon"]]
                    out.time = _match_epoch(m, _guess_year(mo, year), mo)
                    rest = _host_proc(rest[m.end() :], out)
                    continue
            if first in "DIWECFP":
                m = _VLLM_RE.match(rest)
                if m:
                    out.level = _level(m["lvl"])
                    mo = int(m["mo"])
                    out.time = _match_epoch(m, _guess_year(mo, year), mo)
                    rest = rest[m.end() :]
                    continue
            if first == "k":
                m = _FACILITY_RE.match(rest)
                if m:
                    out.level = _level(m["lvl"])
                    rest = rest[m.end() :]
                    continue
            if first in "DIWECFP" and out.level is None:
                m = _LEVEL_RE.match(rest)
                if m:
                    out.level = _level(m["lvl"])
                    rest = rest[m.end() :]
                    continue
            break
        break
    out.message = rest
    return out


def _level(raw: str) -> str:
    raw = raw.lower()
    return {
        "warn": "warning",
        "err": "error",
        "crit": "critical",
        "emerg": "fatal",
        "alert": "fatal",
        "panic": "fatal",
    }.get(raw, raw)


def _host_proc(rest: str, out: LinePrefix) -> str:
    m = _HOST_PROC_RE.match(rest)
    if m and not m["host"].isdigit():
        out.host = m["host"]
        out.process = m["proc"]
        return rest[m.end() :]
    return rest


_JSON_TIME_KEYS = ("ts", "time", "timestamp", "@timestamp", "asctime")
_JSON_MSG_KEYS = ("msg", "message", "log", "MESSAGE")


def _json_line(text: str, year: int | None) -> LinePrefix | None:
    try:
        data = json_input.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    message = next((data[k] for k in _JSON_MSG_KEYS if isinstance(data.get(k), str)), None)
    if message is None:
        return None
    out = LinePrefix(message=message.rstrip("\n"))
    for key in _JSON_TIME_KEYS:
        value = data.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value):
                continue  # JSON's Infinity / NaN: no time
            out.time = float(value) / (1e9 if value > 1e15 else 1e6 if value > 1e12 else 1)
            break
        if isinstance(value, str):
            out.time = split_prefix(value + " x", year).time
            if out.time is not None:
                break
    if "__REALTIME_TIMESTAMP" in data:  # journalctl -o json
        with contextlib.suppress(TypeError, ValueError):
            out.time = int(data["__REALTIME_TIMESTAMP"]) / 1e6
        out.host = data.get("_HOSTNAME")
    level = data.get("level") or data.get("levelname") or data.get("severity")
    if isinstance(level, str):
        out.level = _level(level)
    out.fields = {k: v for k, v in data.items() if k not in _JSON_MSG_KEYS and k not in _JSON_TIME_KEYS}
    host = data.get("host") or data.get("hostname")
    if isinstance(host, str):
        out.host = host
    return out


_PCI_RE = re.compile(
    r"^(?:PCI:)?(?:(?P<dom>[0-9a-fA-F]{1,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})(?:\.(?P<fn>[0-7]))?$"
)


def normalize_pci(text: str | None) -> str | None:
    """A PCI address as `dddd:bb:dd` (lower case, 4-digit domain, no function), or None if invalid.

    Accepts `PCI:0000:3b:00`, `00000000:3B:00.0` (NVML/DCGM), `3b:00.0` (no domain), with spaces.
    """
    if not text:
        return None
    m = _PCI_RE.match(text.strip())
    if not m:
        return None
    dom = (m["dom"] or "0000").lower()
    dom = dom[-4:].rjust(4, "0") if int(dom, 16) <= 0xFFFF else dom
    return f"{dom}:{m['bus'].lower()}:{m['dev'].lower()}"
