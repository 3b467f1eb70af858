"""`lspci -vvv` output -> PCIe facts: Access Control Services redirecting peer traffic, degraded links.

NCCL's troubleshooting starts with `lspci -vvv | grep ACSCtl`: a bridge with `SrcValid+` (or request /
completion redirect on) sends GPU peer-to-peer traffic up through the root complex and IOMMU, which
hangs or slows P2P. `LnkSta: Speed 8GT/s (downgraded), Width x8 (downgraded)` says a link trained
below what both ends can do. An idle NVIDIA GPU drops its link to PCIe 1.0's 2.5GT/s to save power and
raises it again under load, so `Speed 2.5GT/s (downgraded)` at full width is a link at rest, not a fault.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.rca import keys
from gpuobs.rca.parsers.prefix import normalize_pci

__all__ = ["LSPCI_CUES", "looks_like_lspci", "parse_lspci"]

_DEVICE_RE = re.compile(r"^(?P<bus>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d) (?P<what>[^:]+):")
_ACS_RE = re.compile(r"ACSCtl:\s*(?:0x[0-9a-fA-F]+\s*=?\s*)?(?P<flags>.*)$")
_ACS_ON_RE = re.compile(r"\b(?:SrcValid|ReqRedir|CmpltRedir)\+")
_LNKSTA_RE = re.compile(
    r"LnkSta:\s*Speed (?P<speed>[\d.]+GT/s)(?P<sd> \(downgraded\))?, "
    r"Width (?P<width>x\d+)(?P<wd> \(downgraded\))?"
)


# The lowest PCIe speed, which an idle GPU's link power management drops to.
_REST_SPEED = "2.5GT/s"


def _resting(speed: str) -> bool:
    """Whether a speed-only downgrade is a link at rest (idle power saving) rather than one trained low."""
    return speed == _REST_SPEED


# Substrings one of which lspci -vvv capability lines hold.
LSPCI_CUES = ("ACSCtl", "LnkSta:")


def looks_like_lspci(text: str) -> bool:
    """True when the text holds lspci -vvv capability lines."""
    return any(cue in text for cue in LSPCI_CUES)


def parse_lspci(lines: Sequence[str], source: str = "lspci") -> tuple[list[Evidence], set[int]]:
    """ACS-enabled bridges and downgraded links found in the lines, and the lines read."""
    out: list[Evidence] = []
    used: set[int] = set()
    device: str | None = None
    for i, raw in enumerate(lines):
        line = raw.strip()
        d = _DEVICE_RE.match(raw)
        if d:
            device = d["bus"]
            continue
        if "ACSCtl" in line:
            a = _ACS_RE.search(line)
            used.add(i)
            if a and _ACS_ON_RE.search(a["flags"]):
                flags = " ".join(f for f in re.split(r"[\s,]+", a["flags"]) if f.endswith("+"))
                out.append(
                    Evidence(
                        kind=EvidenceKind.STATE,
                        key=keys.PCIE_ACS_ENABLED,
                        value=device,
                        source=source,
                        entity=Entity(pci_bus_id=normalize_pci(device)) if device else Entity(),
                        raw=line[:400],
                        attrs={"flags": flags, "line": i + 1},
                    )
                )
        elif "LnkSta:" in line:
            used.add(i)
            m = _LNKSTA_RE.search(line)
            if m and (m["wd"] or (m["sd"] and not _resting(m["speed"]))):
                out.append(
                    Evidence(
                        kind=EvidenceKind.STATE,
                        key=keys.PCIE_LINK_DEGRADED,
                        value=device,
                        source=source,
                        entity=Entity(pci_bus_id=normalize_pci(device)) if device else Entity(),
                        raw=line[:400],
                        attrs={
                            "speed": m["speed"],
                            "width": m["width"],
                            "speed_downgraded": bool(m["sd"]),
                            "width_downgraded": bool(m["wd"]),
                            "line": i + 1,
                        },
                    )
                )
    return out, used
