"""A minimal OTLP/HTTP trace receiver on loopback for tests: decodes ExportTraceServiceRequest bodies.

It also keeps each request as received, so `write_otlp_json` can write them the way the OpenTelemetry
Collector's `file` exporter does (one OTLP/JSON ExportTraceServiceRequest per line): what
`gpuobs diagnose --traces` reads.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from support.prometheus import free_port

__all__ = ["OtlpReceiver", "SpanRecord"]


class SpanRecord(dict):  # type: ignore[type-arg]
    """name, trace_id, span_id, parent_id (hex), kind, attributes (dict), links (list of span ids)."""


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def _hex_ids(node: Any) -> Any:
    """protobuf's JSON mapping writes bytes as base64; OTLP/JSON writes trace and span ids as hex."""
    if isinstance(node, dict):
        return {
            k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") and v else _hex_ids(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


class OtlpReceiver:
    """Collects spans POSTed to /v1/traces (protobuf)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.spans: list[SpanRecord] = []
        self.requests: list[Any] = []  # ExportTraceServiceRequest messages, in arrival order
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
                    ExportTraceServiceRequest,
                )

                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                found = []
                for rs in req.resource_spans:
                    for ss in rs.scope_spans:
                        for s in ss.spans:
                            found.append(
                                SpanRecord(
                                    name=s.name,
                                    trace_id=s.trace_id.hex(),
                                    span_id=s.span_id.hex(),
                                    parent_id=s.parent_span_id.hex(),
                                    kind=s.kind,
                                    attributes={a.key: _value(a.value) for a in s.attributes},
                                    links=[link.span_id.hex() for link in s.links],
                                    status=s.status.code,
                                )
                            )
                with receiver._lock:
                    receiver.spans.extend(found)
                    receiver.requests.append(req)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def write_otlp_json(self, path: Path) -> int:
        """Write every request received so far as OTLP/JSON lines (hex ids); returns the line count."""
        from google.protobuf.json_format import MessageToDict

        with self._lock:
            requests = list(self.requests)
        lines = [json.dumps(_hex_ids(MessageToDict(req)), separators=(",", ":")) for req in requests]
        Path(path).write_text("".join(line + "\n" for line in lines))
        return len(lines)

    def wait_for(self, predicate: Any, timeout: float = 20) -> list[SpanRecord]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                spans = list(self.spans)
            if predicate(spans):
                return spans
            time.sleep(0.1)
        raise TimeoutError(f"spans not seen in {timeout} s; have {[s['name'] for s in self.spans]}")
