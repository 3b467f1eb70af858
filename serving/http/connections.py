"""How `gpuobs serve` keeps its HTTP connections: a deadline to read each request, a cap on open connections.

uvicorn's h11 protocol waits for a request's headers and body as long as the client keeps the connection
open (its keep-alive timeout covers only the quiet time after a response). A client that connects and
sends nothing, or drips a header line or a body byte every few seconds (slowloris), holds a connection
and its file descriptor for ever; a few hundred of them and the process has no descriptor left to accept
anyone with. Nothing bounded the number of connections either.

`guarded_protocol` makes uvicorn's protocol class with both guards:
- a request must arrive whole, headers and body, within `read_timeout_s` of the connection opening or of
  its first byte on a kept-alive connection. Past it the server answers 408 with `Connection: close`,
  closes, and counts `gpuobs_serving_invalid_requests{reason="read_timeout"}`; a request whose answer has
  begun is left alone.
- a connection opened while `max_connections` are open gets a 503 with `Retry-After` to its first request
  and is closed (counted as an admission rejection, reason `max_connections`), as uvicorn's own
  `limit_concurrency` does but in the API's error JSON and counted.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from gpuobs.names import serving as serving_names
from gpuobs.serving.http.protocol import READ_TIMED_OUT, ApiError
from gpuobs.serving.stat_loggers import PrometheusStatLogger

__all__ = ["guarded_protocol"]

logger = logging.getLogger(__name__)

_REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: application/json\r\n"
    b"connection: close\r\n"
    b"content-length: %d\r\n\r\n%s"
)
_STILL_READING = (h11.IDLE, h11.SEND_BODY)  # the client's side of a request not yet read whole


def guarded_protocol(
    read_timeout_s: float, max_connections: int, stats: PrometheusStatLogger
) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with a read deadline and a connection cap (see the module docstring)."""

    async def refuse_connection(scope: Scope, receive: Receive, send: Send) -> None:
        stats.record_rejection("", serving_names.REASON_MAX_CONNECTIONS)
        err = ApiError.unavailable(
            f"the server has its maximum of {max_connections} open connections; retry shortly",
            code="too_many_connections",
            retry_after_s=1,
        )
        response = JSONResponse(err.body(), status_code=503, headers={**err.headers, "Connection": "close"})
        await response(scope, receive, send)

    class GuardedH11Protocol(H11Protocol):
        _read_deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            stats.http_connections.inc()
            if len(self.connections) > max_connections:
                logger.debug("connection refused: %d open connections", len(self.connections))
                self.app = refuse_connection
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state not in _STILL_READING:
                self._disarm()  # read whole (or the connection is closing)
            elif self._read_deadline is None:
                self._arm()  # the first bytes of the next request on a kept-alive connection

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # A pipelined request whose headers had arrived with the last one starts now; its body is
            # still to come (uvicorn's keep-alive timer covers only headers that have not arrived).
            if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            stats.http_connections.dec()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._read_deadline = self.loop.call_later(read_timeout_s, self._read_timed_out)

        def _disarm(self) -> None:
            if self._read_deadline is not None:
                self._read_deadline.cancel()
                self._read_deadline = None

        def _read_timed_out(self) -> None:
            self._read_deadline = None
            if self.transport.is_closing() or self.conn.their_state not in _STILL_READING:
                return
            cycle: Any = self.cycle
            in_progress = cycle is not None and not cycle.response_complete
            if in_progress and cycle.response_started:
                return  # answered before its body was read (a 413): the answer ends the connection
            if in_progress:
                cycle.scope[READ_TIMED_OUT] = True  # its handler sees a cut body: no abort to count
            if in_progress or self.conn.their_state is h11.SEND_BODY or self._has_partial_request():
                stats.record_invalid(serving_names.API_HTTP, serving_names.REASON_READ_TIMEOUT)
                body = ApiError(
                    408,
                    f"the request did not arrive whole within {read_timeout_s:g} s",
                    code=serving_names.REASON_READ_TIMEOUT,
                ).body()
                payload = JSONResponse(body).body
                self.transport.write(_REQUEST_TIMEOUT % (len(payload), payload))
                logger.debug("request read timed out after %g s", read_timeout_s)
            self.transport.close()

        def _has_partial_request(self) -> bool:
            """Whether part of a request (a header line) has arrived: a connection that sent nothing at all
            is closed without an answer, as one that idles after a response is."""
            return bool(self.conn.trailing_data[0])

    return GuardedH11Protocol
