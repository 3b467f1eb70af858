"""Serving SLOs: error and latency budgets and their burn, TTFT/ITL/e2e quantiles, throughput, queue,
KV cache, preemptions, errors by kind and CUDA error code, kernel launch rates and GPU time per kernel.
Reads vLLM's metric names, so it works against vLLM as well as `gpuobs serve`."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dash_b
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.models import dashboard as dash_m
from prometheus_client.utils import floatToGoString

from gpuobs.dashboards.boards.panels import (
    finish,
    new_dashboard,
    query_variable,
    stat_panel,
    timeseries_panel,
)
from gpuobs.dashboards.options import Options
from gpuobs.dashboards.promql import matchers, or_zero, series
from gpuobs.dashboards.rules import recording as rec
from gpuobs.dashboards.rules.slo import BURN_CONDITIONS, ratio_record
from gpuobs.names import kernel as k
from gpuobs.names import serving as s
from gpuobs.names.spec import MetricSpec

__all__ = ["FILE", "UID", "dashboard"]

UID = "gpuobs-serving"
FILE = "gpuobs-serving-slo.json"

SEL = matchers(model_name="~$model", instance="~$instance")
MODEL = matchers(model_name="~$model")
INSTANCE = matchers(instance="~$instance")
FAILED = matchers(model_name="~$model", instance="~$instance", finished_reason="~error|abort")
RATE = "$__rate_interval"
_TINY = "1e-9"  # denominators: no traffic gives a ratio of 0, not NaN


def _rate(spec_series: str, window: str = RATE) -> str:
    return f"rate({spec_series}[{window}])"


def _ratio_stats(o: Options) -> list[Builder[dash_m.Panel]]:
    slo = o.slo
    error_budget = 1 - slo.error_objective
    latency_budget = 1 - slo.latency_objective
    requests = series(s.REQUEST_SUCCESS, SEL)
    failed = series(
        s.REQUEST_SUCCESS, matchers(model_name="~$model", instance="~$instance", finished_reason="error")
    )
    fast = series(
        s.E2E_REQUEST_LATENCY,
        matchers(model_name="~$model", instance="~$instance", le=floatToGoString(slo.latency_threshold_s)),
        suffix="_bucket",
    )
    count = series(s.E2E_REQUEST_LATENCY, SEL, suffix="_count")
    fastest = BURN_CONDITIONS[0].factor

    def budget_steps(budget: float) -> tuple[tuple[float | None, str], ...]:
        return ((None, "green"), (budget, "orange"), (budget * fastest, "red"))

    left_steps = ((None, "red"), (0.0, "orange"), (0.25, "green"))
    threshold = floatToGoString(slo.latency_threshold_s)
    return [
        stat_panel("Requests / s", f"sum({_rate(requests)})", "reqps", "Finished requests per second."),
        stat_panel(
            "Error ratio (5m)",
            f"sum({_rate(failed, '5m')}) / clamp_min(sum({_rate(requests, '5m')}), {_TINY})",
            "percentunit",
            f"Requests that finished with an error; the SLO allows {error_budget:.3%}.",
            budget_steps(error_budget),
            decimals=2,
        ),
        stat_panel(
            f"Slower than {threshold} s (5m)",
            f"(sum({_rate(count, '5m')}) - sum({_rate(fast, '5m')}))"
            f" / clamp_min(sum({_rate(count, '5m')}), {_TINY})",
            "percentunit",
            f"Requests over the latency SLO threshold; the SLO allows {latency_budget:.2%}.",
            budget_steps(latency_budget),
            decimals=2,
        ),
        stat_panel(
            "Error budget left (30d)",
            f"1 - (sum(increase({failed}[30d])) / clamp_min(sum(increase({requests}[30d])), 1))"
            f" / {error_budget:g}",
            "percentunit",
            "Share of the 30-day error budget not yet spent.",
            left_steps,
            decimals=1,
        ),
        stat_panel(
            "Latency budget left (30d)",
            f"1 - ((sum(increase({count}[30d])) - sum(increase({fast}[30d]))) / "
            f"clamp_min(sum(increase({count}[30d])), 1)) / {latency_budget:g}",
            "percentunit",
            "Share of the 30-day latency budget not yet spent.",
            left_steps,
            decimals=1,
        ),
        stat_panel(
            "P99 end-to-end",
            f"max({rec.quantile_record(s.E2E_REQUEST_LATENCY)}"
            f"{matchers(model_name='~$model', quantile='0.99')})",
            "s",
            "99th percentile request latency over 5 minutes (recorded).",
            ((None, "green"), (slo.latency_threshold_s, "red")),
        ),
    ]


def _burn(kind: str, budget: float, title: str) -> Builder[dash_m.Panel]:
    windows = ("5m", "1h", "6h", "3d")
    queries = [(f"{ratio_record(kind, w)}{MODEL} / {budget:g}", "{{model_name}} " + w) for w in windows]
    return timeseries_panel(
        title,
        queries,
        "none",
        "Bad-request ratio over the error budget per window (1 = spending it exactly over "
        "30 days); the alerts page at 14.4 (1h and 5m) and 6 (6h and 30m).",
        ((None, "green"), (1.0, "orange"), (BURN_CONDITIONS[0].factor, "red")),
    )


def _quantiles(
    title: str, spec: MetricSpec, description: str, threshold: float | None = None
) -> Builder[dash_m.Panel]:
    steps = None if threshold is None else ((None, "green"), (threshold, "red"))
    return timeseries_panel(
        title,
        [(f"{rec.quantile_record(spec)}{MODEL}", "{{model_name}} p{{quantile}}")],
        "s",
        description + " (recorded p50/p90/p99 over 5 minutes).",
        steps,
    )


def dashboard(o: Options) -> dash_m.Dashboard:
    """The serving SLO dashboard."""
    running = series(s.NUM_REQUESTS_RUNNING)
    board = (
        new_dashboard(
            UID,
            "gpuobs / Serving SLOs",
            "Latency and error SLOs of the serving stack, and what drives them: queue, KV cache, "
            "preemptions, errors, kernels.",
        )
        .with_variable(query_variable("model", "Model", f"label_values({running}, model_name)"))
        .with_variable(
            query_variable(
                "instance", "Server", f"label_values({series(s.NUM_REQUESTS_RUNNING, MODEL)}, instance)"
            )
        )
        .with_row(dash_b.Row("SLOs"))
    )
    for panel in _ratio_stats(o):
        board = board.with_panel(panel)
    board = (
        board.with_panel(_burn("errors", 1 - o.slo.error_objective, "Error budget burn rate"))
        .with_panel(_burn("slow", 1 - o.slo.latency_objective, "Latency budget burn rate"))
        .with_row(dash_b.Row("Latency"))
        .with_panel(_quantiles("Time to first token", s.TTFT, "Arrival to first generated token"))
        .with_panel(_quantiles("Inter-token latency", s.INTER_TOKEN_LATENCY, "Gap between generated tokens"))
        .with_panel(
            _quantiles(
                "End-to-end latency",
                s.E2E_REQUEST_LATENCY,
                "Arrival to last token",
                o.slo.latency_threshold_s,
            )
        )
        .with_panel(_quantiles("Queue time", s.REQUEST_QUEUE_TIME, "Time waiting before the first schedule"))
        .with_row(dash_b.Row("Throughput"))
        .with_panel(
            timeseries_panel(
                "Requests by finish reason",
                [(f"{rec.MODEL_REQUEST_RATE}{MODEL}", "{{model_name}} {{finished_reason}}")],
                "reqps",
                "Finished requests per second (recorded over 5 minutes).",
                stacked=True,
            )
        )
        .with_panel(
            timeseries_panel(
                "Tokens per second",
                [
                    (f"{rec.MODEL_GENERATION_TOKENS_RATE}{MODEL}", "{{model_name}} generated"),
                    (f"{rec.MODEL_PROMPT_TOKENS_RATE}{MODEL}", "{{model_name}} prompt"),
                ],
                "short",
                "Prompt and generated tokens per second (recorded).",
            )
        )
        .with_panel(
            timeseries_panel(
                "Batch size",
                [(series(s.SERVING_BATCH_SIZE, SEL), "{{instance}} {{model_name}}")],
                "none",
                "Sequences in the engine's last forward batch.",
            )
        )
        .with_panel(
            timeseries_panel(
                "Requests by tenant",
                [(f"sum by (tenant) ({_rate(series(s.SERVING_TENANT_REQUESTS, SEL))})", "{{tenant}}")],
                "reqps",
                "Finished requests per tenant.",
            )
        )
        .with_row(dash_b.Row("Queue and KV cache"))
        .with_panel(
            timeseries_panel(
                "Running and waiting requests",
                [
                    (
                        f"sum by (model_name) ({series(s.NUM_REQUESTS_RUNNING, SEL)})",
                        "{{model_name}} running",
                    ),
                    (
                        f"sum by (model_name) ({series(s.NUM_REQUESTS_WAITING, SEL)})",
                        "{{model_name}} waiting",
                    ),
                ],
                "none",
                "Requests in the batch and in the queue.",
                ((None, "green"), (float(o.queue_waiting_requests), "orange")),
            )
        )
        .with_panel(
            timeseries_panel(
                "Queue by prompt-length bucket",
                [(f"sum by (bucket) ({series(s.SERVING_BUCKET_QUEUE_DEPTH, SEL)})", "{{bucket}}")],
                "none",
                "Requests waiting in each length bucket.",
            )
        )
        .with_panel(
            timeseries_panel(
                "KV-cache use",
                [(series(s.KV_CACHE_USAGE, SEL), "{{instance}} {{model_name}}")],
                "percentunit",
                "Fraction of the KV cache in use.",
                ((None, "green"), (0.9, "orange"), (o.kv_cache_full_ratio, "red")),
                max_value=1,
            )
        )
        .with_panel(
            timeseries_panel(
                "Preemptions and refusals",
                [
                    (
                        or_zero(f"sum by (model_name) ({_rate(series(s.NUM_PREEMPTIONS, SEL))})"),
                        "{{model_name}} preempted",
                    ),
                    (
                        or_zero(
                            f"sum by (model_name, reason) ({_rate(series(s.ADMISSION_REJECTIONS, SEL))})"
                        ),
                        "{{model_name}} refused: {{reason}}",
                    ),
                ],
                "ops",
                "Requests preempted (KV cache full) and refused by admission control.",
            )
        )
        .with_row(dash_b.Row("Errors"))
        .with_panel(
            timeseries_panel(
                "Failed and aborted requests",
                [
                    (
                        f"sum by (model_name, finished_reason) ({_rate(series(s.REQUEST_SUCCESS, FAILED))})",
                        "{{model_name}} {{finished_reason}}",
                    )
                ],
                "reqps",
                "Requests that finished with an error or were aborted (deadline).",
            )
        )
        .with_panel(
            timeseries_panel(
                "Engine errors by kind",
                [(or_zero(f"sum by (kind) ({_rate(series(s.SERVING_ENGINE_ERRORS, SEL))})"), "{{kind}}")],
                "ops",
                "Engine step failures: CUDA OOM, CUDA errors, Python exceptions.",
                ((None, "green"), (1e-9, "red")),
            )
        )
        .with_panel(
            timeseries_panel(
                "CUDA errors by code",
                [
                    (
                        or_zero(f"sum by (code, name) ({_rate(series(k.CUDA_ERRORS, INSTANCE))})"),
                        "{{code}} {{name}}",
                    )
                ],
                "ops",
                "CUDA errors caught at kernel launch or the next synchronisation.",
                ((None, "green"), (1e-9, "red")),
            )
        )
        .with_panel(
            timeseries_panel(
                "Invalid requests by reason",
                [
                    (
                        or_zero(f"sum by (reason) ({_rate(series(s.SERVING_INVALID_REQUESTS, INSTANCE))})"),
                        "{{reason}}",
                    )
                ],
                "reqps",
                "Requests refused with a 4xx.",
            )
        )
        .with_panel(
            timeseries_panel(
                "Open HTTP connections",
                [(series(s.SERVING_HTTP_CONNECTIONS, INSTANCE), "{{instance}}")],
                "none",
                "Connections open now; near `gpuobs serve --max-connections` new ones get a 503 (slow or "
                "stuck clients hold them until --read-timeout-s).",
            )
        )
        .with_row(dash_b.Row("Engine and kernels"))
        .with_panel(
            timeseries_panel(
                "Kernel launches by kernel",
                [(or_zero(f"sum by (kernel) ({_rate(series(k.KERNEL_LAUNCHES, INSTANCE))})"), "{{kernel}}")],
                "ops",
                "Launches through the gpuobs launcher (0 where the engine runs no gpuobs "
                "kernels, e.g. on CPU).",
            )
        )
        .with_panel(
            timeseries_panel(
                "GPU time per kernel",
                [(or_zero(f"sum by (kernel) ({rec.KERNEL_GPU_SECONDS_RATE}{INSTANCE})"), "{{kernel}}")],
                "percentunit",
                "Share of one GPU's time each kernel runs (GPU seconds per second; host time of the "
                "PyTorch reference ops on a CPU server), estimated over 5 minutes as the mean duration of "
                f"the sampled launches ({k.SPAN_SAMPLE_ENV}) times the launch rate (recorded).",
                stacked=True,
            )
        )
        .with_panel(
            timeseries_panel(
                "Engine steps",
                [(f"sum by (model_name) ({_rate(series(s.SERVING_ENGINE_STEPS, SEL))})", "{{model_name}}")],
                "ops",
                "Model steps per second; flat while requests run means a hang.",
            )
        )
        .with_panel(
            timeseries_panel(
                "Engine memory",
                [(series(s.SERVING_MEMORY, SEL), "{{instance}} {{model_name}}")],
                "bytes",
                "Device memory the engine holds: weights, KV cache, leaks.",
            )
        )
        .with_panel(
            timeseries_panel(
                "Ready",
                [(series(s.SERVING_READY, SEL), "{{instance}} {{model_name}}")],
                "none",
                "1 when a model is loaded and requests are accepted.",
                ((None, "red"), (1.0, "green")),
                max_value=1,
            )
        )
    )
    return finish(board)
