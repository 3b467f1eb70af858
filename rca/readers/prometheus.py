"""A Prometheus server -> metric Evidence: window summaries per series with server-side aggregation.

Prometheus is queried with server-side aggregation over the incident window (`max_over_time`,
`increase`, `histogram_quantile`), so a 1,000-GPU fleet costs the same few dozen instant queries as
one node; counters only return the series that moved, including a labelled counter born in the
window (a first CUDA error or XID code), which `increase` alone cannot see. Serving latency is also
summarised per half of the window (median), so a shift shows without a trace.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
import urllib.error
import urllib.parse
from typing import Any

from gpuobs import json_input
from gpuobs.errors import InputError
from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.http_body import body_excerpt
from gpuobs.names import exporter as x
from gpuobs.names import gpu as g
from gpuobs.names import kernel as kn
from gpuobs.names import serving as s
from gpuobs.names.spec import MetricSpec
from gpuobs.rca import keys
from gpuobs.rca.parsers.metrics import WINDOW_HALF, clock_reason_evidence, format_labels, metric_evidence
from gpuobs.rca.readers.http import display_url, open_url

__all__ = ["BORN_LOOKBACK", "DEFAULT_WINDOW_S", "fetch_prometheus", "moved_expr"]

logger = logging.getLogger(__name__)

DEFAULT_WINDOW_S = 1800.0
_TIMEOUT_S = 10.0

# (spec, aggregations over the window). Gauges: last/max/min; counters: increase (only series that moved).
_GAUGES: tuple[tuple[MetricSpec, tuple[str, ...]], ...] = (
    (g.GPU_TEMPERATURE, ("max", "last")),
    (g.MEMORY_TEMPERATURE, ("max",)),
    (g.POWER_USAGE, ("max", "last")),
    (g.POWER_LIMIT, ("min",)),
    (g.SM_CLOCK, ("min", "last")),
    (g.GPU_UTILIZATION, ("max", "min", "last")),
    (g.MEMORY_USED, ("max", "last")),
    (g.MEMORY_TOTAL, ("last",)),
    (g.ROW_REMAP_PENDING, ("max",)),
    (g.ROW_REMAP_FAILURE, ("max",)),
    (x.GPU_UP, ("min",)),
    (g.XID_LAST, ("max",)),
)
_COUNTERS: tuple[MetricSpec, ...] = (
    g.XID_ERRORS,
    g.ECC_DBE_VOLATILE,
    g.ECC_SBE_VOLATILE,
    g.ROWS_REMAPPED_UNCORRECTABLE,
    g.ROWS_REMAPPED_CORRECTABLE,
    g.PCIE_REPLAYS,
)
_AGG_FN = {"max": "max_over_time", "min": "min_over_time", "avg": "avg_over_time"}
BORN_LOOKBACK = "5m"
"""How far before the window a counter series must have been absent, and its target scraped, to count as
born in the window (Prometheus's own staleness lookback)."""
# Latency histograms summarised per half of the window: their median before and after the midpoint.
_HALVES: tuple[MetricSpec, ...] = (s.INTER_TOKEN_LATENCY, s.E2E_REQUEST_LATENCY)


def moved_expr(exposed: str, window: str) -> str:
    """PromQL for the counter series that moved in the window, valued by how much.

    A series that first appears inside the window while its target was already scraped in the
    BORN_LOOKBACK before it (a labelled counter created at its first increment: a first CUDA error, a
    first XID code) counts its whole value: `increase` needs a sample before the rise and would miss
    it. A target seen for the first time proves nothing (its counters may be older than the window).
    Every other series counts its `increase`, when above zero.
    """
    before = f"[{BORN_LOOKBACK}] offset {window}"
    born = (
        f"(max_over_time({exposed}[{window}]) > 0 unless max_over_time({exposed}{before}))"
        f" and on(instance, job) max_over_time(up{before})"
    )
    return f"({born}) or (increase({exposed}[{window}]) > 0)"


class _Prom:
    def __init__(self, url: str, timeout_s: float) -> None:
        self._full_url = url.rstrip("/")
        self.url = display_url(self._full_url)  # what messages and evidence sources show
        self.timeout_s = timeout_s
        self.queries = 0

    def query(self, expr: str, at: float) -> list[dict[str, Any]]:
        params = urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"})
        self.queries += 1
        try:
            with open_url(f"{self._full_url}/api/v1/query?{params}", self.timeout_s) as resp:
                body = json_input.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise InputError(
                f"Prometheus {self.url}: query {expr!r} failed: HTTP {exc.code} {_error_detail(exc.read())}"
            ) from exc
        except (urllib.error.URLError, OSError) as exc:
            raise InputError(f"Prometheus {self.url}: unreachable ({getattr(exc, 'reason', exc)})") from exc
        except ValueError as exc:  # a server that is not Prometheus, or a proxy's page
            raise InputError(f"Prometheus {self.url}: the answer to {expr!r} is not JSON ({exc})") from exc
        if not isinstance(body, dict) or "status" not in body:  # JSON, but not from Prometheus's API
            raise InputError(f"Prometheus {self.url}: the answer to {expr!r} is not a Prometheus API answer")
        if body.get("status") != "success":
            raise InputError(f"Prometheus {self.url}: query {expr!r} failed: {body.get('error')}")
        data = body.get("data")
        result = data.get("result") if isinstance(data, dict) else None
        return result if isinstance(result, list) else []


def _error_detail(body: bytes) -> str:
    """Prometheus's own `error` field of a refused query, else the body's words (a proxy's HTML page, or no
    Prometheus at that URL at all)."""
    try:
        error = json_input.loads(body).get("error")
    except (ValueError, AttributeError):  # not JSON, or JSON that is not an object
        error = None
    return str(error) if isinstance(error, str) and error else body_excerpt(body, 300)


def _rng(seconds: float) -> str:
    return f"{max(1, math.ceil(seconds))}s"


def _mean(spec: MetricSpec, window: str) -> str:
    """The mean of a histogram's observations over the window, per served model."""
    total, count = (
        f"sum by (model_name) (increase({spec.native}_{part}[{window}]))" for part in ("sum", "count")
    )
    return f"{total} / {count}"


def _quantile(q: float, spec: MetricSpec, window: str) -> str:
    """The q-quantile of a histogram over the window, per served model."""
    return f"histogram_quantile({q}, sum by (le, model_name) (increase({spec.native}_bucket[{window}])))"


def _step_usage_peaks(
    results: list[dict[str, Any]], source: str, when: float, meta: dict[str, Any]
) -> list[Evidence]:
    """The window's KV-cache usage maximum, per served model, from the per-step usage histogram of `gpuobs
    serve`: a `vllm:kv_cache_usage_perc` record (aggregation `step_max`) valued at the highest bucket bound
    some step went past. A floor of the true maximum, which a scrape of the gauge misses when the cache
    fills and empties between two scrapes (a preemption frees blocks at once)."""
    counts: dict[str, dict[float, float]] = {}
    for r in results:
        labels = r.get("metric", {})
        try:
            bound, value = float(labels.get("le", "")), float(r["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        if not math.isnan(value):
            counts.setdefault(str(labels.get("model_name", "")), {})[bound] = value
    out = []
    name = s.KV_CACHE_USAGE.native
    for model, buckets in counts.items():
        steps = buckets.get(math.inf, 0.0)
        passed = [b for b in buckets if not math.isinf(b) and steps - buckets[b] >= 0.5]
        if not passed:
            continue
        floor = max(passed)
        above = steps - buckets[floor]
        ev = metric_evidence(name, floor, {"model_name": model}, source, when, "step_max",
                             {**meta, "steps": round(steps), "steps_above": round(above)})
        out.append(dataclasses.replace(ev, raw=(
            f"{name}{format_labels({'model_name': model})} above {floor:g} in {above:.0f} of {steps:.0f} "
            f"model steps ({s.SERVING_KV_CACHE_USAGE_STEPS.native})")))
    return out


def fetch_prometheus(
    url: str, start: float | None = None, end: float | None = None, timeout_s: float = _TIMEOUT_S
) -> list[Evidence]:
    """Window summaries from a Prometheus server, per series, with server-side aggregation.

    Native gpuobs names are used when the server has them, else dcgm-exporter's names. Raises
    InputError when the server cannot be reached or rejects a query.
    """
    end = time.time() if end is None else end
    start = end - DEFAULT_WINDOW_S if start is None else start
    if start >= end:
        raise InputError(f"incident window is empty: start {start} >= end {end}")
    prom = _Prom(url, timeout_s)
    window = _rng(end - start)
    source = f"prometheus:{prom.url}"
    meta = {"window": [start, end]}
    out: list[Evidence] = []

    native = bool(prom.query('count({__name__=~"gpuobs_gpu_.+"})', end))
    dcgm = not native and bool(prom.query('count({__name__=~"DCGM_FI_.+"})', end))

    def add(
        results: list[dict[str, Any]],
        key: str,
        agg: str,
        scale: float = 1.0,
        *,
        at: float | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        for r in results:
            labels = {k: v for k, v in r.get("metric", {}).items() if k != "__name__"}
            try:
                value = float(r["value"][1]) / scale
            except (KeyError, IndexError, TypeError, ValueError):
                continue
            if math.isnan(value):
                continue
            when = end if at is None else at
            out.append(metric_evidence(key, value, labels, source, when, agg, {**meta, **(extra or {})}))

    if native or dcgm:
        for spec, aggs in _GAUGES:
            name = spec.native if native else spec.dcgm
            if name is None:
                continue
            scale = 1.0 if native else (spec.dcgm_scale or 1.0)
            for agg in aggs:
                expr = name if agg == "last" else f"{_AGG_FN[agg]}({name}[{window}])"
                add(prom.query(expr, end), spec.native, agg, scale)
        for spec in _COUNTERS:
            name = spec.exposed_native if native else spec.dcgm
            if name is None:
                continue
            add(prom.query(moved_expr(name, window), end), spec.native, "increase")
        clock = g.CLOCK_EVENT_ACTIVE
        if native:
            add(prom.query(f"max_over_time({clock.native}[{window}]) > 0", end), clock.native, "max")
        elif clock.dcgm:
            for r in prom.query(f"max_over_time({clock.dcgm}[{window}]) > 0", end):
                labels = {k: v for k, v in r.get("metric", {}).items() if k != "__name__"}
                out.extend(clock_reason_evidence(float(r["value"][1]), labels, source, end, "max"))
    # Serving (vLLM names): saturation and latency over the window.
    for spec, expr, agg in (
        (s.NUM_REQUESTS_WAITING, f"max_over_time({s.NUM_REQUESTS_WAITING.native}[{window}])", "max"),
        (s.NUM_REQUESTS_RUNNING, f"max_over_time({s.NUM_REQUESTS_RUNNING.native}[{window}])", "max"),
        (s.KV_CACHE_USAGE, f"max_over_time({s.KV_CACHE_USAGE.native}[{window}])", "max"),
        (s.NUM_PREEMPTIONS, moved_expr(s.NUM_PREEMPTIONS.exposed_native, window), "increase"),
        # the serving process's own in-process exporter: CUDA errors, whether in a launch or not
        (kn.CUDA_ERRORS, moved_expr(kn.CUDA_ERRORS.exposed_native, window), "increase"),
        # a hot swap next to an OOM is cuda_oom_hot_swap's evidence
        (s.SERVING_MODEL_SWAPS, moved_expr(s.SERVING_MODEL_SWAPS.exposed_native, window), "increase"),
    ):
        add(prom.query(expr, end), spec.native, agg)
    steps = f"sum by (model_name, le) (increase({s.SERVING_KV_CACHE_USAGE_STEPS.native}_bucket[{window}]))"
    out.extend(_step_usage_peaks(prom.query(steps, end), source, end, meta))
    for spec in (s.E2E_REQUEST_LATENCY, s.REQUEST_QUEUE_TIME, s.TTFT, s.INTER_TOKEN_LATENCY):
        add(prom.query(_quantile(0.99, spec, window), end), spec.native, "p99")
    half = (end - start) / 2
    for n, at in ((1, start + half), (2, end)):  # each half's summary, dated at that half's end
        for spec in _HALVES:
            median = _quantile(0.5, spec, _rng(half))
            add(prom.query(median, at), spec.native, "p50", at=at, extra={WINDOW_HALF: n})
        # tokens per engine step, the batch size behind a step's latency
        tokens = _mean(s.ITERATION_TOKENS, _rng(half))
        add(prom.query(tokens, at), s.ITERATION_TOKENS.native, "mean", at=at, extra={WINDOW_HALF: n})
    # Targets that were down at some point: the monitoring itself broke.
    for r in prom.query(f"min_over_time(up[{window}]) == 0", end):
        labels = {k: v for k, v in r.get("metric", {}).items() if k != "__name__"}
        target = labels.get("instance", "?")
        out.append(
            Evidence(
                kind=EvidenceKind.METRIC,
                key=keys.EXPORTER_ERROR,
                value="scrape_target_down",
                source=source,
                time=end,
                entity=Entity(host=target.rsplit(":", 1)[0] or None),
                raw=f"up{format_labels(labels)} == 0 during the window",
                attrs={"labels": labels, "target": target, "job": labels.get("job"), **meta},
            )
        )
    logger.info("prometheus %s: %d queries, %d records", prom.url, prom.queries, len(out))
    return out
