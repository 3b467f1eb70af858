"""`gpuobs loadtest` pointed at something that is not an OpenAI server (a real HTTP server on loopback):
one line saying so, exit 2, before any load is offered.

Before: a login page answering 200 was "error: Expecting value: line 1 column 1 (char 0)", a JSON list a
traceback (AttributeError), a server that never answers "cannot reach URL: ReadTimeout: " (httpx's
timeout has no message), and with --model every request of the run failed as "stream ended without [DONE]".
"""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

LOGIN = b"<html><body><h1>Please log in</h1></body></html>"
MODELS = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()

# path -> (content type, body); None: the server never answers
Routes = dict[str, tuple[str, bytes] | None]


def _handler(routes: Routes) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            route = routes.get(self.path.split("?")[0], ("text/html", LOGIN))
            if route is None:
                time.sleep(30)  # longer than the load tester's 10 s connect-and-ask timeout
                return
            kind, body = route
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args: Any) -> None:
            return None

    return Handler


@pytest.fixture
def web() -> Iterator[Callable[[Routes], str]]:
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(routes: Routes) -> str:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(routes))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _loadtest(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuobs", "loadtest", url, "--rate", "2", "--duration", "0.5", "--max-steps",
         "1", "--robustness", "0", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("model", [[], ["--model", "m"]], ids=["model asked", "model given"])
def test_a_login_page_is_named_as_not_an_openai_server(
    web: Callable[[Routes], str], model: list[str]
) -> None:
    url = web({})
    done = _loadtest(url, *model)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        f"error: GET {url}/v1/models answered 200 with text/html, not JSON (is it an OpenAI-compatible "
        "server?): 'Please log in'"
    ], done.stderr


def test_json_that_is_no_model_list_is_named(web: Callable[[Routes], str]) -> None:
    url = web({"/v1/models": ("application/json", b"[1, 2, 3]")})
    done = _loadtest(url)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.strip() == f"error: GET {url}/v1/models answered 200 without a model list: '[1, 2, 3]'"


def test_a_server_that_never_answers_is_named_with_the_wait(web: Callable[[Routes], str]) -> None:
    url = web({"/v1/models": None})
    done = _loadtest(url)
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: cannot reach {url}: no answer within 10 s", done.stderr


def test_a_page_where_the_stream_belongs_is_named_in_the_errors(web: Callable[[Routes], str]) -> None:
    """The model list answers, the completions route is a login page: each failed request says what came."""
    url = web({"/v1/models": ("application/json", MODELS)})
    done = _loadtest(url, "--json")
    data = json.loads(done.stdout)
    errors = data["steps"][0]["errors"]
    assert errors and all(
        e["message"] == "answered 200 with text/html, not a stream of server-sent events: 'Please log in'"
        for e in errors
    ), errors
