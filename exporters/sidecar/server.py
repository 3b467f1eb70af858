"""The exporter's HTTP server: `/metrics`, `/healthz`, `/api/history` and, only when enabled, `/api/faults`.

Standard-library ThreadingHTTPServer; TLS, basic auth, headers and rate limits come from a web-config
file (Prometheus exporter-toolkit format), applied by `webserver.serve_with_web_config`;
`/healthz` stays open for liveness probes. A scrape never answers 500: if rendering
fails, the answer is 200 with `gpuobs_collector_success{collector="exposition"} 0`.

Under load: the kernel queues `LISTEN_BACKLOG` connections while the exporter is busy, at most
`MAX_CONNECTIONS` are served at once (one thread each; a new one closes the connection that has
waited longest for a request), and every response leaves in one write with Nagle's algorithm off.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from prometheus_client.registry import CollectorRegistry

from gpuobs.exporters.sidecar.collector import CONTENT_TYPE, render
from gpuobs.names import exporter as ex
from gpuobs.timeparse import parse_time

__all__ = ["LISTEN_BACKLOG", "MAX_CONNECTIONS", "ExporterHttpServer", "FaultTarget"]

logger = logging.getLogger(__name__)

_MAX_BODY = 64 * 1024
# The methods each path answers (HEAD with GET); another method on one of them is a 405 with Allow.
_ROUTES: dict[str, frozenset[str]] = {
    "/": frozenset({"GET"}),
    "/metrics": frozenset({"GET"}),
    "/healthz": frozenset({"GET"}),
    "/api/history": frozenset({"GET"}),
    "/api/faults": frozenset({"GET", "POST", "DELETE"}),
}

LISTEN_BACKLOG = 128
"""Connections the kernel queues while the exporter is busy (socketserver's default, 5, made a burst of
50 new-connection scrapers wait for SYN retransmits: p99 1 s, worst 27.7 s)."""

MAX_CONNECTIONS = 64
"""Connections served at once, one thread each. When all are taken, a new connection closes the one
that has waited longest for a request (an idle keep-alive or a slow client); a request being served
is not cut. A new connection that finds none idle waits up to `_SLOT_WAIT_S`, then is refused (plain
HTTP gets a 503)."""

_SLOT_WAIT_S = 1.0
# A fault request's body must arrive whole within this long: the socket timeout bounds each read only, so a
# client sending a byte every 29 s held a connection slot (not evictable once the headers are read) for hours.
_BODY_READ_S = 10.0


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


class _ConnectionSlots:
    """The connections being served, each idle (waiting for a request, since when) or busy."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._idle_since: dict[socket.socket, float | None] = {}
        self._cond = threading.Condition()

    def __len__(self) -> int:
        return len(self._idle_since)

    def acquire(self, conn: socket.socket, closing: threading.Event) -> bool:
        """Take a slot for `conn`, closing the longest-idle connection when none is free."""
        deadline = time.monotonic() + _SLOT_WAIT_S
        with self._cond:
            while len(self._idle_since) >= self.limit:
                idle = [(since, c) for c, since in self._idle_since.items() if since is not None]
                if idle:
                    _, oldest = min(idle, key=lambda pair: pair[0])
                    self._idle_since[oldest] = None  # closed once: its thread ends and releases the slot
                    with contextlib.suppress(OSError):  # the base method: an SSLSocket's would race
                        socket.socket.shutdown(oldest, socket.SHUT_RDWR)
                left = deadline - time.monotonic()
                if left <= 0 or closing.is_set():
                    return False
                self._cond.wait(min(left, 0.05))
            self._idle_since[conn] = time.monotonic()
            return True

    def mark(self, conn: socket.socket, idle: bool) -> None:
        with self._cond:
            if conn in self._idle_since:
                self._idle_since[conn] = time.monotonic() if idle else None

    def release(self, conn: socket.socket) -> None:
        with self._cond:
            if self._idle_since.pop(conn, False) is not False:
                self._cond.notify_all()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG
    app: ExporterHttpServer
    slots: _ConnectionSlots
    closing: threading.Event

    def handle_error(self, request: Any, client_address: Any) -> None:
        logger.debug("connection from %s failed", client_address, exc_info=True)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(request, self.closing):
            logger.warning(
                "%d connections open, none idle: refused one from %s", len(self.slots), client_address[0]
            )
            if not isinstance(request, ssl.SSLSocket):
                with contextlib.suppress(OSError):
                    request.setblocking(False)  # a fresh socket's send buffer is empty: this never waits
                    request.send(_BUSY)
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        self.slots.release(request)


_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 27\r\n"
    b"Connection: close\r\n\r\ntoo many open connections\r\n"
)


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "gpuobs-export"
    # The response leaves in one write, at once: headers and body apart, each a TLS record, stalled on
    # Nagle's algorithm against the client's delayed ACK (about 45 ms a TLS scrape instead of 1 ms).
    disable_nagle_algorithm = True
    _body_with_headers = b""

    def handle_one_request(self) -> None:
        self.server.slots.mark(self.connection, idle=True)  # evictable until the request is read
        super().handle_one_request()

    def parse_request(self) -> bool:
        ok = super().parse_request()  # reads the request line's rest and the headers
        self.server.slots.mark(self.connection, idle=False)
        return ok

    def flush_headers(self) -> None:
        buffer: list[bytes] | None = getattr(self, "_headers_buffer", None)
        if buffer is not None:
            self.wfile.write(b"".join(buffer) + self._body_with_headers)
            buffer.clear()

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
        self._body_with_headers = body if self.command != "HEAD" else b""
        try:
            self.end_headers()  # flush_headers sends the body with the headers
        finally:
            self._body_with_headers = b""

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

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_OPTIONS(self) -> None:
        self._dispatch("OPTIONS")

    def _leaves_body_unread(self, path: str, method: str) -> bool:
        """A request that declares a body this route never reads. Left on a kept-alive connection, those
        bytes were read as the next request: a GET whose body was a whole `POST /api/faults` injected the
        fault behind any proxy that reuses connections."""
        if self.headers.get("Transfer-Encoding"):  # never read: no route here takes a chunked body
            return True
        declared = (self.headers.get("Content-Length") or "0").strip()
        reads_body = path == "/api/faults" and method == "POST"
        return not reads_body and declared not in ("", "0")

    def _dispatch(self, method: str) -> None:
        try:
            url = urllib.parse.urlsplit(self.path)
            app = self.server.app
            if self._leaves_body_unread(url.path, method):
                self.close_connection = True  # its body is never taken as the next request
            allowed = _ROUTES.get(url.path)
            if allowed is not None and method not in allowed:
                allow = ", ".join(sorted({*allowed, "HEAD"} if "GET" in allowed else allowed))
                refusal = {"error": f"{method} is not allowed on {url.path} (allowed: {allow})"}
                self._send(405, json.dumps(refusal).encode(), headers={"Allow": allow})
            elif url.path == "/metrics" and method == "GET":
                self._send(200, app.metrics_body(), CONTENT_TYPE)
            elif url.path == "/healthz" and method == "GET":
                self._json(200, app.health())
            elif url.path == "/api/history" and method == "GET":
                params = urllib.parse.parse_qs(url.query)
                if len(params.get("since", ())) > 1:  # which one was meant is a guess: ask
                    self._json(400, {"error": "since: given more than once; give one time"})
                    return
                raw_since = (params.get("since") or [""])[0]
                try:
                    since = parse_time(raw_since) if raw_since.strip() else 0.0
                except ValueError as exc:
                    plus = "+" in url.query and "+" not in raw_since  # a '+' in a query string is a space
                    hint = " (a '+' in a URL query means a space: write it as %2B)" if plus else ""
                    self._json(400, {"error": f"since: {exc}{hint}"})
                    return
                if not math.isfinite(since):  # since=nan would answer "since": NaN, which is not JSON
                    self._json(400, {"error": f"since={raw_since[:64]!r}: not a finite time"})
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
        if self.headers.get("Transfer-Encoding"):
            self._json(411, {"error": "send the body with a Content-Length, not chunked"})
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
        raw = self._read_body(int(declared))
        if raw is None:
            self.close_connection = True
            self._json(408, {"error": f"the body did not arrive whole within {_BODY_READ_S:g} s"})
            return
        try:
            body = _strict_json(raw or b"{}")
            if not isinstance(body, dict) or not isinstance(body.get("fault"), str):
                raise ValueError('send a JSON object like {"fault": "xid", "gpu": 0, "code": 79}')
            kind = body.pop("fault")
            result = app.faults.inject(kind, **body)
        except ValueError as exc:  # SimFaultError and JSON errors are ValueErrors
            self._json(400, {"error": str(exc)})
            return
        logger.warning("fault injected: %s", result, extra={"event": "fault_injected"})
        self._json(200, result)

    def _read_body(self, size: int) -> bytes | None:
        """The body's `size` bytes, or None when they do not all arrive within `_BODY_READ_S`."""
        deadline = time.monotonic() + _BODY_READ_S
        parts: list[bytes] = []
        left_bytes = size
        try:
            while left_bytes > 0:
                left_s = deadline - time.monotonic()
                if left_s <= 0:
                    return None
                self.connection.settimeout(left_s)
                chunk = self.rfile.read1(left_bytes)
                if not chunk:
                    return None  # the client closed mid-body
                parts.append(chunk)
                left_bytes -= len(chunk)
        except TimeoutError:
            return None
        finally:
            self.connection.settimeout(self.timeout)
        return b"".join(parts)


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
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.registry = registry
        self._health = health
        self._history = history
        self.faults = faults
        server_cls = _Server6 if ":" in address else _Server
        self._httpd = server_cls((address, port), _Handler)
        self._httpd.app = self
        self._httpd.slots = _ConnectionSlots(max_connections)
        self._httpd.closing = threading.Event()
        self._tls = False
        if web_config is not None:
            from gpuobs.exporters.sidecar.webserver import serve_with_web_config

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
        self._httpd.closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)
