"""The flight recorder: a bounded ring of recent node snapshots and events, served by `/api/history`.

So that `gpuobs diagnose` has data when Prometheus is down. JSON shape of `to_json(since)`:
`{"host", "interval_seconds", "retention_seconds", "samples": [{"ts", "nvml_up", "gpus": [{"gpu", "uuid",
"up", "values": {<native metric name>: value}}]}], "events": [{"ts", "kind": "xid", "gpu", "uuid",
"code", "detail"}]}`; `values` are in native units, and `gpuobs_gpu_clock_event_active` holds NVML's
clock-event bitmask there. Times are Unix seconds; `since` takes every form of `gpuobs.timeparse.parse_time`
(`5m`, `now-1h`, `2026-11-29T21:00:00Z`, epoch seconds; an ISO time without an offset is UTC).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuobs.exporters.sidecar.core import Snapshot

__all__ = ["FlightRecorder"]

class FlightRecorder:
    """Ring of snapshots covering `retention_s` at one per `interval_s`, plus the last events."""

    def __init__(self, retention_s: float = 1800.0, interval_s: float = 10.0) -> None:
        self.retention_s = retention_s
        self.interval_s = interval_s
        self._samples: deque[dict[str, Any]] = deque(
            maxlen=max(1, int(retention_s / max(interval_s, 1e-3)) + 1)
        )
        self._events: deque[dict[str, Any]] = deque(maxlen=1000)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._samples)

    def record(self, snap: Snapshot) -> None:
        from gpuobs.exporters.sidecar.fields import reading_values

        entry = {
            "ts": snap.ts,
            "nvml_up": snap.nvml_up,
            "gpus": [
                {"gpu": r.info.index, "uuid": r.info.uuid, "up": r.up, "values": reading_values(r)}
                for r in snap.readings
            ],
        }
        with self._lock:
            self._samples.append(entry)
            self._trim(snap.ts)

    def add_event(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._events.append(event)

    def _trim(self, now: float) -> None:
        cutoff = now - self.retention_s
        while self._samples and self._samples[0]["ts"] < cutoff:
            self._samples.popleft()
        while self._events and self._events[0]["ts"] < cutoff:
            self._events.popleft()

    def to_json(self, since: float = 0.0, host: str = "") -> dict[str, Any]:
        with self._lock:
            samples = [s for s in self._samples if s["ts"] >= since]
            events = [e for e in self._events if e["ts"] >= since]
        return {
            "host": host,
            "interval_seconds": self.interval_s,
            "retention_seconds": self.retention_s,
            "since": since,
            "samples": samples,
            "events": events,
        }
