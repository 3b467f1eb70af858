"""`/dev/kmsg` records: `prio,seq,usec,flags[,...];message` (the kernel's structured log interface)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KmsgRecord", "parse_kmsg_record"]


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
