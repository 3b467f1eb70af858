"""Contract: a live stack's own signals name the cause of each fault in `gpuobs diagnose`.

One stack for the module: `gpuobs serve` (tiny model, fault injection, spans over OTLP/HTTP to a real
receiver, JSON log to a file), `gpuobs export` on a simulated one-GPU node, and a real Prometheus
scraping both every 500 ms. Each test drives light load, injects one fault through `/admin/faults`,
clears it, and runs the real CLI as a subprocess over that phase's window:

    gpuobs diagnose --prometheus URL --traces SPANS.jsonl --logs serve.log --start T0 --end T1 --json

`slow_kernel` must come out as `kernel_slowdown` (decode steps slower at the same batch size, in the
spans and in Prometheus's inter-token latency), `cuda_oom` as `cuda_oom_capacity` (the server's log
line, the CUDA error counter in Prometheus and the failed request's span); each also from the
Prometheus server alone, as `gpuobs diagnose --prometheus URL` with no other input would. The window is
pinned with `--start/--end` rather than `--since`: `--since` ends when the CLI reads the clock, seconds
after the phase, and would cut its first requests. Nothing in the evidence may come from the
server's own `fault_injected` log line: the diagnosis must rest on what a real incident leaves.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.exporter import SIM_NODE, ExporterProcess
from support.otlp import OtlpReceiver, SpanRecord
from support.prometheus import PrometheusServer, prometheus_available
from support.serve import ServeProcess, http_json

from gpuobs.names import gpu as g
from gpuobs.names import kernel as kn
from gpuobs.names import serving as s
from gpuobs.names import spans as sp
from gpuobs.rca import DiagnoseInputs, diagnose, keys
from gpuobs.rca.anomalies import ANOMALY_PREFIX, INCREASE_PREFIX
from gpuobs.rca.inputs import TimeWindow

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

MODEL = "gpuobs-tiny-llama"
SCRAPE = "500ms"
BASELINE = 20  # normal requests before the slow_kernel fault
SLOW = 10  # requests under it
HISTORY_S = 2.0  # Prometheus scraped the stack at least this long before a phase's window opens
STEP_DELAY_S = 0.15  # slow_kernel: every model step this much longer (a normal step is a few ms)
LATENCY_SHIFT = f"{ANOMALY_PREFIX}latency_shift"
CUDA_ERRORS_MOVED = f"{INCREASE_PREFIX}{kn.CUDA_ERRORS.native}"


@dataclass
class Stack:
    serve: ServeProcess
    exporter: ExporterProcess
    prom: PrometheusServer
    otlp: OtlpReceiver
    workdir: Path


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    if not prometheus_available():
        pytest.fail("prometheus/promtool not installed: run `make test`, which installs them")
    workdir = tmp_path_factory.mktemp("live-stack")
    with (
        OtlpReceiver() as otlp,
        ServeProcess(
            workdir / "serve",
            "--enable-fault-injection",
            "--otlp-endpoint",
            otlp.url,
            env={"OTEL_BSP_SCHEDULE_DELAY": "100"},
            grpc=False,
        ) as serve,
        ExporterProcess(*SIM_NODE, "--gpus", "1", log_dir=workdir) as exporter,
        PrometheusServer(
            workdir / "prom", [serve.url.removeprefix("http://"), exporter.target], interval=SCRAPE
        ) as prom,
    ):
        prom.wait_for_up(timeout=60)
        yield Stack(serve, exporter, prom, otlp, workdir)


def _complete(serve: ServeProcess, tag: str) -> tuple[int, Any]:
    body = {"model": MODEL, "prompt": f"live {tag}", "max_tokens": 4, "temperature": 0, "ignore_eos": True}
    return http_json("POST", f"{serve.url}/v1/completions", body, timeout=60)


def _poll(what: str, ready: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not seen in {timeout} s")
        time.sleep(0.1)


def _scraped_since(stack: Stack, mark: float, scrapes: int = 2) -> None:
    """Wait until Prometheus holds `scrapes` samples of every target taken after `mark` (epoch seconds).

    Before a phase: its window then opens on a sample of the quiet stack, so `increase` sees the first
    rise. After it: the last counts are stored before the window closes.
    """

    def done() -> bool:
        now = time.time()
        since_mark = f"{max(1, int((now - mark) * 1000))}ms"
        rows = stack.prom.query(f"count_over_time(up[{since_mark}])", at=now)
        return len(rows) == 2 and all(float(r["value"][1]) >= scrapes for r in rows)

    _poll(f"{scrapes} scrapes after {mark}", done)


def _request_spans(spans: list[SpanRecord]) -> int:
    return sum(1 for s in spans if sp.is_request_span(s["name"], s["attributes"]))


def _diagnose(stack: Stack, name: str, start: float, end: float) -> dict[str, Any]:
    traces = stack.workdir / f"{name}-spans.jsonl"
    assert stack.otlp.write_otlp_json(traces) > 0
    argv = [
        sys.executable, "-m", "gpuobs", "diagnose",
        "--prometheus", stack.prom.url,
        "--traces", str(traces),
        "--logs", str(stack.serve.log_path),
        "--start", f"{start:.3f}", "--end", f"{end:.3f}",
        "--json",
    ]  # fmt: skip
    run = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    (stack.workdir / f"{name}-report.json").write_text(run.stdout)  # kept for a failure's post-mortem
    assert run.returncode == 0, f"exit {run.returncode}: {run.stdout[-3000:]} {run.stderr[-3000:]}"
    report: dict[str, Any] = json.loads(run.stdout)
    report["_traces"] = str(traces)
    return report


def _prometheus_alone(stack: Stack, start: float, end: float) -> str | None:
    """The top cause from the Prometheus server alone (the library call `gpuobs diagnose` makes)."""
    report = diagnose(DiagnoseInputs(prometheus=stack.prom.url, window=TimeWindow(start, end)))
    return report.causes[0].id if report.causes else None


def _lines(cause: dict[str, Any]) -> list[dict[str, Any]]:
    """Every line of a cause's chain: its evidence and the symptoms it explains."""
    return [*cause["evidence"], *cause["explained_symptoms"]]


def _no_fault_injection_lines(report: dict[str, Any]) -> None:
    for cause in report["causes"]:
        for line in _lines(cause):
            assert "fault injected" not in line["text"], f"{cause['id']} read the injection log: {line}"


def _begin_phase(stack: Stack) -> float:
    """The start of a phase's window: a moment the stack was quiet, with HISTORY_S of scrapes before it
    (a counter born in the window counts only when its target was scraped before the window) and two
    after it."""
    _poll(
        f"{HISTORY_S} s of scrapes of both targets",
        lambda: len(stack.prom.query("up", at=time.time() - HISTORY_S)) == 2,
    )
    mark = time.time()
    _scraped_since(stack, mark)
    return mark


def _end_phase(stack: Stack, requests_done: int) -> float:
    stack.otlp.wait_for(lambda spans: _request_spans(spans) >= requests_done, timeout=60)
    _scraped_since(stack, time.time())
    return time.time()


def test_slow_kernel_is_named_kernel_slowdown_from_spans_and_prometheus(stack: Stack) -> None:
    before = _request_spans(stack.otlp.spans)
    start = _begin_phase(stack)
    for i in range(BASELINE):
        assert _complete(stack.serve, f"base {i}")[0] == 200
    status, body = http_json("POST", f"{stack.serve.url}/admin/faults/slow_kernel", {"delay_s": STEP_DELAY_S})
    assert status == 200, body
    try:
        for i in range(SLOW):
            assert _complete(stack.serve, f"slow {i}")[0] == 200
    finally:
        assert http_json("DELETE", f"{stack.serve.url}/admin/faults/slow_kernel")[0] == 200
    end = _end_phase(stack, before + BASELINE + SLOW)

    report = _diagnose(stack, "slow_kernel", start, end)
    top = report["causes"][0]
    assert top["id"] == "kernel_slowdown", [c["id"] for c in report["causes"]]
    assert not any(c["id"].startswith("cuda_oom") for c in report["causes"])
    _no_fault_injection_lines(report)

    # Two anchors: the decode steps' shift in the spans and the inter-token latency's in Prometheus.
    chain = top["evidence"]
    anchors = [e for e in chain if e["key"] == LATENCY_SHIFT and e["role"] == "anchor"]
    assert any(
        e["source"] == report["_traces"] and f"median {sp.SPAN_DECODE_STEP} latency" in e["text"]
        for e in anchors
    ), chain
    metric = [e for e in chain if e["key"] == LATENCY_SHIFT and e["source"].startswith("prometheus:")]
    assert any(
        e["role"] == "anchor" and f"median {s.INTER_TOKEN_LATENCY.native}" in e["text"] for e in metric
    ), f"no Prometheus inter-token latency shift anchoring the cause: {chain}"
    # Prometheus's latency summaries of the window are listed as what the cause explains.
    assert any(sym["source"].startswith("prometheus:") for sym in top["explained_symptoms"]), top
    # The shift is far past the 2x threshold: a step went from milliseconds to over STEP_DELAY_S.
    shifts = [a for a in report["anomalies"] if a["key"] == LATENCY_SHIFT]
    assert shifts and max(float(a["value"]) for a in shifts) >= 5, shifts
    assert _prometheus_alone(stack, start, end) == "kernel_slowdown"


def test_cuda_oom_is_named_cuda_oom_capacity_from_log_metrics_and_spans(stack: Stack) -> None:
    before = _request_spans(stack.otlp.spans)
    start = _begin_phase(stack)
    status, body = http_json("POST", f"{stack.serve.url}/admin/faults/cuda_oom", {})
    assert status == 200, body
    try:
        failed, answer = _complete(stack.serve, "oom")
    finally:
        http_json("DELETE", f"{stack.serve.url}/admin/faults/cuda_oom")
    assert failed >= 500 and "out of memory" in json.dumps(answer).lower(), (failed, answer)
    for i in range(3):  # the server recovers: later requests succeed
        assert _complete(stack.serve, f"after {i}")[0] == 200
    end = _end_phase(stack, before + 4)

    report = _diagnose(stack, "cuda_oom", start, end)
    top = report["causes"][0]
    assert top["id"] == "cuda_oom_capacity", [c["id"] for c in report["causes"]]
    assert "kernel_slowdown" not in [c["id"] for c in report["causes"]]
    _no_fault_injection_lines(report)

    by_source: dict[str, set[str]] = {}
    for line in _lines(top):
        by_source.setdefault(line.get("source") or "", set()).add(line.get("key") or "")
    log = str(stack.serve.log_path)
    assert keys.CUDA_OOM in by_source.get(log, set()), by_source  # the server's JSON log line
    prom = {k for source, found in by_source.items() if source.startswith("prometheus:") for k in found}
    assert CUDA_ERRORS_MOVED in prom, by_source  # gpuobs_cuda_errors_total, scraped from serve
    assert keys.PYTHON_EXCEPTION in by_source.get(report["_traces"], set()), by_source  # the span's event
    moved = [e for e in top["evidence"] if e["key"] == CUDA_ERRORS_MOVED]
    assert moved and all('name="cudaErrorMemoryAllocation"' in e["text"] for e in moved), moved
    assert all('kernel="prefill"' in e["text"] for e in moved), moved  # outside a launch: the phase

    assert _prometheus_alone(stack, start, end) == "cuda_oom_capacity"

    # One entity across the three: serve's device 0 is the simulated node's GPU 0 (exporter labels).
    uuids = {r["metric"]["uuid"] for r in stack.prom.query(f'{g.GPU_TEMPERATURE.native}{{gpu="0"}}')}
    assert top["entity"].get("gpu_index") == 0, top["entity"]
    assert top["entity"].get("gpu_uuid") in uuids, (top["entity"], uuids)
