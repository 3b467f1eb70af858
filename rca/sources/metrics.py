"""Metric sources -> Evidence: a Prometheus server, an exporter's `/api/history`, a saved `/metrics` text.

Every metric record uses the NATIVE name of `gpuobs.names` as its key (DCGM names are mapped back
through each spec's `dcgm` field and scale; vLLM names are kept as `vllm:...`), `attrs["labels"]`
holds the full label set and `attrs["agg"]` says what the value is over the window: `last`, `max`,
`min`, `increase`, `p99`, or `sample` for a single exposition sample.

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
from collections.abc import Iterable
from typing import Any

from gpuobs.errors import InputError
from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.names import all_specs, by_native_name
from gpuobs.names import exporter as x
from gpuobs.names import gpu as g
from gpuobs.names import serving as s
from gpuobs.names.spec import MetricSpec
from gpuobs.rca import keys
from gpuobs.rca.sources.text import normalize_pci

__all__ = [
    "DEFAULT_WINDOW_S",
    "evidence_from_history",
    "fetch_exporter_history",
    "fetch_prometheus",
    "looks_like_exposition",
    "parse_exposition",
]

logger = logging.getLogger(__name__)

DEFAULT_WINDOW_S = 1800.0
_TIMEOUT_S = 10.0
_GPU_LABEL_NAMES = set(g.GPU_LABELS) | set(g.DCGM_LABELS)


def _dcgm_map() -> dict[str, MetricSpec]:
    return {spec.dcgm: spec for spec in all_specs() if spec.dcgm}


def _entity(labels: dict[str, str], serving: bool) -> Entity:
    gpu = labels.get("gpu")
    host = labels.get("host") or labels.get("hostname") or labels.get("Hostname") or labels.get("node")
    if host is None and "instance" in labels and not serving:
        host = labels["instance"].rsplit(":", 1)[0]
    return Entity(
        host=host or None,
        gpu_uuid=labels.get("uuid") or labels.get("UUID") or None,
        gpu_index=int(gpu) if gpu is not None and gpu.isdigit() else None,
        pci_bus_id=normalize_pci(labels.get("pci_bus_id")),
        pod=labels.get("pod") or labels.get("exported_pod") or None,
        namespace=labels.get("namespace") or labels.get("exported_namespace") or None,
        container=labels.get("container") or labels.get("exported_container") or None,
        model=labels.get("model_name") if serving else None,
        tenant=labels.get("tenant") or None,
    )


def _metric(
    key: str,
    value: float,
    labels: dict[str, str],
    source: str,
    when: float | None,
    agg: str,
    extra: dict[str, Any] | None = None,
) -> Evidence:
    serving = key.startswith(("vllm:", "gpuobs_serving_"))
    attrs: dict[str, Any] = {"labels": labels, "agg": agg}
    if extra:
        attrs.update(extra)
    return Evidence(
        kind=EvidenceKind.METRIC,
        key=key,
        value=value,
        source=source,
        time=when,
        entity=_entity(labels, serving),
        raw=f"{key}{_fmt_labels(labels)} {value:g}",
        attrs=attrs,
    )


def _fmt_labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def _reasons(
    mask: float, labels: dict[str, str], source: str, when: float | None, agg: str
) -> list[Evidence]:
    out = []
    for bit, reason in g.CLOCK_EVENT_REASONS:
        if int(mask) & bit:
            out.append(
                _metric(g.CLOCK_EVENT_ACTIVE.native, 1.0, {**labels, "reason": reason}, source, when, agg)
            )
    return out


# ------------------------------------------------------------------------------------ exposition text
def looks_like_exposition(text: str) -> bool:
    """True for Prometheus/OpenMetrics exposition text (a saved `/metrics`)."""
    head = text.lstrip()[:4096]
    return head.startswith(("# HELP ", "# TYPE ")) or (
        "# TYPE " in head and ("gpuobs_" in head or "DCGM_FI_" in head or "vllm:" in head)
    )


def parse_exposition(text: str, source: str = "metrics", when: float | None = None) -> list[Evidence]:
    """Evidence from a saved `/metrics` text (native, DCGM-compatible or vLLM names)."""
    from prometheus_client.parser import text_string_to_metric_families

    dcgm = _dcgm_map()
    out: list[Evidence] = []
    try:
        families = list(text_string_to_metric_families(text))
    except (ValueError, TypeError, IndexError) as exc:
        raise InputError(f"{source}: not valid Prometheus exposition text ({exc})") from exc
    for family in families:
        for sample in family.samples:
            name, labels, value = sample.name, dict(sample.labels), float(sample.value)
            if math.isnan(value) or name.endswith("_bucket") or name.endswith("_created"):
                continue
            t = sample.timestamp if sample.timestamp is not None else when
            t = float(t) if t is not None else None
            if name in dcgm:
                spec = dcgm[name]
                if spec.native == g.CLOCK_EVENT_ACTIVE.native:
                    out.extend(_reasons(value, labels, source, t, "sample"))
                    continue
                out.append(
                    _metric(
                        spec.native,
                        value / (spec.dcgm_scale or 1.0),
                        labels,
                        source,
                        t,
                        "sample",
                        {"dcgm": name},
                    )
                )
                continue
            if name.startswith("vllm:"):
                out.append(_metric(name, value, labels, source, t, "sample"))
                continue
            if name.startswith("gpuobs_"):
                try:
                    native = by_native_name(name).native
                except KeyError:
                    native = name
                out.append(_metric(native, value, labels, source, t, "sample"))
    return out


# ----------------------------------------------------------------------------------------- Prometheus
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
            out.append(_metric(key, value, labels, source, end, agg, dict(meta)))

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
                out.extend(_reasons(float(r["value"][1]), labels, source, end, "max"))
    # Serving (vLLM names): saturation and latency over the window.
    for spec, expr, agg in (
        (s.NUM_REQUESTS_WAITING, f"max_over_time({s.NUM_REQUESTS_WAITING.native}[{window}])", "max"),
        (s.NUM_REQUESTS_RUNNING, f"max_over_time({s.NUM_REQUESTS_RUNNING.native}[{window}])", "max"),
        (s.KV_CACHE_USAGE, f"max_over_time({s.KV_CACHE_USAGE.native}[{window}])", "max"),
        (s.NUM_PREEMPTIONS, f"increase({s.NUM_PREEMPTIONS.exposed_native}[{window}]) > 0", "increase"),
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
                raw=f"up{_fmt_labels(labels)} == 0 during the window",
                attrs={"labels": labels, "target": target, "job": labels.get("job"), **meta},
            )
        )
    logger.info("prometheus %s: %d queries, %d records", prom.url, prom.queries, len(out))
    return out


# ---------------------------------------------------------------------------------- exporter history
def fetch_exporter_history(
    url: str,
    start: float | None = None,
    end: float | None = None,
    timeout_s: float = _TIMEOUT_S,
    raw: dict[str, Any] | None = None,
) -> list[Evidence]:
    """Evidence from an exporter's flight recorder (`GET /api/history?since=`); with `raw`, the document
    is also stored in it under `exporter_history` (for bundles)."""
    base = url.rstrip("/")
    if base.endswith("/api/history"):
        base = base[: -len("/api/history")]
    since = 0.0 if start is None else start
    target = f"{base}/api/history?since={since:.3f}"
    try:
        with urllib.request.urlopen(target, timeout=timeout_s) as resp:
            data = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raise InputError(f"exporter {base}: /api/history answered HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise InputError(f"exporter {base}: unreachable ({getattr(exc, 'reason', exc)})") from exc
    except ValueError as exc:
        raise InputError(f"exporter {base}: /api/history is not JSON ({exc})") from exc
    if raw is not None:
        raw["exporter_history"] = data
    return evidence_from_history(data, source=f"exporter:{base}", start=start, end=end)


def evidence_from_history(
    data: Any, source: str = "exporter", start: float | None = None, end: float | None = None
) -> list[Evidence]:
    """Summaries (last, max, min per GPU and metric) and the XID events of an `/api/history` document."""
    if not isinstance(data, dict) or not isinstance(data.get("samples"), list):
        raise InputError(f"{source}: not an exporter /api/history document (no 'samples' list)")
    host = data.get("host") or None
    samples = [
        smp
        for smp in data["samples"]
        if isinstance(smp, dict)
        and isinstance(smp.get("ts"), int | float)
        and (start is None or smp["ts"] >= start)
        and (end is None or smp["ts"] <= end)
    ]
    out: list[Evidence] = []
    series: dict[tuple[int, str, str], list[tuple[float, float]]] = {}
    nvml_down = [smp["ts"] for smp in samples if smp.get("nvml_up") is False]
    for smp in samples:
        for gpu in smp.get("gpus") or []:
            idx, uuid = gpu.get("gpu"), gpu.get("uuid") or ""
            if not isinstance(idx, int):
                continue
            series.setdefault((idx, uuid, x.GPU_UP.native), []).append(
                (smp["ts"], 1.0 if gpu.get("up") else 0.0)
            )
            for name, value in (gpu.get("values") or {}).items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    series.setdefault((idx, uuid, name), []).append((smp["ts"], float(value)))
    for (idx, uuid, name), points in sorted(series.items()):
        labels = {"gpu": str(idx), "uuid": uuid, **({"host": host} if host else {})}
        last_t, last_v = points[-1]
        if name == g.CLOCK_EVENT_ACTIVE.native:
            active: dict[str, int] = {}
            for _, mask in points:
                for bit, reason in g.CLOCK_EVENT_REASONS:
                    if int(mask) & bit:
                        active[reason] = active.get(reason, 0) + 1
            for reason, n in active.items():
                out.append(
                    _metric(
                        name,
                        1.0,
                        {**labels, "reason": reason},
                        source,
                        last_t,
                        "max",
                        {"active_ratio": n / len(points), "samples": len(points)},
                    )
                )
            continue
        values = [v for _, v in points]
        out.append(_metric(name, last_v, labels, source, last_t, "last", {"samples": len(points)}))
        hi, lo = max(values), min(values)
        if hi != last_v:
            t_hi = next(t for t, v in points if v == hi)
            out.append(_metric(name, hi, labels, source, t_hi, "max", {"samples": len(points)}))
        if lo != last_v:
            t_lo = next(t for t, v in points if v == lo)
            out.append(_metric(name, lo, labels, source, t_lo, "min", {"samples": len(points)}))
    if nvml_down:
        out.append(
            Evidence(
                kind=EvidenceKind.STATE,
                key=keys.NVML_ERROR,
                value="init_failed",
                source=source,
                time=nvml_down[0],
                entity=Entity(host=host),
                raw=f"exporter reported NVML down in {len(nvml_down)} of {len(samples)} samples",
                attrs={"samples_down": len(nvml_down)},
            )
        )
    for event in _events(data.get("events"), start, end):
        if event.get("kind") != "xid":
            continue
        code = event.get("code")
        if not isinstance(code, int):
            continue
        idx = event.get("gpu")
        out.append(
            Evidence(
                kind=EvidenceKind.EVENT,
                key=keys.XID,
                value=code,
                source=source,
                time=float(event["ts"]),
                entity=Entity(
                    host=host,
                    gpu_index=idx if isinstance(idx, int) else None,
                    gpu_uuid=event.get("uuid") or None,
                ),
                raw=f"Xid {code} on GPU {idx}: {event.get('detail', '')}".strip(),
                attrs={"message": event.get("detail", ""), "origin": "nvml_event"},
            )
        )
    return out


def _events(events: Any, start: float | None, end: float | None) -> Iterable[dict[str, Any]]:
    for event in events or []:
        if (
            isinstance(event, dict)
            and isinstance(event.get("ts"), int | float)
            and (start is None or event["ts"] >= start)
            and (end is None or event["ts"] <= end)
        ):
            yield event
