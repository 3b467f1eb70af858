"""Small real web servers on loopback for tests: a handler served on a thread, and the page a client
pointed at the wrong URL gets (a proxy's login page answering 200), which the clients of other servers (the
load tester, the game day, the OTLP exporters) must name rather than take for an answer."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["LOGIN_PAGE", "page_handler", "serving"]

LOGIN_PAGE = b"<html><body><h1>Please log in</h1></body></html>"

# A route's answer: (status, content type, body), or None for a server that never answers (it sleeps 30 s,
# longer than the clients' own timeouts).
Answer = tuple[int, str, bytes] | None


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """`handler` on 127.0.0.1 and a free port, on a thread, for the block; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def page_handler(
    default: Answer = (200, "text/html", LOGIN_PAGE), routes: dict[str, Answer] | None = None
) -> type[BaseHTTPRequestHandler]:
    """A handler answering every GET, POST and DELETE with `default`, or a path's own answer from `routes`."""
    known = dict(routes or {})

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            answer = known.get(self.path.split("?")[0], default)
            if answer is None:
                time.sleep(30)
                return
            status, kind, body = answer
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = do_PATCH = _answer

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler
