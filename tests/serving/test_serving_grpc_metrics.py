"""Every path in is measured the same way: gRPC Predict over a real socket and HTTP against one real
`gpuobs serve`, read back from its /metrics with prometheus_client's parser.

gRPC calls are counted by outcome and timed in the families HTTP requests use
(`gpuobs_serving_requests_total{api}`, `gpuobs_serving_request_duration_seconds{api}`); a call refused
because the server has its maximum of calls in flight is counted as an admission rejection; every
call is counted exactly once whatever way it ends (a call whose handler is stuck past its deadline when
gRPC ends it, then, with a warning line the RCA reads); vLLM's tokens-per-step histogram is observed at
every engine step.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.serve import ServeProcess, http_json, overload_grpc

from gpuobs.names import logs as lf
from gpuobs.names import serving as names
from gpuobs.rca import DiagnoseInputs, diagnose
from gpuobs.serving.grpc_api import PredictClient

MODEL = "gpuobs-tiny-llama"
GRPC, HTTP = names.API_GRPC, names.API_HTTP
REQUESTS = names.SERVING_REQUESTS.exposed_native
DURATION_COUNT = f"{names.SERVING_REQUEST_DURATION.native}_count"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    workdir = tmp_path_factory.mktemp("serve-grpc-metrics")
    args = ("--enable-fault-injection", "--max-grpc-batch", "8", "-E", "kv_cache_bytes=16777216")
    with ServeProcess(workdir, *args) as proc:
        yield proc


@pytest.fixture(scope="module")
def client(server: ServeProcess) -> Iterator[PredictClient]:
    with PredictClient(server.grpc_target) as c:
        yield c


class Scrape:
    """One /metrics scrape: sample values by name and labels."""

    def __init__(self, server: ServeProcess) -> None:
        self.samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(server.metrics())
            for s in family.samples
        }

    def get(self, name: str, **labels: str) -> float:
        return self.samples.get((name, tuple(sorted(labels.items()))), 0.0)

    def total(self, name: str, **labels: str) -> float:
        """Sum over every series of `name` whose labels include `labels`."""
        want = set(labels.items())
        return sum(v for (n, ls), v in self.samples.items() if n == name and want <= set(ls))


def test_predict_outcomes_are_counted_and_timed(server: ServeProcess, client: PredictClient) -> None:
    before = Scrape(server)
    assert client.predict([[1, 2, 3]], model_name=MODEL, timeout=30).logits
    with pytest.raises(grpc.RpcError) as empty:
        client.predict([], model_name=MODEL, timeout=30)
    assert empty.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as unknown:
        client.predict([[1]], model_name="no-such-model", timeout=30)
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
    after = Scrape(server)

    def grew(name: str, **labels: str) -> float:
        return after.get(name, **labels) - before.get(name, **labels)

    assert grew(REQUESTS, api=GRPC, model_name=MODEL, outcome=names.OUTCOME_OK) == 1
    assert grew(DURATION_COUNT, api=GRPC, model_name=MODEL) == 1
    assert grew(REQUESTS, api=GRPC, model_name=MODEL, outcome=names.OUTCOME_INVALID) == 1
    assert grew(REQUESTS, api=GRPC, model_name="", outcome=names.OUTCOME_INVALID) == 1  # model unknown
    invalid = names.SERVING_INVALID_REQUESTS.exposed_native
    assert grew(invalid, api=GRPC, reason="empty_batch") == 1
    assert grew(invalid, api=GRPC, reason="unknown_model") == 1
    assert after.total(REQUESTS, api=GRPC) - before.total(REQUESTS, api=GRPC) == 3


def test_http_is_measured_in_the_same_families(server: ServeProcess) -> None:
    before = Scrape(server)
    body = {"model": MODEL, "prompt": "same families", "max_tokens": 4, "temperature": 0, "ignore_eos": True}
    status, answer = http_json("POST", f"{server.url}/v1/completions", body, timeout=60)
    assert status == 200, answer
    after = Scrape(server)
    assert after.get(REQUESTS, api=HTTP, model_name=MODEL, outcome=names.OUTCOME_OK) == (
        before.get(REQUESTS, api=HTTP, model_name=MODEL, outcome=names.OUTCOME_OK) + 1
    )
    assert after.get(DURATION_COUNT, api=HTTP, model_name=MODEL) == (
        before.get(DURATION_COUNT, api=HTTP, model_name=MODEL) + 1
    )
    # vLLM's tokens-per-step histogram: one prefill of the prompt, then one decode step per further token.
    steps = f"{names.ITERATION_TOKENS.native}_count"
    tokens = f"{names.ITERATION_TOKENS.native}_sum"
    ids = {"model_name": MODEL, "engine": "0"}
    assert after.get(steps, **ids) - before.get(steps, **ids) == 4
    prompt_tokens = answer["usage"]["prompt_tokens"]  # type: ignore[index]
    assert after.get(tokens, **ids) - before.get(tokens, **ids) == prompt_tokens + 3


def test_overload_refusals_are_counted_and_every_call_once(
    server: ServeProcess, client: PredictClient
) -> None:
    calls = 80  # the server admits 64 in flight; its 8 handler threads block on the grpc_block fault
    before = Scrape(server)
    codes = overload_grpc(server, client, calls)
    refused = codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED)
    assert len(codes) == calls and refused >= 10, codes

    def settled() -> Scrape | None:
        now = Scrape(server)
        return now if now.total(REQUESTS, api=GRPC) - before.total(REQUESTS, api=GRPC) >= calls else None

    after = wait_for(settled)
    assert after.total(REQUESTS, api=GRPC) - before.total(REQUESTS, api=GRPC) == calls  # each call once
    rejected = after.total(REQUESTS, api=GRPC, outcome=names.OUTCOME_REJECTED) - before.total(
        REQUESTS, api=GRPC, outcome=names.OUTCOME_REJECTED
    )
    assert rejected == refused
    admission = names.ADMISSION_REJECTIONS.exposed_native
    reason = names.REASON_MAX_CONCURRENT_RPCS
    assert after.get(admission, model_name=MODEL, reason=reason) - before.get(
        admission, model_name=MODEL, reason=reason
    ) == refused
    assert client.predict([[1, 2]], timeout=30).logits  # healthy again


def test_a_call_blocked_past_its_deadline_is_counted_and_logged_at_the_deadline(
    server: ServeProcess, client: PredictClient, tmp_path: Path
) -> None:
    """grpc_block holds each handler for 20 s; gRPC ends the calls at their 0.5 s deadline, and the server
    counts and logs each one then, while the handlers are still blocked (not 20 s later, nor twice)."""
    calls = 3
    before = Scrape(server)
    seen = len(_deadline_lines(server))
    status, body = http_json("POST", f"{server.url}/admin/faults/grpc_block", {"hang_s": 20})
    assert status == 200, body
    try:
        for _ in range(calls):
            with pytest.raises(grpc.RpcError) as err:
                client.predict([[1, 2]], model_name=MODEL, timeout=0.5)
            assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED

        def counted() -> Scrape | None:
            now = Scrape(server)
            grew = now.get(REQUESTS, **deadline) - before.get(REQUESTS, **deadline)
            return now if grew >= calls and len(_deadline_lines(server)) - seen >= calls else None

        deadline = {"api": GRPC, "model_name": MODEL, "outcome": names.OUTCOME_DEADLINE}
        during = wait_for(counted, timeout=10)  # the fault holds the handlers for 20 s: no race with them
        assert "grpc_block" in http_json("GET", f"{server.url}/admin/faults")[1]["active"]
        lines = _deadline_lines(server)[seen:]
        assert len(lines) == calls, lines
        for line in lines:
            assert line[lf.MODEL_NAME] == MODEL and line[lf.EVENT] == names.OUTCOME_DEADLINE, line
            assert 0.4 <= float(line[lf.LATENCY_S]) < 5, line
            assert "still running" in line[lf.MSG], line
    finally:
        http_json("DELETE", f"{server.url}/admin/faults/grpc_block")
    assert client.predict([[1, 2]], timeout=30).logits  # the released handlers have returned by now
    after = Scrape(server)
    assert after.get(REQUESTS, **deadline) - before.get(REQUESTS, **deadline) == calls  # not again
    assert after.total(REQUESTS, api=GRPC) - during.total(REQUESTS, api=GRPC) == 1  # only the last call
    assert len(_deadline_lines(server)) - seen == calls

    # The RCA pipeline names the cause from these lines of the server's own log.
    log = tmp_path / "serve.log"
    log.write_text("".join(json.dumps(line) + "\n" for line in _deadline_lines(server)[seen:]))
    report = diagnose(DiagnoseInputs(logs=[str(log)], live=False))
    assert report.causes and report.causes[0].id == "grpc_deadline_exceeded", report.causes


def _deadline_lines(server: ServeProcess) -> list[dict[str, Any]]:
    return [
        line
        for line in server.json_logs()
        if str(line.get(lf.MSG, "")).startswith("Predict DEADLINE_EXCEEDED")
    ]


def wait_for(probe: Callable[[], Scrape | None], timeout: float = 30.0) -> Scrape:
    """Poll `probe()` until it returns a scrape (the blocked handlers finish once the fault is cleared)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = probe()
        if got is not None:
            return got
        time.sleep(0.2)
    raise AssertionError(f"metrics did not settle in {timeout} s")
