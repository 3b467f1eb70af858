"""`nvidia-smi -q` output -> STATE evidence: retired pages, remapped rows and temperatures per GPU.

People attach `nvidia-smi -q` (or `-q -d PAGE_RETIREMENT,ROW_REMAPPER,TEMPERATURE`) to tickets. The
report is a tree of `Key : Value` lines under one `GPU <bus id>` header per GPU; the sections read here
are `Retired Pages` (pre-Ampere), `Remapped Rows` (Ampere and later) and `Temperature`. Remapped rows
and the die temperature use the native metric names of gpuobs.names; retired pages, which have no
metric, use the `retired_pages` key. The temperature record says whether the GPU sits at its own limit
(`GPU Max Operating Temp`, or the slowdown temperature where that is not given), where the driver
slows its clocks: a reading, with no clock-event section, that is enough to name thermal throttling.
"""

from __future__ import annotations

import re

from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.names import gpu as g
from gpuobs.rca import keys
from gpuobs.rca.parsers.prefix import normalize_pci

__all__ = ["looks_like_nvsmi_query", "parse_nvsmi_query"]

_GPU_RE = re.compile(r"^GPU (?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$")
_KV_RE = re.compile(r"^(?P<indent>\s*)(?P<key>[^:]+?)\s*:\s*(?P<value>.*?)\s*$")
_SECTION_RE = re.compile(r"^(?P<indent>\s+)(?P<name>[A-Za-z][\w /()-]*?)\s*$")
_REMAP = {
    "Correctable Error": g.ROWS_REMAPPED_CORRECTABLE.native,
    "Uncorrectable Error": g.ROWS_REMAPPED_UNCORRECTABLE.native,
    "Pending": g.ROW_REMAP_PENDING.native,
    "Remapping Failure Occurred": g.ROW_REMAP_FAILURE.native,
}

_TEMPS = ("GPU Current Temp", "GPU Max Operating Temp", "GPU Slowdown Temp")
# NVML's SW Thermal Slowdown is "GPU temperature above the GPU Max Operating Temperature": readings are
# whole degrees, so at or above the limit counts; a degree below does not (no margin fitted to a case).
_AT_LIMIT_MARGIN_C = 0.0


def looks_like_nvsmi_query(text: str) -> bool:
    """True for the output of `nvidia-smi -q`."""
    return "==============NVSMI LOG==============" in text[:2000]


def _number(value: str) -> float | None:
    low = value.strip().lower()
    if low in ("yes", "no"):
        return 1.0 if low == "yes" else 0.0
    try:
        return float(low)
    except ValueError:
        return None


def parse_nvsmi_query(text: str, source: str = "nvidia-smi", when: float | None = None) -> list[Evidence]:
    """STATE evidence from an `nvidia-smi -q` report (time: `when`, e.g. the file's mtime)."""
    out: list[Evidence] = []
    bus: str | None = None
    index = -1
    section = ""
    retired: dict[str, float] = {}
    temps: dict[str, float] = {}

    def flush() -> None:
        if bus is not None and retired:
            sbe, dbe = retired.get("Single Bit ECC", 0.0), retired.get("Double Bit ECC", 0.0)
            pending = bool(retired.get("pending"))
            out.append(
                Evidence(
                    kind=EvidenceKind.STATE,
                    key=keys.RETIRED_PAGES,
                    value=sbe + dbe,
                    source=source,
                    time=when,
                    entity=Entity(gpu_index=index, pci_bus_id=normalize_pci(bus)),
                    raw=f"GPU {bus} retired pages: SBE {sbe:g}, DBE {dbe:g}, pending {pending}",
                    attrs={"sbe": sbe, "dbe": dbe, "pending": bool(retired.get("pending")), "bus_id": bus},
                )
            )
        retired.clear()
        current = temps.get("GPU Current Temp")
        limit = temps.get("GPU Max Operating Temp", temps.get("GPU Slowdown Temp"))
        if bus is not None and current is not None:
            attrs: dict[str, object] = {"labels": {"gpu": str(index), "pci_bus_id": bus}, "agg": "now"}
            if limit is not None:
                attrs["limit_c"] = limit
                attrs["at_limit"] = current >= limit - _AT_LIMIT_MARGIN_C
            out.append(
                Evidence(
                    kind=EvidenceKind.STATE,
                    key=g.GPU_TEMPERATURE.native,
                    value=current,
                    source=source,
                    time=when,
                    entity=Entity(gpu_index=index, pci_bus_id=normalize_pci(bus)),
                    raw=f"GPU {bus} temperature {current:g} C (limit {'?' if limit is None else limit} C)",
                    attrs=attrs,
                )
            )
        temps.clear()

    for line in text.splitlines():
        m = _GPU_RE.match(line)
        if m:
            flush()
            bus, index, section = m["bus"], index + 1, ""
            continue
        if bus is None or not line.strip():
            continue
        kv = _KV_RE.match(line)
        if kv is None or not kv["value"]:
            sec = _SECTION_RE.match(line)
            if sec:
                section = sec["name"].strip()
            continue
        key, value = kv["key"].strip(), kv["value"]
        if section == "Retired Pages":
            if key == "Pending Page Blacklist" or key == "Pending Page Retirement":
                retired["pending"] = _number(value) or 0.0
            elif key in ("Single Bit ECC", "Double Bit ECC"):
                number = _number(value)
                if number is not None:
                    retired[key] = number
        elif section == "Temperature" and key in _TEMPS:
            number = _number(value.removesuffix("C").strip())
            if number is not None:
                temps[key] = number
        elif section == "Remapped Rows" and key in _REMAP:
            number = _number(value)
            if number is not None:
                name = _REMAP[key]
                out.append(
                    Evidence(
                        kind=EvidenceKind.STATE,
                        key=name,
                        value=number,
                        source=source,
                        time=when,
                        entity=Entity(gpu_index=index, pci_bus_id=normalize_pci(bus)),
                        raw=f"GPU {bus} {key}: {value}",
                        attrs={"labels": {"gpu": str(index), "pci_bus_id": bus}, "agg": "now"},
                    )
                )
    flush()
    return out
