"""Serving probes against a real `gpuobs serve`: a symptom counter on /metrics detects a fault that a
short golden request can slip through on time."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from chaoslib.exceptions import ActivityFailed
from support.serve import ServeProcess

from gpuobs.chaos.incident import current
from gpuobs.chaos.serving import actions, probes
from gpuobs.names import serving as serving_names

pytestmark = pytest.mark.slow

PREEMPTIONS = serving_names.NUM_PREEMPTIONS.exposed_native


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with ServeProcess(
        tmp_path_factory.mktemp("serve-probes"),
        "--enable-fault-injection",
        "-E",
        "kv_cache_bytes=16777216",
        grpc=False,
    ) as proc:
        yield proc


def test_a_rising_preemption_counter_is_the_deviation_under_a_shrunken_kv_cache(server: ServeProcess) -> None:
    current().reset()
    before = probes.counter_totals([PREEMPTIONS], server.url)
    actions.start_load(
        "kv", concurrency=6, max_tokens=256, interval_s=0.0, base_url=server.url, ignore_eos=True
    )
    try:
        actions.inject_fault("kv_shrink", {"fraction": 0.05}, server.url)
        # an SLO no request could miss: only the counter can show the fault
        problems = probes.wait_for_deviation(
            server.url, timeout_s=120, max_latency_s=600, rising_counters=[PREEMPTIONS]
        )
    finally:
        actions.restore(server.url)
    assert problems and all(p.startswith(f"{PREEMPTIONS} rose by ") for p in problems), problems
    assert "detected" in current().marks
    assert probes.counter_totals([PREEMPTIONS], server.url)[PREEMPTIONS] > before[PREEMPTIONS]


def test_without_the_fault_the_counter_does_not_deviate(server: ServeProcess) -> None:
    current().reset()
    actions.start_load("calm", concurrency=2, max_tokens=16, base_url=server.url)
    try:
        time.sleep(0.5)  # the load is running: the counter must still not rise
        with pytest.raises(ActivityFailed, match="no SLO deviation"):
            probes.wait_for_deviation(
                server.url, timeout_s=3, max_latency_s=600, rising_counters=[PREEMPTIONS]
            )
    finally:
        actions.restore(server.url)


def test_a_target_without_prometheus_text_is_one_clear_failure(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"

        def answer_html() -> None:
            conn, _ = listener.accept()
            with conn:
                conn.recv(4096)
                body = b"<html>not metrics</html>{"
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

        thread = threading.Thread(target=answer_html, daemon=True)
        thread.start()
        with pytest.raises(ActivityFailed, match="not Prometheus text"):
            probes.counter_totals([PREEMPTIONS], url)
        thread.join(10)


def test_a_calibrated_flood_sizes_its_completions_from_the_server_it_floods(server: ServeProcess) -> None:
    current().reset()
    try:
        out = actions.flood(
            requests=32, concurrency=32, queue_wait_s=0.5, batch_size=16, max_tokens=640,
            ignore_eos=True, base_url=server.url,
        )
    finally:
        actions.restore(server.url)
    # a batch must run 0.5 s (one batch ahead): the longest timed one reached it, or the cap did not
    assert 16 <= out["max_tokens"] <= 640 and out["batch_s"] > 0, out
    assert out["batch_s"] >= 0.5 or out["max_tokens"] == 640, out
    assert current().details["fault"]["max_tokens"] == out["max_tokens"]


def test_each_batch_runs_its_share_of_the_wait_and_lengths_are_read_between_timed_ones() -> None:
    assert actions.batch_seconds_for_wait(7.0, 128, 16) == 1.0  # seven batches ahead of the last client
    assert actions.interpolate_tokens(128, 0.3, 256, 0.7, 0.5) == 192
    assert actions.interpolate_tokens(0, 0.0, 32, 0.9, 0.1) == 16  # never shorter than 16 tokens
    assert actions.interpolate_tokens(128, 0.3, 256, 0.3, 0.5) == 256  # a flat pair: the longer


def test_a_calibrated_flood_refuses_a_crowd_no_larger_than_the_batch(server: ServeProcess) -> None:
    with pytest.raises(ActivityFailed, match="more clients than the batch holds"):
        actions.flood(concurrency=16, queue_wait_s=5.0, batch_size=16, base_url=server.url)


def test_a_calibrated_flood_against_a_dead_server_says_so(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens once the socket closes
    with pytest.raises(ActivityFailed, match="calibration batch failed: 16 of 16 completions refused"):
        actions.flood(concurrency=64, queue_wait_s=5.0, batch_size=16, base_url=f"http://127.0.0.1:{port}")
