"""Probes that ask the RCA pipeline (the library call, not the CLI) what the stack's own signals show."""

from __future__ import annotations

import logging
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from chaoslib.exceptions import ActivityFailed

from gpuobs.chaos.diagnosis import diagnose_live, signatures_matching
from gpuobs.chaos.incident import current
from gpuobs.chaos.safety import check_url

__all__ = ["diagnosed_as", "top_signature"]

logger = logging.getLogger("chaostoolkit")


def _inputs(
    logs: list[str] | str | None, prometheus_url: str | None, exporter_url: str | None, config: Any
) -> tuple[list[str], str | None, str | None]:
    if isinstance(logs, str):
        logs = [p for p in logs.split(",") if p.strip()]
    # a log not given is "" (the game-day's --serve-log left out): Path("") is the working folder, which
    # the diagnosis read as a log and failed on; a log not written yet is left out, as before
    files = [p for p in (logs or []) if isinstance(p, str) and p.strip() and Path(p).is_file()]
    prom = check_url(prometheus_url, config) if prometheus_url else None
    exporter = check_url(exporter_url, config) if exporter_url else None
    return files, prom, exporter


def _preexisting(
    ids: set[str], exporter: str | None, fault: float, prom: str | None = None, since: float | None = None
) -> set[str]:
    """Those of `ids` the stack already matched before the fault: in the exporter's last ten seconds, or,
    for a window reaching back to `since` (around the fault), in Prometheus and the exporter from then."""
    if since is not None and (prom or exporter):
        # the pre-fault half grows with each attempt: what it holds is asked anew
        return signatures_matching(ids, (), prom, exporter, start=since, end=fault - 0.05)
    if exporter is None:
        return set()
    known: dict[str, bool] = current().details.setdefault("preexisting", {})
    unknown = {i for i in ids if i not in known}
    if unknown:
        matched = signatures_matching(unknown, (), None, exporter, start=fault - 10.0, end=fault - 0.05)
        known.update({i: i in matched for i in unknown})
    return {i for i in ids if known.get(i)}


def top_signature(
    logs: list[str] | str | None = None,
    prometheus_url: str | None = None,
    exporter_url: str | None = None,
    lookback_s: float = 0.5,
    around_fault: bool = False,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> str | None:
    """The signature `gpuobs diagnose` ranks first over the window from the fault (minus `lookback_s`).

    With `around_fault` the window is [fault - h, fault + h], h the whole seconds since the fault: its
    first half is the steady state, its second the fault, the halves a latency shift is measured between
    (Prometheus summarises latency histograms per half, over whole-second ranges). Logs are always read
    from the fault on. Causes that the exporter's history already showed in the ten seconds before the
    fault (around the fault: that Prometheus or the exporter showed in the first half) are pre-existing
    conditions of a reused stack (counters such as ECC totals persist, a restarted target was down),
    not this fault's.
    """
    files, prom, exporter = _inputs(logs, prometheus_url, exporter_url, configuration)
    with tempfile.TemporaryDirectory(prefix="gpuobs-chaos-rca-") as tmp:
        return _top_signature(_since_fault(files, Path(tmp)), prom, exporter, lookback_s, around_fault)


def _since_fault(files: list[str], folder: Path) -> list[str]:
    """Each watched log cut at its size when the fault went in (the RCA folds repeated lines into the
    first one, so an older copy of the same message would otherwise hide this fault's)."""
    out = []
    offsets = current().offsets
    for i, path in enumerate(files):
        if path not in offsets:
            out.append(path)
            continue
        with open(path, "rb") as fh:
            fh.seek(offsets[path])
            tail = fh.read()
        cut = folder / f"{i}-{Path(path).name}"
        cut.write_bytes(tail)
        out.append(str(cut))
    return out


def _window(lookback_s: float, around_fault: bool) -> tuple[float, float | None]:
    """(start, end) of a diagnosis now: from the fault minus `lookback_s` on, or centred on the fault."""
    fault = current().since_fault()
    if fault is None:
        return time.time() - 300 - lookback_s, None
    if around_fault:
        half = max(1, math.floor(time.time() - fault))
        return fault - half, fault + half
    return fault - lookback_s, None


def _top_signature(
    files: list[str], prom: str | None, exporter: str | None, lookback_s: float, around_fault: bool = False
) -> str | None:
    fault = current().since_fault()
    start, end = _window(lookback_s, around_fault)
    old: set[str] = set()
    for _ in range(3):  # a pre-existing cause may absorb the new one as its symptom: leave it out, again
        report = diagnose_live(files, prom, exporter, start=start, end=end, exclude=old)
        ids = {str(c.id) for c in report.causes}
        since = start if around_fault else None
        found = _preexisting(ids - old, exporter, fault, prom, since) if fault is not None else set()
        if not found - old:
            break
        old |= found
    fresh = [c for c in report.causes if str(c.id) not in old]
    current().details["last_diagnosis"] = {
        "causes": [str(c.id) for c in report.causes],
        "preexisting": sorted(old),
        "problems": list(report.problems),
        "evidence": report.evidence_count,
        "sources": dict(report.sources),
        "logs": files,
        "window": [start, end],
    }
    return str(fresh[0].id) if fresh else None


def diagnosed_as(
    expected_signature: str,
    logs: list[str] | str | None = None,
    prometheus_url: str | None = None,
    exporter_url: str | None = None,
    timeout_s: float = 30.0,
    interval_s: float = 0.5,
    lookback_s: float = 0.5,
    around_fault: bool = False,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> str:
    """Diagnose repeatedly until `expected_signature` ranks first (the diagnosis); fails on timeout.

    Inputs are the stack's own signals: its JSON logs and kernel log (`logs`), the exporter's
    /api/history and a Prometheus server, each optional. `around_fault`: see top_signature (a
    slowdown is a shift against the steady state before the fault). Returns the signature found.
    """
    refused = current().no_fault_reason()
    if refused is not None:  # no fault went in: nothing of it to diagnose
        raise ActivityFailed(f"no fault went in ({refused}): nothing to diagnose")
    deadline = time.monotonic() + timeout_s
    seen: str | None = None
    while True:
        seen = top_signature(logs, prometheus_url, exporter_url, lookback_s, around_fault, configuration)
        if seen == expected_signature:
            current().mark("diagnosed", seen)
            return seen
        if time.monotonic() >= deadline:
            break
        time.sleep(interval_s)
    current().details["diagnosed_other"] = seen
    hint = (
        "; no Prometheus was given: the latency before and after the fault is read from it"
        if around_fault and not prometheus_url
        else ""
    )
    raise ActivityFailed(
        f"expected {expected_signature} ranked first, diagnosis says {seen or 'nothing'}{hint} "
        f"({current().details.get('last_diagnosis')})"
    )
