"""OTLP JSON traces: spans made by the real OpenTelemetry SDK, encoded by the real OTLP encoder and
written the way the Collector's `file` exporter writes them (one ExportTraceServiceRequest per line,
OTLP/JSON: hex ids, string nanoseconds)."""

from __future__ import annotations

import base64
import gzip
import json
import time
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from gpuobs.errors import InputError
from gpuobs.evidence import EvidenceKind
from gpuobs.names import spans as sp
from gpuobs.rca import DiagnoseInputs, collect, keys
from gpuobs.rca.parsers.traces import parse_otlp_text

REQUEST = sp.request_span_name(sp.OPERATION_CHAT, "llama-8b")


def _hexify(node: Any) -> Any:
    """protobuf's JSON mapping writes bytes as base64; OTLP/JSON wants hex trace and span ids."""
    if isinstance(node, dict):
        return {
            k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") and v else _hexify(v))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_hexify(v) for v in node]
    return node


def _make_spans() -> list[Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create(
            {sp.HOST_NAME: "gpu-node-3", sp.K8S_POD_NAME: "vllm-0", sp.K8S_NAMESPACE_NAME: "serving"}
        )
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer(sp.TRACER_HTTP)
    with tracer.start_as_current_span(
        REQUEST,
        kind=SpanKind.SERVER,
        attributes={sp.GEN_AI_OPERATION_NAME: sp.OPERATION_CHAT, sp.GEN_AI_REQUEST_MODEL: "llama-8b",
                    sp.GPUOBS_TENANT: "acme"},
    ):
        with tracer.start_as_current_span(sp.SPAN_QUEUE):
            time.sleep(0.02)
        with tracer.start_as_current_span(sp.SPAN_PREFILL):
            pass
        for _ in range(3):
            with tracer.start_as_current_span(sp.SPAN_DECODE_STEP, attributes={sp.GPU_INDEX: 2}):
                pass
        span = tracer.start_span(
            sp.SPAN_KERNEL_LAUNCH, attributes={sp.GPUOBS_KERNEL_NAME: "paged_decode", sp.GPU_INDEX: 2}
        )
        span.record_exception(RuntimeError("CUDA error: an illegal memory access was encountered"))
        span.set_status(Status(StatusCode.ERROR, "cudaErrorIllegalAddress"))
        span.end()
    provider.shutdown()
    return list(exporter.get_finished_spans())


def _write_collector_file(path: Path, spans: list[Any]) -> None:
    lines = []
    for span in spans:  # one request per span, as a busy collector's file exporter may batch them
        lines.append(json.dumps(_hexify(MessageToDict(encode_spans([span])))))
    path.write_text("\n".join(lines) + "\n")


def test_collector_file_spans(tmp_path: Path) -> None:
    spans = _make_spans()
    path = tmp_path / "traces.jsonl"
    _write_collector_file(path, spans)
    evs = parse_otlp_text(path.read_text(), source=str(path))
    span_evs = [e for e in evs if e.kind is EvidenceKind.SPAN]
    assert sorted(e.key for e in span_evs) == sorted(
        [REQUEST, "queue", "prefill", "decode_step", "decode_step", "decode_step", "kernel.launch"]
    )
    queue = next(e for e in span_evs if e.key == "queue")
    assert 0.015 < float(queue.value) < 1.0  # type: ignore[arg-type]
    request = next(e for e in span_evs if e.key == REQUEST)
    assert request.attrs["span_kind"] == "server"
    assert queue.attrs["parent_span_id"] == request.attrs["span_id"] and len(request.attrs["trace_id"]) == 32
    assert request.entity.model == "llama-8b" and request.entity.tenant == "acme"
    assert request.entity.host == "gpu-node-3" and request.entity.pod == "vllm-0"
    kernel = next(e for e in span_evs if e.key == "kernel.launch")
    assert kernel.attrs["status"] == "error" and kernel.attrs["status_message"] == "cudaErrorIllegalAddress"
    assert kernel.entity.gpu_index == 2 and kernel.attrs[sp.GPUOBS_KERNEL_NAME] == "paged_decode"
    assert kernel.attrs["span_kind"] == "internal"
    assert abs(float(kernel.time or 0) - time.time()) < 60
    exc = [e for e in evs if e.key == keys.PYTHON_EXCEPTION]
    assert [e.value for e in exc] == ["RuntimeError"] and exc[0].attrs["span"] == "kernel.launch"


def test_pretty_document_gz_and_errors(tmp_path: Path) -> None:
    doc = _hexify(MessageToDict(encode_spans(_make_spans())))
    pretty = tmp_path / "one.json.gz"
    with gzip.open(pretty, "wt") as fh:
        fh.write(json.dumps(doc, indent=2))
    result = collect(DiagnoseInputs(traces=[str(pretty)], live=False))
    assert result.sources["traces"] == 8 and not result.problems
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"resourceSpans": []}\nnot json\n')
    with pytest.raises(InputError, match=r"bad.jsonl: line 2 is not OTLP JSON"):
        collect(DiagnoseInputs(traces=[str(bad)], live=False))
    other = tmp_path / "metrics.json"
    other.write_text('{"resourceMetrics": []}')
    with pytest.raises(InputError, match="not an OTLP trace export"):
        parse_otlp_text(other.read_text(), source=str(other))


def test_trace_file_given_as_a_log_is_recognised(tmp_path: Path) -> None:
    path = tmp_path / "otel-export.json"
    _write_collector_file(path, _make_spans())
    result = collect(DiagnoseInputs(logs=[str(path)], live=False))
    assert sorted({e.kind for e in result.evidence}) == [EvidenceKind.LOG, EvidenceKind.SPAN]
