"""Derived anomalies (peers, trends, overlaps) and the matcher semantics the catalog relies on."""

from __future__ import annotations

from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.names import gpu as g
from gpuobs.names import serving as s
from gpuobs.names import spans as sp
from gpuobs.rca.anomalies import (
    ANOMALY_PREFIX,
    BATCH_GROWTH,
    LATENCY_GROUP,
    LATENCY_SIGNAL,
    head_of_line,
    latency_shift,
    memory_growth,
    metric_increases,
    oom_fragmented,
    oom_memory_elsewhere,
    shared_gpu,
    straggler,
)
from gpuobs.rca.catalog import parse_signature
from gpuobs.rca.engine import diagnose_evidence
from gpuobs.rca.parsers.metrics import WINDOW_HALF

T0 = 1_790_000_000.0
GIB = 2**30


def span(name: str, t: float, dur: float, **attrs: object) -> Evidence:
    return Evidence(
        kind=EvidenceKind.SPAN,
        key=name,
        value=dur,
        source="traces.json",
        time=t,
        entity=Entity(host="h1"),
        raw=f"span {name}",
        attrs=dict(attrs),
    )


def metric(key: str, value: float, t: float | None, entity: Entity, **labels: str) -> Evidence:
    return Evidence(
        kind=EvidenceKind.METRIC,
        key=key,
        value=value,
        source="m.prom",
        time=t,
        entity=entity,
        attrs={"labels": labels},
    )


def test_straggler_needs_peers_and_names_the_slow_gpu() -> None:
    spans = [
        span("decode_step", T0 + k, 0.020 * (2.2 if gpu == 6 else 1.0), gpu=gpu)
        for k in range(10)
        for gpu in range(8)
    ]
    found = straggler(spans)
    assert [e.attrs["gpu"] for e in found] == ["6"] and 2.1 < float(found[0].value) < 2.3  # type: ignore[arg-type]
    assert straggler([e for e in spans if e.attrs["gpu"] in (0, 6)]) == []  # two GPUs are no peer group
    uniform = [span("decode_step", T0 + k, 0.020, gpu=gpu) for k in range(10) for gpu in range(8)]
    assert straggler(uniform) == []


def test_head_of_line_finds_the_long_prefill_that_short_requests_wait_for() -> None:
    spans = [span("prefill", T0 + i, 0.04) for i in range(10)]
    spans += [span("queue", T0 + i, 0.002) for i in range(10)]
    spans.append(span("prefill", T0 + 20, 2.0, **{"gpuobs.prefill_tokens": 7000}))
    spans += [span("queue", T0 + 20.1 + j * 0.1, 2.0 - 0.1 - j * 0.1 + 0.01) for j in range(5)]
    found = head_of_line(spans)
    assert len(found) == 1 and found[0].value == 5.0 and "7000 prompt tokens" in found[0].raw
    assert head_of_line(spans[:-5]) == []  # nobody waited: a long prefill alone is not blocking


def request(t: float, dur: float, grpc: bool = False) -> Evidence:
    """A request span as serve names it: `chat <model>` (HTTP) or `Predict <model>` (gRPC), kind SERVER."""
    if grpc:
        attrs = {sp.RPC_SYSTEM: sp.RPC_SYSTEM_GRPC, sp.RPC_METHOD: sp.RPC_METHOD_PREDICT}
        return span(sp.grpc_span_name("tiny"), t, dur, span_kind="server", **attrs)
    attrs = {sp.GEN_AI_OPERATION_NAME: sp.OPERATION_CHAT}
    return span(sp.request_span_name(sp.OPERATION_CHAT, "tiny"), t, dur, span_kind="server", **attrs)


def test_latency_shift_and_shared_gpu() -> None:
    reqs = [request(T0 + i, 0.05 if i < 10 else 0.13, grpc=i % 3 == 0) for i in range(20)]
    found = latency_shift(reqs)
    assert len(found) == 1 and found[0].value > 2.0 and found[0].attrs["span"] == "request"
    assert latency_shift([request(T0 + i, 0.05) for i in range(20)]) == []
    # Engine spans and client spans that look like requests are no request latency.
    slower = [0.05 if i < 10 else 0.13 for i in range(20)]
    queued = [span(sp.SPAN_QUEUE, T0 + i, d) for i, d in enumerate(slower)]
    name = sp.request_span_name(sp.OPERATION_CHAT, "tiny")
    client = [span(name, T0 + i, d, span_kind="client") for i, d in enumerate(slower)]
    assert latency_shift(queued + client) == []
    proc = g.PROCESS_MEMORY_USED.native
    a = metric(proc, 10 * GIB, T0, Entity(gpu_uuid="GPU-1", gpu_index=0, pod="a", namespace="x"))
    b = metric(proc, 20 * GIB, T0, Entity(gpu_uuid="GPU-1", gpu_index=0, pod="b", namespace="y"))
    c = metric(proc, 20 * GIB, T0, Entity(gpu_uuid="GPU-2", gpu_index=1, pod="c", namespace="y"))
    found = shared_gpu([a, b, c])
    assert (
        len(found) == 1 and found[0].attrs["pods"] == ["x/a", "y/b"] and found[0].entity.gpu_uuid == "GPU-1"
    )


def test_decode_step_shift_says_whether_the_batches_grew() -> None:
    same = [
        span(sp.SPAN_DECODE_STEP, T0 + i, 0.002 if i < 10 else 0.15, **{sp.GPUOBS_BATCH_SIZE: 1})
        for i in range(20)
    ]
    (found,) = latency_shift(same)
    assert found.attrs[LATENCY_GROUP] == sp.SPAN_DECODE_STEP and found.attrs[LATENCY_SIGNAL] == "span"
    assert found.attrs[BATCH_GROWTH] == 1.0 and found.source == "traces.json"
    grown = [
        span(
            sp.SPAN_DECODE_STEP,
            T0 + i,
            0.02 if i < 10 else 0.05,
            **{sp.GPUOBS_BATCH_SIZE: 1 if i < 10 else 8},
        )
        for i in range(20)
    ]
    assert latency_shift(grown)[0].attrs[BATCH_GROWTH] == 8.0
    bare = [span(sp.SPAN_DECODE_STEP, T0 + i, 0.002 if i < 10 else 0.15) for i in range(20)]
    assert BATCH_GROWTH not in latency_shift(bare)[0].attrs  # spans without a batch size: unknown, not 1


def _half(key: str, value: float, half: int, source: str = "prometheus:x") -> Evidence:
    return Evidence(
        kind=EvidenceKind.METRIC,
        key=key,
        value=value,
        source=source,
        time=T0 + 60 * half,
        entity=Entity(model="tiny"),
        attrs={"labels": {"model_name": "tiny"}, "agg": "p50", WINDOW_HALF: half},
    )


def test_latency_shift_from_a_histograms_medians_per_half_of_the_window() -> None:
    itl = s.INTER_TOKEN_LATENCY.native
    (found,) = latency_shift([_half(itl, 0.005, 1), _half(itl, 0.175, 2)])
    assert found.attrs[LATENCY_GROUP] == sp.SPAN_DECODE_STEP and found.attrs[LATENCY_SIGNAL] == "metric"
    assert found.source == "prometheus:x" and found.value == 35.0 and found.time == T0 + 60
    assert latency_shift([_half(itl, 0.005, 1), _half(itl, 0.009, 2)]) == []  # under 2x
    assert latency_shift([_half(itl, 0.175, 2)]) == []  # one half alone says nothing
    e2e = s.E2E_REQUEST_LATENCY.native
    assert latency_shift([_half(e2e, 0.2, 1), _half(e2e, 0.6, 2)])[0].attrs[LATENCY_GROUP] == "request"
    ttft = s.TTFT.native  # not a latency the detector compares per half
    assert latency_shift([_half(ttft, 0.1, 1), _half(ttft, 0.9, 2)]) == []
    assert BATCH_GROWTH not in found.attrs  # no tokens-per-step summary: the batch size is unknown
    steps = s.ITERATION_TOKENS.native
    (same,) = latency_shift(
        [_half(itl, 0.005, 1), _half(itl, 0.175, 2), _half(steps, 2.2, 1), _half(steps, 2.2, 2)]
    )
    assert same.attrs[BATCH_GROWTH] == 1.0


def test_kernel_slowdown_from_prometheus_alone_needs_the_same_tokens_per_step() -> None:
    itl, steps = s.INTER_TOKEN_LATENCY.native, s.ITERATION_TOKENS.native

    def causes(tokens_after: float) -> list[str]:
        halves = [
            _half(itl, 0.005, 1),
            _half(itl, 0.175, 2),
            _half(steps, 2.2, 1),
            _half(steps, tokens_after, 2),
        ]
        return [c.id for c in diagnose_evidence(halves).causes]

    assert causes(2.4) == ["kernel_slowdown"]
    assert causes(9.0) == []  # four times the tokens per step: the load grew


def test_kernel_slowdown_needs_slower_steps_at_the_same_batch_size_and_clean_clocks() -> None:
    def steps(batch_after: int) -> list[Evidence]:
        return [
            span(sp.SPAN_DECODE_STEP, T0 + i, 0.02 if i < 10 else 0.06,
                 **{sp.GPUOBS_BATCH_SIZE: 1 if i < 10 else batch_after})
            for i in range(20)
        ]  # fmt: skip

    def causes(evidence: list[Evidence]) -> list[str]:
        return [c.id for c in diagnose_evidence(evidence).causes]

    assert causes(steps(1)) == ["kernel_slowdown"]
    assert causes(steps(4)) == []  # bigger batches make slower steps: load, not a fault
    throttled = metric(
        g.CLOCK_EVENT_ACTIVE.native, 1, T0 + 15, Entity(host="h1", gpu_index=0), gpu="0", reason="hw_slowdown"
    )
    assert "kernel_slowdown" not in causes([*steps(1), throttled])  # the clocks explain it: hw_slowdown


def test_memory_growth_from_series_and_from_repeated_ooms() -> None:
    used = g.MEMORY_USED.native
    rising = [metric(used, (30 + 4 * i) * GIB, T0 + 30 * i, Entity(gpu_index=0)) for i in range(12)]
    assert len(memory_growth(rising)) == 1
    flat = [metric(used, 60 * GIB, T0 + 30 * i, Entity(gpu_index=0)) for i in range(12)]
    assert memory_growth(flat) == []
    short = rising[:2]
    assert memory_growth(short) == []

    def ooms_at(*gib: float) -> list[Evidence]:
        return [
            Evidence(
                kind=EvidenceKind.LOG,
                key="cuda_oom",
                value=None,
                source="a.log",
                time=T0 + i,
                attrs={"allocated": a * GIB},
            )
            for i, a in enumerate(gib)
        ]

    ooms = ooms_at(70, 71, 72)
    assert len(memory_growth(ooms)) == 1
    assert memory_growth(ooms[:2]) == []
    # a full device repeats its last figure, and a smaller request can fail at the same one: still growth
    assert len(memory_growth(ooms_at(70, 71, 71, 72, 72, 72))) == 1
    assert memory_growth(ooms_at(70, 70, 70, 71)) == []  # one rise is no trend
    assert memory_growth(ooms_at(70, 71, 69, 72)) == []  # allocated fell: the batch, not a leak


def oom_record(**figures: object) -> Evidence:
    """A parsed CUDA OOM with these figures (attrs as `parse_oom_figures` gives them)."""
    return Evidence(kind=EvidenceKind.LOG, key="cuda_oom", value=None, source="a", time=T0, attrs=figures)


def test_oom_fragmented_thresholds() -> None:
    def oom(tried: float, spare: float) -> Evidence:
        return oom_record(tried=tried, reserved_unallocated=spare, total=80 * GIB)

    (fragmented,) = oom_fragmented([oom(20 * 2**20, 5 * GIB)])
    assert fragmented.key == ANOMALY_PREFIX + oom_fragmented.__name__  # the name the catalog reads
    assert oom_fragmented([oom(20 * 2**20, 100 * 2**20)]) == []  # a small spare pool is not fragmentation
    assert oom_fragmented([oom(8 * GIB, 5 * GIB)]) == []  # the request would not fit anyway
    # a stranded pool within the figures' rounding of a huge request: the request is as large as what is
    # left (a 32k-token prompt's attention), not memory in the wrong pieces
    assert oom_fragmented([oom(20.18 * GIB, 20.23 * GIB)]) == []
    assert len(oom_fragmented([oom(20.18 * GIB, 21.5 * GIB)])) == 1  # 1.3 GiB over: there


def test_oom_memory_elsewhere_needs_most_of_the_device_held_by_others() -> None:
    """What is neither free nor this process's was held elsewhere: named when it is most of the device and
    clearly more than the process holds (with a CUDA context's allowance where only the allocator's figure
    is known)."""

    def oom(free: float, message: str = "CUDA out of memory", **own: float) -> Evidence:
        return oom_record(tried=64 * 2**20, total=24 * GIB, free=free, message=message, **own)

    held = oom_memory_elsewhere([oom(0.01 * GIB, process_in_use=2 * GIB)])
    assert len(held) == 1 and round(held[0].value / GIB, 2) == 21.99  # type: ignore[operator]
    assert held[0].key == ANOMALY_PREFIX + oom_memory_elsewhere.__name__  # the name the catalog reads
    assert len(oom_memory_elsewhere([oom(0.01 * GIB, reserved=1.2 * GIB)])) == 1
    assert oom_memory_elsewhere([oom(0.01 * GIB, process_in_use=20 * GIB)]) == []  # its own: capacity
    assert oom_memory_elsewhere([oom(0.01 * GIB, reserved=7.5 * GIB)]) == []  # 16.5 < 2 x (7.5 + 1)
    assert oom_memory_elsewhere([oom(14 * GIB, process_in_use=2 * GIB)]) == []  # 8 GiB elsewhere: not most
    assert oom_memory_elsewhere([oom(0.01 * GIB)]) == []  # nothing said of its own memory
    assert oom_memory_elsewhere([oom(23 * GIB, process_in_use=2 * GIB)]) == []  # figures that do not add up
    capped = oom(0.01 * GIB, "CUDA out of memory (4.00 GiB allowed; 1.20 GiB reserved)", reserved=1.2 * GIB)
    assert oom_memory_elsewhere([capped]) == []  # a per-process limit stopped it


def test_oom_fragmented_counts_the_device_free_memory() -> None:
    """The allocator reports "free" after releasing its whole free segments: stranded reserved memory plus
    the device's free memory covering the request, or the free memory alone covering it, is no shortage."""

    def oom(
        tried: float, spare: float, free: float, message: str = "CUDA out of memory", allocated: float = 0.0
    ) -> Evidence:
        attrs = {
            "tried": tried,
            "reserved_unallocated": spare,
            "free": free,
            "total": 12 * GIB,
            "allocated": allocated,
        }
        return Evidence(
            kind=EvidenceKind.LOG,
            key="cuda_oom",
            value=None,
            source="a",
            time=T0,
            attrs={**attrs, "message": message},
        )

    # 5 GiB stranded in split segments + 3 GiB free: a 6 GiB request fits in neither pool alone
    assert len(oom_fragmented([oom(6 * GIB, 5 * GIB, 3 * GIB)])) == 1
    # 2 GiB free on the device and a 40 MiB request failed: the bytes exist
    hit = oom_fragmented([oom(40 * 2**20, 10 * 2**20, 2 * GIB)])
    assert len(hit) == 1 and "free" in hit[0].raw
    # near misses: the free memory and a small stranded pool together still short of the request
    assert oom_fragmented([oom(6 * GIB, 1 * GIB, 3 * GIB)]) == []  # 4 GiB unused in all, 6 GiB asked
    assert oom_fragmented([oom(20 * 2**20, 100 * 2**20, 8 * 2**20)]) == []  # a full device, a small pool
    assert oom_fragmented([oom(9 * GIB, 5 * GIB, 3 * GIB)]) == []  # 8 GiB unused cannot hold 9 GiB
    # free memory within the figures' rounding of the request is a full device, not a fragmented one
    assert oom_fragmented([oom(1.16 * GIB, 19 * 2**20, 1.17 * GIB)]) == []
    assert oom_fragmented([oom(400 * 2**20, 0.0, 420 * 2**20)]) == []  # 20 MiB over: the slack
    assert len(oom_fragmented([oom(400 * 2**20, 0.0, 500 * 2**20)])) == 1  # 100 MiB over: there
    assert len(oom_fragmented([oom(1.16 * GIB, 19 * 2**20, 1.5 * GIB)])) == 1  # 0.34 GiB spare: there
    # the stranded pool must dominate what is reserved (PyTorch: "reserved memory is >> allocated memory")
    assert oom_fragmented([oom(6 * GIB, 2 * GIB, 5 * GIB, allocated=4 * GIB)]) == []
    # a per-process cap ("... allowed;") explains free device memory the allocator may not use
    assert (
        oom_fragmented([oom(40 * 2**20, 10 * 2**20, 2 * GIB, "4.00 GiB allowed; 3.9 GiB already allocated")])
        == []
    )


def test_counter_increase_handles_resets_total_suffix_and_single_readings() -> None:
    pre = s.NUM_PREEMPTIONS.native
    e = Entity(model="m")
    series = [metric(pre + "_total", v, T0 + i, e, model_name="m") for i, v in enumerate([10, 30, 5, 25])]
    found = metric_increases(series)
    assert len(found) == 1 and found[0].key == f"increase:{pre}" and found[0].value == 45.0
    single = metric_increases([metric(g.PCIE_REPLAYS.native, 12, T0, Entity(gpu_index=1), gpu="1")])
    assert single[0].value == 12.0 and single[0].time is None  # one reading: when it rose is unknown
    assert metric_increases([metric(g.GPU_TEMPERATURE.native, 80, T0, Entity(gpu_index=1))]) == []


def _sig(**fields: object):  # type: ignore[no-untyped-def]
    base = {
        "id": "t",
        "title": "t",
        "severity": "high",
        "scope": "global",
        "explanation": "e",
        "remediation": ["r"],
    }
    return parse_signature({**base, **fields})


def _log(key: str, t: float | None, line: int, **attrs: object) -> tuple[Evidence, int]:
    ev = Evidence(
        kind=EvidenceKind.LOG,
        key=key,
        value=None,
        source="x.log",
        time=t,
        raw=key,
        attrs={"line": line, **attrs},
    )
    return ev, line


def test_time_relations_counts_and_variants() -> None:
    near = _sig(require=[{"name": "a", "key": "a"}, {"name": "b", "key": "b", "near": "a", "within_s": 60}])
    assert near.evaluate([_log("a", T0, 1), _log("b", T0 - 30, 2)]) is not None
    assert near.evaluate([_log("a", T0, 1), _log("b", T0 + 120, 2)]) is None
    after = _sig(require=[{"name": "a", "key": "a"}, {"name": "b", "key": "b", "after": "a"}])
    assert after.evaluate([_log("a", T0, 1), _log("b", T0 + 1, 2)]) is not None
    assert after.evaluate([_log("a", T0, 1), _log("b", T0 - 1, 2)]) is None
    assert after.evaluate([_log("a", None, 5), _log("b", None, 2)]) is None  # untimed: line order decides
    counted = _sig(require=[{"key": "a", "count": 3}])
    assert counted.evaluate([_log("a", T0, 1, repeats=3)]) is not None  # folded repeats count
    assert counted.evaluate([_log("a", T0, 1), _log("a", T0, 2)]) is None
    distinct = _sig(require=[{"key": "a", "distinct": "model", "count": 2}])
    assert distinct.evaluate([_log("a", T0, 1, model="x"), _log("a", T0, 2, model="x")]) is None
    assert distinct.evaluate([_log("a", T0, 1, model="x"), _log("a", T0, 2, model="y")]) is not None
    variants = _sig(
        variants=[
            {"name": "weak", "base": 0.5, "require": [{"key": "a"}]},
            {"name": "strong", "base": 0.8, "require": [{"key": "a"}, {"key": "b"}]},
        ],
        rule_out=[{"key": "c"}],
    )
    assert variants.evaluate([_log("a", T0, 1)]).variant == "weak"  # type: ignore[union-attr]
    both = variants.evaluate([_log("a", T0, 1), _log("b", T0, 2)])
    assert both is not None and both.variant == "strong" and both.confidence == 0.8
    assert variants.evaluate([_log("a", T0, 1), _log("c", T0, 3)]) is None


def test_metric_snapshots_are_not_ordered_against_events() -> None:
    # A /metrics snapshot taken after the Xid still shows the GPU's state; it neither precedes nor
    # follows the log line, so the Xid explains the pending remap it causes.
    evs = [
        Evidence(
            kind=EvidenceKind.LOG,
            key="xid",
            value=48,
            source="dmesg",
            time=T0 + 100,
            raw="Xid 48",
            attrs={"pci": "0000:3b:00"},
        ),
        metric(g.ROW_REMAP_PENDING.native, 1, T0, Entity(pci_bus_id="00000000:3B:00.0", gpu_index=0)),
    ]
    report = diagnose_evidence(evs)
    assert [c.id for c in report.causes] == ["xid_48_double_bit_ecc"]
    assert [x.id for x in report.causes[0].explained_symptoms if x.id] == ["gpu_reset_required"]
