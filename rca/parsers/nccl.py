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
            r"Socket recv failed|NET/Plugin"
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


def _nccl_error(msg: str, pre: LinePrefix, ctx: ParseContext) -> None:
    if "WorkNCCL(" in msg:
        return  # the watchdog parser reports it
    if "NCCL WARN" not in msg and "nccl" not in msg.lower():
        return
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


PARSERS: list[Trigger] = [
    (("WorkNCCL(", "Watchdog caught collective", "Heartbeat monitor timed out"), _watchdog),
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
        ),
        _nccl_error,
    ),
]
