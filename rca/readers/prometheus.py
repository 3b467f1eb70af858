"""A Prometheus server -> metric Evidence: window summaries per series with server-side aggregation.

Prometheus is queried with server-side aggregation over the incident window (`max_over_time`,
`increase`, `histogram_quantile`), so a 1,000-GPU fleet costs the same few dozen instant queries as
one node; counters only return the series that moved.
"""

from __future__ import annotations

import json
import logging
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from gpuobs.errors import InputError
from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.names import exporter as x
from gpuobs.names import gpu as g
from gpuobs.names import serving as s
from gpuobs.names.spec import MetricSpec
from gpuobs.rca import keys
from gpuobs.rca.parsers.metrics import clock_reason_evidence, format_labels, metric_evidence

__all__ = ["DEFAULT_WINDOW_S", "fetch_prometheus"]

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


class _Prom:
    def __init__(self, url: str, timeout_s: float) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.queries = 0

    def query(self, expr: str, at: float) -> list[dict[str, Any]]:
        params = urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"})
        self.queries += 1
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/query?{params}", timeout=self.timeout_s) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            raise InputError(
                f"Prometheus {self.url}: query {expr!r} failed: HTTP {exc.code} {detail}"
            ) from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise InputError(f"Prometheus {self.url}: unreachable ({getattr(exc, 'reason', exc)})") from exc
        if body.get("status") != "success":
            raise InputError(f"Prometheus {self.url}: query {expr!r} failed: {body.get('error')}")
        result = body.get("data", {}).get("result", [])
        return result if isinstance(result, list) else []


def _rng(seconds: float) -> str:
    return f"{max(1, math.ceil(seconds))}s"


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

    def add(results: list[dict[str, Any]], key: str, agg: str, scale: float = 1.0) -> None:
        for r in results:
            labels = {k: v for k, v in r.get("metric", {}).items() if k != "__name__"}
            try:
                value = float(r["value"][1]) / scale
            except (KeyError, IndexError, TypeError, ValueError):
                continue
            if math.isnan(value):
                continue
            out.append(metric_evidence(key, value, labels, source, end, agg, dict(meta)))

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
            add(prom.query(f"increase({name}[{window}]) > 0", end), spec.native, "increase")
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
        (s.NUM_PREEMPTIONS, f"increase({s.NUM_PREEMPTIONS.exposed_native}[{window}]) > 0", "increase"),
        (s.SERVING_MODEL_SWAPS, f"increase({s.SERVING_MODEL_SWAPS.exposed_native}[{window}]) > 0",
         "increase"),  # a hot swap next to an OOM is cuda_oom_hot_swap's evidence
    ):
        add(prom.query(expr, end), spec.native, agg)
    for spec in (s.E2E_REQUEST_LATENCY, s.REQUEST_QUEUE_TIME, s.TTFT):
        expr = f"histogram_quantile(0.99, sum by (le, model_name) (increase({spec.native}_bucket[{window}])))"
        add(prom.query(expr, end), spec.native, "p99")
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
