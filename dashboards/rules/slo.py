"""Multi-window, multi-burn-rate SLO alerting (Google SRE workbook, chapter 5): windows and burn factors.

A burn rate is the observed bad-request ratio divided by the error budget (1 - objective). Each alert
condition pairs a long window (is the budget really burning?) with a short one (is it still burning
now?), so an alert fires fast on a big burn and resets soon after it stops.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BURN_CONDITIONS", "SLO_WINDOWS", "BurnCondition", "ratio_record"]


@dataclass(frozen=True)
class BurnCondition:
    """Fire when the bad ratio over both windows exceeds `factor` x the budget."""

    severity: str
    long_window: str
    short_window: str
    factor: float


BURN_CONDITIONS: tuple[BurnCondition, ...] = (
    # 2% of a 30-day budget in 1 h, or 5% in 6 h: page.
    BurnCondition("critical", "1h", "5m", 14.4),
    BurnCondition("critical", "6h", "30m", 6.0),
    # 10% in 1 day, or 10% in 3 days at the budget's pace: a ticket.
    BurnCondition("warning", "1d", "2h", 3.0),
    BurnCondition("warning", "3d", "6h", 1.0),
)

SLO_WINDOWS: tuple[str, ...] = tuple(
    sorted(
        {w for c in BURN_CONDITIONS for w in (c.long_window, c.short_window)},
        key=lambda w: {"m": 60, "h": 3600, "d": 86400}[w[-1]] * int(w[:-1]),
    )
)
"""Every window a ratio is recorded over, shortest first."""


def ratio_record(kind: str, window: str) -> str:
    """The recording rule name of a bad-request ratio (`kind` errors or slow) over `window`."""
    return f"model_name:gpuobs_serving_request_{kind}:ratio_rate{window}"
