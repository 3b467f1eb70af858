"""What a diagnosis reads: the typed description of an incident's inputs and its time window.

`gpuobs diagnose`, `gpuobs bundle`, the incident corpus and chaos game days all describe their inputs
with `DiagnoseInputs` and hand it to `gpuobs.rca.diagnose` (or `collect` for a bundle).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gpuobs.errors import InputError
from gpuobs.evidence import Evidence
from gpuobs.timeparse import parse_duration, parse_time
from gpuobs.user_input import require_http_url, require_namespace

__all__ = ["DEFAULT_LIVE_WINDOW_S", "DiagnoseInputs", "TimeWindow"]

DEFAULT_LIVE_WINDOW_S = 1800.0
"""The window of a live diagnosis when none is given: the last 30 minutes."""


@dataclass(frozen=True)
class TimeWindow:
    """The incident window in epoch seconds; None on a side means unbounded there."""

    start: float | None = None
    end: float | None = None

    def __post_init__(self) -> None:
        if self.start is not None and self.end is not None and self.start >= self.end:
            raise InputError(f"the window start ({self.start}) must be before its end ({self.end})")

    @classmethod
    def last(cls, seconds: float, now: float | None = None) -> TimeWindow:
        """The `seconds` up to now (from the epoch at most: `--since 99999999d` means every record)."""
        now = time.time() if now is None else now
        return cls(max(now - seconds, 0.0), now)

    @classmethod
    def from_flags(
        cls,
        since: str | None = None,
        start: str | None = None,
        end: str | None = None,
        now: float | None = None,
    ) -> TimeWindow:
        """The window of `--since` or `--start`/`--end` (gpuobs.timeparse forms); errors name the flag."""
        if since and (start or end):
            raise InputError("give either --since or --start/--end, not both")
        now = time.time() if now is None else now
        try:
            if since:
                return cls.last(_flag(parse_duration, "--since", since), now)
            t_start = _flag(lambda t: parse_time(t, now=now), "--start", start) if start else None
            t_end = _flag(lambda t: parse_time(t, now=now), "--end", end) if end else None
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if t_start is not None and t_end is not None and t_start >= t_end:
            raise InputError(f"--start ({start}) must be before --end ({end})")
        return cls(t_start, t_end)

    @property
    def bounded(self) -> bool:
        return self.start is not None or self.end is not None

    def contains(self, when: float | None) -> bool:
        """Whether a record at `when` falls in the window (an untimed record always does)."""
        if when is None:
            return True
        return (self.start is None or when >= self.start) and (self.end is None or when <= self.end)

    def as_tuple(self) -> tuple[float | None, float | None]:
        return (self.start, self.end)

    def label(self) -> str:
        """The window in UTC for a person: `2026-12-07T18:30:00Z to 2026-12-07T19:00:00Z`, `from ...`."""

        def utc(when: float) -> str:
            return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))

        if self.start is not None and self.end is not None:
            return f"{utc(self.start)} to {utc(self.end)}"
        if self.start is not None:
            return f"from {utc(self.start)}"
        return f"until {utc(self.end)}" if self.end is not None else "(unbounded)"


def _flag(parse: Any, flag: str, text: str) -> float:
    try:
        return float(parse(text))
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None


@dataclass(frozen=True)
class DiagnoseInputs:
    """Every input of one diagnosis, all optional (sequences are stored as tuples).

    `live=None` means: read this node (NVML and kernel log) when no other input is given, as
    `gpuobs diagnose` with no flags does; a live diagnosis without a window covers the last 30 minutes.
    """

    logs: Sequence[str] = ()
    """Log files, folders (walked), .gz files and `-` for stdin; saved `kubectl -o json` dumps, saved
    `/metrics` texts, `nvidia-smi -q` reports and `/api/history` documents among them are recognised."""
    traces: Sequence[str] = ()
    """OTLP JSON trace files (the OpenTelemetry Collector file exporter's format)."""
    prometheus: str | None = None
    """Base URL of a Prometheus server, queried over the window."""
    exporter: str | None = None
    """URL of a running `gpuobs export` (its /api/history), or a saved /metrics or /api/history file."""
    k8s_namespace: str | None = None
    """Read this namespace's events and pods from the current kubeconfig context (or in-cluster)."""
    k8s_objects: Sequence[Mapping[str, Any]] = ()
    """Kubernetes Event/Pod objects already listed (the API server's JSON), e.g. by a game day."""
    bundle: str | None = None
    """Replay an archive made by `gpuobs bundle` (its stored evidence joins the other inputs)."""
    live: bool | None = None
    """Read this node's NVML state and kernel log; None: only when nothing else is given."""
    evidence: Sequence[Evidence] = ()
    """Evidence records already in hand (another tool's, a test's); they skip the window filter."""
    window: TimeWindow = field(default_factory=TimeWindow)
    stdin: bytes | None = None
    """What `-` reads, for callers that are not a terminal; None: this process's standard input."""

    def __post_init__(self) -> None:
        for name in ("logs", "traces", "k8s_objects", "evidence"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise InputError(f"DiagnoseInputs.{name}: give a list, not one string ({value!r})")
            object.__setattr__(self, name, tuple(value))
        stdin_readers = [*self.logs, *self.traces, self.exporter].count("-")
        if stdin_readers > 1:  # the second reader found the stream closed, as "unexpected ValueError"
            raise InputError(
                "standard input ('-') is read once: name it once, in --logs, --traces or --exporter"
            )
        if self.prometheus:
            require_http_url("--prometheus", self.prometheus, "http://prometheus:9090")
        if self.exporter and "://" in self.exporter:  # anything else names a saved file
            require_http_url("--exporter", self.exporter, "http://127.0.0.1:9400")
        if self.k8s_namespace:
            require_namespace("--k8s-namespace", self.k8s_namespace)

    @property
    def given(self) -> bool:
        """Whether any input other than the live node was given."""
        return bool(
            self.logs
            or self.traces
            or self.prometheus
            or self.exporter
            or self.k8s_namespace
            or self.k8s_objects
            or self.bundle
            or self.evidence
        )

    def resolved(self, now: float | None = None) -> DiagnoseInputs:
        """`live` decided (None -> only when nothing else is given) and a live run's default window."""
        live = (not self.given) if self.live is None else self.live
        window = self.window
        if live and not window.bounded:
            window = TimeWindow.last(DEFAULT_LIVE_WINDOW_S, now)
        return replace(self, live=live, window=window)

    def describe(self) -> dict[str, Any]:
        """The inputs as JSON-able data (for bundle manifests and logs); no evidence or stdin bytes."""
        return {
            "logs": list(self.logs),
            "traces": list(self.traces),
            "prometheus": self.prometheus,
            "exporter": self.exporter,
            "k8s_namespace": self.k8s_namespace,
            "k8s_objects": len(self.k8s_objects),
            "bundle": self.bundle,
            "live": self.live,
            "evidence": len(self.evidence),
            "window": {"start": self.window.start, "end": self.window.end},
        }
