"""`gpuobs loadtest` and its library against a real `gpuobs serve` subprocess on loopback.

Every figure the load test reports is checked against something independent: the server's own
Prometheus counters, the schedule it was given, the arithmetic of the cost. The server is the real
one (tiny embedded model on CPU), started once for the module.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.serve import ServeProcess

from gpuobs.serving.loadtest import (
    ArrivalProcess,
    Endpoint,
    LoadConfig,
    PromptMix,
    resolve_target,
    run_load,
    run_robustness,
)
from gpuobs.serving.loadtest.runner import Progress, run_load_async

MODEL = "gpuobs-tiny-llama"
IGNORE_EOS = {"ignore_eos": True}     # fixed output lengths, so token counts are exact


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    proc = ServeProcess(tmp_path_factory.mktemp("serve-loadtest"), "--device", "cpu", "--log-level",
                        "warning", "--enable-fault-injection", grpc=False)
    with proc:
        yield proc


@contextlib.contextmanager
def _slowed(server: ServeProcess, delay_s: float) -> Iterator[None]:
    """Every model step of the server takes `delay_s` longer (its slow_kernel fault) inside the block.

    The tiny model is fast on an idle machine; tests that need the server to fall behind make that
    slowness themselves instead of hoping the machine is busy.
    """
    with httpx.Client(timeout=10) as client:
        client.post(server.url + "/admin/faults/slow_kernel", json={"delay_s": delay_s}).raise_for_status()
        try:
            yield
        finally:
            client.delete(server.url + "/admin/faults/slow_kernel").raise_for_status()


def _counters(server: ServeProcess) -> dict[str, float]:
    """Sums of the server's request and token counters (all label sets)."""
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(server.metrics()):
        for sample in family.samples:
            if sample.name in ("vllm:request_success_total", "vllm:generation_tokens_total",
                               "vllm:prompt_tokens_total"):
                totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
    return totals


def _loadtest(
    *args: str, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "gpuobs", "loadtest", *args], capture_output=True, text=True,
                          timeout=timeout, env=environ)


def _one_line(text: str) -> str:
    """stderr as one line (rich wraps long error lines at the terminal width)."""
    return " ".join(text.split())


def test_resolve_target_asks_the_server_for_its_model(server: ServeProcess) -> None:
    target = resolve_target(server.url + "/v1/")
    assert target.model == MODEL and target.base_url == server.url


def test_streamed_run_matches_the_servers_own_counters(server: ServeProcess) -> None:
    target = resolve_target(server.url, extra_body=IGNORE_EOS)
    mix = PromptMix(long_fraction=0.3, short_words=(2, 6), long_words=(20, 40), short_max_tokens=4,
                    long_max_tokens=12)
    config = LoadConfig(rate=4.0, duration_s=2.0, max_requests=8, arrival=ArrivalProcess.CONSTANT, mix=mix,
                        seed=3)
    before = _counters(server)
    run = run_load(target, config)
    after = _counters(server)
    s = run.summary
    assert s.requests == 8 and s.completed == 8, s.outcomes
    planned = config.plan()
    # The server counted exactly the requests and generated tokens the client saw.
    assert after["vllm:request_success_total"] - before["vllm:request_success_total"] == 8
    sent_tokens = sum(p.max_tokens for p in planned)
    assert sum(r.output_tokens for r in run.results) == sent_tokens
    assert after["vllm:generation_tokens_total"] - before["vllm:generation_tokens_total"] == sent_tokens
    assert all(r.prompt_tokens and r.prompt_tokens >= len(p.prompt) for r, p in zip(run.results, planned,
                                                                                   strict=True))
    for r in run.results:
        assert r.ttft is not None and r.e2e is not None
        assert 0 < r.ttft <= r.e2e
        assert r.chunk_times == sorted(r.chunk_times) and r.chunk_times[0] == r.first_token
        assert len(r.inter_token) == len(r.chunk_times) - 1
    assert s.ttft.p50 is not None and s.e2e.p99 is not None and s.ttft.p50 <= s.e2e.p99
    assert s.throughput_rps > 0 and s.output_tokens_per_s > 0


def test_load_is_open_loop_when_the_server_falls_behind(server: ServeProcess) -> None:
    """Every arrival leaves on schedule before the first answer is complete (a closed loop would wait).

    The server is slowed to 0.1 s a step, so no answer of 16 tokens can finish before ~1.6 s, while the
    last of the 15 arrivals is due at 0.47 s: a margin of over a second, however idle the machine.
    """
    target = resolve_target(server.url, extra_body=IGNORE_EOS)
    mix = PromptMix(long_fraction=0.0, short_words=(2, 4), short_max_tokens=16)
    config = LoadConfig(rate=30.0, duration_s=0.5, arrival=ArrivalProcess.CONSTANT, mix=mix,
                        request_timeout_s=90, drain_timeout_s=90)
    peak = 0

    def on_progress(p: Progress) -> None:
        nonlocal peak
        peak = max(peak, p.in_flight)

    with _slowed(server, 0.1):
        run = asyncio.run(run_load_async(target, config, on_progress=on_progress, progress_interval_s=0.02))
    assert run.summary.requests == 15 and run.summary.completed == 15, run.summary.outcomes
    last_sent = max(r.sent for r in run.results if r.sent is not None)
    first_done = min(r.finished for r in run.results if r.finished is not None)
    assert last_sent < first_done, "an arrival waited for an answer"
    assert peak == 15, f"only {peak} requests were ever in flight together"
    assert run.send_lag_p99_s is not None and run.send_lag_p99_s < 1.0
    # Latency counts from the scheduled arrival, so the last arrivals carry the queueing they met.
    assert all(r.e2e is not None and r.e2e > 0 for r in run.results)


def test_chat_endpoint_streams_content_deltas(server: ServeProcess) -> None:
    target = resolve_target(server.url, endpoint=Endpoint.CHAT, extra_body=IGNORE_EOS)
    config = LoadConfig(rate=5.0, duration_s=1.0, max_requests=3, arrival=ArrivalProcess.CONSTANT,
                        mix=PromptMix(long_fraction=0.0, short_max_tokens=5))
    run = run_load(target, config)
    assert run.summary.completed == 3 and all(r.output_tokens == 5 for r in run.results)
    assert all(r.first_token is not None for r in run.results)


def test_requests_over_the_timeout_count_as_failures(server: ServeProcess) -> None:
    """40 tokens at 0.1 s a step need 4 s or more: a 0.3 s timeout cuts every request, on any machine."""
    target = resolve_target(server.url, extra_body=IGNORE_EOS)
    config = LoadConfig(rate=5.0, duration_s=1.0, max_requests=3, arrival=ArrivalProcess.CONSTANT,
                        mix=PromptMix(long_fraction=0.0, short_max_tokens=40), request_timeout_s=0.3,
                        drain_timeout_s=2.0)
    with _slowed(server, 0.1):
        run = run_load(target, config)
    assert run.summary.outcomes == {"timeout": 3}
    assert run.summary.slo_p99_e2e == float("inf")


def test_unknown_model_is_reported_as_http_errors(server: ServeProcess) -> None:
    target = resolve_target(server.url, model="no-such-model")
    run = run_load(target, LoadConfig(rate=10.0, duration_s=0.3, max_requests=2))
    assert run.summary.outcomes == {"http_error": 2}
    assert all(r.status == 404 or r.status == 400 for r in run.results)
    assert all(r.error and "no-such-model" in r.error for r in run.results)


def test_robustness_bad_requests_get_clear_4xx_and_the_server_stays_up(server: ServeProcess) -> None:
    report = run_robustness(resolve_target(server.url), 80, seed=21, concurrency=4)
    assert report.total == 80
    assert report.clear_4xx + report.unclear_4xx + report.accepted + report.crashes + report.timeouts == 80
    assert report.healthy_after, report.health_detail
    assert report.crashes == 0 and report.timeouts == 0, report.failures
    assert report.clear_4xx == 80, report.failures


def test_cli_json_reports_the_four_dimensions(server: ServeProcess) -> None:
    # A tenfold step factor puts a tenth of the best rate on the ladder itself, within --max-steps 2.
    out = _loadtest(server.url, "--rate", "0.8", "--step-factor", "10", "--duration", "2.5",
                    "--max-steps", "2",
                    "--max-tokens", "4", "--long-words", "10-20", "--p99-target-ms", "30000",
                    "--gpu-hour-price", "7.2", "--robustness", "16", "--ignore-eos", "--json")
    assert out.returncode in (0, 1), out.stderr
    data = json.loads(out.stdout)
    assert data["target"]["model"] == MODEL
    assert [round(s["offered_rate"], 3) for s in data["steps"]] == [0.8, 8.0]
    assert all(s["purpose"] == "ladder" for s in data["steps"])
    best = data["throughput_at_p99"]
    assert best is not None and best["offered_rate"] == data["steps"][-1]["offered_rate"]
    # The cost is the GPU-second price over the sustained request rate.
    assert data["cost"]["per_1000_requests"] == pytest.approx(7.2 / 3600 / best["throughput_rps"] * 1000)
    el = data["elasticity"]
    assert el is not None and el["load_factor"] == pytest.approx(10.0)
    rb = data["robustness"]
    assert rb["total"] == 16 and rb["healthy_after"]
    assert out.returncode == (0 if data["passed"] else 1)


def test_max_steps_is_a_hard_bound(server: ServeProcess) -> None:
    """Two passing ladder steps and no tenth of the rate among them: no third (elasticity) run is added."""
    out = _loadtest(server.url, "--rate", "2", "--duration", "1", "--max-steps", "2", "--max-tokens", "2",
                    "--p99-target-ms", "30000", "--robustness", "0", "--ignore-eos", "--json")
    assert out.returncode in (0, 1), out.stderr
    data = json.loads(out.stdout)
    assert len(data["steps"]) == 2 and data["elasticity"] is None
    # Not on a terminal: a line as each step starts and as it ends.
    assert out.stderr.count("requests planned") == 2, out.stderr
    assert out.stderr.count("req/s: P99 e2e") == 2, out.stderr


def test_failed_requests_show_the_servers_own_message(server: ServeProcess) -> None:
    out = _loadtest(server.url, "--model", "no-such-model", "--rate", "4", "--duration", "0.5", "--max-steps",
                    "1", "--robustness", "0")
    assert out.returncode == 1, out.stderr
    assert "no-such-model" in out.stdout and "requests failed with" in out.stdout
    assert "first error" in out.stderr and "no-such-model" in out.stderr


def test_an_html_error_page_is_reported_as_one_line_of_its_words(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A URL that is not an OpenAI server (here Python's own http.server, which answers POST with an HTML 501
    page) is reported by its message, one line per error, not its tags and indentation over a screen."""
    folder = tmp_path_factory.mktemp("plain-http")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    web = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                           cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            time.sleep(0.1)
        out = _loadtest(f"http://127.0.0.1:{port}", "--model", "m", "--rate", "2", "--duration", "0.5",
                        "--max-steps", "1", "--robustness", "4", "--json", timeout=120)
    finally:
        web.terminate()
        web.wait(timeout=30)
    data = json.loads(out.stdout)
    errors = data["steps"][0]["errors"]
    answers = [f["answer"] for f in data["robustness"]["failures"]]
    assert errors and answers, data
    for line in [e["message"] for e in errors] + answers:
        assert "Unsupported method" in line and "501" in line, line
        assert "\n" not in line and "<" not in line, line


def test_cli_table_output_and_target_miss_exit_code(server: ServeProcess) -> None:
    out = _loadtest(server.url, "--rate", "3", "--duration", "1", "--max-steps", "1", "--max-tokens", "24",
                    "--p99-target-ms", "1", "--robustness", "0")
    assert out.returncode == 1, out.stderr
    assert "Four dimensions" in out.stdout and "target missed already at 3 req/s" in out.stdout


def test_api_key_is_sent_and_its_absence_is_a_clear_input_error(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    key = "loadtest-key-123"
    with ServeProcess(tmp_path_factory.mktemp("serve-key"), "--device", "cpu", "--log-level", "warning",
                      grpc=False, env={"GPUOBS_API_KEY": key}) as guarded:
        without = _loadtest(guarded.url, "--robustness", "0", env={"GPUOBS_API_KEY": ""})
        assert without.returncode == 2 and "wants an API key" in _one_line(without.stderr)
        wrong = _loadtest(guarded.url, "--api-key", "nope", "--robustness", "0")
        assert wrong.returncode == 2 and "API key was refused" in _one_line(wrong.stderr)
        ok = _loadtest(guarded.url, "--rate", "4", "--duration", "1", "--max-steps", "1", "--max-tokens", "2",
                       "--robustness", "8", "--p99-target-ms", "30000", "--elasticity-max-s", "2", "--json",
                       env={"GPUOBS_API_KEY": key})
        data = json.loads(ok.stdout)
        assert data["steps"][0]["completed"] == data["steps"][0]["requests"] > 0
        # With the key, bad requests reach validation: answers are 400/404, never 401.
        assert "401" not in data["robustness"]["statuses"], data["robustness"]["statuses"]


@pytest.mark.parametrize(("args", "message"), [
    (["http://127.0.0.1:9"], "cannot reach"),
    (["127.0.0.1:8000"], "not an http(s) URL"),
    (["http://127.0.0.1:9", "--arrival", "bursty"], "--arrival"),
    (["http://127.0.0.1:9", "--long-words", "9"], "--long-words"),
    (["http://127.0.0.1:9", "--gpu-hour-price", "-1"], "price"),
    # Each out-of-range number names its flag: the config classes named fields ("long_fraction must lie in [0,
    # 1]") or several at once ("request timeout must be > 0, drain timeout >= 0 and max in-flight >= 1").
    (["http://127.0.0.1:9", "--long-fraction", "1.5"], "--long-fraction must be between 0 and 1, got 1.5"),
    (["http://127.0.0.1:9", "--timeout", "0"], "--timeout must be > 0, got 0"),
    (["http://127.0.0.1:9", "--step-factor", "1"], "--step-factor must be > 1, got 1"),
    (["http://127.0.0.1:9", "--max-steps", "0"], "--max-steps must be >= 1, got 0"),
    (["http://127.0.0.1:9", "--endpoint", "embeddings"], "--endpoint must be completions or chat"),
    # `--api-key "$KEY"` with KEY unset: was sent as no key at all, so every answer was a 401
    (["http://127.0.0.1:9", "--api-key", ""], "--api-key is empty (an unset variable?)"),
])
def test_cli_bad_input_is_one_clear_line(args: list[str], message: str) -> None:
    out = _loadtest(*args, timeout=60)
    assert out.returncode == 2
    assert message in _one_line(out.stderr) and "Traceback" not in out.stderr


def test_requests_unanswered_at_the_drain_timeout_count_as_failures(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # the per-request timeout is generous; the run's drain timeout after the last arrival is what cuts
    # them off, and they must count as failed (unbounded in the all-requests P99), not vanish. The
    # server's slow_kernel fault (0.5 s per step) makes sure no request can finish in the drain window,
    # however idle the machine is.
    with ServeProcess(tmp_path_factory.mktemp("serve-slow"), "--device", "cpu", "--log-level", "warning",
                      "--enable-fault-injection", grpc=False) as server:
        with httpx.Client(timeout=10) as client:
            client.post(server.url + "/admin/faults/slow_kernel", json={"delay_s": 0.5}).raise_for_status()
        target = resolve_target(server.url, extra_body=IGNORE_EOS)
        config = LoadConfig(rate=5.0, duration_s=1.0, max_requests=2, arrival=ArrivalProcess.CONSTANT,
                            mix=PromptMix(long_fraction=0.0, short_max_tokens=8), request_timeout_s=60.0,
                            drain_timeout_s=0.3)
        run = run_load(target, config)
        assert run.summary.outcomes == {"timeout": 2} and run.summary.completed == 0
        assert all("unanswered" in (r.error or "") for r in run.results)
        assert run.summary.slo_p99_e2e == float("inf") and run.summary.by_kind["short"]["failed"] == 2
