"""Stage one of the pipeline: every input of a `DiagnoseInputs` read into Evidence by its reader.

A bad input the user named (a missing, binary or malformed file, a damaged bundle) raises InputError;
a source that fails at run time (Prometheus down, exporter unreachable, no Kubernetes access) is
recorded in `problems` and the run goes on with the other sources, because an incident is exactly
when parts of the stack are down. Records outside the window are dropped (untimed ones are kept).
"""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpuobs.errors import InputError
from gpuobs.evidence import Evidence
from gpuobs.rca.catalog import Catalog
from gpuobs.rca.inputs import DiagnoseInputs
from gpuobs.rca.readers.files import LogInput

__all__ = ["CollectResult", "collect"]

logger = logging.getLogger(__name__)


@dataclass
class CollectResult:
    """Evidence from every source (time-ordered, untimed last) and what went wrong on the way.

    `raw_logs` (the log texts read) and `remote` (documents fetched: the exporter's /api/history, the
    Kubernetes objects) are only filled with `collect(..., keep_raw=True)`, for bundles; they are not
    part of `to_dict`.
    """

    evidence: list[Evidence]
    problems: list[str]
    notes: list[str] = field(default_factory=list)
    sources: dict[str, int] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)
    raw_logs: list[LogInput] = field(default_factory=list)
    remote: dict[str, Any] = field(default_factory=dict)

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


def collect(
    inputs: DiagnoseInputs, *, keep_raw: bool = False, catalog: Catalog | None = None
) -> CollectResult:
    """Evidence from every input over the window (`inputs.resolved()`: live decided, live window set).

    `catalog` gives the text tier its phrases (default: the bundled catalog).
    """
    from gpuobs.rca.parsers.k8s import evidence_from_objects
    from gpuobs.rca.parsers.text import Phrasebook
    from gpuobs.rca.readers import exporter, files, kubernetes, node, prometheus
    from gpuobs.rca.readers.bundle import load_bundle

    inputs = inputs.resolved()
    window = inputs.window
    start, end = window.as_tuple()
    result = CollectResult(evidence=list(inputs.evidence), problems=[])
    remote: dict[str, Any] | None = result.remote if keep_raw else None
    stdin = io.BytesIO(inputs.stdin) if inputs.stdin is not None else None

    outside: dict[str, int] = {}

    def run(name: str, fn: Callable[[], list[Evidence]], fatal_inputs: bool = False) -> None:
        t0 = time.perf_counter()
        try:
            found = fn()
        except InputError as exc:
            if fatal_inputs:
                raise
            result.problems.append(f"[{name}] {exc}")
            # The report lists it under problems: a warning here would print the same error twice.
            logger.info("source %s failed: %s", name, exc)
            return
        except Exception as exc:  # a source bug must not cost the other sources' evidence
            result.problems.append(f"[{name}] unexpected {type(exc).__name__}: {exc}")
            logger.exception("source %s crashed", name)
            return
        kept = [e for e in found if window.contains(e.time)]
        outside[name] = outside.get(name, 0) + len(found) - len(kept)
        result.sources[name] = result.sources.get(name, 0) + len(kept)
        result.evidence.extend(kept)
        logger.info(
            "source %s: %d records (%d in window) in %.3f s",
            name,
            len(found),
            len(kept),
            time.perf_counter() - t0,
        )

    if inputs.bundle:
        bundle_path = inputs.bundle

        def replay() -> list[Evidence]:
            stored = load_bundle(bundle_path)
            result.problems.extend(stored.problems)
            result.notes.extend(stored.notes)
            return stored.evidence

        run("bundle", replay, fatal_inputs=True)
    keep = result.raw_logs if keep_raw else None
    book = Phrasebook.from_signatures(catalog.signatures) if catalog is not None else None
    if inputs.logs:
        unread: list[str] = []
        run(
            "logs",
            lambda: files.read_logs(list(inputs.logs), stdin, keep, result.notes, unread, book),
            fatal_inputs=True,
        )
        result.unread.extend(unread)
    if inputs.traces:
        unread_traces: list[str] = []
        run("traces", lambda: files.read_traces(list(inputs.traces), stdin, unread_traces), fatal_inputs=True)
        result.unread.extend(unread_traces)
    if inputs.prometheus:
        url = inputs.prometheus
        run("prometheus", lambda: prometheus.fetch_prometheus(url, start, end))
    if inputs.exporter:
        target = inputs.exporter
        if target.startswith(("http://", "https://")):
            run("exporter", lambda: exporter.fetch_exporter_history(target, start, end, raw=remote))
        else:
            run("exporter", lambda: files.read_logs([target], phrasebook=book), fatal_inputs=True)
    if inputs.k8s_namespace:
        namespace = inputs.k8s_namespace
        run("kubernetes", lambda: kubernetes.fetch_live(namespace, start, end, raw=remote))
    if inputs.k8s_objects:
        objects = [dict(o) for o in inputs.k8s_objects]
        run("kubernetes", lambda: evidence_from_objects(objects, source="kubernetes"))
    if inputs.live:

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
    left_out = {name: n for name, n in outside.items() if n}
    if left_out:  # a window typed wrong (`--end 0`, a future --start) must not read as a quiet node
        counts = ", ".join(f"{n} from {name}" for name, n in left_out.items())
        total = sum(left_out.values())
        result.notes.append(f"{total} record(s) outside the window ({window.label()}) left out: {counts}")
    result.evidence.sort(key=lambda e: (e.time is None, e.time or 0.0))
    return result
