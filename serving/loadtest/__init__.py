"""Open-loop load tests of OpenAI-compatible servers: throughput at P99, cost, elasticity, robustness.

A library (no typer/rich): `gpuobs loadtest` and `bench/serving_load.py` are thin layers over it.
"""

from gpuobs.serving.loadtest.client import Endpoint, Target, normalize_base_url, resolve_target
from gpuobs.serving.loadtest.cost import Cost, cost_at
from gpuobs.serving.loadtest.prompts import PlannedRequest, PromptMix, plan_requests
from gpuobs.serving.loadtest.report import LoadtestConfig, LoadtestEvent, LoadtestReport, run_loadtest
from gpuobs.serving.loadtest.robustness import (
    CATEGORIES,
    BadRequest,
    RobustnessReport,
    bad_requests,
    run_robustness,
)
from gpuobs.serving.loadtest.runner import LoadConfig, LoadRun, Progress, run_load
from gpuobs.serving.loadtest.schedule import ArrivalProcess, arrival_times
from gpuobs.serving.loadtest.search import (
    Elasticity,
    ThroughputAtTarget,
    elasticity,
    rate_ladder,
    step_verdict,
    throughput_at_target,
)
from gpuobs.serving.loadtest.stats import LatencyStats, RequestResult, RunSummary, percentile, summarize

__all__ = [
    "CATEGORIES",
    "ArrivalProcess",
    "BadRequest",
    "Cost",
    "Elasticity",
    "Endpoint",
    "LatencyStats",
    "LoadConfig",
    "LoadRun",
    "LoadtestConfig",
    "LoadtestEvent",
    "LoadtestReport",
    "PlannedRequest",
    "Progress",
    "PromptMix",
    "RequestResult",
    "RobustnessReport",
    "RunSummary",
    "Target",
    "ThroughputAtTarget",
    "arrival_times",
    "bad_requests",
    "cost_at",
    "elasticity",
    "normalize_base_url",
    "percentile",
    "plan_requests",
    "rate_ladder",
    "resolve_target",
    "run_load",
    "run_loadtest",
    "run_robustness",
    "step_verdict",
    "summarize",
    "throughput_at_target",
]
