"""The full load test: a stepped open-loop ladder, then the four dimensions engines are judged by."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from gpuobs.serving.loadtest.client import Target
from gpuobs.serving.loadtest.cost import Cost, cost_at
from gpuobs.serving.loadtest.robustness import RobustnessReport, run_robustness_async
from gpuobs.serving.loadtest.runner import LoadConfig, LoadRun, Progress, make_client, run_load_async
from gpuobs.serving.loadtest.search import (
    Elasticity,
    ThroughputAtTarget,
    elasticity,
    rate_ladder,
    step_verdict,
    throughput_at_target,
)

__all__ = ["LoadtestConfig", "LoadtestEvent", "LoadtestReport", "run_loadtest", "run_loadtest_async"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadtestConfig:
    """Everything `gpuobs loadtest` does: the ladder, the target, the price and the robustness run."""

    step: LoadConfig                     # template of one step; its rate is the first rung of the ladder
    p99_target_s: float = 2.0
    step_factor: float = 10**0.25        # four rungs per tenfold, so elasticity needs no extra run
    max_steps: int = 8
    gpu_hour_price: float = 3.0
    gpus: int = 1
    robustness_requests: int = 100
    robustness_concurrency: int = 8
    elasticity_min_requests: int = 20    # an extra run at a tenth of the best rate aims at this many
    elasticity_max_duration_s: float = 60.0   # ... but lasts no longer than this (or one step)

    def __post_init__(self) -> None:
        if not self.p99_target_s > 0:
            raise ValueError(f"P99 target must be > 0, got {self.p99_target_s}")
        if not self.step_factor > 1 or self.max_steps < 1:
            raise ValueError("step factor must be > 1 and max steps >= 1")
        if self.robustness_requests < 0:
            raise ValueError("robustness requests must be >= 0")
        if not self.elasticity_max_duration_s > 0:
            raise ValueError("the longest elasticity run must be > 0 s")


@dataclass(frozen=True)
class LoadtestEvent:
    """Progress of the whole test: a phase ("step" or "robustness") and its latest numbers."""

    phase: str
    step_index: int = 0
    steps_planned: int = 0
    progress: Progress | None = None
    robustness_done: int = 0
    robustness_total: int = 0
    message: str = ""


@dataclass
class LoadtestReport:
    """The four dimensions, plus every step run on the way."""

    target: dict[str, Any]
    config: dict[str, Any]
    steps: list[dict[str, Any]] = field(default_factory=list)
    throughput: ThroughputAtTarget | None = None
    cost: Cost | None = None
    elasticity: Elasticity | None = None
    robustness: RobustnessReport | None = None

    @property
    def passed(self) -> bool:
        """The target was met at some rate and the robustness run (if any) passed."""
        robust_ok = self.robustness is None or self.robustness.passed
        return self.throughput is not None and robust_ok

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "config": self.config,
            "throughput_at_p99": self.throughput.to_dict() if self.throughput else None,
            "cost": self.cost.to_dict() if self.cost else None,
            "elasticity": self.elasticity.to_dict() if self.elasticity else None,
            "robustness": self.robustness.to_dict() if self.robustness else None,
            "steps": self.steps,
            "passed": self.passed,
        }


def server_errors(run: LoadRun, limit: int = 3) -> list[dict[str, Any]]:
    """The most frequent error messages of failed requests (the server's own words when it gave any)."""
    counts = Counter(r.error for r in run.results if r.error)
    return [{"message": message, "count": n} for message, n in counts.most_common(limit)]


def _step_dict(run: LoadRun, target_s: float, purpose: str) -> dict[str, Any]:
    ok, reason = step_verdict(run.summary, target_s)
    return {"purpose": purpose, "passed": ok, "verdict": reason, "send_lag_p99_s": run.send_lag_p99_s,
            "errors": server_errors(run), **run.summary.to_dict()}


def _step_message(run: LoadRun, reason: str) -> str:
    """One line per finished step; a failed request's own message is shown, not just a count."""
    lag = run.send_lag_p99_s
    if lag is not None and lag > 0.1:     # the client itself fell behind its schedule
        reason += f"; client sent late (P99 {lag * 1000:.0f} ms): figures include its own delay"
    errors = server_errors(run, limit=1)
    if errors:
        reason += f"; first error ({errors[0]['count']}x): {errors[0]['message']}"
    return f"{run.summary.offered_rate:.3g} req/s: {reason}"


def _step_progress(
    emit: Callable[[LoadtestEvent], None], index: int, planned: int
) -> Callable[[Progress], None]:
    def on_progress(progress: Progress) -> None:
        emit(LoadtestEvent("step", index, planned, progress=progress))

    return on_progress


async def run_loadtest_async(
    target: Target,
    config: LoadtestConfig,
    on_event: Callable[[LoadtestEvent], None] | None = None,
) -> LoadtestReport:
    """Step the offered rate up until P99 misses the target, then price, elasticity and robustness."""
    emit: Callable[[LoadtestEvent], None] = on_event or (lambda _e: None)
    rates = rate_ladder(config.step.rate, config.step_factor, config.max_steps)
    report = LoadtestReport(
        target={"base_url": target.base_url, "model": target.model, "endpoint": str(target.endpoint)},
        config={"start_rate": config.step.rate, "step_factor": config.step_factor,
                "max_steps": config.max_steps, "step_duration_s": config.step.duration_s,
                "step_max_requests": config.step.max_requests, "arrival": str(config.step.arrival),
                "p99_target_s": config.p99_target_s, "gpu_hour_price": config.gpu_hour_price,
                "gpus": config.gpus, "robustness_requests": config.robustness_requests,
                "long_fraction": config.step.mix.long_fraction, "seed": config.step.seed},
    )
    runs: list[LoadRun] = []
    async with make_client(config.step.request_timeout_s) as client:
        for i, rate in enumerate(rates):
            step = replace(config.step, rate=rate, seed=config.step.seed + i)
            run = await run_load_async(target, step, client=client,
                                       on_progress=_step_progress(emit, i, len(rates)))
            runs.append(run)
            report.steps.append(_step_dict(run, config.p99_target_s, "ladder"))
            ok, reason = step_verdict(run.summary, config.p99_target_s)
            emit(LoadtestEvent("step_done", i, len(rates), message=_step_message(run, reason)))
            if not ok:
                break
        summaries = [r.summary for r in runs]
        report.throughput = throughput_at_target(summaries, config.p99_target_s)
        # --max-steps is a hard bound: the extra run at a tenth of the rate is one of the steps.
        if (report.throughput is not None and len(runs) < config.max_steps
                and elasticity(summaries, config.p99_target_s) is None):
            low = report.throughput.offered_rate / 10.0
            duration = max(config.step.duration_s, config.elasticity_min_requests / low)
            duration = min(duration, config.elasticity_max_duration_s)
            step = replace(config.step, rate=low, duration_s=duration, seed=config.step.seed + len(runs))
            run = await run_load_async(target, step, client=client,
                                       on_progress=_step_progress(emit, len(runs), len(runs) + 1))
            runs.append(run)
            report.steps.append(_step_dict(run, config.p99_target_s, "elasticity"))
            summaries.append(run.summary)
            reason = step_verdict(run.summary, config.p99_target_s)[1]
            emit(LoadtestEvent("step_done", len(runs) - 1, len(runs),
                               message=_step_message(run, f"(elasticity) {reason}")))
        report.elasticity = elasticity(summaries, config.p99_target_s)
        if report.throughput is not None:
            report.cost = cost_at(report.throughput.throughput_rps, report.throughput.output_tokens_per_s,
                                  config.gpu_hour_price, config.gpus)
        if config.robustness_requests > 0:
            report.robustness = await run_robustness_async(
                target, config.robustness_requests, seed=config.step.seed,
                concurrency=config.robustness_concurrency, timeout_s=min(60.0, config.step.request_timeout_s),
                on_progress=lambda d, t: emit(LoadtestEvent("robustness", robustness_done=d,
                                                            robustness_total=t)))
    best = report.throughput
    logger.info("loadtest: throughput at P99 %s, robustness %s",
                f"{best.offered_rate:.3g} req/s" if best else "not met",
                report.robustness.passed if report.robustness else "skipped")
    return report


def run_loadtest(
    target: Target,
    config: LoadtestConfig,
    on_event: Callable[[LoadtestEvent], None] | None = None,
) -> LoadtestReport:
    """Synchronous wrapper of run_loadtest_async."""
    return asyncio.run(run_loadtest_async(target, config, on_event))
