"""The exporter's HTTP server: `/metrics`, `/healthz`, `/api/history` and, only when enabled, `/api/faults`.

Standard-library ThreadingHTTPServer; TLS, basic auth, headers and rate limits come from a web-config
file (Prometheus exporter-toolkit format), applied by `webconfig.serve_with_web_config`;
`/healthz` stays open for liveness probes. A scrape never answers 500: if rendering
fails, the answer is 200 with `gpuobs_collector_success{collector="exposition"} 0`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import socket
import ssl
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from prometheus_client.registry import CollectorRegistry

from gpuobs.exporters.sidecar.collector import CONTENT_TYPE, render
from gpuobs.exporters.sidecar.history import parse_since
from gpuobs.names import exporter as ex

__all__ = ["ExporterHttpServer", "FaultTarget"]

logger = logging.getLogger(__name__)

_MAX_BODY = 64 * 1024


def _not_a_json_number(text: str) -> float:
    raise ValueError(f"{text} is not a JSON number (NaN and Infinity are not JSON)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:32]} overflows to Infinity (NaN and Infinity are not JSON)")
    return value


def _strict_json(data: bytes) -> Any:
    """JSON as RFC 8259 has it: NaN, Infinity and numbers that overflow to them are errors."""
    try:
        return json.loads(data, parse_constant=_not_a_json_number, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise ValueError(f"body is not JSON: {exc}") from exc
    except RecursionError as exc:
        raise ValueError("body is not JSON: nested too deeply") from exc


class FaultTarget(Protocol):
    """What `/api/faults` drives (gpuobs.exporters.sidecar.sim.SimBackend)."""

    def inject(self, kind: str, **args: Any) -> dict[str, Any]: ...


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    app: ExporterHttpServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        logger.debug("connection from %s failed", client_address, exc_info=True)


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "gpuobs-export"

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("http %s " + format, self.address_string(), *args)

    timeout = 30  # seconds a connection may stay silent

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data, default=str).encode("utf-8"))

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        try:
            url = urllib.parse.urlsplit(self.path)
            app = self.server.app
            if url.path == "/metrics" and method == "GET":
                self._send(200, app.metrics_body(), CONTENT_TYPE)
            elif url.path == "/healthz" and method == "GET":
                self._json(200, app.health())
            elif url.path == "/api/history" and method == "GET":
                params = urllib.parse.parse_qs(url.query)
                text = (params.get("since") or [""])[0]
                try:
                    since = parse_since(text)
                except ValueError as exc:
                    self._json(400, {"error": str(exc)})
                    return
                if not math.isfinite(since):  # since=nan would answer "since": NaN, which is not JSON
                    self._json(400, {"error": f"since={text[:64]!r}: not a finite time"})
                    return
                self._json(200, app.history(since))
            elif url.path == "/api/faults":
                self._faults(method)
            elif url.path == "/" and method == "GET":
                self._send(
                    200, b"gpuobs export: /metrics /healthz /api/history\n", "text/plain; charset=utf-8"
                )
            else:
                self._json(404, {"error": f"no route {method} {url.path}"})
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, TimeoutError):
            logger.debug("client went away", exc_info=True)
        except Exception:
            logger.exception("request %s %s failed", method, self.path)
            with contextlib.suppress(OSError):
                self._json(503, {"error": "internal error, see the exporter's log"})

    def _faults(self, method: str) -> None:
        app = self.server.app
        if app.faults is None:
            self._json(404, {"error": "fault injection is off (start with --enable-fault-injection)"})
            return
        if method == "GET":
            from gpuobs.exporters.sidecar.sim import FAULT_KINDS

            self._json(200, {"kinds": list(FAULT_KINDS)})
            return
        if method == "DELETE":
            self._json(200, app.faults.inject("clear"))
            return
        declared = (self.headers.get("Content-Length") or "0").strip()
        if not (declared.isascii() and declared.isdigit()):  # -1 would read until the client hangs up
            self.close_connection = True  # the body, if any, is not read
            self._json(400, {"error": f"Content-Length {declared[:32]!r} is not a byte count"})
            return
        if int(declared) > _MAX_BODY:
            self.close_connection = True
            self._json(413, {"error": f"body too large (at most {_MAX_BODY} bytes)"})
            return
        try:
            body = _strict_json(self.rfile.read(int(declared)) or b"{}")
            if not isinstance(body, dict) or not isinstance(body.get("fault"), str):
                raise ValueError('send a JSON object like {"fault": "xid", "gpu": 0, "code": 79}')
            kind = body.pop("fault")
            result = app.faults.inject(kind, **body)
        except ValueError as exc:  # SimFaultError and JSON errors are ValueErrors
            self._json(400, {"error": str(exc)})
            return
        logger.warning("fault injected: %s", result, extra={"event": "fault_injected"})
        self._json(200, result)


class ExporterHttpServer:
    """Serves a registry (and the core's health and history) on `address:port` in a background thread."""

    def __init__(
        self,
        registry: CollectorRegistry,
        address: str = "127.0.0.1",
        port: int = 9400,
        health: Callable[[], dict[str, Any]] | None = None,
        history: Callable[[float], dict[str, Any]] | None = None,
        faults: FaultTarget | None = None,
        web_config: Any = None,
    ) -> None:
        self.registry = registry
        self._health = health
        self._history = history
        self.faults = faults
        server_cls = _Server6 if ":" in address else _Server
        self._httpd = server_cls((address, port), _Handler)
        self._httpd.app = self
        self._tls = False
        if web_config is not None:
            from gpuobs.exporters.sidecar.webconfig import serve_with_web_config

            serve_with_web_config(self._httpd, web_config, unauthenticated_paths={"/healthz"})
            self._tls = getattr(web_config, "tls", None) is not None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def scheme(self) -> str:
        return "https" if self._tls else "http"

    def metrics_body(self) -> bytes:
        try:
            return render(self.registry)
        except Exception:
            logger.exception("rendering /metrics failed")
            spec = ex.COLLECTOR_SUCCESS
            return (
                f"# HELP {spec.native} {spec.help}\n# TYPE {spec.native} gauge\n"
                f'{spec.native}{{collector="exposition"}} 0.0\n'
            ).encode()

    def health(self) -> dict[str, Any]:
        return {"status": "ok", **(self._health() if self._health else {})}

    def history(self, since: float) -> dict[str, Any]:
        return self._history(since) if self._history else {"samples": [], "events": []}

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2}, name="gpuobs-http", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)
