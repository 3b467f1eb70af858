"""Timing of sampled kernel launches: two CUDA events per launch, polled later, never synchronised, and
the per-kernel histograms of the durations measured."""

from __future__ import annotations

import bisect
import math
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

__all__ = ["CudaEventTiming", "DurationHistograms", "EventTiming", "HistogramSnapshot"]

HistogramSnapshot = tuple[tuple[tuple[float, int], ...], float]
"""((upper bound, cumulative count) per bucket ending with +Inf, sum of the observations)."""


class DurationHistograms:
    """Durations (s) of timed launches per (kernel, backend), in fixed buckets.

    Only sampled launches are observed, so a lock costs nothing on the hot path; `snapshot()` copies
    under it, so a scrape sees bucket counts and sum of the same observations.
    """

    def __init__(self, buckets: Sequence[float]) -> None:
        bounds = tuple(float(b) for b in buckets)
        if not bounds or list(bounds) != sorted(set(bounds)) or not all(math.isfinite(b) for b in bounds):
            raise ValueError(f"bucket bounds must be finite, distinct and ascending, got {buckets!r}")
        self.bounds = bounds
        # Per key: the count of each bucket (not cumulative; the last one is +Inf), then the sum.
        self._rows: dict[tuple[str, str], list[float]] = {}
        self._lock = threading.Lock()

    def observe(self, kernel: str, backend: str, seconds: float) -> None:
        """Count one duration (a NaN or negative one, which no clock should give, is dropped)."""
        if not seconds >= 0.0:
            return
        index = bisect.bisect_left(self.bounds, seconds)  # first bound >= seconds: Prometheus's `le`
        key = (kernel, backend)
        with self._lock:
            row = self._rows.get(key)
            if row is None:
                row = self._rows[key] = [0.0] * (len(self.bounds) + 2)
            row[index] += 1
            row[-1] += seconds

    def snapshot(self) -> dict[tuple[str, str], HistogramSnapshot]:
        """Cumulative buckets and sum per (kernel, backend)."""
        with self._lock:
            rows = {key: list(row) for key, row in self._rows.items()}
        out: dict[tuple[str, str], HistogramSnapshot] = {}
        for key, row in rows.items():
            total = 0
            buckets = []
            for bound, n in zip((*self.bounds, math.inf), row[:-1], strict=True):
                total += int(n)
                buckets.append((bound, total))
            out[key] = (tuple(buckets), row[-1])
        return out


class EventTiming(Protocol):
    """GPU timing of one launch: two events recorded on the launch stream, polled later.

    Implementations may also define `release(token)`, called once a token is no longer needed.
    """

    def start(self, device: Any) -> Any:
        """Record the start event on the device's current stream; returns a token."""

    def stream_text(self, token: Any) -> str:
        """The stream the token's events are recorded on, as span text (no stream lookup)."""

    def stop(self, token: Any) -> Any: ...

    def ready(self, token: Any) -> bool: ...

    def elapsed_ms(self, token: Any) -> float: ...


class CudaEventTiming:
    """EventTiming on torch.cuda events of the current stream (never synchronises).

    Event pairs are pooled: creating and destroying CUDA events costs driver calls on every
    sampled launch otherwise. The current stream is looked up once per launch through the raw
    handle (what Triton's own launcher calls); the `torch.cuda.Stream` object and its text are
    cached per (device index, handle), since building a Stream costs about 6 us of host time.
    """

    _POOL_MAX = 64
    _STREAMS_MAX = 256

    def __init__(self) -> None:
        self._pool: list[tuple[Any, Any]] = []
        self._lock = threading.Lock()
        self._streams: dict[tuple[int, int], tuple[Any, str]] = {}
        self._raw_stream: Callable[[int], int] | None = None

    def _torch(self) -> Any:
        return sys.modules["torch"]

    def _stream(self, device: Any) -> tuple[Any, str]:
        """(Stream, text) of the device's current stream."""
        cuda = self._torch().cuda
        index = getattr(device, "index", device)  # torch.device, or an int, or text like "cuda:1"
        if not isinstance(index, int):
            text = str(device) if device is not None else ""
            index = int(text.rsplit(":", 1)[1]) if ":" in text else cuda.current_device()
        raw_stream = self._raw_stream
        if raw_stream is None:
            raw_stream = self._raw_stream = getattr(self._torch()._C, "_cuda_getCurrentRawStream", None) \
                or (lambda i: cuda.current_stream(i).cuda_stream)
        key = (index, raw_stream(index))
        entry = self._streams.get(key)
        if entry is None:
            stream = cuda.current_stream(index)
            entry = (stream, f"0x{stream.cuda_stream:x}")
            if len(self._streams) >= self._STREAMS_MAX:
                self._streams.clear()
            self._streams[key] = entry
        return entry

    def stream_of(self, device: Any) -> str:
        """Text of the device's current stream (`0x...`)."""
        return self._stream(device)[1]

    def start(self, device: Any) -> Any:
        stream, text = self._stream(device)
        with self._lock:
            pair = self._pool.pop() if self._pool else None
        if pair is None:
            cuda = self._torch().cuda
            pair = (cuda.Event(enable_timing=True), cuda.Event(enable_timing=True))
        pair[0].record(stream)
        return (pair[0], pair[1], stream, text)

    def stream_text(self, token: Any) -> str:
        return str(token[3])

    def stop(self, token: Any) -> Any:
        token[1].record(token[2])
        return token

    def ready(self, token: Any) -> bool:
        return bool(token[1].query())

    def elapsed_ms(self, token: Any) -> float:
        return float(token[0].elapsed_time(token[1]))

    def release(self, token: Any) -> None:
        with self._lock:
            if len(self._pool) < self._POOL_MAX:
                self._pool.append((token[0], token[1]))
