"""The simulated node's fault API under hostile input: every bad request is a clear 4xx, no GPU stays broken.

Real HTTP on loopback against the exporter with `--enable-fault-injection`; the requests are the ones
that broke it (issue 10 item 14): NaN and Infinity in arguments, unknown and colliding keys, a MIG
instance count that made an 88 MB /metrics, a negative Content-Length that held a handler for the
connection timeout, and `since=nan` on /api/history, which answered `NaN` (not JSON).
"""

from __future__ import annotations

import json
import math
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpuobs.exporters.sidecar.service import Exporter, ExporterConfig
from gpuobs.exporters.sidecar.sim import SimBackend, SimFaultError
from gpuobs.names import exporter as ex
from gpuobs.names import gpu as g


@pytest.fixture
def exporter() -> Iterator[Exporter]:
    exp = Exporter(
        ExporterConfig(
            backend="sim", gpus=2, port=0, enable_fault_injection=True, pod_resources_socket="none", host="n"
        )
    ).start()
    yield exp
    exp.stop()


def _request(url: str, method: str = "GET", body: bytes | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def _post_raw(exp: Exporter, text: str) -> tuple[int, dict[str, Any]]:
    status, body = _request(f"{exp.url}/api/faults", "POST", text.encode())
    return status, json.loads(body)


def _gpu_healthy(exp: Exporter, gpu: str) -> bool:
    status, body = _request(f"{exp.url}/metrics")
    assert status == 200
    values: dict[tuple[str, str], float] = {}
    for fam in text_string_to_metric_families(body.decode()):
        for s in fam.samples:
            values[(s.name, s.labels.get("gpu") or s.labels.get("collector", ""))] = s.value
    temperature = values.get((g.GPU_TEMPERATURE.native, gpu))
    return (
        values.get((ex.COLLECTOR_SUCCESS.native, "gpu")) == 1.0
        and values.get((ex.GPU_UP.native, gpu)) == 1.0
        and temperature is not None
        and math.isfinite(temperature)
    )


# JSON text as a client sends it: Python's json module writes NaN/Infinity literals, so do attackers.
HOSTILE = [
    ('{"fault": "temperature_ramp", "gpu": 0, "delta_c": NaN}', "NaN"),
    ('{"fault": "temperature_ramp", "gpu": 0, "delta_c": 1e308, "seconds": 0}', "delta_c"),
    ('{"fault": "temperature_ramp", "gpu": 0, "seconds": -Infinity}', "Infinity"),
    ('{"fault": "memory_hog", "gpu": 0, "gib": Infinity}', "Infinity"),
    ('{"fault": "memory_hog", "gpu": 0, "gib": 1e300}', "gib"),
    ('{"fault": "process_start", "gpu": 0, "pid": 1e300}', "pid"),
    ('{"fault": "clock_drop", "gpu": 0, "mhz": -5}', "mhz"),
    ('{"fault": "xid", "gpu": 0, "code": 1e400}', "Infinity"),
    ('{"fault": "xid", "gpu": 0, "code": "79x"}', "code"),
    ('{"fault": "xid", "gpu": 0, "code": 79, "bogus": 1}', "bogus"),
    ('{"fault": "xid", "gpu": 0, "code": 79, "kind": "x"}', "kind"),
    ('{"fault": "xid", "gpu": 0, "code": 79, "self": 1}', "self"),
    ('{"fault": "xid", "gpu": NaN, "code": 79}', "NaN"),
    ('{"fault": "xid", "gpu": 1e300, "code": 79}', "gpu"),
    ('{"fault": "xid", "gpu": -1, "code": 79}', "gpu must be a number from 0 to 1048576, got -1"),
    ('{"fault": "ecc", "gpu": 0, "corrected": 2e9}', "from 0 to 1000000000"),
    ('{"fault": "ecc", "gpu": 0, "corrected": -1}', "corrected"),
    ('{"fault": "ecc", "gpu": 0, "uncorrected": 1e30}', "uncorrected"),
    ('{"fault": "mig", "gpu": 0, "instances": 200000}', "instances"),
    ('{"fault": "nvml_failure", "init_failures": 1e12}', "init_failures"),
    ('{"fault": "throttle", "gpu": 0, "reason": ["hw_slowdown"]}', "reason"),
    ('{"fault": "field_error", "gpu": 0, "field": {"a": 1}}', "field"),
    ('{"fault": "process_start", "gpu": 0, "name": "x' + "y" * 5000 + '"}', "name"),
    ('{"fault": 7}', "fault"),
    ("[1, 2]", "JSON object"),
    ("not json", "JSON"),
]


@pytest.mark.parametrize(("text", "word"), HOSTILE, ids=[t[:48] for t, _ in HOSTILE])
def test_hostile_fault_requests_are_a_clear_400_and_leave_the_gpu_healthy(
    exporter: Exporter, text: str, word: str
) -> None:
    status, body = _post_raw(exporter, text)
    assert status == 400, body
    assert word in body["error"] and "\n" not in body["error"] and len(body["error"]) < 400
    assert _gpu_healthy(exporter, "0") and _gpu_healthy(exporter, "1")


def test_mig_instances_are_bounded_and_metrics_stay_small(exporter: Exporter) -> None:
    assert _post_raw(exporter, '{"fault": "mig", "gpu": 0, "instances": 7}')[0] == 200
    status, body = _request(f"{exporter.url}/metrics")
    assert status == 200 and len(body) < 512 * 1024


def test_clear_recovers_a_gpu_whatever_state_it_is_in() -> None:
    """Defence in depth: should a non-finite value reach the model anyway, `clear` still heals it."""
    sim = SimBackend(gpus=1, min_step_s=0.0)
    sim.init()
    sim.node.gpus[0].temperature = float("nan")  # the state `delta_c: NaN` used to leave behind
    with pytest.raises(ValueError):
        sim.sample(0)
    sim.inject("clear")
    assert math.isfinite(sim.sample(0).temperature_c or math.nan)


def test_python_callers_get_the_same_checks() -> None:
    sim = SimBackend(gpus=1)
    for kind, args in [
        ("temperature_ramp", {"gpu": 0, "delta_c": math.nan}),
        ("memory_hog", {"gpu": 0, "gib": math.inf}),
        ("mig", {"gpu": 0, "instances": 10**6}),
        ("xid", {"gpu": 0, "code": 79, "kind": "x"}),
    ]:
        with pytest.raises(SimFaultError):
            sim.inject(kind, **args)


@pytest.mark.parametrize("length", ["-1", "-5", "abc", "99999999999999999999", "1e3", " 7 7"])
def test_bad_content_length_is_400_at_once(exporter: Exporter, length: str) -> None:
    with socket.create_connection(
        ("127.0.0.1", exporter.server.port if exporter.server else 0), timeout=5
    ) as s:
        s.sendall(
            f"POST /api/faults HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode()
            + b'{"fault": "clear"}'
        )
        reply = s.recv(4096)  # a handler blocked on the body would time this out (socket.timeout)
    status = int(reply.split(b" ", 2)[1])
    assert status in (400, 413), reply


@pytest.mark.parametrize("since", ["nan", "NaN", "inf", "-inf", "1e999", "infinity"])
def test_history_since_must_be_finite(exporter: Exporter, since: str) -> None:
    status, body = _request(f"{exporter.url}/api/history?since={since}")
    assert status == 400
    assert "since" in json.loads(body)["error"]  # strict JSON: NaN would not parse below
    json.loads(body, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    status, body = _request(f"{exporter.url}/api/history?since=0")
    assert status == 200 and json.loads(body, parse_constant=lambda c: pytest.fail(c))["since"] == 0


def _raw_exchange(exp: Exporter, data: bytes) -> bytes:
    """Send raw bytes on one connection and read until the server closes it (or 10 s pass)."""
    host, port = exp.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(data)
        received = b""
        try:
            while chunk := conn.recv(65536):
                received += chunk
        except TimeoutError:
            pass  # a connection kept open: what was answered so far is the result
    return received


def test_a_body_the_route_never_reads_is_not_taken_as_the_next_request(exporter: Exporter) -> None:
    """A GET whose body was a whole `POST /api/faults` request: the exporter answered three times and the
    fault ran (the unread body was parsed as the next request on the kept-alive connection: smuggling
    behind any proxy that reuses connections). The connection now closes after the GET."""
    fault = b'{"fault": "fall_off_bus", "gpu": 0}'
    inner = (
        b"POST /api/faults HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(fault)).encode() + b"\r\n\r\n" + fault
    )
    outer = b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: " + str(len(inner)).encode() + b"\r\n\r\n"
    answered = _raw_exchange(exporter, outer + inner)
    assert answered.count(b"HTTP/1.1 ") == 1 and answered.startswith(b"HTTP/1.1 200"), answered[:300]
    assert _gpu_healthy(exporter, "0")
    chunked = (
        b"POST /api/faults HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        + hex(len(fault))[2:].encode() + b"\r\n" + fault + b"\r\n0\r\n\r\n"
    )
    answered = _raw_exchange(exporter, chunked)
    assert answered.count(b"HTTP/1.1 ") == 1 and answered.startswith(b"HTTP/1.1 411"), answered[:300]
    assert _gpu_healthy(exporter, "0")


def test_a_wrong_method_is_405_with_allow(exporter: Exporter) -> None:
    """PUT /metrics was a 501 HTML page (a server error for a client's mistake), POST /metrics a 404."""
    for method, path, allow in [("PUT", "/metrics", "GET, HEAD"), ("POST", "/healthz", "GET, HEAD"),
                                ("PATCH", "/api/faults", "DELETE, GET, HEAD, POST")]:
        req = urllib.request.Request(f"{exporter.url}{path}", data=b"", method=method)
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
        assert err.value.code == 405 and err.value.headers["Allow"] == allow
        assert f"{method} is not allowed on {path}" in json.loads(err.value.read())["error"]
    assert _request(f"{exporter.url}/nowhere", "PUT", b"")[0] == 404


def test_a_plus_in_since_is_explained(exporter: Exporter) -> None:
    """`since=now+5m` reached the parser as 'now 5m' (a '+' in a query string is a space)."""
    status, body = _request(f"{exporter.url}/api/history?since=now+5m")
    assert status == 400 and "%2B" in json.loads(body)["error"]


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("since=0&since=now-5m", "given more than once"),  # the first was taken, silently
        ("since=1_000", "invalid time"),  # float() read it as epoch 1000
    ],
)
def test_a_since_that_is_a_guess_is_refused(exporter: Exporter, query: str, says: str) -> None:
    status, body = _request(f"{exporter.url}/api/history?{query}")
    assert status == 400 and says in json.loads(body)["error"]


def test_a_fault_body_dripped_slowly_gets_a_408(exporter: Exporter, monkeypatch: pytest.MonkeyPatch) -> None:
    """The socket timeout bounded each read, not the body: a byte every few seconds held a connection slot
    (not evictable once the headers are read) for as long as the client liked. The drip runs far past the
    (shortened) deadline and stops only when the exporter answers."""
    import time

    from gpuobs.exporters.sidecar import server

    monkeypatch.setattr(server, "_BODY_READ_S", 1.0)
    host, port = exporter.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host.strip("[]"), int(port)), timeout=10) as conn:
        conn.sendall(b"POST /api/faults HTTP/1.1\r\nHost: x\r\nContent-Length: 900\r\n\r\n{")
        conn.settimeout(0.5)
        answer, deadline = b"", time.monotonic() + 40
        while not answer and time.monotonic() < deadline:
            try:
                answer = conn.recv(65536)
            except TimeoutError:
                conn.sendall(b" ")
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"did not arrive whole" in answer
    assert _request(f"{exporter.url}/healthz")[0] == 200
