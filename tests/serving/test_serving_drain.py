"""What the SIGTERM drain (gpuobs.serving.http.drain) reads of uvicorn's insides, pinned against the uvicorn
installed: the HTTP protocol's constructor, as uvicorn's startup calls it, and its `cycle`, the state
uvicorn's shutdown decides on. A uvicorn that changes either fails here by name, not as a lost request in
a game-day. Runs a real DrainingServer on a loopback port inside the test's event loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import uvicorn

from gpuobs.serving.http.drain import DrainingServer, request_on_the_way
from gpuobs.serving.http.runtime import ServerConfig, ServingRuntime


async def _until(check: Callable[[], Any], what: str, timeout_s: float = 30.0) -> Any:
    """Poll `check` in the loop until it returns something true."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        value = check()
        if value:
            return value
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def test_request_on_the_way_follows_uvicorns_request_cycle() -> None:
    release = asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["path"] == "/hold":
            await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    async def main() -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="off", log_config=None)
        server = DrainingServer(config, ServingRuntime(ServerConfig(drain_timeout_s=5)))
        serving = asyncio.create_task(server.serve())
        await _until(lambda: server.started, "the server to start")
        port = server.servers[0].sockets[0].getsockname()[1]

        # the protocols the drain makes for backlog connections are uvicorn's own, as its startup makes them
        made = server.protocol_factory()()
        assert type(made) is config.http_protocol_class
        assert made.cycle is None  # type: ignore[attr-defined]

        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        conn = await _until(lambda: next(iter(server.server_state.connections), None), "the connection")
        assert type(conn) is config.http_protocol_class
        assert request_on_the_way(conn)  # connected, no request yet: uvicorn's shutdown would close it

        writer.write(b"GET /hold HTTP/1.1\r\nHost: t\r\n\r\n")
        await _until(lambda: conn.cycle is not None, "the request to be read")
        assert not request_on_the_way(conn)  # in progress: uvicorn's shutdown lets it finish
        release.set()
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and await reader.readexactly(2) == b"ok"
        await _until(lambda: conn.cycle.response_complete, "the response to complete")
        assert not request_on_the_way(conn)  # idle keep-alive, nothing unread: closing it cuts nothing

        # the next request's bytes in the socket, unread: the loop is held here (no await) while they arrive
        writer.write(b"GET /next HTTP/1.1\r\nHost: t\r\n\r\n")
        deadline = time.monotonic() + 10
        while not request_on_the_way(conn) and time.monotonic() < deadline:
            time.sleep(0.001)
        assert request_on_the_way(conn)  # uvicorn's shutdown would close it: a reset, the request lost
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and await reader.readexactly(2) == b"ok"

        server.should_exit = True  # the drain runs, as on SIGTERM
        await asyncio.wait_for(serving, 30)
        assert await reader.read() == b""  # the idle connection was closed, cleanly
        writer.close()

    asyncio.run(main())
