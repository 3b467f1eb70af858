"""Kernel-log parsers: NVIDIA Xid/SXid, fallen-off-the-bus, PCIe AER, OOM killer, panics, lockups.

Inputs are `dmesg` (relative, `--ctime`, `--time-format=iso`, `--decode`), `journalctl -k`,
syslog, raw `/dev/kmsg` records and nv-fabricmanager logs; `text.split_prefix` removes their
prefixes before these parsers see the message. Each parser is a pure function of the message
(plus the pass state for multi-line reports).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuobs.rca import keys
from gpuobs.rca.sources.base import ParseContext, Trigger
from gpuobs.rca.sources.text import LinePrefix, normalize_pci

__all__ = [
    "PARSERS",
    "KmsgRecord",
    "clock_event_reasons",
    "finish",
    "nvlink5_subcode",
    "oom_start_process",
    "parse_cpu_pid_comm",
    "parse_gpu_map_line",
    "parse_kmsg_record",
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
_NVLINK_LINK_RE = re.compile(r"NVLink: fatal error detected on link (?P<link>\d+)")
_SXID_RE = re.compile(
    r"(?:nvidia-nvswitch(?P<sw>\d+): )?SXid \((?P<dev>[^)]*)\): (?P<code>\d+)\b,?\s*(?P<rest>.*)$"
)
_SXID_LINK_RE = re.compile(r"\bLink (?P<link>\d+)\b\s*(?P<msg>.*)$")
_FM_SXID_RE = re.compile(
    r"detected NVSwitch (?P<sev>fatal|non-fatal) error (?P<code>\d+) on fid \d+ on NVSwitch pci bus id "
    r"(?P<pci>\S+)(?: physical id (?P<phys>\d+))?(?: port (?P<port>\d+))?"
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
    if pid.isdigit():
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
    ctx.state["last_xid_line"] = ctx.index
    ctx.emit(keys.XID, int(m["code"]), pre, msg, attrs, pci_bus_id=pci)


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


def _reset(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    target = msg
    if "recovery action changed from" in msg:
        target = msg.split(" to ", 1)[-1]
    if not _RESET_RE.search(target):
        return
    xm = _XID_RE.search(msg)
    pci = normalize_pci(xm["dev"].split()[0]) if xm and xm["dev"].strip() else None
    ctx.emit(keys.GPU_RESET_REQUIRED, None, pre, msg, {"message": msg.strip()}, pci_bus_id=pci)


# --- PCIe AER -------------------------------------------------------------------------------------
_AER_DEV_RE = re.compile(r"(?P<agent>[\w-]+) (?P<port>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d): ")
_AER_SRC_RE = re.compile(r"received: (?P<src>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)")
_BUS_ERR_RE = re.compile(r"PCIe Bus Error: severity=(?P<sev>[^,]+), type=(?P<type>[^,(]+)")


def _aer_severity(text: str) -> str | None:
    low = text.lower()
    if "corrected error" in low or low.startswith("corrected"):
        return "corrected"
    if "fatal)" in low and "non-fatal" not in low:
        return "fatal"
    if "non-fatal" in low or "nonfatal" in low:
        return "uncorrected"
    if "can't recover" in low or "fatal" in low:
        return "fatal"
    if "uncorrect" in low:
        return "uncorrected"
    return None


def _aer(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    dev = _AER_DEV_RE.search(msg)
    bus = _BUS_ERR_RE.search(msg)
    if bus:
        severity = _aer_severity(bus["sev"])
        etype = bus["type"].strip()
        last = ctx.state.get("last_aer")
        if last is not None and ctx.index - last[0] <= 2 and ctx.out[last[1]].value == severity:
            ctx.amend(last[1], {"type": etype})
            return
    elif "AER:" in msg:
        severity = _aer_severity(msg.split("AER:", 1)[1])
        etype = None
    else:
        return
    if severity is None:
        return
    attrs: dict[str, object] = {"message": msg.strip()}
    if etype:
        attrs["type"] = etype
    device = None
    if dev:
        attrs["agent"] = dev["agent"]
        attrs["port"] = dev["port"]
        device = dev["port"]
    src = _AER_SRC_RE.search(msg)
    if src:
        device = src["src"]
    if device:
        attrs["device"] = device
    index = ctx.emit(keys.PCIE_AER, severity, pre, msg, attrs, pci_bus_id=normalize_pci(device))
    ctx.state["last_aer"] = (ctx.index, index)


# --- host OOM killer ------------------------------------------------------------------------------
_OOM_START_RE = re.compile(r"(?P<proc>\S.*?) invoked oom-killer:")
_OOM_KILL_RE = re.compile(
    r"oom-kill:constraint=(?P<c>[^,]*),.*?(?:oom_memcg=(?P<memcg>[^,]*),)?(?:task_memcg=(?P<tmemcg>[^,]*),)?"
    r"task=(?P<task>[^,]*),pid=(?P<pid>\d+)\b"
)
_KILLED_RE = re.compile(
    r"(?P<scope>Memory cgroup out of memory: |Out of memory: )?Killed process (?P<pid>\d+)(?:, UID \d+,)?"
    r" \((?P<proc>.+?)\)(?=[\s,.]|$)"
)
_RSS_RE = re.compile(r"anon-rss:(?P<anon>\d+)kB, file-rss:(?P<file>\d+)kB(?:, shmem-rss:(?P<shmem>\d+)kB)?")
_TASK_IN_RE = re.compile(r"Task in (?P<cg>\S+) killed as a result of limit of (?P<limit>\S+)")
_POD_UID_RE = re.compile(
    r"pod(?P<uid>[0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})"
)


def oom_start_process(line: str) -> str | None:
    """The process named by a `<proc> invoked oom-killer:` line (start of a kernel OOM report)."""
    m = _OOM_START_RE.search(line)
    return m["proc"].strip() if m else None


def _oom(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _OOM_START_RE.search(msg)
    if m and "oom-kill:" not in msg:
        ctx.state["oom_start"] = (ctx.index, m["proc"].strip())
        ctx.state.pop("oom_cgroup", None)
        return
    t = _TASK_IN_RE.search(msg)
    if t:
        ctx.state["oom_cgroup"] = (t["cg"], t["limit"])
        return
    k = _OOM_KILL_RE.search(msg)
    if k:
        attrs: dict[str, object] = {
            "pid": int(k["pid"]),
            "process": k["task"],
            "constraint": k["c"],
            "message": msg.strip(),
        }
        memcg = k["tmemcg"] or k["memcg"]
        if memcg:
            attrs["memcg"] = memcg
            pod = _POD_UID_RE.search(memcg)
            if pod:
                attrs["pod_uid"] = pod["uid"].replace("_", "-")
        ctx.state["last_oom"] = (ctx.index, ctx.emit(keys.HOST_OOM_KILL, None, pre, msg, attrs))
        ctx.state.pop("oom_start", None)
        return
    kd = _KILLED_RE.search(msg)
    if not kd:
        return
    pid, proc = int(kd["pid"]), kd["proc"]
    attrs = {"pid": pid, "process": proc}
    rss = _RSS_RE.search(msg)
    if rss:
        attrs["rss_bytes"] = (int(rss["anon"]) + int(rss["file"]) + int(rss["shmem"] or 0)) * 1024
    scope = kd["scope"] or ""
    if scope.startswith("Memory cgroup"):
        attrs["constraint"] = "CONSTRAINT_MEMCG"
    cgroup = ctx.state.pop("oom_cgroup", None)
    if cgroup:
        attrs["memcg"] = cgroup[0]
        pod = _POD_UID_RE.search(cgroup[0])
        if pod:
            attrs["pod_uid"] = pod["uid"].replace("_", "-")
    last = ctx.state.get("last_oom")
    if last is not None and ctx.index - last[0] <= 60 and ctx.out[last[1]].attrs.get("pid") == pid:
        ctx.amend(last[1], attrs)
        return
    if "constraint" not in attrs:
        attrs["constraint"] = "CONSTRAINT_NONE" if "oom_start" in ctx.state or scope else None
    attrs["message"] = msg.strip()
    ctx.state["last_oom"] = (
        ctx.index,
        ctx.emit(keys.HOST_OOM_KILL, None, pre, msg, {k: v for k, v in attrs.items() if v is not None}),
    )
    ctx.state.pop("oom_start", None)


# --- panics, lockups ------------------------------------------------------------------------------
_PANIC_RE = re.compile(r"Kernel [Pp]anic - (?:not )?syncing:?\s*(?P<reason>.*)$")
_CPU_PID_RE = re.compile(r"\bCPU: (?P<cpu>\d+) PID: (?P<pid>\d+) Comm: (?P<comm>\S+)")
_HUNG_RE = re.compile(r"\btask (?P<proc>[^\s:]+):(?P<pid>\d+) blocked for more than (?P<s>\d+) seconds")
_LOCKUP_RE = re.compile(
    r"soft lockup - CPU#(?P<cpu>\d+) stuck for (?P<s>\d+)s! \[(?P<proc>.+):(?P<pid>\d+)\]"
)


def parse_cpu_pid_comm(line: str) -> tuple[int, int, str] | None:
    """(cpu, pid, process) from a `CPU: 24 PID: 1364 Comm: khungtaskd ...` line, else None."""
    m = _CPU_PID_RE.search(line)
    return (int(m["cpu"]), int(m["pid"]), m["comm"]) if m else None


def _panic(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _PANIC_RE.search(msg)
    if m:
        index = ctx.emit(keys.KERNEL_PANIC, None, pre, msg, {"reason": m["reason"].strip()})
        ctx.state["panic"] = (ctx.index, index)


# Oopses: the kernel hit a bug or a bad access; the faulting task dies and the node is unreliable
# (a panic follows with panic_on_oops). "BUG: soft lockup"/"scheduling while atomic" are not oopses, nor
# is a user-space "traps: proc[pid] general protection fault ip:... in lib.so" (a process crash).
_OOPS_RE = re.compile(
    r"(?P<what>BUG: (?:unable to handle (?:kernel )?(?:NULL pointer dereference|paging request|page fault)|"
    r"kernel NULL pointer dereference)|kernel BUG at \S+|"
    r"general protection fault(?:,[^:\]]*)?: [0-9a-fA-F]{4} \[#\d+\]|"
    r"Oops: (?P<code>[0-9a-fA-F]{4})\b)(?P<rest>.*)$"
)


def _oops(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _OOPS_RE.search(msg)
    if not m:
        return
    what = m["what"]
    panic = ctx.state.get("panic")
    if panic is not None and ctx.index - panic[0] <= 60:
        # one oops prints BUG:, Oops: and a general protection fault line: keep one record for it
        reasons = ctx.out[panic[1]].attrs.get("oops") or []
        ctx.amend(panic[1], {"oops": [*reasons, what.strip()][:4]})
        return
    reason = (what + m["rest"]).strip()
    attrs = {"reason": reason[:300], "kind": "oops", "oops": [what.strip()]}
    index = ctx.emit(keys.KERNEL_PANIC, None, pre, msg, attrs)
    ctx.state["panic"] = (ctx.index, index)


def _cpu_line(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    panic = ctx.state.get("panic")
    if panic is None or ctx.index - panic[0] > 60 or "process" in ctx.out[panic[1]].attrs:
        return
    found = parse_cpu_pid_comm(msg)
    if found:
        ctx.amend(panic[1], {"cpu": found[0], "pid": found[1], "process": found[2]})


def _hung(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _HUNG_RE.search(msg)
    if m:
        ctx.emit(
            keys.HUNG_TASK,
            int(m["s"]),
            pre,
            msg,
            {"process": m["proc"], "pid": int(m["pid"]), "seconds": int(m["s"])},
        )


def _lockup(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _LOCKUP_RE.search(msg)
    if m:
        ctx.emit(
            keys.SOFT_LOCKUP,
            int(m["s"]),
            pre,
            msg,
            {"cpu": int(m["cpu"]), "process": m["proc"], "pid": int(m["pid"]), "seconds": int(m["s"])},
        )


# --- NCCL segfault, NVLink, peermem, InfiniBand, misc ---------------------------------------------
_SEGV_RE = re.compile(
    r"(?:(?P<proc>[\w.-]+)\[(?P<pid>\d+)\]: )?segfault at \S+ ip \S+ sp \S+ error \d+ in libnccl\.so"
)


def _segfault(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _SEGV_RE.search(msg)
    if m:
        attrs: dict[str, object] = {"message": msg.strip()}
        if m["proc"]:
            attrs["process"] = m["proc"]
            attrs["pid"] = int(m["pid"])
        ctx.emit(keys.NCCL_ERROR, "segfault", pre, msg, attrs)


_NVLINK_RX_RE = re.compile(r"postRxDetLinkMask failed|Failed to update Rx Detect Link mask")
_PEERMEM_RE = re.compile(r"nvidia-peermem.*ERROR detected invalid context")
_IB_POWER_RE = re.compile(r"Detected insufficient power on the PCIe slot \((?P<w>\d+)W\)")
_IB_TEMP_RE = re.compile(r"Port module event.*High Temperature")
_IB_ACCESS_RE = re.compile(r"mlx5_cmd_out_err.*ACCESS_REG.*failed")
_MLX_DEV_RE = re.compile(r"mlx5_core (?P<dev>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)")
_FLAP_RE = re.compile(
    r"\b(?P<iface>(?:ib|eth|en|ens|enp|bond)[\w.]*): (?:[Ll]ost carrier|[Ll]ink (?:is )?[Dd]own)"
)
_FILE_MAX_RE = re.compile(r"VFS: file-max limit (?P<n>\d+) reached")
_HW_ERR_RE = re.compile(
    r"\[Hardware Error\]: (?:event severity: (?P<sev>\w+)|(?P<mce>Machine check events logged))"
)
_RO_RE = re.compile(r"(?P<fs>[\w-]+)(?: \((?P<dev>[^)]*)\))?: Remounting filesystem read-only")


def _misc(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    if _NVLINK_RX_RE.search(msg):
        ctx.emit(keys.NVLINK_ERROR, "post_rx_detect_failure", pre, msg, {"message": msg.strip()})
    elif _PEERMEM_RE.search(msg):
        ctx.emit(keys.PEERMEM_ERROR, "invalid_context", pre, msg, {"message": msg.strip()})
    elif "mlx5" in msg or "Port module event" in msg or "insufficient power" in msg:
        dev = _MLX_DEV_RE.search(msg)
        attrs: dict[str, object] = {"message": msg.strip()}
        if dev:
            attrs["device"] = dev["dev"]
        if (p := _IB_POWER_RE.search(msg)) is not None:
            attrs["watts"] = int(p["w"])
            ctx.emit(keys.INFINIBAND_ERROR, "pci_power_insufficient", pre, msg, attrs)
        elif _IB_TEMP_RE.search(msg):
            ctx.emit(keys.INFINIBAND_ERROR, "port_module_high_temperature", pre, msg, attrs)
        elif _IB_ACCESS_RE.search(msg):
            ctx.emit(keys.INFINIBAND_ERROR, "access_reg_failed", pre, msg, attrs)
    elif (f := _FLAP_RE.search(msg)) is not None:
        ctx.emit(keys.LINK_FLAP, f["iface"], pre, msg, {"message": msg.strip()})
    elif (v := _FILE_MAX_RE.search(msg)) is not None:
        ctx.emit(keys.FILE_MAX_REACHED, int(v["n"]), pre, msg, {"message": msg.strip()})
    elif (h := _HW_ERR_RE.search(msg)) is not None:
        ctx.emit(keys.MACHINE_CHECK, (h["sev"] or "logged").lower(), pre, msg, {"message": msg.strip()})
    elif (r := _RO_RE.search(msg)) is not None:
        ctx.emit(keys.FILESYSTEM_READONLY, r["dev"] or r["fs"], pre, msg, {"message": msg.strip()})


# --- /dev/kmsg records ----------------------------------------------------------------------------
@dataclass(frozen=True)
class KmsgRecord:
    """One `/dev/kmsg` record: syslog priority (0-7), sequence number, microseconds since boot."""

    priority: int
    facility: int
    seq: int
    usec: int
    message: str


def parse_kmsg_record(line: str) -> KmsgRecord:
    """Parse `prio,seq,usec,flags[,...];message`; raises ValueError on a malformed record."""
    head, sep, message = line.partition(";")
    if not sep:
        raise ValueError("invalid kmsg record: no ';' separating header and message")
    parts = head.split(",")
    if len(parts) < 3:
        raise ValueError("invalid kmsg record: need at least 3 comma-separated header fields")
    try:
        prio, seq, usec = int(parts[0]), int(parts[1]), int(parts[2])
    except ValueError as exc:
        raise ValueError(f"invalid kmsg record: could not parse header {head!r}") from exc
    if prio < 0 or seq < 0 or usec < 0:
        raise ValueError(f"invalid kmsg record: negative header field in {head!r}")
    return KmsgRecord(priority=prio & 7, facility=prio >> 3, seq=seq, usec=usec, message=message.rstrip("\n"))


# --- NVML clock-event reasons ---------------------------------------------------------------------
_CLOCK_REASONS = (
    (0x1, "gpu_idle", False),
    (0x2, "applications_clocks_setting", False),
    (0x4, "sw_power_cap", False),
    (0x8, "hw_slowdown", True),
    (0x10, "sync_boost", False),
    (0x20, "sw_thermal_slowdown", False),
    (0x40, "hw_thermal_slowdown", True),
    (0x80, "hw_power_brake_slowdown", True),
    (0x100, "display_clock_setting", False),
)


def clock_event_reasons(mask: int) -> list[tuple[str, bool]]:
    """The NVML clock-event (throttle) reasons set in `mask`, each with whether it is a HW slowdown."""
    return [(name, hw) for bit, name, hw in _CLOCK_REASONS if mask & bit]


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
        ("detected NVSwitch", "supported system topology", "NV_WARN_NOTHING_TO_DO", "multicast team"),
        _fabric_manager,
    ),
    (("NVRM: GPU at PCI:",), _gpu_map),
    (("fallen off the bus",), _fallen),
    (("The NVIDIA GPU", "(PCI ID:"), _fallen_prelude),
    (("eset",), _reset),
    (("AER:", "PCIe Bus Error"), _aer),
    (("oom-kill", "Killed process", "Task in "), _oom),
    (("anic - ",), _panic),
    (("BUG: ", "kernel BUG at", "general protection fault", "Oops: "), _oops),
    (("CPU: ",), _cpu_line),
    (("blocked for more than",), _hung),
    (("soft lockup",), _lockup),
    (("libnccl",), _segfault),
    (
        (
            "postRxDetLinkMask",
            "Rx Detect Link mask",
            "nvidia-peermem",
            "mlx5",
            "Port module event",
            "insufficient power",
            "carrier",
            "ink down",
            "ink is down",
            "file-max",
            "[Hardware Error]",
            "read-only",
        ),
        _misc,
    ),
]
