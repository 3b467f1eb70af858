"""Open-loop arrival schedules: when each request arrives, fixed before the run and independent of answers."""

from __future__ import annotations

import random
from enum import StrEnum

__all__ = ["ArrivalProcess", "arrival_times"]


class ArrivalProcess(StrEnum):
    """How inter-arrival gaps are drawn at a given offered rate."""

    POISSON = "poisson"      # exponential gaps: memoryless arrivals, what many independent users produce
    CONSTANT = "constant"    # fixed gaps of 1/rate: no burstiness, the gentlest load at a given rate


def arrival_times(
    rate: float,
    duration_s: float,
    max_requests: int,
    process: ArrivalProcess = ArrivalProcess.POISSON,
    seed: int = 0,
) -> list[float]:
    """Arrival offsets (seconds from the start) at `rate` requests/s, all < duration_s, at most max_requests.

    The schedule is a pure function of its arguments (seeded), so two servers can be offered exactly the
    same load. The first arrival is at 0.
    """
    if not rate > 0:
        raise ValueError(f"offered rate must be > 0 requests/s, got {rate}")
    if not duration_s > 0:
        raise ValueError(f"duration must be > 0 s, got {duration_s}")
    if max_requests < 1:
        raise ValueError(f"max_requests must be >= 1, got {max_requests}")
    rng = random.Random(seed)
    times: list[float] = []
    t = 0.0
    while t < duration_s and len(times) < max_requests:
        times.append(t)
        if process is ArrivalProcess.CONSTANT:
            t = len(times) / rate
        else:
            t += rng.expovariate(rate)
    return times
