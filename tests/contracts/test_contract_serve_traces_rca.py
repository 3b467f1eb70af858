"""Contract: the spans a real `gpuobs serve` exports drive RCA's trace detectors.

serve runs as a subprocess exporting OTLP/HTTP to a real receiver; the receiver writes the spans as
the Collector's file exporter would; RCA reads that file through `gpuobs.rca.diagnose`, as
`gpuobs diagnose --traces` does. A baseline of normal requests, then the `slow_kernel` fault (every
model step slower): RCA must report the latency shift of the request spans and of the decode steps,
and nothing of the kind for the baseline alone.

The tiny CPU model's own step takes a few milliseconds, which a loaded 2-core machine can double by
scheduling alone (a real shift, correctly reported, but not the one under test). So the baseline's steps
are given a steady BASELINE_STEP_S, as a real GPU model's step takes tens of milliseconds, and the fault
makes them more than ten times that: jitter can neither fake the baseline's shift nor hide the fault's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.otlp import OtlpReceiver, SpanRecord
from support.serve import ServeProcess, http_json

from gpuobs.names import spans as sp
from gpuobs.rca import DiagnoseInputs, diagnose
from gpuobs.rca.anomalies import ANOMALY_PREFIX, REQUEST_SPANS

MODEL = "gpuobs-tiny-llama"
PER_PHASE = 10
BASELINE_STEP_S = 0.02  # slow_kernel during the baseline: a steady step time, as a GPU model's
STEP_DELAY_S = 0.25  # slow_kernel for the incident: every model step this much longer
LATENCY_SHIFT = f"{ANOMALY_PREFIX}latency_shift"


@pytest.fixture(scope="module")
def otlp() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as receiver:
        yield receiver


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, otlp: OtlpReceiver) -> Iterator[ServeProcess]:
    with ServeProcess(
        tmp_path_factory.mktemp("serve-traces"),
        "--enable-fault-injection",
        "--otlp-endpoint",
        otlp.url,
        env={"OTEL_BSP_SCHEDULE_DELAY": "100"},
        grpc=False,
    ) as proc:
        yield proc


def _complete(server: ServeProcess, i: int) -> None:
    body = {"model": MODEL, "prompt": f"contract {i}", "max_tokens": 4, "temperature": 0, "ignore_eos": True}
    status, answer = http_json("POST", f"{server.url}/v1/completions", body, timeout=60)
    assert status == 200, answer


def _request_spans(spans: list[SpanRecord]) -> list[SpanRecord]:
    return [s for s in spans if sp.is_request_span(s["name"], s["attributes"])]


def _shift_spans(path: Path) -> set[str]:
    """The span groups RCA reports a latency shift for (from the report's anomaly or cause evidence)."""
    report = diagnose(DiagnoseInputs(traces=[str(path)]))
    texts = [a.text for a in report.anomalies if a.key == LATENCY_SHIFT]
    texts += [ev.text for c in report.causes for ev in c.evidence if ev.key == LATENCY_SHIFT]
    groups = (REQUEST_SPANS, sp.SPAN_DECODE_STEP)
    return {name for name in groups if any(f"median {name} " in t for t in texts)}


def test_slow_kernel_in_a_real_serve_shows_as_a_latency_shift_in_rca(
    server: ServeProcess, otlp: OtlpReceiver, tmp_path: Path
) -> None:
    status, body = http_json("POST", f"{server.url}/admin/faults/slow_kernel", {"delay_s": BASELINE_STEP_S})
    assert status == 200, body
    try:
        for i in range(PER_PHASE):
            _complete(server, i)
    finally:
        http_json("DELETE", f"{server.url}/admin/faults")
    otlp.wait_for(lambda ss: len(_request_spans(ss)) >= PER_PHASE)
    baseline = tmp_path / "baseline.jsonl"
    assert otlp.write_otlp_json(baseline) > 0
    assert _shift_spans(baseline) == set(), "normal traffic alone must show no latency shift"

    status, body = http_json("POST", f"{server.url}/admin/faults/slow_kernel", {"delay_s": STEP_DELAY_S})
    assert status == 200, body
    try:
        for i in range(PER_PHASE):
            _complete(server, PER_PHASE + i)
    finally:
        http_json("DELETE", f"{server.url}/admin/faults")
    spans = otlp.wait_for(lambda ss: len(_request_spans(ss)) >= 2 * PER_PHASE)

    # What serve exports is what the names module says: request spans by the gen_ai format, engine spans.
    names = {s["name"] for s in spans}
    assert sp.request_span_name(sp.OPERATION_TEXT_COMPLETION, MODEL) in names
    assert {sp.SPAN_QUEUE, sp.SPAN_PREFILL, sp.SPAN_DECODE_STEP} <= names

    incident = tmp_path / "incident.jsonl"
    otlp.write_otlp_json(incident)
    assert _shift_spans(incident) == {REQUEST_SPANS, sp.SPAN_DECODE_STEP}
