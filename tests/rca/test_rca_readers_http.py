"""URL credentials (`http://user:pass@host`) go as Basic auth, never into a host name or a message."""

from __future__ import annotations

import base64
import http.server
import json
import threading
from collections.abc import Iterator

import pytest

from gpuobs.errors import InputError
from gpuobs.rca.readers.http import display_url, split_credentials
from gpuobs.rca.readers.prometheus import fetch_prometheus

PASSWORD = "p@ss:w0rd/x"  # '@', ':' and '/' inside the password, percent-encoded in the URL
QUOTED = "p%40ss%3Aw0rd%2Fx"


class _Server:
    """A real HTTP server on loopback answering Prometheus' query API with an empty result."""

    def __init__(self, status: int = 200) -> None:
        self.auth: list[str | None] = []
        self.status = status
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.auth.append(self.headers.get("Authorization"))
                body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}})
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, format: str, *args: object) -> None:
                return

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def test_split_credentials_decodes_and_keeps_the_rest() -> None:
    clean, auth = split_credentials(f"https://admin:{QUOTED}@prom.example:9090/base?x=1")
    assert clean == "https://prom.example:9090/base?x=1"
    assert auth is not None and base64.b64decode(auth.removeprefix("Basic ")).decode() == f"admin:{PASSWORD}"
    assert split_credentials("http://127.0.0.1:9090") == ("http://127.0.0.1:9090", None)
    assert display_url(f"http://:{QUOTED}@[::1]:9090") == "http://[::1]:9090"


def test_prometheus_credentials_go_as_basic_auth(server: _Server) -> None:
    url = f"http://admin:{QUOTED}@127.0.0.1:{server.port}"
    fetch_prometheus(url, start=1000.0, end=1600.0)
    expected = "Basic " + base64.b64encode(f"admin:{PASSWORD}".encode()).decode()
    assert server.auth and all(a == expected for a in server.auth)


def test_a_failing_fetch_does_not_name_the_password(server: _Server) -> None:
    server.status = 500
    url = f"http://admin:{QUOTED}@127.0.0.1:{server.port}"
    with pytest.raises(InputError) as info:
        fetch_prometheus(url, start=1000.0, end=1600.0)
    message = str(info.value)
    assert f"127.0.0.1:{server.port}" in message
    assert QUOTED not in message and PASSWORD not in message and "admin:" not in message
