"""Throughput at a P99 target and elasticity, computed from the runs of a stepped offered-load ladder."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from gpuobs.serving.loadtest.stats import RunSummary

__all__ = [
    "Elasticity",
    "ThroughputAtTarget",
    "elasticity",
    "rate_ladder",
    "step_verdict",
    "throughput_at_target",
]


def rate_ladder(start: float, factor: float, steps: int) -> list[float]:
    """Geometric offered rates start, start*factor, ...; factor 10**0.25 puts every tenfold step on it."""
    if not start > 0 or not factor > 1 or steps < 1:
        raise ValueError(f"ladder needs start > 0, factor > 1, steps >= 1 (got {start}, {factor}, {steps})")
    return [start * factor**i for i in range(steps)]


def step_verdict(summary: RunSummary, target_s: float) -> tuple[bool, str]:
    """Whether a run meets the P99 end-to-end target, counting every unanswered request as too slow."""
    if summary.requests == 0:
        return False, "no request in the run"
    p99 = summary.slo_p99_e2e
    if p99 is None or math.isinf(p99):
        return False, f"{summary.failed} of {summary.requests} requests failed (more than 1%)"
    if p99 > target_s:
        return False, f"P99 e2e {p99 * 1000:.0f} ms > target {target_s * 1000:.0f} ms"
    return True, f"P99 e2e {p99 * 1000:.0f} ms <= target {target_s * 1000:.0f} ms"


@dataclass(frozen=True)
class ThroughputAtTarget:
    """The highest offered rate that met the target, and what the server delivered there."""

    target_p99_s: float
    offered_rate: float
    throughput_rps: float
    output_tokens_per_s: float
    p99_e2e_s: float
    first_failing_rate: float | None     # the next rate up, which missed the target (None: never missed)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def throughput_at_target(steps: Sequence[RunSummary], target_s: float) -> ThroughputAtTarget | None:
    """The highest passing offered rate below the lowest failing one (None when the lowest rate fails).

    Latency grows with load, so a pass above a failure is noise rather than capacity and is not taken.
    """
    ordered = sorted(steps, key=lambda s: s.offered_rate)
    failing = [s.offered_rate for s in ordered if not step_verdict(s, target_s)[0]]
    ceiling = min(failing, default=math.inf)
    passing = [s for s in ordered if s.offered_rate < ceiling and step_verdict(s, target_s)[0]]
    if not passing:
        return None
    best = passing[-1]
    assert best.slo_p99_e2e is not None
    return ThroughputAtTarget(
        target_p99_s=target_s,
        offered_rate=best.offered_rate,
        throughput_rps=best.throughput_rps,
        output_tokens_per_s=best.output_tokens_per_s,
        p99_e2e_s=best.slo_p99_e2e,
        first_failing_rate=None if math.isinf(ceiling) else ceiling,
    )


@dataclass(frozen=True)
class Elasticity:
    """How latency grows when offered load rises tenfold while staying below saturation.

    Ratios near 1 mean the engine absorbs load (batching amortises it); large ratios mean queueing
    already at a tenth of the sustainable rate.
    """

    low_rate: float
    high_rate: float
    load_factor: float
    p50_e2e_ratio: float | None
    p99_e2e_ratio: float | None
    p50_ttft_ratio: float | None
    p99_ttft_ratio: float | None
    low_requests: int
    high_requests: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ratio(high: float | None, low: float | None) -> float | None:
    if high is None or low is None or low <= 0 or math.isinf(high) or math.isinf(low):
        return None
    return high / low


def elasticity(
    steps: Sequence[RunSummary], target_s: float, tolerance: float = 0.15
) -> Elasticity | None:
    """Latency ratios between the highest passing rate and a run at a tenth of it (±tolerance).

    None when the ladder holds no run near a tenth of the sustainable rate.
    """
    best = throughput_at_target(steps, target_s)
    if best is None:
        return None
    high = next(s for s in steps if s.offered_rate == best.offered_rate)
    want = high.offered_rate / 10.0
    near = [s for s in steps if abs(math.log(s.offered_rate / want)) <= math.log1p(tolerance)]
    if not near:
        return None
    low = min(near, key=lambda s: abs(math.log(s.offered_rate / want)))
    return Elasticity(
        low_rate=low.offered_rate,
        high_rate=high.offered_rate,
        load_factor=high.offered_rate / low.offered_rate,
        p50_e2e_ratio=_ratio(high.e2e.p50, low.e2e.p50),
        p99_e2e_ratio=_ratio(high.e2e.p99, low.e2e.p99),
        p50_ttft_ratio=_ratio(high.ttft.p50, low.ttft.p50),
        p99_ttft_ratio=_ratio(high.ttft.p99, low.ttft.p99),
        low_requests=low.requests,
        high_requests=high.requests,
    )
