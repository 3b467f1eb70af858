"""TensorRT adapter without TensorRT: the IProfiler and ILogger protocols driven by duck-typed calls.

TensorRT cannot be installed on these CPU machines; the tests call the protocol methods exactly as
TensorRT's runtime does (`report_layer_time(name, ms)` after an inference, `log(severity, msg)`),
with a stand-in for `tensorrt.ILogger.Severity`.
"""

from __future__ import annotations

import enum
import importlib.util
import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry, generate_latest

from gpuobs.exporters.inprocess import launcher as L
from gpuobs.exporters.inprocess import tensorrt as trt_adapter
from gpuobs.jsonlog import JsonFormatter
from gpuobs.names import spans as span_names


class Severity(enum.IntEnum):
    """Same names and values as tensorrt.ILogger.Severity."""

    INTERNAL_ERROR = 0
    ERROR = 1
    WARNING = 2
    INFO = 3
    VERBOSE = 4


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("gpuobs")
    old_level = log.level
    log.setLevel(logging.DEBUG)
    log.addHandler(handler)
    yield stream
    log.removeHandler(handler)
    log.setLevel(old_level)


def test_tensorrt_is_not_installed_here_and_the_adapter_imports() -> None:
    assert importlib.util.find_spec("tensorrt") is None
    proc = subprocess.run(
        [sys.executable, "-c", "import gpuobs.exporters.inprocess.tensorrt as t; print(t.ENGINE)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert proc.stdout.strip() == "tensorrt"


def test_profiler_turns_layer_times_into_spans(spans: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = spans
    launcher = L.KernelLauncher(sample_rate=0.0)
    profiler = trt_adapter.make_profiler(tracer_provider=provider, launcher=launcher, engine_name="llama-8b")
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("inference") as parent:
        profiler.begin(start_ns=1_000_000_000)
        for layer, ms in (("embed", 0.5), ("attn_0", 1.25), ("mlp_0", 2.0)):
            profiler.report_layer_time(layer, ms)
    layer_spans = [s for s in exporter.get_finished_spans() if s.name == span_names.SPAN_KERNEL_LAUNCH]
    layers = [dict(s.attributes or {})[span_names.GPUOBS_ENGINE_LAYER] for s in layer_spans]
    assert layers == ["embed", "attn_0", "mlp_0"]
    # Back to back from the anchor, each as long as TensorRT measured.
    assert [(s.start_time, s.end_time) for s in layer_spans] == [
        (1_000_000_000, 1_000_500_000),
        (1_000_500_000, 1_001_750_000),
        (1_001_750_000, 1_003_750_000),
    ]
    for s in layer_spans:
        attrs = dict(s.attributes or {})
        assert attrs[span_names.GPUOBS_ENGINE] == "tensorrt"
        assert attrs[span_names.GPUOBS_ENGINE_NAME] == "llama-8b"
        assert s.parent is not None and s.parent.span_id == parent.get_span_context().span_id
    assert dict(layer_spans[1].attributes or {})[span_names.GPUOBS_KERNEL_GPU_DURATION_MS] == 1.25
    assert launcher.launch_counts() == {"embed": 1, "attn_0": 1, "mlp_0": 1}
    assert profiler.layers_reported == 3


def test_profiler_without_begin_starts_a_burst_at_the_first_report(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    profiler = trt_adapter.SpanProfiler(tracer_provider=provider, launcher=L.KernelLauncher(sample_rate=0.0))
    profiler.report_layer_time("a", 1.0)
    profiler.report_layer_time("b", 3.0)
    first, second = exporter.get_finished_spans()
    assert second.start_time == first.end_time
    assert second.end_time - second.start_time == 3_000_000  # type: ignore[operator]


def test_logger_counts_logs_and_maps_cuda_errors(json_log: io.StringIO) -> None:
    launcher = L.KernelLauncher(sample_rate=0.0)
    trt_logger = trt_adapter.make_logger(launcher=launcher, min_severity=Severity.WARNING)
    trt_logger.log(Severity.INFO, "Loaded engine size: 42 MiB")
    trt_logger.log(Severity.VERBOSE, "Deserialization required 1234 microseconds.")
    trt_logger.log(
        Severity.WARNING, "Using an engine plan file across different models of devices is not recommended"
    )
    trt_logger.log(
        Severity.ERROR,
        "1: [executionContext.cpp::enqueueInternal::795] Error Code 1: Cuda Runtime "
        "(an illegal memory access was encountered)",
    )
    trt_logger.log(
        Severity.INTERNAL_ERROR,
        "2: [cudaDriverHelpers.cpp::operator()::29] Error Code 2: Internal Error (CUDA_ERROR_OUT_OF_MEMORY)",
    )
    trt_logger.log(
        Severity.ERROR, "3: [runtime.cpp::deserializeCudaEngine::66] Error Code 3: API Usage Error"
    )
    assert trt_logger.counts() == {"info": 1, "verbose": 1, "warning": 1, "error": 2, "internal_error": 1}
    assert launcher.error_counts() == {
        ("700", "cudaErrorIllegalAddress", "tensorrt"): 1,
        ("2", "cudaErrorMemoryAllocation", "tensorrt"): 1,
    }
    lines = [json.loads(line) for line in json_log.getvalue().splitlines()]
    engine_lines = [line for line in lines if line.get("event") == "engine_log"]
    # info and verbose are below min_severity: counted, not logged.
    assert [line["severity"] for line in engine_lines] == ["warning", "error", "internal_error", "error"]
    assert engine_lines[1]["cuda_error_code"] == 700 and engine_lines[1]["level"] == "error"
    assert engine_lines[2]["cuda_error_name"] == "cudaErrorMemoryAllocation"
    assert engine_lines[2]["level"] == "critical"
    assert "cuda_error_code" not in engine_lines[3]
    assert any(line.get("event") == "cuda_error" and line["kernel"] == "tensorrt" for line in lines)


def test_engine_log_collector_exposition_is_promtool_clean() -> None:
    trt_logger = trt_adapter.CountingLogger(launcher=L.KernelLauncher(sample_rate=0.0))
    for severity in (Severity.WARNING, Severity.WARNING, Severity.ERROR, 3, "Severity.VERBOSE"):
        trt_logger.log(severity, "message")
    registry = CollectorRegistry()
    registry.register(trt_adapter.EngineLogCollector(trt_logger))
    text = generate_latest(registry).decode()
    assert 'gpuobs_engine_log_messages_total{engine="tensorrt",severity="warning"} 2.0' in text
    assert 'gpuobs_engine_log_messages_total{engine="tensorrt",severity="verbose"} 1.0' in text
    assert 'severity="info"} 1.0' in text and 'severity="error"} 1.0' in text
    check = subprocess.run(
        ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30
    )
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize(
    ("severity", "name"),
    [
        (Severity.INTERNAL_ERROR, "internal_error"),
        (1, "error"),
        ("WARNING", "warning"),
        ("Severity.INFO", "info"),
        (4, "verbose"),
        (17, "info"),
        (None, "info"),
    ],
)
def test_severity_names(severity: object, name: str) -> None:
    assert trt_adapter.severity_name(severity) == name
