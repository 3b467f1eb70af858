"""Live node state at diagnose time: NVML readings (through the exporter's NVML funnel) and the
kernel log this process may read (`journalctl -k`, else `dmesg`).

Both are optional: with no NVIDIA driver there is nothing to read and the caller gets an empty
list plus an informational note, never an error.
"""

from __future__ import annotations

import logging
import shutil
import socket
import subprocess
import time
from typing import Any

from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.names import gpu as g
from gpuobs.rca import keys
from gpuobs.rca.parsers.lines import parse_lines
from gpuobs.rca.parsers.prefix import normalize_pci

__all__ = ["live_kernel_log", "live_nvml_state"]

logger = logging.getLogger(__name__)


def live_nvml_state(backend: Any = None) -> tuple[list[Evidence], list[str]]:
    """STATE evidence for every GPU NVML sees now, and notes (e.g. 'no NVIDIA driver')."""
    from gpuobs.exporters.sidecar.backend import BackendError
    from gpuobs.exporters.sidecar.core import GpuReading
    from gpuobs.exporters.sidecar.fields import reading_values

    if backend is None:
        from gpuobs.exporters.sidecar.nvml import NvmlBackend

        backend = NvmlBackend()
    notes: list[str] = []
    try:
        devices = backend.init()
    except (BackendError, ImportError, OSError) as exc:
        logger.info("live NVML state unavailable: %s", exc)
        return [], [f"live NVML state: not available here ({exc})"]
    now = time.time()
    host = socket.gethostname()
    out: list[Evidence] = []
    try:
        for info in devices:
            entity = Entity(
                host=host, gpu_uuid=info.uuid, gpu_index=info.index, pci_bus_id=normalize_pci(info.pci_bus_id)
            )
            labels = {"gpu": str(info.index), "uuid": info.uuid, "host": host, "model_name": info.name}
            try:
                sample = backend.sample(info.index)
            except BackendError as exc:
                out.append(
                    Evidence(
                        kind=EvidenceKind.STATE,
                        key=keys.NVML_ERROR,
                        value="gpu_lost",
                        source="nvml",
                        time=now,
                        entity=entity,
                        raw=str(exc),
                        attrs={"message": str(exc)},
                    )
                )
                continue
            reading = GpuReading(
                info=info, up=True, sample=sample, slow=None, slow_age_s=None, xid_last=0, xid_counts={}
            )
            for name, value in reading_values(reading).items():
                if name == g.CLOCK_EVENT_ACTIVE.native:
                    for reason in g.clock_event_reasons(value):
                        out.append(_state(name, 1.0, {**labels, "reason": reason}, entity, now))
                    continue
                if name == g.XID_LAST.native:
                    continue
                out.append(_state(name, value, labels, entity, now))
            for proc in sample.processes or []:
                if proc.used_memory_bytes is not None:
                    out.append(
                        _state(
                            g.PROCESS_MEMORY_USED.native,
                            float(proc.used_memory_bytes),
                            {**labels, "pid": str(proc.pid), "process_name": proc.name},
                            entity,
                            now,
                        )
                    )
    finally:
        backend.shutdown()
    return out, notes


def _state(key: str, value: float, labels: dict[str, str], entity: Entity, now: float) -> Evidence:
    return Evidence(
        kind=EvidenceKind.STATE,
        key=key,
        value=value,
        source="nvml",
        time=now,
        entity=entity,
        raw=f"{key} {value:g}",
        attrs={"labels": labels, "agg": "now"},
    )


def live_kernel_log(start: float | None = None, timeout_s: float = 15.0) -> tuple[list[Evidence], list[str]]:
    """Kernel-log evidence from `journalctl -k` (or `dmesg`) on this machine, when readable."""
    commands: list[list[str]] = []
    if shutil.which("journalctl"):
        since = f"@{int(start)}" if start else "-1h"
        commands.append(["journalctl", "-k", "-o", "short-iso", "--no-pager", "-q", f"--since={since}"])
    if shutil.which("dmesg"):
        commands.append(["dmesg", "--time-format=iso"])
    for cmd in commands:
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            logger.info("%s failed: %s", cmd[0], exc)
            continue
        if proc.returncode == 0 and proc.stdout.strip():
            evidence = parse_lines(proc.stdout.splitlines(), source=cmd[0], host=socket.gethostname())
            if start is not None:
                evidence = [e for e in evidence if e.time is None or e.time >= start]
            return evidence, []
        logger.info("%s gave nothing (exit %d): %s", cmd[0], proc.returncode, proc.stderr.strip()[:200])
    return [], ["live kernel log: neither journalctl -k nor dmesg is readable here"]
