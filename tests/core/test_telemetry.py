"""OTLP export to a collector that refuses: one warning, a rate-limited reminder, one recovery line."""

from __future__ import annotations

import http.server
import logging
import threading
from collections.abc import Iterator

import pytest
from support.web import page_handler, serving

from gpuobs.telemetry import OutageLog, configure_tracing


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_outage_log_warns_once_reminds_then_recovers(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="gpuobs.telemetry")
    clock = _Clock()
    outage = OutageLog("push to X", remind_s=300, clock=clock)
    for _ in range(50):  # one failure every 5 s for 250 s: below the reminder interval
        outage.failed("refused")
        clock.now += 5
    clock.now += 60
    outage.failed("refused")  # 310 s after the first: one reminder
    outage.failed("refused")
    outage.ok()
    outage.ok()
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in lines] == ["WARNING", "WARNING", "INFO"], lines
    assert "still failing after 310 s (51 attempts)" in lines[1][1]
    assert "works again" in lines[2][1] and "52 failed attempts" in lines[2][1]


class _Refusing(http.server.BaseHTTPRequestHandler):
    status = 400

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(type(self).status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def refusing_collector() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_refused_span_exports_log_one_warning_not_one_per_batch(
        refusing_collector: str, caplog: pytest.LogCaptureFixture) -> None:
    """Eight batches refused by a real HTTP collector: the log gets one warning, not eight (or more)."""
    caplog.set_level(logging.DEBUG)
    provider = configure_tracing("test", otlp_endpoint=refusing_collector, set_global=False)
    tracer = provider.get_tracer("t")
    try:
        for i in range(8):
            with tracer.start_as_current_span(f"s{i}"):
                pass
            provider.force_flush(10_000)
    finally:
        provider.shutdown()
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(problems) == 1, [r.getMessage() for r in problems]
    assert "OTLP span export" in problems[0].getMessage()
    assert "spans not accepted: the collector answered 400" in problems[0].getMessage()  # its status, said


def test_a_login_page_answering_200_is_no_collector(caplog: pytest.LogCaptureFixture) -> None:
    """The SDK takes any 200 as delivered: spans sent to a proxy's login page were lost without a word."""
    caplog.set_level(logging.DEBUG)
    with serving(page_handler()) as url:
        provider = configure_tracing("test", otlp_endpoint=url, set_global=False)
        try:
            with provider.get_tracer("t").start_as_current_span("s"):
                pass
            provider.force_flush(10_000)
        finally:
            provider.shutdown()
    problems = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(problems) == 1, problems
    assert (
        f"1 spans not accepted: {url}/v1/traces answered 200 with text/html, not an OTLP response (is it a "
        "collector?): 'Please log in'"
    ) in problems[0]
