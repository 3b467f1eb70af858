"""Open-loop load at one offered rate: requests go out on a fixed schedule whatever the server answers."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from gpuobs.serving.loadtest.client import Target, stream_request
from gpuobs.serving.loadtest.prompts import PlannedRequest, PromptMix, plan_requests
from gpuobs.serving.loadtest.schedule import ArrivalProcess, arrival_times
from gpuobs.serving.loadtest.stats import RequestResult, RunSummary, percentile, summarize

__all__ = ["LoadConfig", "LoadRun", "Progress", "make_client", "run_load", "run_load_async"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadConfig:
    """One run at one offered rate, bounded by time and by request count."""

    rate: float
    duration_s: float = 10.0
    max_requests: int = 1000
    arrival: ArrivalProcess = ArrivalProcess.POISSON
    mix: PromptMix = field(default_factory=PromptMix)
    seed: int = 0
    request_timeout_s: float = 60.0
    drain_timeout_s: float = 30.0        # after the last arrival, how long outstanding answers may take
    max_in_flight: int = 4096            # past this the client drops arrivals (recorded) rather than wait

    def __post_init__(self) -> None:
        if not self.rate > 0:
            raise ValueError(f"offered rate must be > 0 requests/s, got {self.rate}")
        if not self.duration_s > 0:
            raise ValueError(f"duration must be > 0 s, got {self.duration_s}")
        if self.max_requests < 1:
            raise ValueError(f"max requests must be >= 1, got {self.max_requests}")
        if not self.request_timeout_s > 0 or self.drain_timeout_s < 0 or self.max_in_flight < 1:
            raise ValueError("request timeout must be > 0, drain timeout >= 0 and max in-flight >= 1")

    def plan(self) -> list[PlannedRequest]:
        """The requests of this run; the same config gives the same plan."""
        times = arrival_times(self.rate, self.duration_s, self.max_requests, self.arrival, self.seed)
        return plan_requests(times, self.mix, self.seed)


@dataclass(frozen=True)
class Progress:
    """A snapshot of a run in progress, for progress displays."""

    rate: float
    elapsed_s: float
    duration_s: float
    planned: int
    sent: int
    completed: int
    failed: int
    in_flight: int


@dataclass
class LoadRun:
    """The raw results of a run and their summary."""

    config: LoadConfig
    results: list[RequestResult]
    summary: RunSummary
    send_lag_p99_s: float | None         # how late the client sent versus the schedule (its own health)


def make_client(timeout_s: float = 60.0) -> httpx.AsyncClient:
    """An httpx client that never queues requests on its own pool (that would close the loop).

    Idle connections are dropped after 2 s, before servers close them (uvicorn after 5 s): reusing a
    connection the server is closing at that instant fails with a read error that is not the server's.
    """
    return httpx.AsyncClient(
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=256, keepalive_expiry=2.0),
        timeout=httpx.Timeout(timeout_s, connect=10.0),
    )


async def run_load_async(
    target: Target,
    config: LoadConfig,
    on_progress: Callable[[Progress], None] | None = None,
    client: httpx.AsyncClient | None = None,
    progress_interval_s: float = 0.2,
) -> LoadRun:
    """Run the plan of `config` against `target` and return every request's result."""
    plan = config.plan()
    own_client = client is None
    http = client if client is not None else make_client(config.request_timeout_s)
    results = [RequestResult(index=p.index, kind=p.kind, scheduled=p.offset_s) for p in plan]
    tasks: set[asyncio.Task[None]] = set()
    t0 = time.perf_counter()
    sent = 0

    def snapshot() -> Progress:
        done = [r for r in results if r.outcome != "pending"]
        ok = sum(1 for r in done if r.ok)
        return Progress(config.rate, time.perf_counter() - t0, config.duration_s, len(plan), sent, ok,
                        len(done) - ok, len(tasks))

    async def report() -> None:
        while True:
            if on_progress is not None:
                on_progress(snapshot())
            await asyncio.sleep(progress_interval_s)

    reporter = asyncio.create_task(report())
    try:
        for planned, result in zip(plan, results, strict=True):
            delay = t0 + planned.offset_s - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if len(tasks) >= config.max_in_flight:
                result.outcome = "dropped"
                result.error = f"client had {len(tasks)} requests in flight (max_in_flight)"
                continue
            task = asyncio.create_task(
                stream_request(http, target, planned, result, t0, config.request_timeout_s))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            sent += 1
        if tasks:
            _done, pending = await asyncio.wait(set(tasks), timeout=config.drain_timeout_s)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=5.0)
        for result in results:
            if result.outcome == "pending":
                result.outcome = "timeout"
                result.error = f"unanswered {config.drain_timeout_s:g} s after the last arrival"
    finally:
        reporter.cancel()
        for task in list(tasks):
            task.cancel()
        if own_client:
            await http.aclose()
    if on_progress is not None:
        on_progress(snapshot())
    lags = [r.sent - r.scheduled for r in results if r.sent is not None]
    last_arrival = plan[-1].offset_s if plan else 0.0
    summary = summarize(results, config.rate, min(config.duration_s, last_arrival + 1.0 / config.rate))
    logger.info("load run at %.3g req/s: %d requests, %d ok, p99 e2e %s s", config.rate, summary.requests,
                summary.completed, summary.e2e.p99)
    return LoadRun(config, results, summary, percentile(lags, 99))


def run_load(
    target: Target,
    config: LoadConfig,
    on_progress: Callable[[Progress], None] | None = None,
) -> LoadRun:
    """Synchronous wrapper of run_load_async (own event loop and client)."""
    return asyncio.run(run_load_async(target, config, on_progress))
