"""Actions that break a GPU node: simulated faults of `gpuobs export --backend sim`, kernel-log lines.

`inject_gpu_fault` drives the exporter's `POST /api/faults` (XID codes, ECC, throttling, clock drops,
fallen off the bus, NVML failures; see gpuobs.exporters.sidecar.sim.FAULT_KINDS). `append_xid` and
`append_kernel_line` write what the kernel would (`dmesg --time-format=iso` lines) to a kernel-log
file that `gpuobs diagnose` reads; `write_kmsg` writes to /dev/kmsg on a real node, only as root and
only when `gpuobs_allow_kmsg` is set.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import time
from typing import Any

from chaoslib.exceptions import ActivityFailed

from gpuobs.chaos.httpjson import check_fault_api, request_json
from gpuobs.chaos.incident import current
from gpuobs.chaos.node.probes import xid_totals
from gpuobs.chaos.safety import SafetyError, check_log_target, check_url, is_dry_run

__all__ = ["append_kernel_line", "append_xid", "clear_gpu_faults", "inject_gpu_fault", "write_kmsg"]

logger = logging.getLogger("chaostoolkit")

DEFAULT_EXPORTER = "http://127.0.0.1:9400"
DEFAULT_KERNEL_LOG = "gpuobs-kernel.log"


def inject_gpu_fault(
    fault: str,
    gpu: int | None = None,
    params: dict[str, Any] | None = None,
    exporter_url: str = DEFAULT_EXPORTER,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One simulated-node fault through the exporter's `POST /api/faults`; the undo clears them all."""
    base = check_url(exporter_url, configuration)
    body: dict[str, Any] = {"fault": fault, **(params or {})}
    if gpu is not None:
        body["gpu"] = gpu
    if is_dry_run(configuration):
        logger.info("dry run: would inject %s into %s", body, base)
        return {**body, "dry_run": True}
    check_fault_api(f"{base}/api/faults", f"injecting {fault}")
    current().details.setdefault("xid_baseline", xid_totals(base, configuration))
    current().add_undo("node.fault", lambda: request_json("DELETE", f"{base}/api/faults", timeout=10))
    current().mark("fault", {"action": "inject_gpu_fault", **body})
    status, answer = request_json("POST", f"{base}/api/faults", body, timeout=10)
    if status != 200:
        raise ActivityFailed(f"exporter refused fault {body}: {status} {answer}")
    return answer if isinstance(answer, dict) else {"answer": answer}


def clear_gpu_faults(
    exporter_url: str = DEFAULT_EXPORTER,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Undo every simulated fault (`DELETE /api/faults`); counters such as ECC totals stay, as on a GPU."""
    base = check_url(exporter_url, configuration)
    if is_dry_run(configuration):
        return {"dry_run": True}
    refused = current().no_fault_reason()
    if refused is not None:  # nothing went in to clear
        return {"cleared": [], "no_fault": refused}
    current().pop_undos("node.fault")
    status, answer = request_json("DELETE", f"{base}/api/faults", timeout=10)
    if status != 200:
        raise ActivityFailed(f"clearing exporter faults failed: {status} {answer}")
    return answer if isinstance(answer, dict) else {"answer": answer}


def _now_iso() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S,%f+00:00")


def append_kernel_line(
    message: str,
    path: str = DEFAULT_KERNEL_LOG,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> str:
    """Append one kernel message, stamped as `dmesg --time-format=iso` prints it, to the kernel-log file (a
    file of the game day's own: a system log is refused, see `check_log_target`). The fault is marked once the
    line is written; a refusal or a failed write marks none, so the probes after it do not wait for it."""
    line = f"{_now_iso()} {message.strip()}"
    try:
        target = check_log_target(path, configuration)
    except SafetyError as exc:
        current().fault_refused(str(exc))
        raise
    if is_dry_run(configuration):
        return line
    written = time.time()
    try:
        with target.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    except OSError as exc:
        reason = f"cannot append to kernel log {path}: {exc.strerror or exc}"
        current().fault_refused(reason)
        raise ActivityFailed(reason) from None
    current().mark("fault", {"action": "append_kernel_line", "message": message}, at=written)
    return line


def append_xid(
    code: int,
    path: str = DEFAULT_KERNEL_LOG,
    pci: str = "0000:3b:00",
    detail: str = "",
    pid: int | None = None,
    name: str | None = None,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> str:
    """Append an NVRM Xid line (`NVRM: Xid (PCI:...): CODE, pid=..., name=..., DETAIL`) to the kernel log."""
    if not 1 <= int(code) <= 999:
        raise ActivityFailed(f"Xid code must be 1-999, got {code}")
    parts = [f"NVRM: Xid (PCI:{pci}): {int(code)}"]
    if pid is not None:
        parts.append(f"pid={int(pid)}")
    if name:
        parts.append(f"name={name}")
    if detail:
        parts.append(detail)
    return append_kernel_line(", ".join(parts), path, configuration)


def write_kmsg(
    message: str,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> str:
    """Write `message` to /dev/kmsg (the real kernel log). Opt-in: root and `gpuobs_allow_kmsg` true."""
    allowed = str((configuration or {}).get("gpuobs_allow_kmsg", "")).lower() in ("1", "true", "yes")
    if not allowed:
        raise SafetyError("writing to /dev/kmsg is off; set gpuobs_allow_kmsg to true on a node you own")
    if os.geteuid() != 0:
        raise ActivityFailed("writing to /dev/kmsg needs root")
    if is_dry_run(configuration):
        return message
    current().mark("fault", {"action": "write_kmsg", "message": message})
    try:
        with open("/dev/kmsg", "w", encoding="utf-8") as fh:
            fh.write(message.strip() + "\n")
    except OSError as exc:
        raise ActivityFailed(f"cannot write /dev/kmsg: {exc}") from exc
    return message
