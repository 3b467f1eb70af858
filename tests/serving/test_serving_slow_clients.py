"""Slow and excess clients against a real `gpuobs serve` over real sockets (serving/http/connections.py).

uvicorn waited for a request's headers and body as long as the client kept the connection: one that
dripped a header line or a body byte every half second held its connection for ever, and nothing
capped the number of connections. The drips here run far longer than the deadline (they stop only when
the server answers), so a server without the deadline fails the test rather than passing it slowly.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.serve import ServeProcess, http_json

READ_TIMEOUT_S = 2.0
DRIP_FOR_S = 40.0  # well past the deadline, margins for a loaded 2-core machine included


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with ServeProcess(
        tmp_path_factory.mktemp("serve-slow"), "--read-timeout-s", str(READ_TIMEOUT_S), grpc=False
    ) as proc:
        yield proc


def _metric(server: ServeProcess, prefix: str) -> float:
    """The value of the sample line that starts with `prefix` (0 when absent)."""
    line = next((ln for ln in server.metrics().splitlines() if ln.startswith(prefix)), None)
    return float(line.split()[-1]) if line else 0.0


READ_TIMEOUTS = 'gpuobs_serving_invalid_requests_total{api="http",reason="read_timeout"} '
ABORTS = 'gpuobs_serving_requests_total{api="http",model_name="",outcome="abort"} '


def _drip(conn: socket.socket, first: bytes, drip: bytes) -> bytes:
    """Send `first`, then one `drip` every half second until the server answers or closes (its answer)."""
    conn.sendall(first)
    conn.settimeout(0.5)
    deadline = time.monotonic() + DRIP_FOR_S
    while time.monotonic() < deadline:
        try:
            answer = conn.recv(65536)
        except TimeoutError:
            try:
                conn.sendall(drip)
            except OSError:  # closed by the server between two reads: read what it sent
                break
            continue
        return answer
    conn.settimeout(5)
    try:
        return conn.recv(65536)
    except OSError:
        return b""


def _status_and_body(answer: bytes) -> tuple[int, dict]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    assert b"connection: close" in head.lower(), head
    return status, json.loads(body)


def test_headers_dripped_slowly_get_a_408(server: ServeProcess) -> None:
    before = _metric(server, READ_TIMEOUTS)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        answer = _drip(conn, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n", b"X-Slow: 1\r\n")
    assert answer, "the server kept the dripping connection open"
    status, body = _status_and_body(answer)
    assert status == 408
    assert body["error"]["code"] == "read_timeout"
    assert _metric(server, READ_TIMEOUTS) == before + 1


def test_a_body_dripped_slowly_gets_a_408_counted_once(server: ServeProcess) -> None:
    timeouts, aborts = _metric(server, READ_TIMEOUTS), _metric(server, ABORTS)
    head = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 900\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        answer = _drip(conn, head + b'{"model": ', b" ")
    assert answer, "the server kept the dripping connection open"
    assert _status_and_body(answer)[0] == 408
    deadline = time.monotonic() + 20  # the handler sees the cut body after the answer: let it finish
    while time.monotonic() < deadline and _metric(server, READ_TIMEOUTS) < timeouts + 1:
        time.sleep(0.2)
    time.sleep(1.0)
    assert _metric(server, READ_TIMEOUTS) == timeouts + 1
    assert _metric(server, ABORTS) == aborts, "the server's own cut was counted as a client abort too"
    assert "Traceback" not in server.logs()


def test_a_pipelined_request_whose_body_never_comes_gets_a_408(server: ServeProcess) -> None:
    """The second request's headers arrive with the first; its body never does. Its wait starts when the
    first is answered, on no new bytes: neither uvicorn's keep-alive timer nor a read arms a deadline."""
    first = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    second = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 900\r\n\r\n{"
    answers = b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(first + second)
        conn.settimeout(DRIP_FOR_S)
        while b"HTTP/1.1 408" not in answers:
            try:
                piece = conn.recv(65536)
            except TimeoutError:
                break
            if not piece:
                break
            answers += piece
    assert answers.startswith(b"HTTP/1.1 200"), answers[:200]
    assert b"HTTP/1.1 408" in answers, "the server kept waiting for the pipelined body"


def test_a_connection_that_sends_nothing_is_closed_without_an_answer(server: ServeProcess) -> None:
    before = _metric(server, READ_TIMEOUTS)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.settimeout(DRIP_FOR_S)
        assert conn.recv(100) == b""  # closed, nothing said: as an idle kept-alive connection is
    assert _metric(server, READ_TIMEOUTS) == before


def test_a_whole_request_sent_in_pieces_in_time_is_served(server: ServeProcess) -> None:
    """The deadline is for the whole request, not for each read: pieces well inside it are served."""
    body = json.dumps({"model": "gpuobs-tiny-llama", "prompt": "hi", "max_tokens": 2}).encode()
    head = f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as conn:
        conn.sendall(head)
        conn.sendall(body[:5])
        conn.sendall(body[5:])
        answer = conn.recv(65536)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


def test_connections_past_the_cap_get_a_503_with_retry_after(tmp_path: Path) -> None:
    with ServeProcess(tmp_path, "--max-connections", "3", "--read-timeout-s", "600", grpc=False) as srv:
        connections = "gpuobs_serving_http_connections "
        held = [socket.create_connection(("127.0.0.1", srv.port), timeout=30) for _ in range(2)]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _metric(srv, connections) != 3:  # the two and the scrape's own
            time.sleep(0.2)
        assert _metric(srv, connections) == 3
        held.append(socket.create_connection(("127.0.0.1", srv.port), timeout=30))
        try:
            with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as extra:
                extra.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                answer = b""
                while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
                    piece = extra.recv(65536)
                    if not piece:
                        break
                    answer += piece
        finally:
            for conn in held:
                conn.close()
        status, body = _status_and_body(answer)
        assert status == 503
        assert b"retry-after: 1" in answer.lower()
        assert body["error"]["code"] == "too_many_connections"
        deadline, code = time.monotonic() + 30, 0
        while time.monotonic() < deadline and code != 200:  # the held ones closed: room again
            code = http_json("GET", f"{srv.url}/health")[0]
            time.sleep(0.2)
        assert code == 200
        while time.monotonic() < deadline and _metric(srv, connections) != 1:  # the scrape's own
            time.sleep(0.2)
        assert _metric(srv, connections) == 1
        rejected = 'vllm:admission_rejections_total{model_name="",reason="max_connections"} '
        assert _metric(srv, rejected) == 1


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--read-timeout-s", "0", "--read-timeout-s must be in (0, 3600]"),
        ("--read-timeout-s", "nan", "not a finite number"),
        ("--max-connections", "0", "--max-connections must be at least 1"),
    ],
)
def test_bad_guard_flags_are_one_line(flag: str, value: str, says: str) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "gpuobs", "serve", flag, value],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert says in done.stderr
    assert "Traceback" not in done.stderr
