"""OTLP/HTTP push against a real receiver on loopback that decodes the protobuf requests."""

from __future__ import annotations

import gzip
import http.server
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from support.prometheus import free_port
from support.web import LOGIN_PAGE, page_handler, serving

from gpuobs.errors import InputError
from gpuobs.exporters.sidecar.otlp import OtlpMetricsPusher, OtlpPoint, metrics_endpoint
from gpuobs.names.spec import MetricKind, MetricSpec

LOGGER = "gpuobs.exporters.sidecar.otlp"
UUID0 = "GPU-5c7f7a0e-1b2d-4a55-9a6e-0d3c1f7a9b10"
UUID1 = "GPU-8e21c3d4-77aa-4f10-b2c9-61e0a4d5f2c3"

# Specs made for the test (the real ones live in gpuobs.names.gpu, owned by the exporter core).
UTIL = MetricSpec("test_gpu_utilization_percent", MetricKind.GAUGE, "GPU utilization.", unit="percent",
                  otel="hw.gpu.utilization", otel_unit="1", otel_scale=0.01,
                  extra={"otel.attr.hw.type": "gpu", "otel.attr.hw.gpu.task": "general"})
ENC_UTIL = MetricSpec("test_gpu_encoder_utilization_percent", MetricKind.GAUGE, "Encoder utilization.",
                      otel="hw.gpu.utilization", otel_unit="1", otel_scale=0.01,
                      extra={"otel.attr.hw.type": "gpu", "otel.attr.hw.gpu.task": "encoder"})
MEM_USED = MetricSpec("test_gpu_memory_used_mib", MetricKind.GAUGE, "Memory used.", unit="mib",
                      otel="hw.gpu.memory.usage", otel_unit="By", otel_scale=1024.0 * 1024.0,
                      extra={"otel.instrument": "updowncounter", "otel.attr.hw.type": "gpu"})
ENERGY = MetricSpec("test_gpu_energy_millijoules", MetricKind.COUNTER, "Energy.", unit="mj",
                    otel="hw.energy", otel_unit="J", otel_scale=0.001, extra={"otel.attr.hw.type": "gpu"})
NO_OTEL = MetricSpec("test_gpu_pstate", MetricKind.GAUGE, "Performance state.")
HIST = MetricSpec("test_gpu_latency_seconds", MetricKind.HISTOGRAM, "A histogram.", otel="test.latency",
                  otel_unit="s")


class Receiver:
    """A real OTLP/HTTP metrics endpoint: POST /v1/metrics, protobuf bodies kept decoded."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[ExportMetricsServiceRequest] = []
        self.paths: list[str] = []
        self.content_types: list[str] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                with receiver.lock:
                    receiver.paths.append(self.path)
                    receiver.content_types.append(self.headers.get("Content-Type", ""))
                    if self.path == "/v1/metrics" and receiver.status == 200:
                        receiver.requests.append(ExportMetricsServiceRequest.FromString(body))
                reply = ExportMetricsServiceResponse().SerializeToString()
                self.send_response(receiver.status if self.path == "/v1/metrics" else 404)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    def count(self) -> int:
        with self.lock:
            return len(self.requests)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Callable[..., Receiver]]:
    started: list[Receiver] = []

    def start(status: int = 200) -> Receiver:
        started.append(Receiver(status))
        return started[-1]

    yield start
    for r in started:
        r.close()


def _attrs(key_values: Any) -> dict[str, Any]:
    out = {}
    for kv in key_values:
        which = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, which)
    return out


def _metrics(request: ExportMetricsServiceRequest) -> dict[str, Any]:
    found = {}
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                found[metric.name] = metric
    return found


def _points(metric: Any) -> list[tuple[float, dict[str, Any]]]:
    data = getattr(metric, metric.WhichOneof("data"))
    return sorted(((p.as_double if p.HasField("as_double") else float(p.as_int), _attrs(p.attributes))
                   for p in data.data_points), key=lambda x: sorted(x[1].items()))


def _wait_for(predicate: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def test_push_once_sends_semconv_names_units_values_and_resource(
        receiver: Callable[..., Receiver], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("POD_NAME", "gpuobs-exporter-x7k2p")
    monkeypatch.setenv("POD_NAMESPACE", "gpu-monitoring")
    rx = receiver()
    gpu = {"hw.id": UUID0, "gpu": 0}

    def read() -> list[OtlpPoint]:
        return [
            OtlpPoint(UTIL, 87.0, {**gpu, "k8s.pod.name": "llm-0", "k8s.namespace.name": "serving"}),
            OtlpPoint(UTIL, 12.5, {"hw.id": UUID1, "gpu": 1}),
            OtlpPoint(ENC_UTIL, 3.0, gpu),
            OtlpPoint(MEM_USED, 1024.0, gpu),
            OtlpPoint(ENERGY, 123_456.0, gpu),
            OtlpPoint(NO_OTEL, 2.0, gpu),
            OtlpPoint(HIST, 0.5, gpu),
        ]

    pusher = OtlpMetricsPusher(rx.url, interval_s=60, read_points=read,
                               resource_attributes={"k8s.node.name": "node-7"})
    try:
        assert pusher.push_once() is True
    finally:
        pusher.stop(flush=False)
    assert rx.paths == ["/v1/metrics"]
    assert rx.content_types == ["application/x-protobuf"]
    request = rx.requests[0]

    resource = _attrs(request.resource_metrics[0].resource.attributes)
    assert resource["service.name"] == "gpuobs-exporter"
    assert resource["host.name"]
    assert resource["k8s.pod.name"] == "gpuobs-exporter-x7k2p"
    assert resource["k8s.namespace.name"] == "gpu-monitoring"
    assert resource["k8s.node.name"] == "node-7"

    metrics = _metrics(request)
    assert set(metrics) == {"hw.gpu.utilization", "hw.gpu.memory.usage", "hw.energy"}
    util = metrics["hw.gpu.utilization"]
    assert util.unit == "1" and util.WhichOneof("data") == "gauge"
    assert _points(util) == [
        (0.03, {"hw.id": UUID0, "gpu": 0, "hw.type": "gpu", "hw.gpu.task": "encoder"}),
        (0.87, {"hw.id": UUID0, "gpu": 0, "hw.type": "gpu", "hw.gpu.task": "general",
                "k8s.pod.name": "llm-0", "k8s.namespace.name": "serving"}),
        (0.125, {"hw.id": UUID1, "gpu": 1, "hw.type": "gpu", "hw.gpu.task": "general"}),
    ]
    memory = metrics["hw.gpu.memory.usage"]
    assert memory.unit == "By" and memory.WhichOneof("data") == "sum"
    assert not memory.sum.is_monotonic  # an up-down counter, as the semconv says
    assert _points(memory) == [(1024.0 * 1024 * 1024, {"hw.id": UUID0, "gpu": 0, "hw.type": "gpu"})]
    energy = metrics["hw.energy"]
    assert energy.unit == "J" and energy.sum.is_monotonic
    assert energy.sum.aggregation_temporality == 2  # cumulative
    assert _points(energy) == [(pytest.approx(123.456), {"hw.id": UUID0, "gpu": 0, "hw.type": "gpu"})]


def test_periodic_push_follows_the_values_and_stop_flushes(receiver: Callable[..., Receiver]) -> None:
    rx = receiver()
    value = {"util": 10.0}
    reads = []

    def read() -> list[OtlpPoint]:
        reads.append(time.monotonic())
        return [OtlpPoint(UTIL, value["util"], {"hw.id": UUID0})]

    pusher = OtlpMetricsPusher(rx.url, interval_s=0.2, read_points=read).start()
    try:
        assert _wait_for(lambda: rx.count() >= 2)
        value["util"] = 55.0
        seen = rx.count()
        assert _wait_for(lambda: rx.count() > seen + 1)
    finally:
        value["util"] = 99.0
        pusher.stop()  # flushes the latest value
    final = rx.count()
    assert _points(_metrics(rx.requests[-1])["hw.gpu.utilization"])[0][0] == pytest.approx(0.99)
    assert any(_points(_metrics(r)["hw.gpu.utilization"])[0][0] == pytest.approx(0.55) for r in rx.requests)
    assert len(reads) == final, "one read of the points per export"
    time.sleep(0.5)
    assert rx.count() == final, "nothing is pushed after stop()"
    assert pusher.push_once() is False


def test_unreachable_collector_warns_once_and_never_raises(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    pusher = OtlpMetricsPusher(url, interval_s=0.1, timeout_s=1.0,
                               read_points=lambda: [OtlpPoint(UTIL, 50.0, {"hw.id": UUID0})])
    started = time.monotonic()
    assert pusher.push_once() is False
    assert pusher.push_once() is False
    assert time.monotonic() - started < 5.0
    pusher.start()
    time.sleep(0.3)
    pusher.stop()  # the final flush fails too, quietly
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert url in warnings[0].getMessage()
    assert "the collector gave no answer (no connection, or none within 1 s)" in warnings[0].getMessage()
    assert pusher.failures >= 3


def test_rejecting_collector_and_failing_reader_are_contained(receiver: Callable[..., Receiver],
                                                              caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    rx = receiver(status=400)
    pusher = OtlpMetricsPusher(rx.url, interval_s=60, timeout_s=1.0,
                               read_points=lambda: [OtlpPoint(UTIL, 50.0, {"hw.id": UUID0})])
    assert pusher.push_once() is False
    pusher.stop(flush=False)
    assert rx.paths == ["/v1/metrics"]  # 400 is not retried

    def broken() -> list[OtlpPoint]:
        raise RuntimeError("backend exploded")

    rx_ok = receiver()
    pusher = OtlpMetricsPusher(rx_ok.url, interval_s=60, read_points=broken)
    assert pusher.push_once() is False
    pusher.stop(flush=False)
    messages = [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert any("backend exploded" in m for m in messages)


def test_recovery_after_an_outage_is_logged(receiver: Callable[..., Receiver],
                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    rx = receiver(status=503)
    pusher = OtlpMetricsPusher(rx.url, interval_s=60, timeout_s=0.5,
                               read_points=lambda: [OtlpPoint(UTIL, 50.0, {"hw.id": UUID0})])
    try:
        assert pusher.push_once() is False
        rx.status = 200
        assert pusher.push_once() is True
    finally:
        pusher.stop(flush=False)
    assert rx.count() == 1
    assert any("works again" in r.getMessage() for r in caplog.records if r.name == LOGGER)


def test_no_points_is_not_a_failure(receiver: Callable[..., Receiver]) -> None:
    rx = receiver()
    pusher = OtlpMetricsPusher(rx.url, interval_s=60, read_points=lambda: [OtlpPoint(NO_OTEL, 1.0, {})])
    try:
        assert pusher.push_once() is True
    finally:
        pusher.stop(flush=False)
    assert pusher.failures == 0


@pytest.mark.parametrize(("url", "expected"), [
    ("http://otel-collector:4318", "http://otel-collector:4318/v1/metrics"),
    ("https://otel.example.com/", "https://otel.example.com/v1/metrics"),
    ("http://c:4318/v1/metrics", "http://c:4318/v1/metrics"),
])
def test_endpoint_gets_the_signal_path(url: str, expected: str) -> None:
    assert metrics_endpoint(url) == expected


@pytest.mark.parametrize("url", ["otel-collector:4318", "grpc://c:4317", "", "http://"])
def test_bad_endpoint_is_an_input_error(url: str) -> None:
    with pytest.raises(InputError, match="not an http"):
        OtlpMetricsPusher(url, interval_s=10, read_points=list)


def test_a_bad_endpoint_error_leaves_its_password_out() -> None:
    """The check is gpuobs.user_input's, shared with diagnose, bundle, serve and dashboards: it used to be a
    copy here that printed the whole URL, password included."""
    with pytest.raises(InputError) as err:
        OtlpMetricsPusher("admin:hunter2@collector:4318", interval_s=10, read_points=list)
    assert "hunter2" not in str(err.value) and "'collector:4318' is not an http(s) URL" in str(err.value)


@pytest.mark.parametrize(
    ("status", "kind", "body", "said"),
    [
        (200, "text/html; charset=utf-8", LOGIN_PAGE,
         "/v1/metrics answered 200 with text/html; charset=utf-8, not an OTLP response (is it a collector?): "
         "'Please log in'"),
        (503, "text/plain", b"upstream connect error", "the collector answered 503: upstream connect error"),
    ],
    ids=["a login page answering 200", "a proxy refusing"],
)
def test_what_answered_instead_of_a_collector_is_said(
    caplog: pytest.LogCaptureFixture, status: int, kind: str, body: bytes, said: str
) -> None:
    """A login page answering 200 took every push as delivered, without a word; a refusal was "the collector
    did not take the batch (see the SDK log)", a log the exporter quiets."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    with serving(page_handler((status, kind, body))) as url:
        pusher = OtlpMetricsPusher(url, interval_s=60, timeout_s=1.0,
                                   read_points=lambda: [OtlpPoint(UTIL, 50.0, {"hw.id": UUID0})])
        try:
            assert pusher.push_once() is False
        finally:
            pusher.stop(flush=False)
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and said in warnings[0], warnings
