"""Stat loggers: the only serving code that touches prometheus_client (vLLM names, gpuobs extras).

As in vLLM v1 (`vllm/v1/metrics/loggers.py`), the engine returns plain stats dataclasses and these
classes turn them into metrics: per-request histograms are observed when a request finishes (from
its `RequestMetrics` and the token arrival times the server saw), engine-wide gauges (and the
tokens-per-step histogram the engine accumulates) are read fresh from `Engine.stats()` at every
scrape by a collector that never raises.

Every path in is measured the same way: `record_request` counts each request by `api` (http, grpc)
and outcome and times it (`gpuobs_serving_requests_total`, `gpuobs_serving_request_duration_seconds`);
HTTP requests reach it through `record_finished` / `record_rejection` / `record_invalid`, gRPC Predict
calls it directly. vLLM's own families keep vLLM's labels (no `api`: vLLM's dashboard must work
unchanged) and count generation requests, which only the HTTP API serves.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from gpuobs.names import serving as names
from gpuobs.names.spec import MetricSpec

__all__ = [
    "CONTENT_TYPE_LATEST",
    "ENGINE_ID",
    "RESTARTS_ENV",
    "EngineStatsCollector",
    "FinishedRequest",
    "PrometheusStatLogger",
    "new_registry",
    "render",
    "vllm_finished_reason",
]

logger = logging.getLogger(__name__)

# vLLM labels each engine core; one engine per served model here, so always "0".
ENGINE_ID = "0"
# The supervisor tells each worker how many times it was restarted through this variable.
RESTARTS_ENV = "GPUOBS_WORKER_RESTARTS"

_VLLM_FINISHED = {"stop": "stop", "length": "length", "abort": "abort", "deadline": "abort", "error": "error"}


def vllm_finished_reason(engine_reason: str | None) -> str:
    """The `finished_reason` label vLLM would use for an engine finish reason (deadline -> abort)."""
    return _VLLM_FINISHED.get(engine_reason or "error", "error")


def _desc(spec: MetricSpec) -> str:
    return spec.help


def _name(spec: MetricSpec) -> str:
    # prometheus_client appends _total to counters itself.
    return spec.native


def _buckets(spec: MetricSpec, default: Sequence[float]) -> Sequence[float]:
    raw = spec.extra.get("buckets")
    return tuple(float(b) for b in raw.split(",")) if raw else tuple(default)


@dataclass(frozen=True)
class FinishedRequest:
    """What the server knows about a finished request: the engine's metrics plus token arrival times."""

    model_name: str
    finish_reason: str | None
    metrics: Any  # gpuobs.serving.engine.RequestMetrics (duck-typed to keep prometheus out of the engine)
    token_times: Sequence[float]  # time.monotonic() at which each generated token reached the server
    n: int = 1
    api: str = names.API_HTTP


_OUTCOME_OF_FINISH = {
    "stop": names.OUTCOME_OK,
    "length": names.OUTCOME_OK,
    "abort": names.OUTCOME_ABORT,
    "deadline": names.OUTCOME_DEADLINE,
    "error": names.OUTCOME_ERROR,
}


def outcome_of_finish(engine_reason: str | None) -> str:
    """The `outcome` label of a finished generation (stop/length are ok, deadline is deadline)."""
    return _OUTCOME_OF_FINISH.get(engine_reason or "error", names.OUTCOME_ERROR)


class PrometheusStatLogger:
    """Per-request vLLM histograms and counters in one registry (one instance per server process)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

        def counter(spec: MetricSpec) -> Counter:
            return Counter(_name(spec), _desc(spec), labelnames=list(spec.labels), registry=registry)

        self.prompt_tokens = counter(names.PROMPT_TOKENS)
        self.generation_tokens = counter(names.GENERATION_TOKENS)
        self.request_success = counter(names.REQUEST_SUCCESS)
        self.admission_rejections = counter(names.ADMISSION_REJECTIONS)
        self.tenant_requests = counter(names.SERVING_TENANT_REQUESTS)
        self.tenant_generation_tokens = counter(names.SERVING_TENANT_GENERATION_TOKENS)
        self.invalid_requests = counter(names.SERVING_INVALID_REQUESTS)
        self.model_swaps = counter(names.SERVING_MODEL_SWAPS)
        for result in ("ok", "refused", "failed"):  # at 0 from the start: increase() sees the first swap
            self.model_swaps.labels(result)
        self.requests = counter(names.SERVING_REQUESTS)
        self.http_connections = Gauge(
            _name(names.SERVING_HTTP_CONNECTIONS), _desc(names.SERVING_HTTP_CONNECTIONS), registry=registry
        )
        self.request_duration = Histogram(
            _name(names.SERVING_REQUEST_DURATION),
            _desc(names.SERVING_REQUEST_DURATION),
            labelnames=list(names.SERVING_REQUEST_DURATION.labels),
            buckets=_buckets(names.SERVING_REQUEST_DURATION, names.REQUEST_DURATION_BUCKETS),
            registry=registry,
        )
        self._histograms: dict[str, Histogram] = {}
        self._lock = threading.Lock()

    def _histograms_for(self, max_model_len: int) -> dict[str, Histogram]:
        """The histograms, created on the first model: token buckets follow its context length (as vLLM)."""
        with self._lock:
            if not self._histograms:
                tok = names.token_buckets(max_model_len)
                for spec in (
                    names.REQUEST_PROMPT_TOKENS,
                    names.REQUEST_GENERATION_TOKENS,
                    names.REQUEST_MAX_NUM_GENERATION_TOKENS,
                    names.REQUEST_PARAMS_N,
                    names.REQUEST_PARAMS_MAX_TOKENS,
                    names.TTFT,
                    names.INTER_TOKEN_LATENCY,
                    names.REQUEST_TIME_PER_OUTPUT_TOKEN,
                    names.E2E_REQUEST_LATENCY,
                    names.REQUEST_QUEUE_TIME,
                    names.REQUEST_INFERENCE_TIME,
                    names.REQUEST_PREFILL_TIME,
                    names.REQUEST_DECODE_TIME,
                    names.REQUEST_NUM_PREEMPTIONS,
                ):
                    self._histograms[spec.native] = Histogram(
                        _name(spec),
                        _desc(spec),
                        labelnames=list(spec.labels),
                        buckets=_buckets(spec, tok),
                        registry=self.registry,
                    )
            return self._histograms

    def _h(self, spec: MetricSpec) -> Histogram:
        return self._histograms_for(2048)[spec.native]

    def register_model(self, model_name: str, max_model_len: int = 2048) -> None:
        """Create every labelled series of a model at 0 so that dashboards show it before traffic."""
        ids = (model_name, ENGINE_ID)
        for counter in (self.prompt_tokens, self.generation_tokens):
            counter.labels(*ids)
        for reason in ("stop", "length", "abort", "error"):
            self.request_success.labels(model_name, ENGINE_ID, reason)
        self.admission_rejections.labels(model_name, names.REASON_MAX_NUM_QUEUED_REQS)
        for h in self._histograms_for(max_model_len).values():
            h.labels(*ids)
        for api in (names.API_HTTP, names.API_GRPC):
            self.requests.labels(api, model_name, names.OUTCOME_OK)
            self.request_duration.labels(api, model_name)

    def record_request(self, api: str, model_name: str, outcome: str, duration_s: float | None) -> None:
        """Count one request of any path in by outcome, and time it when it ran (None: refused at once)."""
        self.requests.labels(api, model_name, outcome).inc()
        if duration_s is not None:
            self.request_duration.labels(api, model_name).observe(max(0.0, duration_s))

    def record_finished(self, done: FinishedRequest) -> None:
        """Observe one finished request (called once per request, from the server's event loop)."""
        m = done.metrics
        ids = (done.model_name, ENGINE_ID)
        reason = vllm_finished_reason(done.finish_reason)
        self.request_success.labels(done.model_name, ENGINE_ID, reason).inc()
        tenant = str(getattr(m, "tenant", "default")) if m is not None else "default"
        self.tenant_requests.labels(done.model_name, tenant, reason).inc()
        duration = float(m.finished) - float(m.arrival) if m is not None else None
        self.record_request(done.api, done.model_name, outcome_of_finish(done.finish_reason), duration)
        if m is None:
            return
        prompt_tokens = int(m.prompt_tokens)
        gen_tokens = int(m.generation_tokens)
        self.prompt_tokens.labels(*ids).inc(prompt_tokens)
        self.generation_tokens.labels(*ids).inc(gen_tokens)
        self.tenant_generation_tokens.labels(done.model_name, tenant).inc(gen_tokens)
        self._h(names.REQUEST_PROMPT_TOKENS).labels(*ids).observe(prompt_tokens)
        self._h(names.REQUEST_GENERATION_TOKENS).labels(*ids).observe(gen_tokens)
        self._h(names.REQUEST_MAX_NUM_GENERATION_TOKENS).labels(*ids).observe(int(m.max_tokens))
        self._h(names.REQUEST_PARAMS_MAX_TOKENS).labels(*ids).observe(int(m.max_tokens))
        self._h(names.REQUEST_PARAMS_N).labels(*ids).observe(done.n)
        self._h(names.REQUEST_NUM_PREEMPTIONS).labels(*ids).observe(int(m.preemptions))
        arrival, finished = float(m.arrival), float(m.finished)
        self._h(names.E2E_REQUEST_LATENCY).labels(*ids).observe(max(0.0, finished - arrival))
        first_scheduled = m.first_scheduled
        if first_scheduled is not None:
            self._h(names.REQUEST_QUEUE_TIME).labels(*ids).observe(
                max(0.0, float(first_scheduled) - float(m.queued))
            )
            self._h(names.REQUEST_INFERENCE_TIME).labels(*ids).observe(
                max(0.0, finished - float(first_scheduled))
            )
        first_token = m.first_token
        if first_token is not None:
            self._h(names.TTFT).labels(*ids).observe(max(0.0, float(first_token) - arrival))
            if first_scheduled is not None:
                self._h(names.REQUEST_PREFILL_TIME).labels(*ids).observe(
                    max(0.0, float(first_token) - float(first_scheduled))
                )
            self._h(names.REQUEST_DECODE_TIME).labels(*ids).observe(max(0.0, finished - float(first_token)))
            if gen_tokens > 1:
                self._h(names.REQUEST_TIME_PER_OUTPUT_TOKEN).labels(*ids).observe(
                    max(0.0, (finished - float(first_token)) / (gen_tokens - 1))
                )
        times = list(done.token_times)
        for before, after in itertools.pairwise(times):
            self._h(names.INTER_TOKEN_LATENCY).labels(*ids).observe(max(0.0, after - before))

    def record_rejection(
        self, model_name: str, reason: str = names.REASON_MAX_NUM_QUEUED_REQS, api: str = names.API_HTTP
    ) -> None:
        """Count an admission refusal (HTTP 429 / gRPC RESOURCE_EXHAUSTED)."""
        self.admission_rejections.labels(model_name, reason).inc()
        self.record_request(api, model_name, names.OUTCOME_REJECTED, None)

    def record_invalid(self, api: str, reason: str, model_name: str = "") -> None:
        """Count a request refused as invalid (4xx / INVALID_ARGUMENT)."""
        self.invalid_requests.labels(api, reason).inc()
        self.record_request(api, model_name, names.OUTCOME_INVALID, None)

    def record_swap(self, result: str) -> None:
        """Count a hot-swap attempt by result: ok, refused, failed."""
        self.model_swaps.labels(result).inc()


_ITERATION_BUCKETS = _buckets(names.ITERATION_TOKENS, ())
_KV_USAGE_BUCKETS = _buckets(names.SERVING_KV_CACHE_USAGE_STEPS, ())


def _histogram_buckets(
    counts: dict[int, int] | dict[float, int], bounds: Sequence[float]
) -> tuple[list[tuple[str, float]], float]:
    """Cumulative (le, count) buckets ending in +Inf, and the sum, of observations given as value -> count."""
    out = []
    for bound in bounds:
        out.append((str(bound), float(sum(c for v, c in counts.items() if v <= bound))))
    out.append(("+Inf", float(sum(counts.values()))))
    return out, float(sum(v * c for v, c in counts.items()))


class EngineStatsCollector(Collector):
    """Engine-wide gauges read fresh from `Engine.stats()` at each scrape; never raises.

    `source()` returns `(model_name, engine)` pairs for every engine alive (two during a hot-swap);
    `ready()` says whether requests are accepted.
    """

    def __init__(
        self,
        source: Callable[[], Iterable[tuple[str, Any]]],
        ready: Callable[[], bool],
        current_model: Callable[[], str],
    ) -> None:
        self._source = source
        self._ready = ready
        self._current = current_model

    def describe(self) -> list[Metric]:
        return []  # keeps registration from calling collect()

    def collect(self) -> Iterable[Metric]:
        def gauge(spec: MetricSpec) -> GaugeMetricFamily:
            return GaugeMetricFamily(spec.native, spec.help, labels=list(spec.labels))

        running = gauge(names.NUM_REQUESTS_RUNNING)
        waiting = gauge(names.NUM_REQUESTS_WAITING)
        kv = gauge(names.KV_CACHE_USAGE)
        cache_info = gauge(names.CACHE_CONFIG_INFO)
        batch = gauge(names.SERVING_BATCH_SIZE)
        depth = gauge(names.SERVING_BUCKET_QUEUE_DEPTH)
        tenant_wait = gauge(names.SERVING_TENANT_WAITING)
        tenant_run = gauge(names.SERVING_TENANT_RUNNING)
        blocks = gauge(names.SERVING_KV_BLOCKS)
        ready = gauge(names.SERVING_READY)
        memory = gauge(names.SERVING_MEMORY)
        fault_active = gauge(names.SERVING_FAULT_ACTIVE)
        steps = CounterMetricFamily(
            names.SERVING_ENGINE_STEPS.native,
            names.SERVING_ENGINE_STEPS.help,
            labels=list(names.SERVING_ENGINE_STEPS.labels),
        )
        errors = CounterMetricFamily(
            names.SERVING_ENGINE_ERRORS.native,
            names.SERVING_ENGINE_ERRORS.help,
            labels=list(names.SERVING_ENGINE_ERRORS.labels),
        )
        preempt = CounterMetricFamily(
            names.NUM_PREEMPTIONS.native,
            names.NUM_PREEMPTIONS.help,
            labels=list(names.NUM_PREEMPTIONS.labels),
        )
        spec = names.ITERATION_TOKENS
        iteration = HistogramMetricFamily(spec.native, spec.help, labels=list(spec.labels))
        step_tokens: dict[str, dict[int, int]] = {}
        spec = names.SERVING_KV_CACHE_USAGE_STEPS
        kv_steps = HistogramMetricFamily(spec.native, spec.help, labels=list(spec.labels))
        step_usage: dict[str, dict[float, int]] = {}
        try:
            pairs = list(self._source())
        except Exception:  # a scrape must never fail because of the engine
            logger.exception("engine stats source failed")
            pairs = []
        merged: dict[str, dict[str, float]] = {}
        for model_name, engine in pairs:
            try:
                stats = engine.stats()
            except Exception:
                logger.exception("engine.stats() failed", extra={"model_name": model_name})
                continue
            acc = merged.setdefault(
                model_name, dict.fromkeys(("running", "waiting", "kv", "preempt", "batch", "blocks"), 0.0)
            )
            # during a hot-swap two engines serve one name: add the queues, keep the newest sizes
            acc["running"] += stats.running
            acc["waiting"] += stats.waiting
            acc["kv"] = max(acc["kv"], stats.kv_usage_ratio)
            acc["preempt"] += stats.preemptions_total
            acc["batch"] = max(acc["batch"], stats.last_batch_size)
            acc["blocks"] = float(stats.num_kv_blocks)
            cache_info.add_metric([str(stats.block_size), str(stats.num_kv_blocks), ENGINE_ID], 1.0)
            for bucket, n in stats.bucket_depth.items():
                depth.add_metric([model_name, str(bucket)], float(n))
            for tenant, n in stats.tenant_waiting.items():
                tenant_wait.add_metric([model_name, str(tenant)], float(n))
            memory.add_metric([model_name], float(stats.memory_bytes))
            steps.add_metric([model_name], float(stats.steps_total))
            per_model = step_tokens.setdefault(model_name, {})
            for n, count in stats.iteration_tokens.items():
                per_model[n] = per_model.get(n, 0) + count
            usage_of_model = step_usage.setdefault(model_name, {})
            for ratio, count in stats.kv_usage_steps.items():
                usage_of_model[ratio] = usage_of_model.get(ratio, 0) + count
            for kind, n in stats.errors_total.items():
                errors.add_metric([model_name, str(kind)], float(n))
            if stats.faults.enabled:
                for fault in stats.faults.active:
                    fault_active.add_metric([model_name, str(fault)], 1.0)
            for tenant, n in stats.tenant_running.items():
                tenant_run.add_metric([model_name, str(tenant)], float(n))
        for model_name, acc in merged.items():
            ids = [model_name, ENGINE_ID]
            running.add_metric(ids, acc["running"])
            waiting.add_metric(ids, acc["waiting"])
            kv.add_metric(ids, acc["kv"])
            preempt.add_metric(ids, acc["preempt"])
            batch.add_metric([model_name], acc["batch"])
            blocks.add_metric([model_name], acc["blocks"])
            buckets, total = _histogram_buckets(step_tokens.get(model_name, {}), _ITERATION_BUCKETS)
            iteration.add_metric(ids, buckets, sum_value=total)
            buckets, total = _histogram_buckets(step_usage.get(model_name, {}), _KV_USAGE_BUCKETS)
            kv_steps.add_metric([model_name], buckets, sum_value=total)
        try:
            ready.add_metric([self._current()], 1.0 if self._ready() else 0.0)
        except Exception:
            logger.exception("readiness probe failed")
        restarts = CounterMetricFamily(
            names.SERVING_WORKER_RESTARTS.native, names.SERVING_WORKER_RESTARTS.help
        )
        try:
            restarts.add_metric([], float(int(os.environ.get(RESTARTS_ENV, "0"))))
        except ValueError:
            restarts.add_metric([], 0.0)
        yield from (
            running,
            waiting,
            kv,
            cache_info,
            preempt,
            iteration,
            kv_steps,
            batch,
            depth,
            tenant_wait,
            tenant_run,
            blocks,
            ready,
            restarts,
            memory,
            errors,
            fault_active,
            steps,
        )


def new_registry() -> CollectorRegistry:
    """A registry with the process, platform and GC collectors, as vLLM's /metrics has, and the kernel
    launcher's counters (`gpuobs_kernel_launches_total`, `gpuobs_cuda_errors_total`): every process that
    launches kernels serves them on its own /metrics."""
    from gpuobs.exporters.inprocess.collector import LauncherCollector
    from gpuobs.exporters.inprocess.launcher import default_launcher

    registry = CollectorRegistry(auto_describe=True)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    registry.register(LauncherCollector(default_launcher))
    return registry


def render(registry: CollectorRegistry) -> bytes:
    """The exposition text of a registry."""
    return generate_latest(registry)
