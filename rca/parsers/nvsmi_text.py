"""`nvidia-smi` as pasted into a ticket: the summary table, and `-q` sections without the report header.

The summary table gives per GPU the temperature, power draw and cap, memory used and total,
utilisation and the volatile uncorrectable ECC count; a table printed repeatedly (`nvidia-smi -l`, or
pasted once per step) is a series, timed by the date line nvidia-smi prints above it, from which the
engine sees memory growing. `-q` sections (`Clocks Throttle Reasons` / `Clocks Event Reasons`, often
grepped out) give the active clock-event reasons. Records use the native metric names of
`gpuobs.names.gpu` and STATE kind (a reading, not a time series), like `parsers.nvsmi`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.names import gpu as g
from gpuobs.rca.parsers.cuda import parse_size
from gpuobs.rca.parsers.metrics import metric_evidence
from gpuobs.rca.parsers.nvsmi import parse_nvsmi_query
from gpuobs.rca.parsers.prefix import split_prefix

__all__ = ["NVSMI_TEXT_CUES", "looks_like_nvsmi_text", "parse_nvsmi_text"]

# "|   0  Tesla P100-SXM2...  On   | 0002:01:00.0     Off |                    0 |"
_ROW1_RE = re.compile(
    r"^\|\s*(?P<idx>\d+)\s+(?P<name>.+?)\s+(?P<persist>On|Off)\s*\|\s*(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:"
    r"[0-9A-Fa-f]{2}\.\d)\s+(?P<disp>\S+)\s*\|\s*(?P<ecc>\S+)\s*\|"
)
# "| N/A   25C    P0    35W / 300W |    931MiB / 16280MiB |      0%      Default |"
_ROW2_RE = re.compile(
    r"^\|\s*(?P<fan>\S+)\s+(?P<temp>\d+|N/A|ERR!)C?\s+(?P<perf>P\d+|N/A|ERR!)\s+(?:\S+\s+)?"
    r"(?P<pw>\d+(?:\.\d+)?|N/A|ERR!)W?\s*/\s*(?P<cap>\d+(?:\.\d+)?|N/A|ERR!)W?\s*\|"
    r"\s*(?P<used>\d+\s*[KMG]iB)\s*/\s*(?P<total>\d+\s*[KMG]iB)\s*\|\s*(?P<util>\d+|N/A|ERR!)%?"
)
_SECTION_RE = re.compile(r"^(?P<indent>\s*)Clocks? (?:Throttle|Event) Reasons\s*$")
_REASON_RE = re.compile(
    r"^(?P<indent>\s*)(?P<name>[A-Za-z][\w ]*?)\s*:\s*(?P<value>Active|Not Active|N/A)\s*$"
)
_REASONS = {
    "Idle": "gpu_idle",
    "Applications Clocks Setting": "applications_clocks_setting",
    "SW Power Cap": "sw_power_cap",
    "HW Slowdown": "hw_slowdown",
    "HW Thermal Slowdown": "hw_thermal_slowdown",
    "HW Power Brake Slowdown": "hw_power_brake_slowdown",
    "Sync Boost": "sync_boost",
    "SW Thermal Slowdown": "sw_thermal_slowdown",
    "Display Clock Setting": "display_clock_setting",
}
_GPU_HEADER_RE = re.compile(r"^GPU (?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$")


# An `nvidia-smi -q` reading: indented, the key padded with spaces up to an aligned colon.
_QKV_RE = re.compile(r"^\s{2,}[A-Za-z][\w /().,+-]*?\s+:\s*\S")
_Q_BLOCK_MIN = 3


# Substrings one of which an nvidia-smi table or `-q` reading holds.
NVSMI_TEXT_CUES = ("MiB /", "Reasons", "        : ")


def looks_like_nvsmi_text(text: str) -> bool:
    """True when the text holds an nvidia-smi table or `-q` readings (cheap substring checks)."""
    return any(cue in text for cue in NVSMI_TEXT_CUES)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def parse_nvsmi_text(
    lines: Sequence[str], source: str = "nvidia-smi", pages: bool = True
) -> tuple[list[Evidence], set[int]]:
    """Records from every nvidia-smi table and clock-reasons section in the lines, and the lines read.

    With `pages`, retired pages and remapped rows of `-q` sections too (a whole report reads them with
    `parsers.nvsmi` already)."""
    out: list[Evidence] = []
    used: set[int] = set()
    when: float | None = None
    current: dict[str, str] | None = None
    section_indent: int | None = None
    section_gpu: dict[str, str] = {}
    for i, raw in enumerate(lines):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            section_indent = None
            continue
        if stripped[0] in "|+" and ("|" in stripped[1:] or set(stripped) <= set("+-=| ")):
            used.add(i)
            m1 = _ROW1_RE.match(stripped)
            if m1:
                current = {"gpu": m1["idx"], "pci_bus_id": m1["bus"]}
                ecc = _number(m1["ecc"])
                if ecc is not None:
                    out.append(_reading(g.ECC_DBE_VOLATILE.native, ecc, current, source, when, i, stripped))
                continue
            m2 = _ROW2_RE.match(stripped)
            if m2 and current is not None:
                _row2(out, m2, current, source, when, i, stripped)
                current = None
            continue
        # nvidia-smi prints its date in ctime form ("Tue Nov 24 10:00:00 2026"), the form of `dmesg -T`
        date = split_prefix(f"[{stripped}] x").time if stripped[:3].isalpha() and len(stripped) < 40 else None
        if date is not None:
            when = date
            continue
        header = _GPU_HEADER_RE.match(stripped)
        if header:
            section_gpu = {"pci_bus_id": header["bus"]}
            continue
        sec = _SECTION_RE.match(line)
        if sec:
            section_indent = len(sec["indent"])
            used.add(i)
            continue
        if section_indent is not None:
            r = _REASON_RE.match(line)
            if r and len(r["indent"]) > section_indent:
                used.add(i)
                reason = _REASONS.get(r["name"].strip())
                if reason and r["value"] == "Active":
                    labels = {**section_gpu, "reason": reason}
                    out.append(_reading(g.CLOCK_EVENT_ACTIVE.native, 1.0, labels, source, when, i, stripped))
                continue
            section_indent = None
    used |= _query_blocks(lines)
    if pages:
        out.extend(_page_readings(lines, source))
    return out, used


_PLACEHOLDER = "GPU 00000000:00:00.0"


def _page_readings(lines: Sequence[str], source: str) -> list[Evidence]:
    """Retired pages and remapped rows of `-q` sections pasted without the report's header: the same
    records as a whole report (`parsers.nvsmi`), about the GPU named above them, or about no known GPU."""
    text = "\n".join(lines)
    if "Remapped Rows" not in text and "Retired Pages" not in text:
        return []
    if any(_GPU_HEADER_RE.match(line.strip()) for line in lines):
        return parse_nvsmi_query(text, source=source)
    out = []
    for ev in parse_nvsmi_query(f"{_PLACEHOLDER}\n{text}", source=source):
        attrs = {k: v for k, v in ev.attrs.items() if k != "bus_id"}
        if "labels" in attrs:
            attrs["labels"] = {}
        out.append(replace(ev, entity=Entity(), raw=ev.raw.replace(f"{_PLACEHOLDER} ", ""), attrs=attrs))
    return out


def _query_blocks(lines: Sequence[str]) -> set[int]:
    """Lines of `nvidia-smi -q` readings (runs of aligned `Key : value` lines and their section titles):
    tool output, whose keys (`Double Bit ECC`, `HW Slowdown`) name conditions without reporting them."""
    block: list[int] = []
    out: set[int] = set()
    for i, raw in enumerate([*lines, ""]):
        if raw.strip() and (_QKV_RE.match(raw) or (block and raw[:1].isspace() and ":" not in raw)):
            block.append(i)
            continue
        if sum(1 for j in block if ":" in lines[j]) >= _Q_BLOCK_MIN:
            out.update(block)
        block = []
    return out


def _row2(
    out: list[Evidence],
    m: re.Match[str],
    labels: dict[str, str],
    source: str,
    when: float | None,
    index: int,
    text: str,
) -> None:
    temp, power, cap, util = _number(m["temp"]), _number(m["pw"]), _number(m["cap"]), _number(m["util"])
    used, total = parse_size(m["used"]), parse_size(m["total"])
    for name, value in (
        (g.GPU_TEMPERATURE.native, temp),
        (g.POWER_USAGE.native, power),
        (g.POWER_LIMIT.native, cap),
        (g.MEMORY_USED.native, float(used) if used is not None else None),
        (g.MEMORY_TOTAL.native, float(total) if total is not None else None),
        (g.GPU_UTILIZATION.native, util / 100.0 if util is not None else None),
    ):
        if value is not None:
            out.append(_reading(name, value, labels, source, when, index, text))


def _reading(
    name: str, value: float, labels: dict[str, str], source: str, when: float | None, index: int, text: str
) -> Evidence:
    record = metric_evidence(name, value, dict(labels), source, when, "sample", {"line": index + 1})
    return Evidence(
        kind=EvidenceKind.STATE,
        key=record.key,
        value=record.value,
        source=record.source,
        time=record.time,
        entity=record.entity,
        raw=text[:400],
        attrs=record.attrs,
    )
