"""Host kernel messages: PCIe AER, the OOM killer, panics, oopses, lockups, hung tasks, NCCL segfaults,
NVLink/peermem/InfiniBand driver errors, link flaps, file-max, machine checks, read-only remounts.

The same kernel-log inputs as `nvrm` (dmesg, journalctl -k, syslog, /dev/kmsg); each parser is a pure
function of the message plus the pass state for multi-line reports (OOM killer reports, panics).
"""

from __future__ import annotations

import re
from dataclasses import replace

from gpuobs.rca import keys
from gpuobs.rca.parsers.context import ParseContext, Trigger
from gpuobs.rca.parsers.prefix import LinePrefix, normalize_pci

__all__ = ["PARSERS", "oom_start_process", "parse_cpu_pid_comm"]

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


# After an uncorrectable AER error on a port, the kernel's recovery names the device below that port
# ("nvidia 0000:02:00.0: device has no AER-aware driver"): the error is that device's link, so the port's
# record moves to the device (a root port's AER and the GPU's Xid 79 are then about one link).
_AER_BELOW_RE = re.compile(
    r"(?P<agent>[\w-]+) (?P<dev>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d): "
    r"device has no AER-aware driver"
)
_AER_RECOVERY_LINES = 12


def _aer_below_port(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _AER_BELOW_RE.search(msg)
    last = ctx.state.get("last_aer")
    if m is None or last is None or ctx.index - last[0] > _AER_RECOVERY_LINES:
        return
    port = ctx.out[last[1]]
    if port.value not in ("fatal", "uncorrected") or "below" in port.attrs:
        return
    attrs = {"below": m["dev"], "port_device": port.attrs.get("device")}
    ctx.amend(last[1], attrs, pci_bus_id=normalize_pci(m["dev"]))


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
# Kernels before 4.19 (mm/oom_kill.c oom_kill_process) name the victim on a line of its own before the kill:
# "Memory cgroup out of memory: Kill process 1557026 (stress) score 1957 or sacrifice child" (the prefix is
# "Out of memory" for a host-wide OOM), then "Killed process 1557026 (stress) total-vm:..." with no scope.
_KILL_CHOICE_RE = re.compile(
    r"(?P<scope>Memory cgroup out of memory|Out of memory(?: \(oom_kill_allocating_task\))?): "
    r"Kill process (?P<pid>\d+) \("
)
_RSS_RE = re.compile(r"anon-rss:(?P<anon>\d+)kB, file-rss:(?P<file>\d+)kB(?:, shmem-rss:(?P<shmem>\d+)kB)?")
_TASK_IN_RE = re.compile(r"Task in (?P<cg>\S+) killed as a result of limit of (?P<limit>\S+)")
_POD_UID_RE = re.compile(
    r"pod(?P<uid>[0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})"
)


# The memory cgroup section of an OOM report: "memory: usage 131072kB, limit 131072kB, failcnt 15691",
# then "Memory cgroup stats for /kubepods/...:". The kernel prints it only while killing in that cgroup.
_MEMCG_USAGE_RE = re.compile(r"^memory: usage (?P<u>\d+)kB, limit (?P<l>\d+)kB, failcnt (?P<f>\d+)")
_MEMCG_STATS_RE = re.compile(r"Memory cgroup stats for (?P<cg>\S+?):?\s*$")


def _memcg(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _MEMCG_USAGE_RE.search(msg.strip())
    if m:
        usage, limit = int(m["u"]), int(m["l"])
        if limit and usage >= limit and not _recent_oom(ctx):
            attrs: dict[str, object] = {
                "constraint": "CONSTRAINT_MEMCG",
                "limit_bytes": limit * 1024,
                "failcnt": int(m["f"]),
                "message": msg.strip(),
            }
            ctx.state["memcg_report"] = (ctx.index, ctx.emit(keys.HOST_OOM_KILL, None, pre, msg, attrs))
        return
    s = _MEMCG_STATS_RE.search(msg)
    report = ctx.state.get("memcg_report")
    if s and report is not None and ctx.index - report[0] <= 5:
        memcg = s["cg"]
        extra: dict[str, object] = {"memcg": memcg}
        pod = _POD_UID_RE.search(memcg)
        if pod:
            extra["pod_uid"] = pod["uid"].replace("_", "-")
        ctx.amend(report[1], extra)


def _emit_kill(ctx: ParseContext, pre: LinePrefix, msg: str, attrs: dict[str, object]) -> int:
    """The kill line's record; it takes the place of the memory-cgroup record of the same OOM report."""
    index = ctx.emit(keys.HOST_OOM_KILL, None, pre, msg, attrs)
    report = ctx.state.pop("memcg_report", None)
    if report is None or ctx.index - report[0] > 60:
        return index
    kill = ctx.out.pop()
    cgroup = {k: v for k, v in ctx.out[report[1]].attrs.items() if k in ("memcg", "pod_uid", "limit_bytes")}
    ctx.out[report[1]] = replace(kill, attrs={**cgroup, **kill.attrs})
    return report[1]


def _recent_oom(ctx: ParseContext) -> bool:
    """Whether this OOM report already gave a record (its kill line came first)."""
    last = ctx.state.get("last_oom")
    return last is not None and ctx.index - last[0] <= 60


def oom_start_process(line: str) -> str | None:
    """The process named by a `<proc> invoked oom-killer:` line (start of a kernel OOM report)."""
    m = _OOM_START_RE.search(line) if "invoked oom-killer:" in line else None
    return m["proc"].strip() if m else None


def _oom(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    # the substring check first: the regex tries every start position (quadratic on a long kill line)
    m = _OOM_START_RE.search(msg) if "invoked oom-killer:" in msg else None
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
        ctx.state["last_oom"] = (ctx.index, _emit_kill(ctx, pre, msg, attrs))
        ctx.state.pop("oom_start", None)
        return
    choice = _KILL_CHOICE_RE.search(msg) if "Kill process " in msg else None
    if choice:
        ctx.state["oom_choice"] = (ctx.index, int(choice["pid"]), choice["scope"].startswith("Memory cgroup"))
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
    choice_seen = ctx.state.pop("oom_choice", None)
    if not scope and choice_seen and ctx.index - choice_seen[0] <= 5 and choice_seen[1] == pid:
        scope = "Memory cgroup" if choice_seen[2] else "Out of memory"
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
        _emit_kill(ctx, pre, msg, {k: v for k, v in attrs.items() if v is not None}),
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


# The kernel panics on a fatal hardware error that APEI/GHES or the MCE handler reported.
_FATAL_HW_RE = re.compile(r"(?i)Fatal (?:hardware error|machine check)|Machine check")


def _panic(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _PANIC_RE.search(msg)
    if m:
        reason = m["reason"].strip()
        index = ctx.emit(keys.KERNEL_PANIC, None, pre, msg, {"reason": reason})
        ctx.state["panic"] = (ctx.index, index)
        if _FATAL_HW_RE.search(reason):
            ctx.emit(keys.MACHINE_CHECK, "fatal", pre, msg, {"message": msg.strip(), "panic": True})


# Oopses: the kernel hit a bug or a bad access; the faulting task dies and the node is unreliable
# (a panic follows with panic_on_oops). "BUG: soft lockup"/"scheduling while atomic" are not oopses, nor
# is a user-space "traps: proc[pid] general protection fault ip:... in lib.so" (a process crash). FreeBSD's
# trap handler says "Fatal trap 12: page fault while in kernel mode" before it panics (trap.c trap_fatal);
# "while in user mode" is a process's fault.
_OOPS_RE = re.compile(
    r"(?P<what>BUG: (?:unable to handle (?:kernel )?(?:NULL pointer dereference|paging request|page fault)|"
    r"kernel NULL pointer dereference)|kernel BUG at \S+|Fatal trap \d+: [^:]{1,60}? while in kernel mode|"
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


# x86's kernel-mode page-fault oops ends with a standalone "CR2: <address>" line ("executive summary in
# case the body of the oops scrolled away", arch/x86/mm/fault.c); the register dump's CR2 shares its line
# with CR3/CR4. A paste cut to the oops's tail still reports the oops.
_CR2_SUMMARY_RE = re.compile(r"^CR2: [0-9a-f]{16}$")


def _cr2_summary(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    if not _CR2_SUMMARY_RE.match(msg.strip()):
        return
    panic = ctx.state.get("panic")
    if panic is not None and ctx.index - panic[0] <= 60:
        return  # the oops's own header was read: one record for it
    attrs = {"reason": "kernel page fault oops (CR2 summary line)", "kind": "oops", "oops": ["page fault"]}
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
    # Intel's e1000e/igb/igc/ixgbe/i40e/ice print "eth5: NIC Link is Down"
    r"\b(?P<iface>(?:ib|eth|en|ens|enp|em|p\d+p|bond)[\w.]*): "
    r"(?:[Ll]ost carrier|(?:NIC )?[Ll]ink (?:is )?[Dd]own)|"
    # the same drivers' older pr_info form names the interface after the driver: "e1000e: eth0 NIC Link
    # is Down", "igb: eno1 NIC Link is Down"
    r"\b(?:e1000e?|igbv?|igc|ixgbe|i40e|ice): (?P<named>[\w.]+) NIC Link is Down|"
    # bonding: "bond0: link status definitely down for interface eno50, disabling it"
    r"\bbond\w*: link status definitely down for interface (?P<member>[\w.]+)|"
    # the same from kernels 4.x-5.x: "bond0: (slave eth2): link status definitely down, disabling slave"
    r"\bbond\w*: \(slave (?P<slave>[\w.]+)\): link status definitely down|"
    # an InfiniBand port went down (IBV_EVENT_PORT_ERR), as NCCL reports it
    r"NET/IB\w* ?: Got async event ?: (?P<ib>port error)|"
    # the BSD kernels' own notice of a carrier change (FreeBSD and NetBSD sys/net/if.c log "%s: link state
    # changed to %s" with the interface name, UP or DOWN, whatever the driver): igb1, em0, ix0, mlxen0
    r"\b(?P<bsd>[a-z]+\d+(?:\.\d+)?): link state changed to DOWN\b"
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
    elif (f := _FLAP_RE.search(msg)) is not None:  # before the mlx5 branch: "mlx5_core ... ens1: Link down"
        iface = f["iface"] or f["named"] or f["member"] or f["slave"] or f["bsd"] or "ib"
        ctx.emit(keys.LINK_FLAP, iface, pre, msg, {"message": msg.strip()})
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
    elif (v := _FILE_MAX_RE.search(msg)) is not None:
        ctx.emit(keys.FILE_MAX_REACHED, int(v["n"]), pre, msg, {"message": msg.strip()})
    elif (h := _HW_ERR_RE.search(msg)) is not None:
        ctx.emit(keys.MACHINE_CHECK, (h["sev"] or "logged").lower(), pre, msg, {"message": msg.strip()})
    elif (r := _RO_RE.search(msg)) is not None:
        ctx.emit(keys.FILESYSTEM_READONLY, r["dev"] or r["fs"], pre, msg, {"message": msg.strip()})


# A host memory module's uncorrectable error, as the kernel's EDAC core prints it ("EDAC MC0: 1 UE memory
# read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (...)"), an HPE Integrated Management Log entry
# ("Uncorrectable Memory Error (Processor 2, DIMM 3)") or a Dell iDRAC MEM0001 event ("Multi-bit memory
# errors detected on a memory device at location(s) DIMM_A1"): the host's RAM, never a GPU's. EDAC's "CE"
# (corrected) is recorded as such, so that no reader of words takes it for a failure.
_HOST_UE_RE = re.compile(
    r"EDAC (?:\w+ )?MC\d+: (?:\d+ )?UE\b|"
    r"Uncorrectable Memory Error\b.{0,80}?\b(?:DIMM|Memory Module|Processor \d|Board \d|Socket \d)|"
    r"Multi-bit memory errors? (?:were |was )?detected on a memory device"
)
_HOST_CE_RE = re.compile(r"EDAC (?:\w+ )?MC\d+: (?:\d+ )?CE\b")


def _host_memory_error(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    if ctx.emitted_here(keys.MACHINE_CHECK):
        return
    attrs = {"message": msg.strip()[:500], "component": "memory"}
    if _HOST_UE_RE.search(msg):
        ctx.emit(keys.MACHINE_CHECK, "fatal", pre, msg, {**attrs, "uncorrectable": True})
    elif _HOST_CE_RE.search(msg):
        ctx.emit(keys.MACHINE_CHECK, "corrected", pre, msg, attrs)


PARSERS: list[Trigger] = [
    (("AER:", "PCIe Bus Error"), _aer),
    (("EDAC", "Uncorrectable Memory Error", "ulti-bit memory error"), _host_memory_error),
    (("AER-aware driver",), _aer_below_port),
    (("oom-kill", "Killed process", "Kill process ", "Task in "), _oom),
    (("memory: usage", "Memory cgroup stats"), _memcg),
    (("anic - ",), _panic),
    (("BUG: ", "kernel BUG at", "general protection fault", "Oops: ", "Fatal trap "), _oops),
    (("CPU: ",), _cpu_line),
    (("CR2: ",), _cr2_summary),
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
            "ink is Down",
            "definitely down",
            "changed to DOWN",
            "async event",
            "file-max",
            "[Hardware Error]",
            "read-only",
        ),
        _misc,
    ),
]
