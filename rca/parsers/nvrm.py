"""NVIDIA driver messages in the kernel log: Xid/SXid, fabric manager, GPU maps, fallen off the bus, resets.

Inputs are `dmesg` (relative, `--ctime`, `--time-format=iso`, `--decode`), `journalctl -k`,
syslog, raw `/dev/kmsg` records and nv-fabricmanager logs; `prefix.split_prefix` removes their
prefixes before these parsers see the message. Each parser is a pure function of the message
(plus the pass state for multi-line reports).
"""

from __future__ import annotations

import re

from gpuobs.rca import keys
from gpuobs.rca.parsers.context import ParseContext, Trigger
from gpuobs.rca.parsers.prefix import LinePrefix, normalize_pci

__all__ = [
    "PARSERS",
    "finish",
    "nvlink5_subcode",
    "parse_gpu_map_line",
]

# --- Xid / SXid -----------------------------------------------------------------------------------
_XID_RE = re.compile(
    r"NVRM: Xid \((?P<dev>[^)]*)\): (?P<code>\d+)\b,?\s*"
    r"(?:pid=(?P<pid>'?<?\w+>?'?),\s*)?(?:name=(?P<name>[^,]*),?\s*)?(?P<msg>.*)$"
)
_MIG_RE = re.compile(r"GPU-I:(?P<gi>\d+)(?:\s+GPU-CI:(?P<ci>\d+))?")
_NVL5_RE = re.compile(
    r"^(?P<sub>[A-Z][A-Z0-9_/]*)\s+(?P<sev>Fatal|Nonfatal|Non-fatal)\s+XC\d+\s+i\d+\s+Link\s+(?P<link>-?\d+)\s+"
    r"\((?P<regs>0x[0-9a-fA-F]+(?:\s+0x[0-9a-fA-F]+)+)\)"
)
_GPC_RE = re.compile(r"\(GPC (?P<gpc>\d+), TPC (?P<tpc>\d+)(?:, SM (?P<sm>\d+))?\)")
_CAUSED_BY_XID_RE = re.compile(r"caused by previous Xid (?P<code>\d+)")
_NVLINK_LINK_RE = re.compile(r"NVLink: fatal error detected on link (?P<link>\d+)")
_SXID_RE = re.compile(
    r"(?:nvidia-nvswitch(?P<sw>\d+): )?SXid \((?P<dev>[^)]*)\): (?P<code>\d+)\b,?\s*(?P<rest>.*)$"
)
_SXID_SEVERITY_RE = re.compile(r"Severity (?P<sev>\d+)\b")
_SXID_LINK_RE = re.compile(r"\bLink (?P<link>\d+)\b\s*(?P<msg>.*)$")
# nv-fabricmanager's start-up check against the loaded driver, which stops the service (so the NVLink fabric
# is never set up): "fabric manager NVIDIA GPU driver interface version 530.30.02 don't match with driver
# version 530.41.03. Please update with matching NVIDIA driver package." (later builds say "doesn't match").
_FM_VERSION_RE = re.compile(
    r"fabric manager NVIDIA GPU driver interface version (?P<fm>\S+) (?:don.t|doesn.t|do not|does not) "
    r"match with driver version (?P<driver>[^\s.]+(?:\.\d+)*)",
    re.IGNORECASE,
)
_FM_SXID_RE = re.compile(
    r"detected NVSwitch (?P<sev>fatal|non-fatal) error (?P<code>\d+) on fid \d+ on NVSwitch pci bus id "
    r"(?P<pci>\S+)(?: physical id (?P<phys>\d+))?(?: port (?P<port>\d+))?"
)
# The NVIDIA k8s device plugin's health check (internal/rm/health.go) names the Xid it saw on a device
# and marks the device unhealthy: "XidCriticalError: Xid=79 on Device=GPU-...; marking device as
# unhealthy." (", the device will go unhealthy." in releases before 0.15).
_DP_XID_RE = re.compile(
    r"XidCriticalError: Xid=(?P<code>\d+) on Device=(?P<uuid>GPU-[0-9a-fA-F-]+|\S+?)[;,.]?(?:\s|$)"
)
_GPU_MAP_RE = re.compile(r"NVRM: GPU at PCI:(?P<pci>[0-9a-fA-F:.]+): (?P<uuid>GPU-[0-9a-fA-F-]+)")


def nvlink5_subcode(intrinfo: str) -> int:
    """The NVLink5 (Xid 144-150) error subcode carried in bits 20-25 of the first register."""
    return (int(intrinfo, 16) >> 20) & 0x3F


def _xid(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    if "SXid" in msg:
        _sxid(msg, pre, ctx)
        return
    m = _XID_RE.search(msg)
    if not m:
        _device_plugin_xid(msg, pre, ctx)
        return
    dev = m["dev"].strip()
    pci = normalize_pci(dev.split()[0]) if dev else None
    attrs: dict[str, object] = {"device": dev, "message": m["msg"].strip()}
    if pci:
        attrs["pci"] = pci
    mig = _MIG_RE.search(dev)
    if mig:
        attrs["gpu_instance"] = int(mig["gi"])
        if mig["ci"]:
            attrs["compute_instance"] = int(mig["ci"])
    pid = (m["pid"] or "").strip("'<>")
    if pid.isdecimal():
        attrs["pid"] = int(pid)
    name = (m["name"] or "").strip()
    if name and name != "<unknown>":
        attrs["process"] = name
    rest = m["msg"]
    nvl = _NVL5_RE.match(rest)
    if nvl:
        regs = nvl["regs"].split()
        attrs.update(
            {
                "subcode_name": nvl["sub"],
                "severity": nvl["sev"],
                "link": int(nvl["link"]),
                "intrinfo": regs[0],
                "error_status": regs[1],
                "subcode": nvlink5_subcode(regs[0]),
            }
        )
    gpc = _GPC_RE.search(rest)
    if gpc:
        attrs.update({k: int(v) for k, v in gpc.groupdict().items() if v is not None})
    link = _NVLINK_LINK_RE.search(rest)
    if link:
        attrs["link"] = int(link["link"])
    earlier = _CAUSED_BY_XID_RE.search(rest)
    if earlier:  # Xid 45/43 "... caused by previous Xid 149": the driver names the error it follows from
        attrs["caused_by_xid"] = int(earlier["code"])
    ctx.state["last_xid_line"] = ctx.index
    ctx.emit(keys.XID, int(m["code"]), pre, msg, attrs, pci_bus_id=pci)


def _device_plugin_xid(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    """The device plugin's report of an Xid: the driver's event, read where only the plugin log was kept."""
    m = _DP_XID_RE.search(msg)
    if not m:
        return
    attrs: dict[str, object] = {"message": msg.strip(), "reporter": "k8s-device-plugin"}
    uuid = m["uuid"] if m["uuid"].startswith("GPU-") else None
    ctx.emit(keys.XID, int(m["code"]), pre, msg, attrs, gpu_uuid=uuid)


def _sxid(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _SXID_RE.search(msg)
    if not m:
        return
    rest = m["rest"].strip()
    attrs: dict[str, object] = {"device": m["dev"].strip()}
    pci = m["dev"].strip()
    attrs["pci"] = pci.removeprefix("PCI:")
    if m["sw"] is not None:
        attrs["nvswitch"] = int(m["sw"])
    first = rest.split(",", 1)[0].strip().lower()
    if first in ("fatal", "non-fatal", "nonfatal"):
        attrs["fatal"] = first == "fatal"
        rest = rest.split(",", 1)[1].strip() if "," in rest else ""
    severity = _SXID_SEVERITY_RE.match(rest)
    if severity:  # the driver's error-entry line: NVSWITCH_ERROR_SEVERITY_NONFATAL = 0, FATAL = 1
        attrs["fatal"] = int(severity["sev"]) >= 1
    link = _SXID_LINK_RE.match(rest)
    if link:
        attrs["link"] = int(link["link"])
        attrs["message"] = link["msg"].strip()
    else:
        attrs["message"] = rest
    ctx.emit(keys.SXID, int(m["code"]), pre, msg, attrs)


def _fabric_manager(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _FM_SXID_RE.search(msg)
    if m:
        attrs: dict[str, object] = {
            "fatal": m["sev"] == "fatal",
            "pci": m["pci"],
            "message": msg.strip(),
            "origin": "fabricmanager",
        }
        if m["port"]:
            attrs["port"] = int(m["port"])
        if m["phys"]:
            attrs["nvswitch"] = int(m["phys"])
        ctx.emit(keys.SXID, int(m["code"]), pre, msg, attrs)
        return
    v = _FM_VERSION_RE.search(msg) if "driver interface version" in msg else None
    if v:
        attrs = {"message": msg.strip(), "fm_version": v["fm"], "driver_version": v["driver"]}
        ctx.emit(keys.FABRIC_MANAGER_ERROR, "version_mismatch", pre, msg, attrs)
        return
    if "don't match with any supported system topology" in msg:
        ctx.emit(keys.FABRIC_MANAGER_ERROR, "topology_mismatch", pre, msg, {"message": msg.strip()})
    elif "NV_WARN_NOTHING_TO_DO" in msg:
        ctx.emit(keys.FABRIC_MANAGER_ERROR, "nothing_to_do", pre, msg, {"message": msg.strip()})
    elif "failed to find the GPU handle" in msg and "multicast team" in msg:
        ctx.emit(keys.FABRIC_MANAGER_ERROR, "multicast_gpu_handle", pre, msg, {"message": msg.strip()})


def parse_gpu_map_line(line: str) -> tuple[str, str] | None:
    """(pci, uuid) from `NVRM: GPU at PCI:0000:66:00: GPU-1234...`, else None."""
    m = _GPU_MAP_RE.search(line)
    return (m["pci"], m["uuid"]) if m else None


def _gpu_map(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    found = parse_gpu_map_line(msg)
    if found:
        pci = normalize_pci(found[0])
        if pci:
            ctx.state.setdefault("pci_uuid", {})[pci] = found[1]


# --- fallen off the bus / reset -------------------------------------------------------------------
_FALLEN_GPU_RE = re.compile(r"(?:The NVIDIA GPU|GPU) (?P<bdf>[0-9A-Za-z:.-]+)(?::|\s*$)")
_PCI_ID_RE = re.compile(r"\(PCI ID: (?P<id>[0-9a-fA-F]{4}:[0-9a-fA-F]{4})\)")


def _fallen_prelude(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _FALLEN_GPU_RE.search(msg)
    if m and "The NVIDIA GPU" in msg:
        ctx.state["fallen_bdf"] = (ctx.index, m["bdf"].rstrip(":"))
    pid = _PCI_ID_RE.search(msg)
    if pid:
        ctx.state["fallen_pci_id"] = (ctx.index, pid["id"])


def _fallen(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    if "Xid" in msg:
        return  # the Xid parser reports it with its code
    _fallen_prelude(msg, pre, ctx)
    bdf: str | None = None
    m = _FALLEN_GPU_RE.search(msg.split("fallen off the bus")[0])
    if m:
        bdf = m["bdf"].rstrip(":")
    elif "fallen_bdf" in ctx.state and ctx.index - ctx.state["fallen_bdf"][0] <= 3:
        bdf = ctx.state["fallen_bdf"][1]
    pci = normalize_pci(bdf) if bdf else None
    if "NVRM" in msg and pci is None:
        return  # a kernel message whose GPU address cannot be read is not evidence about a GPU
    attrs: dict[str, object] = {"message": msg.strip()}
    if pci:
        attrs["pci"] = pci
        attrs["device"] = bdf
    if "fallen_pci_id" in ctx.state and ctx.index - ctx.state["fallen_pci_id"][0] <= 3:
        attrs["pci_id"] = ctx.state["fallen_pci_id"][1]
    ctx.emit(keys.GPU_FALLEN_OFF_BUS, None, pre, msg, attrs, pci_bus_id=pci)


_RESET_RE = re.compile(r"(?i)\b(?:requires? (?:a )?reset|reset required|needs? (?:a )?reset)\b")


# nvidia-smi -q's "GPU Reset Status" fields: "Reset Required : No" (or N/A, Not Supported, "Requested
# functionality has been deprecated" on newer drivers) is a reading, not a request; only Yes asks.
# (The field may follow its section's title, "GPU Reset Status", when indented lines are joined.)
_RESET_FIELD_RE = re.compile(r"(?i)\breset required\s*:\s*(?P<value>[\w/]*)")


def _reset(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    field = _RESET_FIELD_RE.search(msg)
    if field and field["value"].lower() != "yes":
        return
    target = msg
    if "recovery action changed from" in msg:
        target = msg.split(" to ", 1)[-1]
    if not _RESET_RE.search(target):
        return
    xm = _XID_RE.search(msg)
    pci = normalize_pci(xm["dev"].split()[0]) if xm and xm["dev"].strip() else None
    ctx.emit(keys.GPU_RESET_REQUIRED, None, pre, msg, {"message": msg.strip()}, pci_bus_id=pci)


# A MIG mode change waits for a GPU reset to take effect: nvidia-smi's "Warning: MIG mode is in pending enable
# state for GPU %s:%s" (then "Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective"),
# and mig-parted's "Mode change pending: true" / "At least one mode change pending" (mig-manager's debug log)
# before it resets the GPUs. Until then the GPU is not in the mode asked for; "pending: false" is a reading.
_MIG_PENDING_RE = re.compile(
    r"MIG mode is in pending (?:enable|disable) state for GPU (?P<bdf>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:"
    r"[0-9A-Fa-f]{2}\.[0-7])|Mode change pending: true\b|At least one mode change pending"
)


def _mig_pending(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _MIG_PENDING_RE.search(msg)
    if m is None:
        return
    pci = normalize_pci(m["bdf"]) if m["bdf"] else None
    ctx.emit(keys.GPU_RESET_REQUIRED, None, pre, msg, {"message": msg.strip()[:500]}, pci_bus_id=pci)


def finish(ctx: ParseContext) -> None:
    """Cross-line fixes after a pass: GPU UUIDs from `NVRM: GPU at` lines, fallen-off-bus dedupe."""
    pci_uuid: dict[str, str] = ctx.state.get("pci_uuid", {})
    xid79 = {e.entity.pci_bus_id for e in ctx.out if e.key == keys.XID and e.value == 79}
    kept = []
    for ev in ctx.out:
        if ev.key == keys.GPU_FALLEN_OFF_BUS and (
            ev.entity.pci_bus_id in xid79 or (ev.entity.pci_bus_id is None and xid79)
        ):
            continue
        kept.append(ev)
    ctx.out[:] = kept
    if pci_uuid:
        for i, ev in enumerate(ctx.out):
            pci = ev.entity.pci_bus_id
            if pci and ev.entity.gpu_uuid is None and pci in pci_uuid:
                ctx.amend(i, gpu_uuid=pci_uuid[pci])


PARSERS: list[Trigger] = [
    (("Xid",), _xid),
    (
        (
            "detected NVSwitch",
            "supported system topology",
            "NV_WARN_NOTHING_TO_DO",
            "multicast team",
            "driver interface version",
        ),
        _fabric_manager,
    ),
    (("NVRM: GPU at PCI:",), _gpu_map),
    (("fallen off the bus",), _fallen),
    (("The NVIDIA GPU", "(PCI ID:"), _fallen_prelude),
    (("eset",), _reset),
    (("MIG mode is in pending", "ode change pending"), _mig_pending),
]
