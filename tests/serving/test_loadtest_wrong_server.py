"""`gpuobs loadtest` pointed at something that is not an OpenAI server (a real HTTP server on loopback):
one line saying so, exit 2, before any load is offered.

Before: a login page answering 200 was "error: Expecting value: line 1 column 1 (char 0)", a JSON list a
traceback (AttributeError), a server that never answers "cannot reach URL: ReadTimeout: " (httpx's
timeout has no message), and with --model every request of the run failed as "stream ended without [DONE]".
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest
from support.web import Answer, page_handler, serving

MODELS = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
Start = Callable[[dict[str, Answer]], str]


@pytest.fixture
def web() -> Iterator[Start]:
    """Starts a login page on loopback whose `routes` answer otherwise (None: never answers)."""
    with contextlib.ExitStack() as servers:
        yield lambda routes: servers.enter_context(serving(page_handler(routes=routes)))


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
    web: Start, model: list[str]
) -> None:
    url = web({})
    done = _loadtest(url, *model)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        f"error: GET {url}/v1/models answered 200 with text/html, not JSON (is it an OpenAI-compatible "
        "server?): 'Please log in'"
    ], done.stderr


def test_json_that_is_no_model_list_is_named(web: Start) -> None:
    url = web({"/v1/models": (200, "application/json", b"[1, 2, 3]")})
    done = _loadtest(url)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.strip() == f"error: GET {url}/v1/models answered 200 without a model list: '[1, 2, 3]'"


def test_a_server_that_never_answers_is_named_with_the_wait(web: Start) -> None:
    url = web({"/v1/models": None})
    done = _loadtest(url)
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: cannot reach {url}: no answer within 10 s", done.stderr


def test_a_page_where_the_stream_belongs_is_named_in_the_errors(web: Start) -> None:
    """The model list answers, the completions route is a login page: each failed request says what came."""
    url = web({"/v1/models": (200, "application/json", MODELS)})
    done = _loadtest(url, "--json")
    data = json.loads(done.stdout)
    errors = data["steps"][0]["errors"]
    assert errors and all(
        e["message"] == "answered 200 with text/html, not a stream of server-sent events: 'Please log in'"
        for e in errors
    ), errors
