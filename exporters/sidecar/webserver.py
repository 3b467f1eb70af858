"""The exporter's web config applied to an `http.server` server: TLS handshake in the connection's
thread, rate limit and basic auth before the handler runs, configured headers on every response."""

from __future__ import annotations

import http.server
import logging
import ssl
from collections.abc import Iterable
from urllib.parse import urlsplit

from gpuobs.exporters.sidecar.webconfig import WebConfig

__all__ = ["serve_with_web_config"]

logger = logging.getLogger(__name__)


class _WebConfigHandlerMixin(http.server.BaseHTTPRequestHandler):
    """Runs the TLS handshake, rate limit and basic auth before the wrapped handler's do_* method."""

    _gpuobs_web_config: WebConfig
    _gpuobs_open_paths: frozenset[str] = frozenset()
    _gpuobs_handshake_timeout_s: float = 10.0

    def handle(self) -> None:
        if isinstance(self.connection, ssl.SSLSocket) and not self._gpuobs_tls_handshake():
            self.close_connection = True
            return
        super().handle()

    def _gpuobs_tls_handshake(self) -> bool:
        conn = self.connection
        assert isinstance(conn, ssl.SSLSocket)
        conn.settimeout(self._gpuobs_handshake_timeout_s)
        try:
            conn.do_handshake()
        except (ssl.SSLError, OSError) as exc:  # plain HTTP, unknown CA, missing client cert, timeout
            logger.debug("TLS handshake with %s failed: %s", self.client_address[0], exc)
            return False
        conn.settimeout(self.timeout)
        if not self._gpuobs_web_config.client_sans_allowed(conn.getpeercert()):
            logger.warning("client certificate of %s has no SAN in client_allowed_sans; connection closed",
                           self.client_address[0])
            return False
        return True

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        config = self._gpuobs_web_config
        if urlsplit(self.path).path in self._gpuobs_open_paths:
            return True  # never limited: a liveness probe answered 429 gets the exporter restarted
        verdict = config.authorize(self.headers.get("Authorization"), client=self.client_address[0])
        if verdict == 401:
            self._gpuobs_refuse(401, "Unauthorized", 'Basic realm="gpuobs", charset="UTF-8"')
            return False
        if verdict == 429 or not config.allow_request():  # the shared bucket: requests that got in
            self._gpuobs_refuse(429, "Too Many Requests", None)
            return False
        return True

    def _gpuobs_refuse(self, code: int, text: str, authenticate: str | None) -> None:
        body = f"{text}\n".encode()
        self.send_response(code)
        if authenticate:
            self.send_header("WWW-Authenticate", authenticate)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.close_connection = True  # the request body, if any, was not read

    def end_headers(self) -> None:
        for name, value in self._gpuobs_web_config.headers.items():
            self.send_header(name, value)
        super().end_headers()


def serve_with_web_config(server: http.server.HTTPServer, config: WebConfig, *,
                          unauthenticated_paths: Iterable[str] = (),
                          handshake_timeout_s: float = 10.0) -> None:
    """Apply a web config to a bound, not yet serving `http.server` server (ThreadingHTTPServer advised).

    Wraps the listening socket with `config.ssl_context()` when TLS is configured, and replaces
    `server.RequestHandlerClass` with a subclass that completes the TLS handshake in the
    connection's thread, answers 429 (rate limit) and 401 with `WWW-Authenticate` (basic auth;
    paths in `unauthenticated_paths`, e.g. a liveness probe's `/healthz`, are exempt) before the
    handler's `do_*` method runs, and adds `config.headers` to every response. Sets
    `server.web_config`. Call once, before `serve_forever()`.
    """
    if getattr(server, "web_config", None) is not None:
        raise RuntimeError("serve_with_web_config() was already applied to this server")
    context = config.ssl_context()
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    handler = server.RequestHandlerClass
    if not (isinstance(handler, type) and issubclass(handler, http.server.BaseHTTPRequestHandler)):
        raise TypeError("serve_with_web_config() needs a BaseHTTPRequestHandler subclass as handler")
    guarded = type(f"WebConfig{handler.__name__}", (_WebConfigHandlerMixin, handler), {
        "_gpuobs_web_config": config,
        "_gpuobs_open_paths": frozenset(unauthenticated_paths),
        "_gpuobs_handshake_timeout_s": handshake_timeout_s,
    })
    server.RequestHandlerClass = guarded
    server.web_config = config  # type: ignore[attr-defined]
