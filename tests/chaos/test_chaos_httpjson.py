"""The chaos activities' HTTP helper against a real server that dies mid-reply.

A fault under test often kills the very server a probe asks: its reply can stop after the headers. The probe
must then fail as an activity (chaostoolkit reports it and runs the rollbacks), never with a traceback.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest
from chaoslib.exceptions import ActivityFailed

from gpuobs.chaos.httpjson import request_json, request_text


@pytest.fixture
def cut_server() -> Iterator[str]:
    """A real HTTP server on loopback that announces a 50-byte body and closes before sending it."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "50")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/healthz"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_reply_cut_short_fails_the_activity_with_the_url(cut_server: str) -> None:
    with pytest.raises(ActivityFailed, match=r"GET http://127\.0\.0\.1:\d+/healthz: .*IncompleteRead"):
        request_text("GET", cut_server, timeout=5)
    with pytest.raises(ActivityFailed, match="IncompleteRead"):
        request_json("GET", cut_server, timeout=5)
