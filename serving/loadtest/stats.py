"""Latency statistics of a load run: percentiles and the per-run summary that every report builds on."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["LatencyStats", "RequestResult", "RunSummary", "percentile", "summarize"]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) by linear interpolation between order statistics (numpy's default).

    None for an empty sequence; +inf propagates (a request that never finished is slower than any other).
    """
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile q must lie in [0, 100], got {q}")
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    rank = (len(ordered) - 1) * q / 100.0
    lo = math.floor(rank)
    hi = min(lo + 1, len(ordered) - 1)
    frac = rank - lo
    a, b = float(ordered[lo]), float(ordered[hi])
    if frac == 0.0 or a == b:
        return a
    if math.isinf(b):
        return b
    return a + (b - a) * frac


@dataclass(frozen=True)
class LatencyStats:
    """Percentiles of one latency, in seconds (None when no sample)."""

    count: int
    mean: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    max: float | None

    @classmethod
    def of(cls, values: Sequence[float]) -> LatencyStats:
        finite = [v for v in values if math.isfinite(v)]
        return cls(
            count=len(values),
            mean=(sum(finite) / len(finite)) if finite and len(finite) == len(values) else None,
            p50=percentile(values, 50),
            p90=percentile(values, 90),
            p99=percentile(values, 99),
            max=max(values) if values else None,
        )


@dataclass
class RequestResult:
    """What happened to one request of an open-loop run. Times are seconds on the run's monotonic clock.

    `scheduled` is when the arrival process said the request arrives; latencies count from it, not from
    when the client managed to send, so a slow client cannot hide queueing (no coordinated omission).
    """

    index: int
    kind: str                          # prompt class: "short" | "long"
    scheduled: float
    sent: float | None = None
    first_token: float | None = None
    finished: float | None = None
    status: int | None = None          # HTTP status; None when no response came back
    # "ok" | "http_error" | "rejected" (429) | "connection_error" | "timeout" | "stream_error"
    # | "dropped" (over the client's in-flight cap, never sent) | "pending" (not yet known)
    outcome: str = "pending"
    error: str | None = None
    output_tokens: int = 0
    prompt_tokens: int | None = None
    chunk_times: list[float] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def ttft(self) -> float | None:
        return None if self.first_token is None else self.first_token - self.scheduled

    @property
    def e2e(self) -> float | None:
        return None if self.finished is None else self.finished - self.scheduled

    @property
    def inter_token(self) -> list[float]:
        """Gaps between successive content chunks (one chunk per token on vLLM-style servers)."""
        t = self.chunk_times
        return [b - a for a, b in itertools.pairwise(t)]


@dataclass(frozen=True)
class RunSummary:
    """One open-loop run at one offered rate: counts, throughput and latency percentiles."""

    offered_rate: float
    duration_s: float                  # from the first arrival to the last answer or the window's end
    requests: int                      # arrivals in the run, whatever became of them
    completed: int
    failed: int
    outcomes: dict[str, int]
    throughput_rps: float              # completed requests per second of duration_s
    output_tokens_per_s: float
    ttft: LatencyStats
    e2e: LatencyStats
    inter_token: LatencyStats
    slo_p99_e2e: float | None          # P99 of e2e with every unfinished request counted as +inf
    # per prompt class: requests, completed, failed, p50/p99 of e2e and TTFT over answered requests, and
    # p99_e2e_all: P99 of e2e with the class's failed requests (refused, timed out, ...) counted as +inf
    by_kind: dict[str, dict[str, float | int | None]]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON: an unbounded (+inf) P99 becomes None with an `..._unbounded` flag."""
        data = asdict(self)
        if self.slo_p99_e2e is not None and math.isinf(self.slo_p99_e2e):
            data["slo_p99_e2e"] = None
            data["slo_p99_e2e_unbounded"] = True
        for kind in data["by_kind"].values():
            value = kind.get("p99_e2e_all")
            if isinstance(value, float) and math.isinf(value):
                kind["p99_e2e_all"] = None
                kind["p99_e2e_all_unbounded"] = True
        return data


def summarize(
    results: Sequence[RequestResult], offered_rate: float, window_s: float | None = None
) -> RunSummary:
    """Reduce per-request results to a RunSummary.

    Throughput divides by the longer of the arrival window (`window_s`, from the first arrival) and the
    time to the last answer, so a sparse run is not credited with the rate of its few requests.
    """
    counted = [r for r in results if r.outcome != "pending"]
    ok = [r for r in counted if r.ok]
    outcomes: dict[str, int] = {}
    for r in counted:
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
    start = min((r.scheduled for r in counted), default=0.0)
    end = max((r.finished for r in ok if r.finished is not None), default=start)
    last_arrival = max((r.scheduled for r in counted), default=start)
    duration = max(end, last_arrival, start + (window_s or 0.0)) - start
    tokens = sum(r.output_tokens for r in ok)
    ttfts = [r.ttft for r in ok if r.ttft is not None]
    e2es = [r.e2e for r in ok if r.e2e is not None]
    gaps = [g for r in ok for g in r.inter_token]
    slo_values = [r.e2e if (r.ok and r.e2e is not None) else math.inf for r in counted]
    by_kind: dict[str, dict[str, float | int | None]] = {}
    for kind in sorted({r.kind for r in counted}):
        mine = [r for r in ok if r.kind == kind]
        everyone = [r for r in counted if r.kind == kind]
        by_kind[kind] = {
            "requests": len(everyone),
            "completed": len(mine),
            "failed": len(everyone) - len(mine),
            "p99_e2e_all": percentile(
                [r.e2e if (r.ok and r.e2e is not None) else math.inf for r in everyone], 99),
            "p50_e2e": percentile([r.e2e for r in mine if r.e2e is not None], 50),
            "p99_e2e": percentile([r.e2e for r in mine if r.e2e is not None], 99),
            "p50_ttft": percentile([r.ttft for r in mine if r.ttft is not None], 50),
            "p99_ttft": percentile([r.ttft for r in mine if r.ttft is not None], 99),
        }
    return RunSummary(
        offered_rate=offered_rate,
        duration_s=duration,
        requests=len(counted),
        completed=len(ok),
        failed=len(counted) - len(ok),
        outcomes=outcomes,
        throughput_rps=(len(ok) / duration) if duration > 0 else 0.0,
        output_tokens_per_s=(tokens / duration) if duration > 0 else 0.0,
        ttft=LatencyStats.of(ttfts),
        e2e=LatencyStats.of(e2es),
        inter_token=LatencyStats.of(gaps),
        slo_p99_e2e=percentile(slo_values, 99),
        by_kind=by_kind,
    )
