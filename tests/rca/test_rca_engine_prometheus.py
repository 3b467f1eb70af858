"""`gpuobs diagnose --prometheus` against a real Prometheus holding a 64-GPU, one-hour incident window.

The window is written as OpenMetrics and turned into TSDB blocks with `promtool tsdb
create-blocks-from openmetrics`; one GPU overheats and throttles in the last 25 minutes, another
falls off the bus (its XID counter rises). Both must be named, on the right GPU and host, in a few
seconds.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpuobs.cli.app import app
from gpuobs.names import gpu as g
from gpuobs.names import kernel as kn
from gpuobs.names import serving as s
from gpuobs.rca import DiagnoseInputs, diagnose
from gpuobs.rca.inputs import TimeWindow
from gpuobs.rca.readers.prometheus import fetch_prometheus

END = 1_795_990_000.0  # 2026-11-29T22:06:40Z
START = END - 3600.0
STEP = 30
HOT = ("node-5", 3)
LOST = ("node-2", 6)


def _openmetrics() -> str:
    lines: list[str] = []
    temp, clock, power = g.GPU_TEMPERATURE.native, g.CLOCK_EVENT_ACTIVE.native, g.POWER_USAGE.native
    xid = g.XID_ERRORS.native
    samples: dict[str, list[str]] = {temp: [], clock: [], power: [], xid: []}
    for n in range(8):
        host = f"node-{n}"
        for i in range(8):
            base = f'gpu="{i}",host="{host}",model_name="NVIDIA H200",uuid="GPU-{n:04d}-{i:04d}"'
            for k in range(int(3600 / STEP) + 1):
                t = START + k * STEP
                hot = (host, i) == HOT and t >= END - 1500
                samples[temp].append(f"{temp}{{{base}}} {93.0 if hot else 55.0 + (i + k) % 7} {t:.0f}")
                samples[clock].append(
                    f'{clock}{{{base},reason="hw_thermal_slowdown"}} {1 if hot else 0} {t:.0f}'
                )
                samples[clock].append(f'{clock}{{{base},reason="sw_power_cap"}} 0 {t:.0f}')
                samples[power].append(f"{power}{{{base}}} {520.0 + (k % 11)} {t:.0f}")
                if (host, i) == LOST:
                    fell = 1 if t >= END - 600 else 0
                    samples[xid].append(f'{g.XID_ERRORS.exposed_native}{{{base},code="79"}} {fell} {t:.0f}')
    for name, kind in ((temp, "gauge"), (clock, "gauge"), (power, "gauge"), (xid, "counter")):
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(samples[name])
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


@pytest.mark.prometheus
def test_sixty_four_gpu_hour_window(tmp_path: Path, prometheus: Any) -> None:
    data = tmp_path / "window.om"
    data.write_text(_openmetrics())
    store = tmp_path / "tsdb"
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(data), str(store)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    server = prometheus(targets=[], storage=store)
    deadline = time.monotonic() + 30
    while not server.query(f"count({g.GPU_TEMPERATURE.native})", at=END):
        assert time.monotonic() < deadline, "blocks not loaded"
        time.sleep(0.2)
    t0 = time.perf_counter()
    run = CliRunner().invoke(
        app, ["diagnose", "--json", "--prometheus", server.url, "--start", str(START), "--end", str(END)]
    )
    elapsed = time.perf_counter() - t0
    assert run.exit_code == 0, run.stdout
    report = json.loads(run.stdout)
    causes = {c["id"]: c for c in report["causes"]}
    assert report["causes"][0]["id"] == "xid_79_fallen_off_bus"
    lost = causes["xid_79_fallen_off_bus"]["entity"]
    assert (lost["host"], lost["gpu_index"]) == LOST
    hot = causes["thermal_throttling"]["entity"]
    assert (hot["host"], hot["gpu_index"]) == HOT
    assert len(report["causes"]) == 2, [c["id"] for c in report["causes"]]
    # Issue target: a 64-GPU one-hour window in under 3 s; allow for a loaded 2-core CI machine.
    assert elapsed < 10, f"diagnose took {elapsed:.1f} s"
    print(f"64-GPU one-hour Prometheus window diagnosed in {elapsed:.2f} s")


def _blocks(tmp_path: Path, lines: list[str], prometheus: Any) -> Any:
    """A real Prometheus serving the given OpenMetrics lines as TSDB blocks (loaded once END is queryable)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    data = tmp_path / "window.om"
    data.write_text("\n".join([*lines, "# EOF"]) + "\n")
    store = tmp_path / "tsdb"
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(data), str(store)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    server = prometheus(targets=[], storage=store)
    deadline = time.monotonic() + 30
    while not server.query("count(up)", at=END):
        assert time.monotonic() < deadline, "blocks not loaded"
        time.sleep(0.2)
    return server


@pytest.mark.prometheus
def test_a_counter_born_in_the_window_counts_and_names_the_oom(tmp_path: Path, prometheus: Any) -> None:
    """A labelled counter appears at its first increment (a first CUDA error): `increase` cannot see that
    rise, the reader must. A series already there and flat, or one whose target was not scraped before
    the window (a counter read for the first time, its value older than the window), does not count."""
    errors, window = kn.CUDA_ERRORS, 600
    old_target, new_target = 'instance="serve-0:8000",job="serve"', 'instance="serve-1:8000",job="serve"'
    oom = 'code="2",name="cudaErrorMemoryAllocation",kernel="decode"'
    flat = 'code="700",name="cudaErrorIllegalAddress",kernel=""'
    lines = ["# TYPE up gauge"]
    lines += [f"up{{{old_target}}} 1 {t:.0f}" for t in range(int(START), int(END) + 1, STEP)]
    lines += [f"up{{{new_target}}} 1 {t:.0f}" for t in range(int(END) - 300, int(END) + 1, STEP)]
    lines.append(f"# TYPE {errors.native} counter")
    for t in range(int(START), int(END) + 1, STEP):
        lines.append(f"{errors.exposed_native}{{{old_target},{flat}}} 3 {t}")
        if t >= END - 300:  # born in the window at its first increment
            lines.append(f"{errors.exposed_native}{{{old_target},{oom}}} 1 {t}")
            lines.append(f'{errors.exposed_native}{{{new_target},code="2",name="x",kernel=""}} 5 {t}')
    server = _blocks(tmp_path, lines, prometheus)

    moved = [e for e in fetch_prometheus(server.url, END - window, END) if e.key == errors.native]
    assert [(e.attrs["labels"]["name"], e.value) for e in moved] == [("cudaErrorMemoryAllocation", 1.0)]
    assert moved[0].entity.host is None  # the serving process's scrape address is no host name
    report = diagnose(DiagnoseInputs(prometheus=server.url, window=TimeWindow(END - window, END)))
    assert [c.id for c in report.causes][:1] == ["cuda_oom_capacity"], report.causes


def _serving_window(tokens_after: float) -> list[str]:
    """A served model's inter-token latency histogram and tokens per engine step over the hour: every
    30 s, 30 tokens at 5 ms each until ten minutes before END, then at 170 ms; 2 tokens per engine step,
    then `tokens_after`."""
    itl, steps = s.INTER_TOKEN_LATENCY.native, s.ITERATION_TOKENS.native
    labels = 'model_name="tiny",engine="0"'
    bounds = [*(f"{b:g}" for b in s.PER_TOKEN_BUCKETS), "+Inf"]
    lines = [f"# TYPE {itl} histogram"]
    counts = dict.fromkeys(bounds, 0)
    total = 0.0
    rows: list[str] = []
    step_rows: list[str] = []
    n, tokens = 0, 0.0
    for t in range(int(START), int(END) + 1, STEP):
        slow = t > END - 600
        latency = 0.17 if slow else 0.005
        for b in bounds:
            if b == "+Inf" or latency <= float(b):
                counts[b] += 30
        total += 30 * latency
        n += 15
        tokens += 15 * (tokens_after if slow else 2.0)
        rows += [f'{itl}_bucket{{{labels},le="{b}"}} {counts[b]} {t}' for b in bounds]
        rows += [f"{itl}_count{{{labels}}} {counts['+Inf']} {t}", f"{itl}_sum{{{labels}}} {total:.6f} {t}"]
        step_rows += [f"{steps}_count{{{labels}}} {n} {t}", f"{steps}_sum{{{labels}}} {tokens:.1f} {t}"]
    up = [f'up{{instance="serve-0:8000",job="serve"}} 1 {t}' for t in range(int(START), int(END) + 1, STEP)]
    return [*lines, *rows, f"# TYPE {steps} histogram", *step_rows, "# TYPE up gauge", *up]


@pytest.mark.prometheus
def test_slower_steps_at_the_same_tokens_per_step_are_a_kernel_slowdown_from_prometheus_alone(
    tmp_path: Path, prometheus: Any
) -> None:
    """Per half of the window, the reader summarises the inter-token latency (median) and the tokens
    per engine step (mean): steps 30x slower with the same tokens per step name kernel_slowdown, with
    four times the tokens per step they are load, not a fault."""
    window = TimeWindow(END - 1200, END)
    same = _blocks(tmp_path / "same", _serving_window(2.0), prometheus)
    halves = [e for e in fetch_prometheus(same.url, END - 1200, END) if e.attrs.get("half")]
    by = {(e.key, e.attrs["half"]): e for e in halves}
    itl, steps = s.INTER_TOKEN_LATENCY.native, s.ITERATION_TOKENS.native
    assert by[(itl, 1)].value < 0.01 < 0.15 < by[(itl, 2)].value  # type: ignore[operator]
    assert by[(itl, 1)].time == END - 600 and by[(itl, 2)].time == END
    assert by[(steps, 1)].value == by[(steps, 2)].value == 2.0
    report = diagnose(DiagnoseInputs(prometheus=same.url, window=window))
    assert [c.id for c in report.causes] == ["kernel_slowdown"], report.causes
    grown = _blocks(tmp_path / "grown", _serving_window(8.0), prometheus)
    assert "kernel_slowdown" not in [
        c.id for c in diagnose(DiagnoseInputs(prometheus=grown.url, window=window)).causes
    ]


def _kv_window(with_steps: bool) -> list[str]:
    """Ten minutes of a served model whose KV cache fills and empties between 30 s scrapes: the usage gauge
    reads 0.6-0.8 at every scrape, while the per-step usage histogram counts 40 steps of every 300 above
    0.99; 60 preemptions in the last five minutes."""
    kv, preempt, steps = s.KV_CACHE_USAGE.native, s.NUM_PREEMPTIONS, s.SERVING_KV_CACHE_USAGE_STEPS.native
    engine, model = 'model_name="tiny",engine="0"', 'model_name="tiny"'
    target = 'instance="serve-0:8000",job="serve"'
    bounds = [*(f"{b:g}" for b in s.KV_USAGE_BUCKETS), "+Inf"]
    lines = [f"# TYPE {kv} gauge"]
    step_rows: list[str] = []
    preempt_rows: list[str] = []
    up: list[str] = []
    for k, t in enumerate(range(int(END) - 600, int(END) + 1, STEP)):
        lines.append(f"{kv}{{{target},{engine}}} {0.6 + 0.2 * (k % 2)} {t}")
        preempt_rows.append(f"{preempt.exposed_native}{{{target},{engine}}} {max(0, k - 10) * 6} {t}")
        up.append(f"up{{{target}}} 1 {t}")
        for b in bounds:  # per 30 s: 260 steps at 0.7, 40 at 1.0
            n = (k + 1) * (260 if b != "+Inf" and float(b) < 1.0 else 300) if float(b) >= 0.75 else 0
            step_rows.append(f'{steps}_bucket{{{target},{model},le="{b}"}} {n} {t}')
    lines += [f"# TYPE {preempt.native} counter", *preempt_rows, "# TYPE up gauge", *up]
    if with_steps:
        lines += [f"# TYPE {steps} histogram", *step_rows]
    return lines


def _preemption_log(path: Path, n: int) -> Path:
    """`n` preemption lines of `gpuobs serve`'s JSON log in the last four minutes of the window."""
    from datetime import UTC, datetime

    rows = []
    for i in range(n):
        ts = datetime.fromtimestamp(END - 240 + 5 * i, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        msg = f"Preempted request cmpl-{i} (KV cache full): its 300 tokens will be recomputed"
        rows.append(json.dumps({"ts": ts, "level": "warning", "msg": msg, "logger": "gpuobs.serving.engine",
                                "model_name": "tiny", "event": "preemption"}))
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.prometheus
def test_a_cache_full_between_scrapes_shows_in_the_per_step_usage_histogram(
    tmp_path: Path, prometheus: Any
) -> None:
    """A preemption frees blocks at once, so a 30 s scrape of the usage gauge can miss every instant the
    cache was full; `gpuobs serve`'s per-step histogram cannot. The reader turns it into the window's usage
    maximum (a floor: the highest bucket some step passed), and the preemption storm is named."""
    window = TimeWindow(END - 600, END)
    log = _preemption_log(tmp_path / "serve.log", 30)
    with_steps = _blocks(tmp_path / "steps", _kv_window(True), prometheus)
    usage = [e for e in fetch_prometheus(with_steps.url, END - 600, END) if e.key == s.KV_CACHE_USAGE.native]
    by_agg = {e.attrs["agg"]: e for e in usage}
    assert by_agg["max"].value == pytest.approx(0.8)  # the gauge never saw the full cache
    peak = by_agg["step_max"]
    assert peak.value == 0.99 and peak.attrs["steps_above"] == pytest.approx(40 * 20, rel=0.1)
    assert peak.entity.model == "tiny" and "model steps" in peak.raw
    inputs = DiagnoseInputs(logs=(str(log),), prometheus=with_steps.url, window=window)
    assert [c.id for c in diagnose(inputs).causes][:1] == ["kv_cache_exhausted"]
    gauge_only = _blocks(tmp_path / "gauge", _kv_window(False), prometheus)
    inputs = DiagnoseInputs(logs=(str(log),), prometheus=gauge_only.url, window=window)
    assert "kv_cache_exhausted" not in [c.id for c in diagnose(inputs).causes]
