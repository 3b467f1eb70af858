"""NCCL parsers: c10d watchdog timeouts, heartbeat timeouts, NCCL WARN network/shm/p2p failures and
the ncclResult_t names PyTorch puts in its exceptions.
"""

from __future__ import annotations

import re

from gpuobs.rca import keys
from gpuobs.rca.parsers.context import ParseContext, Trigger
from gpuobs.rca.parsers.prefix import LinePrefix

__all__ = ["PARSERS"]

_WATCHDOG_RE = re.compile(
    r"WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)(?:, NumelIn=(?P<nin>\d+), NumelOut=(?P<nout>\d+))?"
    r"(?:, Timeout\(ms\)=(?P<to>\d+))?\)(?: ran for (?P<ran>\d+) milliseconds)?"
)
_RANK_RE = re.compile(r"\[(?:PG [^\]]*?)?Rank (?P<rank>\d+)\]")
# "host:pid:tid [gpu] file.cc:123 NCCL WARN ..." — the NCCL_DEBUG prefix.
_NCCL_PREFIX_RE = re.compile(r"(?:^|\s)(?P<host>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] ")
_IB_RE = re.compile(
    r"Got completion from peer (?P<peer>\S+) with (?:status=|error )(?P<status>\d+)"
    r"(?:.*?vendor err (?P<vendor>\d+))?"
)
_NCCL_CLASSES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"shared memory segment|/dev/shm/nccl|posix_fallocate|nccl-shm"), "shm"),
    (
        re.compile(
            r"NET/IB|NET/Socket|NET/IBext|NET/OFI|ibv_\w+ failed|ibv_poll_cq|Connection closed by remote|"
            r"socketPollConnect|Connection refused|Connection reset|Net : |connection timed out|"
            r"Socket recv failed|NET/Plugin|"
            # misc/socket.cc's own failures (`Connect to <addr> failed : Network is unreachable`, `Socket
            # creation failed : Address family not supported by protocol`) and bootstrap.cc's `Bootstrap : no
            # socket interface found` (NCCL_SOCKET_IFNAME names no interface the host has)
            r"Connect to \S+ failed|Network is unreachable|No route to host|Socket creation failed|"
            r"no socket interface found"
        ),
        "network",
    ),
    (re.compile(r"(?i)peer access is not supported|cudaIpc\w+ failed|P2P/IPC|p2p\.cc|P2P/CUMEM"), "p2p"),
    (re.compile(r"ncclRemoteError|remote process exited or there was a network error"), "remote"),
    (
        re.compile(r"ncclUnhandledCudaError|unhandled cuda error|Call to CUDA function failed"),
        "unhandled_cuda",
    ),
    (re.compile(r"ncclSystemError|unhandled system error"), "unhandled_system"),
    (re.compile(r"ncclInvalidUsage|invalid usage"), "invalid_usage"),
    (re.compile(r"ncclInternalError|internal error - please report"), "internal"),
)


def _entity_bits(msg: str) -> tuple[str | None, int | None]:
    m = _NCCL_PREFIX_RE.search(msg)
    return (m["host"], int(m["dev"])) if m else (None, None)


def _watchdog(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _WATCHDOG_RE.search(msg)
    if m is None and "Watchdog caught collective operation timeout" in msg:
        m = _WATCHDOG_RE.search(msg + " " + ctx.lookahead(2))
    attrs: dict[str, object] = {}
    if m:
        attrs.update({"seq": int(m["seq"]), "op": m["op"]})
        if m["to"]:
            attrs["timeout_ms"] = int(m["to"])
        if m["ran"]:
            attrs["elapsed_ms"] = int(m["ran"])
        if m["nin"]:
            attrs["numel_in"] = int(m["nin"])
    elif "Heartbeat monitor timed out" in msg or "heartbeat monitor" in msg.lower():
        attrs["op"] = "heartbeat"
    else:
        return
    rank = _RANK_RE.search(msg)
    if rank:
        attrs["rank"] = int(rank["rank"])
    elif pre.rank is not None:
        attrs["rank"] = pre.rank
    attrs["message"] = msg.strip()[:500]
    ctx.emit(keys.NCCL_TIMEOUT, None, pre, msg, attrs)


# misc/ibvwrap.cc's `Failed to open libibverbs.so[.1]`, printed by every NCCL on a host without RDMA.
_NO_VERBS_RE = re.compile(r"Failed to open libibverbs\.so")

# NCCL's own wording without an NCCL tag: an InfiniBand completion error, and `Last error:` with the
# error on the next line (how PyTorch prints ncclGetLastError; the block reader joins the two lines).
_NCCL_WORDING = ("Got completion from peer", "Last error:")


def _nccl_error(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    if "WorkNCCL(" in msg:
        return  # the watchdog parser reports it
    if "NCCL WARN" not in msg and "nccl" not in msg.lower() and not any(w in msg for w in _NCCL_WORDING):
        return
    if msg.strip() == "Last error:":
        return  # the error itself is on the next line: the block reader reads the two together
    if "using internal" in msg or ("Plugin" in msg and "cannot open shared object" in msg):
        return  # no net/tuner plugin installed, NCCL uses its own transport: start-up talk, not a failure
    if _NO_VERBS_RE.search(msg):
        return  # no InfiniBand verbs library on the host: NCCL uses sockets (start-up talk, not a failure)
    if "NCCL INFO" in msg:
        return  # INFO lines only trace the error back up the stack
    cls = None
    for regex, name in _NCCL_CLASSES:
        if regex.search(msg):
            cls = name
            break
    if cls is None:
        if "NCCL WARN" in msg:
            cls = "internal" if "Cuda failure" not in msg else "unhandled_cuda"
        else:
            return
    host, dev = _entity_bits(msg)
    attrs: dict[str, object] = {"message": msg.strip()[:500]}
    ib = _IB_RE.search(msg)
    if ib:
        attrs.update({"peer": ib["peer"], "status": int(ib["status"])})
        if ib["vendor"]:
            attrs["vendor_err"] = int(ib["vendor"])
    rank = _RANK_RE.search(msg)
    if rank:
        attrs["rank"] = int(rank["rank"])
    ctx.emit(keys.NCCL_ERROR, cls, pre, msg, attrs, host=host, gpu_index=dev)


# A process crash report: UCX (`Caught signal 11 (Segmentation fault: ...)` then `==== backtrace`),
# Open MPI (`*** Process received signal ***`, `Signal: Segmentation fault (11)`, `[ 4] libnccl.so...`),
# abseil's failure signal handler (`*** SIGSEGV received at time=... on cpu 3 ***` then `PC: @ 0x...
# function()`, as in JAX and TensorFlow-linked processes), glog's (`*** SIGSEGV (@0x50) received by PID 105250
# (TID 0x7f22ef08b700) from PID 80; stack trace: ***` then `    @     0x7f1feb014aed ncclCommInitAll`, as in
# PaddlePaddle and Caffe) or a plain SIGSEGV; it is NCCL's when the backtrace below names NCCL.
_CRASH_RE = re.compile(
    r"Caught signal (?:11|7|6) \((?P<what>[^:)]+)|\*\*\* Process received signal \*\*\*|"
    r"Signal: (?P<sig>Segmentation fault|Bus error|Aborted) \(\d+\)|received signal SIGSEGV|"
    r"Fatal Python error: Segmentation fault|\*\*\* SIG(?:SEGV|BUS|ABRT) received at time=|"
    r"\*\*\* SIG(?:SEGV|BUS|ABRT) \(@0x[0-9a-fA-F]+\) received by PID"
)
_NCCL_FRAME_RE = re.compile(r"(?i)libnccl|\bp?nccl[A-Z]\w*|nccl::|libnccl-net|ncclProxy")
_NCCL_SHM_FRAME_RE = re.compile(r"ncclShm\w*|shmutils\.cc")
_BUS_RE = re.compile(r"Caught signal 7\b|Signal: Bus error|\bSIGBUS\b")
_BACKTRACE_LINES = 30


def _crash(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    m = _CRASH_RE.search(msg)
    if m is None:
        return
    last = ctx.state.get("crash_line")
    if last is not None and ctx.index - last <= _BACKTRACE_LINES:
        return  # the same report's next header line
    frame = None
    for raw in ctx.lines[ctx.index : ctx.index + _BACKTRACE_LINES]:
        f = _NCCL_FRAME_RE.search(raw)
        if f:
            frame = raw.strip()[:300]
            break
    if frame is None:
        return
    ctx.state["crash_line"] = ctx.index
    attrs: dict[str, object] = {"message": msg.strip()[:500], "frame": frame}
    # NCCL's intra-node buffers are files in /dev/shm that it maps (misc/shmutils.cc, ncclShmOpen): a page of
    # such a mapping that tmpfs cannot back, a full 64 MiB container /dev/shm, faults with SIGBUS (mmap(2)),
    # so a bus error in NCCL, or a crash in its shared-memory code, is the shm failure, not an NCCL bug.
    head = "\n".join(ctx.lines[ctx.index : ctx.index + 3])  # Open MPI names the signal on the next line
    bus = m["what"] == "Bus error" or bool(_BUS_RE.search(head))
    if bus or _NCCL_SHM_FRAME_RE.search(frame):
        attrs["signal"] = "SIGBUS" if bus else "SIGSEGV"
        ctx.emit(keys.NCCL_ERROR, "shm", pre, msg, attrs)
        return
    ctx.emit(keys.NCCL_ERROR, "segfault", pre, msg, attrs)


# A crash told in a sentence that places it in NCCL ("a systematic segfault inside ncclCommInitRank",
# "Segmentation fault in libnccl.so.2"): NCCL's API symbols are camel case after the lower-case prefix
# (nccl.h: ncclCommInitRank, ncclAllReduce; pncclX their profiling aliases), so NCCL_DEBUG and other
# environment names do not place a crash there.
_TOLD_SEGV_RE = re.compile(
    r"(?:[Ss]egfault(?:s|ed)?|[Ss]egmentation fault|SIGSEGV)\s+(?:inside|in|within|from)\s+"
    r"(?:the\s+)?[`'\"(]?(?P<where>p?nccl[A-Z]\w*|libnccl[\w.-]*)"
)


# A crash told in a sentence with the debugger's backtrace pasted below it ("I get a segfault in barrier():"
# then gdb's `bt`): the frames gdb prints, "#0  0x00001554ff97c269 in ncclIbDeregMr (comm=0x0, ...) at
# transport/net_ib.cc:906" or "#2  0x... in ?? () from /usr/lib/x86_64-linux-gnu/libnccl.so.2", place it in
# NCCL when one of them is NCCL's (only gdb frame lines are read: NCCL's own INFO lines name its API too).
_GDB_FRAME_RE = re.compile(r"^\s*#\d+\s+(?:0x[0-9a-fA-F]+\s+in\s+)?(?P<fn>\S+)(?P<rest>.*)$")
_TOLD_SEGV_WORD_RE = re.compile(r"[Ss]egfault|[Ss]egmentation fault|SIGSEGV")


def _gdb_nccl_frame(ctx: ParseContext) -> str | None:
    """The first NCCL frame of a gdb backtrace among the lines after this one, or None."""
    for raw in ctx.lines[ctx.index + 1 : ctx.index + 1 + _BACKTRACE_LINES]:
        f = _GDB_FRAME_RE.match(raw)
        if f and (_NCCL_FRAME_RE.match(f["fn"]) or "libnccl" in f["rest"]):
            return raw.strip()[:300]
    return None


def _told_segfault(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    if ctx.emitted_here(keys.NCCL_ERROR):
        return
    m = _TOLD_SEGV_RE.search(msg)
    where = m["where"] if m else None
    if where is None and _TOLD_SEGV_WORD_RE.search(msg) and _CRASH_RE.search(msg) is None:
        where = _gdb_nccl_frame(ctx)
    if where is None:
        return
    attrs: dict[str, object] = {"message": msg.strip()[:500], "frame": where}
    if _NCCL_SHM_FRAME_RE.search(where):  # its shared-memory code, as for a backtrace (above)
        attrs["signal"] = "SIGSEGV"
        ctx.emit(keys.NCCL_ERROR, "shm", pre, msg, attrs)
        return
    ctx.emit(keys.NCCL_ERROR, "segfault", pre, msg, attrs)


PARSERS: list[Trigger] = [
    (("WorkNCCL(", "Watchdog caught collective", "Heartbeat monitor timed out"), _watchdog),
    (("egfault", "egmentation fault", "SIGSEGV"), _told_segfault),
    (
        (
            "Caught signal",
            "Process received signal",
            "Signal: Segmentation fault",
            "Signal: Bus error",
            "received signal SIGSEGV",
            "Fatal Python error: Segmentation",
            "received at time=",
            "received by PID",
        ),
        _crash,
    ),
    (
        (
            "NCCL WARN",
            "ncclRemoteError",
            "ncclUnhandledCudaError",
            "ncclSystemError",
            "ncclInternalError",
            "ncclInvalidUsage",
            "NCCL error",
            "NCCL Error",
            "Got completion from peer",
            "Last error:",
        ),
        _nccl_error,
    ),
]
