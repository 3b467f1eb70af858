"""`gpuobs export --otlp-endpoint` (a real subprocess) pushes hw.* metrics to a real OTLP/HTTP receiver."""

from __future__ import annotations

import gzip
import http.server
import threading
import time
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from support.exporter import SIM_NODE, ExporterProcess


class _Receiver:
    """Collects the OTLP/HTTP metric export requests POSTed to it (protobuf, maybe gzip)."""

    def __init__(self) -> None:
        self.requests: list[ExportMetricsServiceRequest] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path == "/v1/metrics":
                    receiver.requests.append(ExportMetricsServiceRequest.FromString(body))
                out = ExportMetricsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def metrics(self) -> dict[str, list[tuple[float, dict[str, Any]]]]:
        found: dict[str, list[tuple[float, dict[str, Any]]]] = {}
        for request in list(self.requests):
            for rm in request.resource_metrics:
                for sm in rm.scope_metrics:
                    for metric in sm.metrics:
                        data = getattr(metric, metric.WhichOneof("data"))
                        for p in data.data_points:
                            attrs = {
                                kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in p.attributes
                            }
                            value = p.as_double if p.HasField("as_double") else float(p.as_int)
                            found.setdefault(metric.name, []).append((value, attrs))
        return found


def test_export_pushes_semconv_metrics() -> None:
    receiver = _Receiver()
    exp = ExporterProcess(
        *SIM_NODE, "--gpus", "2", "--otlp-endpoint", receiver.url, "--otlp-interval", "0.5",
        "--slow-interval", "0.2",
    )
    try:
        exp.start()
        deadline = time.monotonic() + 30
        wanted = {
            "hw.gpu.utilization",
            "hw.gpu.memory.usage",
            "hw.gpu.memory.limit",
            "hw.power",
            "hw.energy",
            "hw.temperature",
            "hw.errors",
        }
        while time.monotonic() < deadline and not wanted <= set(receiver.metrics()):
            assert exp.alive(), exp.logs()
            time.sleep(0.2)
        got = receiver.metrics()
        assert wanted <= set(got), f"missing {wanted - set(got)}"
        tasks = {attrs["hw.gpu.task"] for _, attrs in got["hw.gpu.utilization"]}
        assert tasks == {"general", "encoder", "decoder"}
        value, attrs = got["hw.gpu.memory.limit"][0]
        assert value == 143771 * 2**20 and attrs["hw.type"] == "gpu" and attrs["hw.id"].startswith("GPU-")
        assert {a["gpu.index"] for _, a in got["hw.power"]} == {0, 1}
        util = [v for v, a in got["hw.gpu.utilization"] if a["hw.gpu.task"] == "general"]
        assert all(0.0 <= v <= 1.0 for v in util), "hw.gpu.utilization is a fraction (unit 1)"
        assert {a["hw.sensor_location"] for _, a in got["hw.temperature"]} == {"gpu", "memory"}
    finally:
        assert exp.stop() == 0, exp.logs()
        receiver.server.shutdown()
