"""The one entry point from inputs to evidence: `collect_evidence(...) -> CollectResult`.

`gpuobs diagnose` and `gpuobs bundle` call it with the user's inputs. A bad input the user named
(a missing, binary or malformed file) raises InputError; a source that fails at run time
(Prometheus down, exporter unreachable, no Kubernetes access) is recorded in `problems` and the
run goes on with the other sources, because an incident is exactly when parts of the stack are down.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuobs.errors import InputError
from gpuobs.evidence import Evidence

__all__ = ["CollectResult", "collect_evidence", "evidence_from_input"]

logger = logging.getLogger(__name__)


@dataclass
class CollectResult:
    """Evidence from every source (time-ordered, untimed last) and what went wrong on the way."""

    evidence: list[Evidence]
    problems: list[str]
    notes: list[str] = field(default_factory=list)
    sources: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "evidence": [e.to_dict() for e in self.evidence],
            "problems": list(self.problems),
            "notes": list(self.notes),
            "sources": dict(self.sources),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CollectResult:
        return cls(
            evidence=[Evidence.from_dict(e) for e in data.get("evidence", [])],
            problems=[str(p) for p in data.get("problems", [])],
            notes=[str(n) for n in data.get("notes", [])],
            sources={str(k): int(v) for k, v in (data.get("sources") or {}).items()},
        )


def _in_window(ev: Evidence, start: float | None, end: float | None) -> bool:
    if ev.time is None:
        return True
    return (start is None or ev.time >= start) and (end is None or ev.time <= end)


def collect_evidence(
    logs: list[str],
    prometheus: str | None,
    exporter: str | None,
    traces: list[str],
    k8s_namespace: str | None,
    start: float | None,
    end: float | None,
    live: bool,
    raw: dict[str, Any] | None = None,
) -> CollectResult:
    """Evidence from every given source over the window [start, end] (None: unbounded).

    `logs` may name files, folders, `-` (stdin) and .gz files; saved `kubectl -o json` dumps,
    saved `/metrics` texts and saved `/api/history` JSON among them are recognised. `exporter` is an
    exporter URL or a saved /metrics or /api/history file. With `raw`, remote sources also leave their
    documents in it (the exporter's /api/history, the Kubernetes objects) for `gpuobs bundle`.
    """
    from gpuobs.rca.sources import k8s, metrics, node
    from gpuobs.rca.sources import traces as trace_source

    result = CollectResult(evidence=[], problems=[])

    def run(name: str, fn: Callable[[], list[Evidence]], fatal_inputs: bool = False) -> None:
        t0 = time.perf_counter()
        try:
            found = fn()
        except InputError as exc:
            if fatal_inputs:
                raise
            result.problems.append(f"[{name}] {exc}")
            logger.warning("source %s failed: %s", name, exc)
            return
        except Exception as exc:  # a source bug must not cost the other sources' evidence
            result.problems.append(f"[{name}] unexpected {type(exc).__name__}: {exc}")
            logger.exception("source %s crashed", name)
            return
        kept = [e for e in found if _in_window(e, start, end)]
        result.sources[name] = result.sources.get(name, 0) + len(kept)
        result.evidence.extend(kept)
        logger.info(
            "source %s: %d records (%d in window) in %.3f s",
            name,
            len(found),
            len(kept),
            time.perf_counter() - t0,
        )

    if logs:
        run("logs", lambda: _read_logs(logs), fatal_inputs=True)
    if traces:
        run("traces", lambda: trace_source.read_traces(traces), fatal_inputs=True)
    if prometheus:
        run("prometheus", lambda: metrics.fetch_prometheus(prometheus, start, end))
    if exporter:
        if exporter.startswith(("http://", "https://")):
            run("exporter", lambda: metrics.fetch_exporter_history(exporter, start, end, raw=raw))
        else:
            run("exporter", lambda: _read_logs([exporter]), fatal_inputs=True)
    if k8s_namespace:
        run("kubernetes", lambda: k8s.fetch_live(k8s_namespace, start, end, raw=raw))
    if live:

        def nvml() -> list[Evidence]:
            found, notes = node.live_nvml_state()
            result.notes.extend(notes)
            return found

        def kernel_log() -> list[Evidence]:
            found, notes = node.live_kernel_log(start)
            result.notes.extend(notes)
            return found

        run("nvml", nvml)
        run("kernel_log", kernel_log)
    result.evidence.sort(key=lambda e: (e.time is None, e.time or 0.0))
    return result


def _read_logs(paths: list[str]) -> list[Evidence]:
    """Logs, with saved metrics / history / Kubernetes dumps recognised by content."""
    from gpuobs.rca.sources.logs import iter_log_inputs

    out: list[Evidence] = []
    for item in iter_log_inputs(paths):
        when = None
        if item.name != "<stdin>":
            try:
                when = Path(item.name).stat().st_mtime
            except OSError:
                when = None
        out.extend(evidence_from_input(item.name, item.text, when))
    return out


def evidence_from_input(name: str, text: str, mtime: float | None = None) -> list[Evidence]:
    """Evidence from one input's text: a Kubernetes dump, a saved /metrics (timed at `mtime`), an OTLP
    JSON trace file, a saved /api/history document, or else log lines."""
    import json

    from gpuobs.rca.sources import k8s, metrics
    from gpuobs.rca.sources.lines import parse_lines

    objects = k8s.maybe_k8s_json(text)
    if objects is not None:
        return k8s.evidence_from_objects(objects, source=name)
    from gpuobs.rca.sources import nvsmi

    if nvsmi.looks_like_nvsmi_query(text):
        return nvsmi.parse_nvsmi_query(text, source=name, when=mtime)
    if metrics.looks_like_exposition(text):
        return metrics.parse_exposition(text, source=name, when=mtime)
    head = text.lstrip()[:1]
    if head == "{" and '"resourceSpans"' in text[:4096]:
        from gpuobs.rca.sources.traces import parse_otlp_text

        return parse_otlp_text(text, source=name)
    if head == "{" and '"samples"' in text[:200000] and '"gpus"' in text[:200000]:
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("samples"), list):
            return metrics.evidence_from_history(doc, source=name)
    return parse_lines(text.splitlines(), source=name)
