"""Derived evidence: anomalies across many records (trends, peers, overlaps) that no single line shows.

Each detector is a pure function from the aligned evidence to new `Evidence` records (kind EVENT, key
`anomaly.<name>` or `increase:<metric>`), so that catalog signatures can match them like any other
record and the report can show them when no signature matches. A record derived from one input alone
(a counter's series, a trace file's spans) keeps that input as its source, so a report says which
input showed it; one drawn from several has the source `engine`.
"""

from __future__ import annotations

import itertools
import logging
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.names import MetricKind, all_specs, serving, spans
from gpuobs.rca.parsers.metrics import WINDOW_HALF, format_labels
from gpuobs.rca.signature import SignatureError, resolve_metric

__all__ = [
    "ANOMALY_PREFIX",
    "BATCH_GROWTH",
    "DETECTORS",
    "INCREASE_PREFIX",
    "LATENCY_GROUP",
    "LATENCY_SIGNAL",
    "REQUEST_SPANS",
    "detect_anomalies",
    "head_of_line",
    "latency_shift",
    "memory_growth",
    "metric_increases",
    "oom_fragmented",
    "oom_memory_elsewhere",
    "shared_gpu",
    "straggler",
]

logger = logging.getLogger(__name__)

ANOMALY_PREFIX = "anomaly."
INCREASE_PREFIX = "increase:"
ENGINE_SOURCE = "engine"


def _metric(ref: str) -> str | None:
    try:
        return resolve_metric(ref)
    except SignatureError:
        return None


def _series_key(ev: Evidence) -> tuple[str, tuple[tuple[str, str], ...]]:
    labels = ev.attrs.get("labels")
    items = tuple(sorted((str(k), str(v)) for k, v in labels.items())) if isinstance(labels, dict) else ()
    if not items:
        items = tuple(sorted((k, str(v)) for k, v in ev.entity.to_dict().items()))
    return ev.key, items


def _labels(ev: Evidence) -> dict[str, str]:
    """A metric record's series labels, without the scrape target's (`instance`, `job`)."""
    labels = ev.attrs.get("labels")
    if not isinstance(labels, dict):
        return {}
    return {str(k): str(v) for k, v in labels.items() if k not in ("instance", "job")}


def _numeric(ev: Evidence) -> float | None:
    if isinstance(ev.value, bool):
        return None
    if isinstance(ev.value, int | float):
        return float(ev.value)
    return None


def _val(ev: Evidence) -> float:
    """The numeric value of a record already known to be numeric (see `_numeric`)."""
    number = _numeric(ev)
    return 0.0 if number is None else number


def _source(records: Iterable[Evidence]) -> str:
    """The one input the records came from, or `engine` when they came from several."""
    sources = {ev.source for ev in records}
    return sources.pop() if len(sources) == 1 else ENGINE_SOURCE


def _event(
    name: str,
    value: float | str | None,
    entity: Entity,
    time: float | None,
    text: str,
    *,
    source: str = ENGINE_SOURCE,
    **attrs: object,
) -> Evidence:
    return Evidence(
        kind=EvidenceKind.EVENT,
        key=ANOMALY_PREFIX + name,
        value=value,
        source=source,
        time=time,
        entity=entity,
        raw=text,
        attrs=dict(attrs),
    )


def metric_increases(evidence: Sequence[Evidence]) -> list[Evidence]:
    """For every counter series: its increase over the window (resets handled), as `increase:<metric>`.

    A series seen once (a saved /metrics snapshot) counts its whole value: that is all that is known. A
    summary of several samples alone (the exporter history's `last`, with no `min` or `max` beside it, which
    it writes only where they differ) stood still over the window: it did not increase.
    """
    counters = {spec.native for spec in all_specs() if spec.kind is MetricKind.COUNTER}
    series: dict[tuple[str, tuple[tuple[str, str], ...]], list[Evidence]] = defaultdict(list)
    names: dict[str, str] = {}
    for ev in evidence:
        if ev.kind not in (EvidenceKind.METRIC, EvidenceKind.STATE) or _numeric(ev) is None:
            continue
        # Exposition names counters with `_total`; the registry holds them without it.
        native = ev.key if ev.key in counters else ev.key.removesuffix("_total")
        if native in counters:
            series_key = _series_key(ev)
            series[series_key].append(ev)
            names[series_key[0]] = native
    out = []
    for (raw_key, _), samples in series.items():
        name = names[raw_key]
        samples.sort(key=lambda e: e.time if e.time is not None else 0.0)
        values = [_val(e) for e in samples]
        if len(values) == 1:
            delta = values[0] if _summarised_samples(samples[0]) <= 1 else 0.0
        else:
            delta = 0.0
            for before, after in itertools.pairwise(values):
                delta += after - before if after >= before else after
        if delta <= 0:
            continue
        last = samples[-1]
        out.append(
            Evidence(
                kind=EvidenceKind.EVENT,
                key=INCREASE_PREFIX + name,
                value=delta,
                source=_source(samples),
                time=None if len(samples) == 1 else _first_rise(samples),  # one reading: onset unknown
                entity=last.entity,
                raw=f"{name}{format_labels(_labels(last))} increased by {delta:g} in the window",
                attrs={"labels": last.attrs.get("labels", {})},
            )
        )
    return out


def _summarised_samples(ev: Evidence) -> int:
    """How many samples one record summarises (the exporter history's `samples`; 1 for a plain reading)."""
    count = ev.attrs.get("samples")
    return count if isinstance(count, int) and not isinstance(count, bool) else 1


def _first_rise(samples: Sequence[Evidence]) -> float | None:
    for before, after in itertools.pairwise(samples):
        if _val(after) > _val(before):
            return after.time
    return samples[-1].time


def memory_growth(evidence: Sequence[Evidence]) -> list[Evidence]:
    """Memory that only grows: a memory series rising steadily, or repeated OOMs with growing allocations."""
    names = {n for n in (_metric("gpu.MEMORY_USED"), _metric("gpu.PROCESS_MEMORY_USED")) if n}
    series: dict[tuple[str, tuple[tuple[str, str], ...]], list[Evidence]] = defaultdict(list)
    for ev in evidence:
        if ev.key in names and ev.time is not None and _numeric(ev) is not None:
            series[_series_key(ev)].append(ev)
    out = []
    for samples in series.values():
        if len(samples) < 6:
            continue
        samples.sort(key=lambda e: e.time or 0.0)
        values = [_val(e) for e in samples]
        span = (samples[-1].time or 0.0) - (samples[0].time or 0.0)
        rises = sum(1 for a, b in itertools.pairwise(values) if b >= a)
        growth = values[-1] - values[0]
        if span >= 60 and values[0] > 0 and growth >= 0.25 * values[-1] and rises >= 0.8 * (len(values) - 1):
            out.append(
                _event(
                    "memory_growth",
                    growth,
                    samples[-1].entity,
                    samples[0].time,
                    f"{samples[0].key} grew steadily from {values[0]:.4g} to {values[-1]:.4g} "
                    f"over {span:.0f} s",
                    start=values[0],
                    end=values[-1],
                    seconds=span,
                )
            )
    ooms: dict[str, list[tuple[int, Evidence]]] = defaultdict(list)
    for i, ev in enumerate(evidence):
        if ev.key == "cuda_oom" and isinstance(ev.attrs.get("allocated"), int | float):
            ooms[str(ev.entity.pod or ev.entity.gpu_index or ev.attrs.get("gpu_index") or "")].append((i, ev))
    for items in ooms.values():
        # Never falling, and rising at least twice: OOMs of different sizes can report the same figure
        # (a large request fails, then a smaller one at the same moment) and a full device repeats its last
        # one; a capacity or fragmentation OOM repeats one figure, or moves both ways with the batch.
        allocated = [float(ev.attrs["allocated"]) for _, ev in items]
        rises = sum(1 for a, b in itertools.pairwise(allocated) if b > a)
        if rises >= 2 and all(b >= a for a, b in itertools.pairwise(allocated)):
            last = items[-1][1]
            out.append(
                _event(
                    "memory_growth",
                    allocated[-1] - allocated[0],
                    last.entity,
                    items[0][1].time,
                    f"{len(items)} CUDA OOMs with allocated memory growing from {allocated[0]:.4g} to "
                    f"{allocated[-1]:.4g} bytes",
                    start=allocated[0],
                    end=allocated[-1],
                )
            )
    return out


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


# The device's free memory must beat the request by more than the slack of the figures: PyTorch prints them
# to two decimals (about 5 MiB either way at GiB scale), a request is rounded up to the allocator's 2 MiB
# blocks and the driver's pages, and the driver keeps some memory back. "1.17 GiB free" against "Tried to
# allocate 1.16 GiB" is a device that is full, not memory in the wrong pieces.
_FREE_MARGIN_RATIO = 0.05
_FREE_MARGIN_MIN_BYTES = 32 * 2**20


def _free_margin(tried: float) -> float:
    """How much more than the request the device must report free before the bytes count as there."""
    return max(_FREE_MARGIN_RATIO * tried, _FREE_MARGIN_MIN_BYTES)


def _capped(oom: Evidence) -> bool:
    """Whether a per-process limit capped the allocator ("N allowed" in PyTorch's message)."""
    return " allowed" in str(oom.attrs.get("message", ""))


def oom_fragmented(evidence: Sequence[Evidence]) -> list[Evidence]:
    """CUDA OOMs that failed while enough memory was unused: not a shortage but memory in the wrong pieces.

    PyTorch's caching allocator, before it reports an OOM, releases its cached blocks that are wholly free
    and retries; what it still reports as "reserved but unallocated" is stranded in segments that live
    blocks keep split, and the "free" figure is the device's (cudaMemGetInfo) after that retry. So the OOM
    is fragmentation when a large stranded pool covers the request; when it covers it with the device's
    free memory and dominates what is reserved (PyTorch's own hint: "If reserved memory is >> allocated
    memory ... to avoid fragmentation"); or when the device alone reported clearly more free memory than it
    (the bytes exist, one block of that size could not be had). Each pool must beat the request by more
    than the figures' slack (`_free_margin`): 20.23 GiB stranded against a 20.18 GiB request is a request
    as large as what is left, not memory in the wrong pieces. Not when a per-process limit ("allowed")
    capped the allocator.
    """
    out = []
    for ev in evidence:
        if ev.key != "cuda_oom":
            continue
        tried, total = ev.attrs.get("tried"), ev.attrs.get("total")
        if not isinstance(tried, int | float) or tried <= 0:
            continue
        floor = 0.03 * float(total) if isinstance(total, int | float) and total > 0 else 512 * 2**20
        spare_n, free_n, allocated_n = (
            _number(ev.attrs.get(k)) for k in ("reserved_unallocated", "free", "allocated")
        )
        capped = _capped(ev)
        needed = tried + _free_margin(tried)  # the figures' slack holds for the stranded pool too
        stranded = spare_n >= floor and (
            spare_n >= needed or (not capped and spare_n + free_n >= needed and spare_n >= allocated_n)
        )
        device_free = not capped and free_n >= floor and free_n >= needed
        if not (stranded or device_free):
            continue
        why = (
            f"{spare_n / 2**30:.2f} GiB was reserved but unallocated"
            if stranded
            else f"the device reported {free_n / 2**30:.2f} GiB free"
        )
        out.append(
            _event(
                "oom_fragmented",
                spare_n if stranded else free_n,
                ev.entity,
                ev.time,
                f"OOM asking {tried / 2**20:.0f} MiB while {why}",
                tried=tried,
                reserved_unallocated=spare_n,
                free=free_n,
                gpu_index=ev.attrs.get("gpu_index"),
            )
        )
    return out


# A CUDA context and the libraries' workspaces take memory that PyTorch's "reserved" figure does not count
# (old messages say nothing of it): up to this much of what the device lacks may still be the process's own.
_CONTEXT_ALLOWANCE_BYTES = 1 << 30
_STARTUP_SHARE_ELSEWHERE = 0.6


def oom_memory_elsewhere(evidence: Sequence[Evidence]) -> list[Evidence]:
    """CUDA OOMs on a device that something else had filled: another process, another job, a neighbour.

    PyTorch's message gives the device's total and free memory and what this process holds ("this process has
    N memory in use", or, in older messages and in containers, what its allocator reserved). What is neither
    free nor this process's was held elsewhere. When that is most of the device and clearly more than the
    process itself holds (past the allowance for its CUDA context), the job did not outgrow the GPU: it was
    given a GPU that was mostly taken (a second job or a zombie process on a shared GPU). Not when a
    per-process limit ("allowed") capped the allocator, and not when the figures do not add up (a virtual
    GPU that reports more free memory than is left). An OOM at start-up (vLLM's free-memory check) comes
    before the process held anything but its context: all that was not free is weighed, and must be three
    fifths of the device (a display, the page cache of a unified-memory system or a utilization set a little
    high leave less free without any neighbour).
    """
    out = []
    for ev in evidence:
        if ev.key != "cuda_oom" or _capped(ev):
            continue
        total, free = _number(ev.attrs.get("total")), _number(ev.attrs.get("free"))
        in_use = _number(ev.attrs.get("process_in_use"))
        own = in_use or _number(ev.attrs.get("reserved"))
        at_startup = bool(ev.attrs.get("at_startup"))
        if total <= 0 or (own <= 0 and not at_startup) or free + own > total:
            continue
        elsewhere = total - free - own
        most = total * (_STARTUP_SHARE_ELSEWHERE if at_startup else 0.5)
        if elsewhere < most or elsewhere < 2 * (own + (0 if in_use else _CONTEXT_ALLOWANCE_BYTES)):
            continue
        out.append(
            _event(
                "oom_memory_elsewhere",
                elsewhere,
                ev.entity,
                ev.time,
                (
                    f"at start-up only {free / 2**30:.2f} of {total / 2**30:.2f} GiB was free: "
                    f"{elsewhere / 2**30:.2f} GiB was held elsewhere"
                    if at_startup
                    else f"OOM on a device of {total / 2**30:.2f} GiB where this process held "
                    f"{own / 2**30:.2f} GiB and {elsewhere / 2**30:.2f} GiB was held elsewhere"
                ),
                own=own,
                total=total,
                free=free,
                gpu_index=ev.attrs.get("gpu_index"),
            )
        )
    return out


def _gpu_of(ev: Evidence) -> str | None:
    for name in ("gpu", "gpu_index", "rank", "device_id"):
        value = ev.attrs.get(name)
        if value is not None:
            return str(value)
    if ev.entity.gpu_uuid:
        return ev.entity.gpu_uuid
    if ev.entity.gpu_index is not None:
        return str(ev.entity.gpu_index)
    return None


def straggler(evidence: Sequence[Evidence]) -> list[Evidence]:
    """One GPU whose step/kernel/collective spans take far longer than its peers' (at least 3 peers)."""
    by_name: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    sample: dict[tuple[str, str], Evidence] = {}
    for ev in evidence:
        if ev.kind is not EvidenceKind.SPAN or _numeric(ev) is None:
            continue
        gpu = _gpu_of(ev)
        if gpu is None:
            continue
        by_name[ev.key][gpu].append(_val(ev))
        sample.setdefault((ev.key, gpu), ev)
    out = []
    for name, per_gpu in sorted(by_name.items()):
        if len(per_gpu) < 4:
            continue
        medians = {gpu: statistics.median(v) for gpu, v in per_gpu.items() if v}
        for gpu, med in sorted(medians.items()):
            peers = [m for g, m in medians.items() if g != gpu]
            peer = statistics.median(peers)
            if peer > 0 and med >= 1.5 * peer and med - peer >= 0.002:
                ev = sample[(name, gpu)]
                out.append(
                    _event(
                        "straggler",
                        med / peer,
                        ev.entity,
                        ev.time,
                        f"GPU {gpu}: median {name} span {med * 1e3:.1f} ms vs {peer * 1e3:.1f} ms on its "
                        f"{len(peers)} peers ({med / peer:.1f}x)",
                        gpu=gpu,
                        span=name,
                    )
                )
    return out


def head_of_line(evidence: Sequence[Evidence]) -> list[Evidence]:
    """A long prefill that many short requests queued behind (their queue spans end when it ends)."""
    prefills = [
        ev
        for ev in evidence
        if ev.kind is EvidenceKind.SPAN
        and ev.key == spans.SPAN_PREFILL
        and ev.time is not None
        and _numeric(ev) is not None
    ]
    queues = [
        ev
        for ev in evidence
        if ev.kind is EvidenceKind.SPAN
        and ev.key == spans.SPAN_QUEUE
        and ev.time is not None
        and _numeric(ev) is not None
    ]
    if len(prefills) < 3 or len(queues) < 3:
        return []
    typical = statistics.median(_val(p) for p in prefills)
    out = []
    for p in prefills:
        dur = _val(p)
        if typical <= 0 or dur < 5 * typical or dur < 0.05:
            continue
        end = (p.time or 0.0) + dur
        blocked = [
            q
            for q in queues
            if abs((q.time or 0.0) + _val(q) - end) <= max(0.05, 0.1 * dur) and _val(q) >= 0.5 * dur
        ]
        if len(blocked) >= 3:
            tokens = p.attrs.get(spans.GPUOBS_PREFILL_TOKENS) or p.attrs.get(spans.GEN_AI_USAGE_INPUT_TOKENS)
            out.append(
                _event(
                    "head_of_line",
                    float(len(blocked)),
                    p.entity,
                    p.time,
                    f"a {dur * 1e3:.0f} ms prefill ({tokens or '?'} prompt tokens; "
                    f"typical {typical * 1e3:.0f} ms) "
                    f"held {len(blocked)} queued requests until it finished",
                    blocked=len(blocked),
                    prefill_s=dur,
                )
            )
    return out[:3]


REQUEST_SPANS = "request"
"""The group name latency_shift reports for the front ends' request spans (named `chat <model>`, ...)."""

LATENCY_GROUP = "group"
"""Attribute of a latency_shift: which latency shifted, REQUEST_SPANS or SPAN_DECODE_STEP (one model step)."""
LATENCY_SIGNAL = "signal"
"""Attribute of a latency_shift: `span` (request or step spans) or `metric` (a latency histogram's median)."""
BATCH_GROWTH = "batch_growth"
"""Attribute of a decode-step latency_shift: how much the batches grew (1.0: the same); absent when unknown.
From spans: the decode steps' median batch size; from metrics: the mean tokens per engine step."""

# Latency histograms (summarised per half of the window by the Prometheus reader) and the group each
# measures: the time between two tokens is one decode step.
_METRIC_GROUPS = {
    serving.INTER_TOKEN_LATENCY.native: spans.SPAN_DECODE_STEP,
    serving.E2E_REQUEST_LATENCY.native: REQUEST_SPANS,
}
_BATCH_METRIC = serving.ITERATION_TOKENS.native
"""Its mean per half of the window stands for the batch size behind a step-latency shift."""


def _latency_group(ev: Evidence) -> str | None:
    """Which latency series a span belongs to: the request spans (any model, HTTP or gRPC) or decode steps."""
    if ev.key == spans.SPAN_DECODE_STEP:
        return spans.SPAN_DECODE_STEP
    if spans.is_request_span(ev.key, ev.attrs, ev.attrs.get("span_kind")):
        return REQUEST_SPANS
    return None


def _batch_growth(before: Sequence[Evidence], after: Sequence[Evidence]) -> dict[str, float]:
    """Median batch size of two groups of step spans and its growth; empty when the spans carry none."""
    sizes = []
    for group in (before, after):
        values = [v for v in (_as_float(e.attrs.get(spans.GPUOBS_BATCH_SIZE)) for e in group) if v]
        if not values:
            return {}
        sizes.append(statistics.median(values))
    return {"batch_before": sizes[0], "batch_after": sizes[1], BATCH_GROWTH: sizes[1] / sizes[0]}


def _as_float(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def latency_shift(evidence: Sequence[Evidence]) -> list[Evidence]:
    """Latency that at least doubled between the first and second half of the window.

    From spans (request spans, decode steps: the median of the first half of them against the second)
    and from the latency histograms' per-half medians a Prometheus server gave. A decode-step shift
    says whether the batches grew too (BATCH_GROWTH): bigger batches make slower steps by themselves.
    """
    groups: dict[str, list[Evidence]] = defaultdict(list)
    for ev in evidence:
        if ev.kind is not EvidenceKind.SPAN or ev.time is None or _numeric(ev) is None:
            continue
        group = _latency_group(ev)
        if group is not None:
            groups[group].append(ev)
    out = []
    for name in (REQUEST_SPANS, spans.SPAN_DECODE_STEP):
        items = sorted(groups[name], key=lambda e: e.time or 0.0)
        if len(items) < 10:
            continue
        half = len(items) // 2
        before = statistics.median(_val(e) for e in items[:half])
        after = statistics.median(_val(e) for e in items[half:])
        if before > 0 and after >= 2 * before:
            batches = _batch_growth(items[:half], items[half:]) if name == spans.SPAN_DECODE_STEP else {}
            out.append(
                _event(
                    "latency_shift",
                    after / before,
                    items[half].entity,
                    items[half].time,
                    f"median {name} latency rose from {before * 1e3:.1f} ms to {after * 1e3:.1f} ms "
                    f"({after / before:.1f}x)",
                    source=_source(items),
                    span=name,
                    **{LATENCY_GROUP: name, LATENCY_SIGNAL: "span", **batches},
                )
            )
    return out + _metric_latency_shift(evidence)


def _metric_latency_shift(evidence: Sequence[Evidence]) -> list[Evidence]:
    """A latency histogram whose median over the second half of the window is at least twice the first's.

    A step-latency shift says how the mean tokens per engine step (ITERATION_TOKENS, per half, same
    labels) grew, when the source gave it: the batch size behind the steps.
    """
    halves: dict[tuple[str, tuple[tuple[str, str], ...]], dict[int, Evidence]] = defaultdict(dict)
    for ev in evidence:
        half = ev.attrs.get(WINDOW_HALF)
        if ev.key in (*_METRIC_GROUPS, _BATCH_METRIC) and half in (1, 2) and _numeric(ev) is not None:
            halves[_series_key(ev)][int(half)] = ev
    out = []
    for (key, labels), pair in sorted(halves.items()):
        if key == _BATCH_METRIC or len(pair) < 2:
            continue
        before, after = _val(pair[1]), _val(pair[2])
        if before <= 0 or after < 2 * before:
            continue
        group = _METRIC_GROUPS[key]
        batches: dict[str, float] = {}
        tokens = halves.get((_BATCH_METRIC, labels), {})
        if group == spans.SPAN_DECODE_STEP and len(tokens) == 2 and _val(tokens[1]) > 0:
            first, second = _val(tokens[1]), _val(tokens[2])
            batches = {"batch_before": first, "batch_after": second, BATCH_GROWTH: second / first}
        out.append(
            _event(
                "latency_shift",
                after / before,
                pair[2].entity,
                pair[1].time,
                f"median {key} rose from {before * 1e3:.1f} ms in the first half of the window to "
                f"{after * 1e3:.1f} ms in the second ({after / before:.1f}x)",
                source=_source(pair.values()),
                metric=key,
                **{LATENCY_GROUP: group, LATENCY_SIGNAL: "metric", **batches},
            )
        )
    return out


def shared_gpu(evidence: Sequence[Evidence]) -> list[Evidence]:
    """One GPU used by processes of two or more pods at once (time-slicing/MPS neighbours)."""
    names = {
        n
        for n in (
            _metric("gpu.PROCESS_MEMORY_USED"),
            _metric("gpu.GPU_UTILIZATION"),
            _metric("gpu.MEMORY_USED"),
        )
        if n
    }
    pods: dict[str, set[str]] = defaultdict(set)
    sample: dict[str, Evidence] = {}
    for ev in evidence:
        if ev.key not in names:
            continue
        gpu = ev.entity.gpu_uuid or (str(ev.entity.gpu_index) if ev.entity.gpu_index is not None else None)
        if gpu is None or not ev.entity.pod:
            continue
        if _numeric(ev) is not None and _val(ev) <= 0:
            continue
        pods[gpu].add(f"{ev.entity.namespace or ''}/{ev.entity.pod}")
        sample.setdefault(gpu, ev)
    out = []
    for gpu, found in sorted(pods.items()):
        if len(found) >= 2:
            ev = sample[gpu]
            entity = Entity(host=ev.entity.host, gpu_uuid=ev.entity.gpu_uuid, gpu_index=ev.entity.gpu_index)
            out.append(
                _event(
                    "shared_gpu",
                    float(len(found)),
                    entity,
                    ev.time,
                    f"GPU {gpu} is shared by {len(found)} pods: {', '.join(sorted(found))}",
                    pods=sorted(found),
                )
            )
    return out


DETECTORS: tuple[Callable[[Sequence[Evidence]], list[Evidence]], ...] = (
    metric_increases,
    memory_growth,
    oom_fragmented,
    oom_memory_elsewhere,
    straggler,
    head_of_line,
    latency_shift,
    shared_gpu,
)


def detect_anomalies(evidence: Sequence[Evidence], problems: list[str] | None = None) -> list[Evidence]:
    """Run every detector; a detector that fails is recorded in `problems` and the others still run."""
    out: list[Evidence] = []
    for detector in DETECTORS:
        try:
            out.extend(detector(evidence))
        except Exception as exc:  # a broken detector must not stop the diagnosis (recorded, not hidden)
            logger.warning("anomaly detector %s failed: %s", detector.__name__, exc)
            if problems is not None:
                problems.append(f"[detector {detector.__name__}] {type(exc).__name__}: {exc}")
    return out
