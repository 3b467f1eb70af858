"""The uvicorn server of `gpuobs serve`, whose SIGTERM drain answers every request that reached it.

uvicorn's own `Server.shutdown` (0.54) closes its listeners and, in the same event-loop turn, closes every
connection that has no request read yet. That cuts two kinds of requests the client already counts as
accepted (connected and sent): one on a connection still in the listen backlog (the kernel finished the
handshake), which the kernel resets when the listener closes; and one whose bytes wait unread in the
socket of a connection the server had set up, which closing with unread data resets too. How many are
caught depends on how long the process waited for the CPU since the loop last read its sockets: the
SIGTERM game-day lost one on a loaded 2-core machine.

`DrainingServer.shutdown` runs two steps before uvicorn's:
1. on each listener, drop new handshakes (`refuse_new_handshakes`: a socket filter that drops TCP SYNs),
   accept everything in the backlog, then close it. A connection is either taken or never completed
   (the client's SYN goes unanswered; its retry a second later meets the closed port and is refused,
   which a client retries safely), never reset, however long the process waits for the CPU between the
   last accept and the close (a CI game-day lost one request as that gap loses it: widened on purpose,
   the gap resets a connection made in it, tests/serving/test_serving_drain.py);
2. wait, at most FIRST_REQUEST_GRACE_S, until no connection uvicorn would close has a request on the way:
   unread bytes in its socket, or no first request yet (a client connects, then sends: a preempted one
   sends late).
uvicorn's shutdown then lets the requests in flight finish; the drain timer (`drain_timeout_s`, started
first) ends those still running with an error. What is left: a handshake whose SYN the kernel answered
before the filter and whose last ACK arrives after the last accept (on loopback both are handled in one
pass of the network stack), a kernel without socket filters (not Linux: the old gap of two system calls),
and a keep-alive client sending its next request as the idle connection closes (HTTP's own race: clients
retry).
"""

from __future__ import annotations

import array
import asyncio
import ctypes
import fcntl
import logging
import os
import signal
import socket
import struct
import termios
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import Any

import uvicorn

from gpuobs.names import logs as lf
from gpuobs.serving.http.runtime import ServingRuntime

__all__ = ["FIRST_REQUEST_GRACE_S", "DrainingServer", "refuse_new_handshakes", "request_on_the_way"]

logger = logging.getLogger(__name__)

# How long the drain waits for a request on its way: a connection's unread bytes, or the first request of
# a connection that has none yet. Part of the drain: the drain timer runs meanwhile.
FIRST_REQUEST_GRACE_S = 1.0
_POLL_S = 0.005
_NOT_HTTP = object()

_SO_ATTACH_FILTER = getattr(socket, "SO_ATTACH_FILTER", 26)  # Linux <asm-generic/socket.h>
# Classic BPF, run on each packet to the listener with the TCP header at offset 0 (as tcp_filter runs it):
# load the flags byte, drop the packet (return 0) when SYN is set, keep it whole otherwise.
_DROP_SYN = (
    (0x30, 0, 0, 13),  # ldb [13]: TCP flags
    (0x45, 0, 1, 0x02),  # jset #SYN: next, else skip one
    (0x06, 0, 0, 0),  # ret #0: drop
    (0x06, 0, 0, 0xFFFFFFFF),  # ret #-1: keep
)


def _unread_bytes(transport: asyncio.BaseTransport) -> int:
    """Bytes waiting in the connection's socket that the event loop has not read yet (FIONREAD)."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return 0
    buf = array.array("i", [0])
    try:
        fcntl.ioctl(sock.fileno(), termios.FIONREAD, buf)
    except OSError:
        return 0
    return int(buf[0])


def refuse_new_handshakes(listener: socket.socket) -> bool:
    """Make the kernel drop every TCP SYN sent to `listener`, so no new connection completes on it while
    the drain empties its backlog; False where the kernel takes no socket filter (not Linux).

    Every other packet passes, so a handshake already under way completes and is taken. Connections
    accepted later inherit the filter, harmlessly: an established connection gets no SYN."""
    code = (ctypes.c_ubyte * (8 * len(_DROP_SYN))).from_buffer_copy(
        b"".join(struct.pack("HBBI", *insn) for insn in _DROP_SYN)
    )
    program = struct.pack("HP", len(_DROP_SYN), ctypes.addressof(code))  # struct sock_fprog
    try:
        listener.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, program)
    except OSError as exc:
        logger.debug("drain: no socket filter on the listener (%s); its backlog is taken without one", exc)
        return False
    return True


def request_on_the_way(connection: Any) -> bool:
    """Whether uvicorn's shutdown would close this connection (no request in progress) although a request
    may be arriving on it: none read yet, or bytes unread in its socket.

    Reads the HTTP/1.1 protocols' `cycle` (None until the first request, then the latest request, with
    `response_complete`), the state uvicorn's own `connection.shutdown()` decides on
    (tests/serving/test_serving_drain.py pins it)."""
    cycle: Any = getattr(connection, "cycle", _NOT_HTTP)
    if cycle is _NOT_HTTP:
        return False  # a WebSocket: its own close handshake
    if cycle is not None and not cycle.response_complete:
        return False  # a request in progress: uvicorn lets it finish
    transport = getattr(connection, "transport", None)
    if transport is None or transport.is_closing():
        return False
    return cycle is None or _unread_bytes(transport) > 0


class DrainingServer(uvicorn.Server):
    """A uvicorn server whose shutdown answers what reached it (see the module docstring), drains for
    `drain_timeout_s`, then ends what is left with an error (runtime.drain_expired), and whose SIGTERM/
    SIGINT end the process with 0 as documented (uvicorn re-raises a caught signal after its shutdown,
    which made the exit 130/143). SIGHUP drains too (see `capture_signals`)."""

    def __init__(self, config: uvicorn.Config, runtime: ServingRuntime) -> None:
        super().__init__(config)
        self.runtime = runtime

    def handle_exit(self, sig: int, frame: Any) -> None:
        super().handle_exit(sig, frame)
        self._captured_signals.clear()

    @contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        """uvicorn's SIGINT and SIGTERM handlers, and the same for SIGHUP (a closed terminal, a process
        manager's reload, a hang-up sent to the supervised worker's process group): its default action
        ended the server at once, undrained, cutting every request in flight without a word."""
        with super().capture_signals():
            if threading.current_thread() is not threading.main_thread():
                yield  # signals are the main thread's only (as uvicorn's own handlers are)
                return
            previous = signal.signal(signal.SIGHUP, self.handle_exit)
            try:
                yield
            finally:
                signal.signal(signal.SIGHUP, previous)

    def protocol_factory(self) -> Callable[[], asyncio.Protocol]:
        """New HTTP protocols as uvicorn's `startup` makes them for its listeners."""
        loop = asyncio.get_running_loop()
        config = self.config

        def make() -> asyncio.Protocol:
            protocol: asyncio.Protocol = config.http_protocol_class(  # type: ignore[call-arg]
                config=config, server_state=self.server_state, app_state=self.lifespan.state, _loop=loop
            )
            return protocol

        return make

    def take_backlog_and_close(self) -> list[socket.socket]:
        """Stop new handshakes, accept every connection the kernel has completed, then close the listeners;
        no await between."""
        taken: list[socket.socket] = []
        for server in self.servers:
            for listener in server.sockets:
                dup = socket.socket(fileno=os.dup(listener.fileno()))
                try:
                    refuse_new_handshakes(dup)  # the same socket as the listener: the filter is on both
                    dup.setblocking(False)
                    while True:
                        try:
                            conn, _ = dup.accept()
                        except ConnectionAbortedError:
                            continue
                        except OSError:  # empty (EAGAIN), or out of descriptors: close what is left
                            break
                        conn.setblocking(False)
                        taken.append(conn)
                finally:
                    dup.close()
            server.close()
        return taken

    async def _serve_taken(self, taken: list[socket.socket]) -> None:
        loop = asyncio.get_running_loop()
        make = self.protocol_factory()

        async def one(conn: socket.socket) -> None:
            try:
                await loop.connect_accepted_socket(make, conn, ssl=self.config.ssl)
            except OSError:
                conn.close()  # the client went away already

        await asyncio.gather(*(one(conn) for conn in taken))

    async def _let_requests_in(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FIRST_REQUEST_GRACE_S
        while not self.force_exit and loop.time() < deadline:
            if not any(request_on_the_way(c) for c in list(self.server_state.connections)):
                return
            await asyncio.sleep(_POLL_S)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        runtime = self.runtime
        loop = asyncio.get_running_loop()
        logger.info(
            "shutting down: draining requests in flight for up to %g s",
            runtime.config.drain_timeout_s,
            extra={lf.EVENT: "shutdown_drain"},
        )
        timer = loop.call_later(runtime.config.drain_timeout_s, runtime.drain_expired.set)
        if runtime.drain_stop.is_set():
            logger.warning(
                "fault drain_stop: the process stops (SIGSTOP) until it gets SIGCONT",
                extra={lf.EVENT: "drain_stop"},
            )
            os.kill(os.getpid(), signal.SIGSTOP)
        try:
            taken = self.take_backlog_and_close()
            if taken:
                logger.info("drain: %d connection(s) taken from the listen backlog", len(taken))
            await self._serve_taken(taken)
            await self._let_requests_in()
            await super().shutdown(sockets)
        finally:
            timer.cancel()
