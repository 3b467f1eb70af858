"""Fault injection over HTTP (`--enable-fault-injection`): each fault shows in answers, logs and metrics
the way a real occurrence would; deadlines and client disconnects end requests in the engine.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator

import openai
import pytest
from support.otlp import OtlpReceiver
from support.serve import ServeProcess, http_json

from gpuobs.names import serving as serving_names
from gpuobs.names import spans as sn

MODEL = "gpuobs-tiny-llama"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, otlp: OtlpReceiver) -> Iterator[ServeProcess]:
    workdir = tmp_path_factory.mktemp("serve-faults")
    with ServeProcess(
        workdir,
        "--enable-fault-injection",
        "-E",
        "kv_cache_bytes=16777216",
        "--otlp-endpoint",
        otlp.url,
        env={"OTEL_BSP_SCHEDULE_DELAY": "100"},
        grpc=False,
    ) as proc:
        yield proc


@pytest.fixture(scope="module")
def client(server: ServeProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0, timeout=60)


@pytest.fixture(autouse=True)
def _clear(server: ServeProcess) -> Iterator[None]:
    yield
    status, _ = http_json("DELETE", f"{server.url}/admin/faults")
    assert status == 200


def metric_value(text: str, prefix: str) -> float:
    for line in text.splitlines():
        if line.startswith(prefix):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{prefix} not in /metrics")


def greedy(client: openai.OpenAI, prompt: str = "fault", n: int = 8) -> str:
    return (
        client.completions.create(
            model=MODEL, prompt=prompt, max_tokens=n, temperature=0, extra_body={"ignore_eos": True}
        )
        .choices[0]
        .text
    )


def test_fault_listing_and_bad_fault_requests(server: ServeProcess) -> None:
    status, body = http_json("GET", f"{server.url}/admin/faults")
    assert status == 200 and body["enabled"] is True and body["active"] == {}
    assert {
        "cuda_oom",
        "memory_leak",
        "slow_kernel",
        "hang",
        "worker_crash",
        "kv_shrink",
        "tokenizer_mismatch",
        "grpc_block",
        "drain_stop",
    } <= set(body["kinds"])
    status, body = http_json("POST", f"{server.url}/admin/faults/melt_gpu", {})
    assert status == 400 and "unknown fault" in body["error"]["message"]
    status, body = http_json("POST", f"{server.url}/admin/faults/slow_kernel", {"delay_s": 999})
    assert status == 400 and "delay_s" in body["error"]["message"]
    status, body = http_json("POST", f"{server.url}/admin/faults/slow_kernel", b"{oops")
    assert status == 400


def test_cuda_oom_fails_the_request_like_a_real_oom(
    server: ServeProcess, client: openai.OpenAI, otlp: OtlpReceiver
) -> None:
    status, body = http_json("POST", f"{server.url}/admin/faults/cuda_oom", {"at_allocation": 1})
    assert status == 200 and body["params"]["at_allocation"] == 1
    with pytest.raises(openai.InternalServerError) as err:
        client.completions.create(model=MODEL, prompt="oom", max_tokens=4)
    assert "CUDA out of memory" in err.value.message
    logs = [r for r in server.json_logs() if r.get("msg") == "request finished" and r.get("error")]
    assert logs and logs[-1]["cuda_error_code"] == 2 and logs[-1]["finish_reason"] == "error"
    metrics = server.metrics()
    assert (
        metric_value(
            metrics, f'vllm:request_success_total{{engine="0",finished_reason="error",model_name="{MODEL}"}}'
        )
        >= 1
    )
    assert 'gpuobs_serving_engine_errors_total{kind="cuda_oom"' in metrics
    request_id = logs[-1]["request_id"]
    def ours(x: dict) -> bool:
        return bool(x["attributes"].get(sn.GEN_AI_RESPONSE_ID) == request_id)

    span = next(x for x in otlp.wait_for(lambda ss: any(ours(x) for x in ss)) if ours(x))
    assert span["attributes"][sn.ERROR_TYPE] == "cudaErrorMemoryAllocation"
    assert span["attributes"][sn.CUDA_ERROR_CODE] == 2  # the registry's key, as the launcher sets it
    assert span["attributes"][sn.CUDA_ERROR_NAME] == "cudaErrorMemoryAllocation"
    assert span["status"] == 2  # STATUS_CODE_ERROR
    assert span["attributes"][sn.GEN_AI_RESPONSE_FINISH_REASONS] == ["error"]
    assert greedy(client)  # one-shot: the next request is served


def test_slow_kernel_and_deadline(server: ServeProcess, client: openai.OpenAI) -> None:
    http_json("POST", f"{server.url}/admin/faults/slow_kernel", {"delay_s": 0.05})
    started = time.monotonic()
    greedy(client, n=6)
    assert time.monotonic() - started >= 0.3
    assert f'gpuobs_serving_fault_active{{fault="slow_kernel",model_name="{MODEL}"}} 1.0' in server.metrics()
    status, body = http_json(
        "POST",
        f"{server.url}/v1/completions",
        {"model": MODEL, "prompt": "late", "max_tokens": 200, "ignore_eos": True, "deadline_ms": 300},
    )
    assert status == 504, body
    assert body["error"]["code"] == "deadline_exceeded"


def test_memory_leak_grows_memory_metric(server: ServeProcess, client: openai.OpenAI) -> None:
    prefix = f'gpuobs_serving_memory_bytes{{model_name="{MODEL}"}}'
    before = metric_value(server.metrics(), prefix)
    http_json("POST", f"{server.url}/admin/faults/memory_leak", {"bytes_per_request": 2 * 2**20})
    for _ in range(3):
        greedy(client, n=2)
    after = metric_value(server.metrics(), prefix)
    assert after - before >= 6 * 2**20


def test_tokenizer_mismatch_changes_text(server: ServeProcess, client: openai.OpenAI) -> None:
    good = greedy(client, "mismatch", 10)
    http_json("POST", f"{server.url}/admin/faults/tokenizer_mismatch", {"shift": 3})
    bad = greedy(client, "mismatch", 10)
    assert bad != good
    assert any(r.get("event") == "tokenizer_mismatch" for r in server.json_logs())
    http_json("DELETE", f"{server.url}/admin/faults/tokenizer_mismatch")
    assert greedy(client, "mismatch", 10) == good


def test_hang_blocks_until_cleared(server: ServeProcess, client: openai.OpenAI) -> None:
    import threading

    http_json("POST", f"{server.url}/admin/faults/hang", {"hang_s": 30})
    done: dict[str, float] = {}

    def call() -> None:
        greedy(client, n=2)
        done["at"] = time.monotonic()

    t = threading.Thread(target=call)
    t.start()
    time.sleep(1.0)
    assert "at" not in done  # stuck in the engine
    assert (
        metric_value(server.metrics(), f'vllm:num_requests_running{{engine="0",model_name="{MODEL}"}}') >= 0
    )
    cleared_at = time.monotonic()
    status, body = http_json("DELETE", f"{server.url}/admin/faults/hang")
    assert status == 200 and body["cleared"] == ["hang"]
    t.join(30)
    assert "at" in done and done["at"] >= cleared_at


def test_client_disconnect_aborts_the_engine_request(server: ServeProcess) -> None:
    http_json("POST", f"{server.url}/admin/faults/slow_kernel", {"delay_s": 0.05})
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request(
        "POST",
        "/v1/completions",
        body=json.dumps(
            {"model": MODEL, "prompt": "bye", "max_tokens": 500, "ignore_eos": True, "stream": True}
        ),
        headers={"Content-Type": "application/json"},
    )
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.read(6) == b"data: "  # the stream has started
    conn.sock.close()  # type: ignore[union-attr]
    conn.close()
    running = f'vllm:num_requests_running{{engine="0",model_name="{MODEL}"}}'
    deadline = time.monotonic() + 10
    while metric_value(server.metrics(), running) > 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert metric_value(server.metrics(), running) == 0  # 500 tokens at 50 ms would take 25 s
    logs = [r for r in server.json_logs() if r.get("error") == "client disconnected"]
    assert logs and logs[-1]["finish_reason"] == "abort"


def test_client_disconnect_aborts_a_non_streamed_request(server: ServeProcess) -> None:
    import socket

    http_json("POST", f"{server.url}/admin/faults/slow_kernel", {"delay_s": 0.05})
    body = json.dumps({"model": MODEL, "prompt": "gone", "max_tokens": 500, "ignore_eos": True}).encode()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(
        b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    running = f'vllm:num_requests_running{{engine="0",model_name="{MODEL}"}}'
    deadline = time.monotonic() + 10
    while metric_value(server.metrics(), running) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert metric_value(server.metrics(), running) == 1
    sock.close()
    deadline = time.monotonic() + 10
    while metric_value(server.metrics(), running) > 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert metric_value(server.metrics(), running) == 0  # 500 tokens at 50 ms each would take 25 s
    body_ = http_json("GET", f"{server.url}/admin/models")[1]
    assert body_["current"]["inflight"] == 0


def test_kv_shrink_forces_preemptions_but_requests_complete(
    server: ServeProcess, client: openai.OpenAI
) -> None:
    import threading

    preempt = f'{serving_names.NUM_PREEMPTIONS.native}_total{{engine="0",model_name="{MODEL}"}}'
    before = metric_value(server.metrics(), preempt)
    status, body = http_json("POST", f"{server.url}/admin/faults/kv_shrink", {"fraction": 0.05})
    assert status == 200 and body["params"]["fraction"] == 0.05
    assert f'gpuobs_serving_fault_active{{fault="kv_shrink",model_name="{MODEL}"}} 1.0' in server.metrics()
    results: list[object] = []

    def one(i: int) -> None:
        try:
            results.append(greedy(client, f"kv pressure {i} " * 3, 120))
        except BaseException as exc:  # asserted below
            results.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(results) == 8 and all(isinstance(r, str) for r in results), results
    assert metric_value(server.metrics(), preempt) > before
    # every step's KV usage is counted, so the full cache before each preemption shows on /metrics
    usage = serving_names.SERVING_KV_CACHE_USAGE_STEPS.native
    steps = f'{usage}_bucket{{le="0.95",model_name="{MODEL}"}}'
    total = f'{usage}_count{{model_name="{MODEL}"}}'
    text = server.metrics()
    assert metric_value(text, total) > metric_value(text, steps)


def test_a_cut_fault_upload_is_an_abort_not_a_traceback(server: ServeProcess) -> None:
    """`POST /admin/faults/KIND` read its body with starlette's `request.body()`: a client that closed
    mid-body was a 500 and a traceback (the OpenAI routes already counted it as an abort)."""
    import socket

    def aborted() -> float:
        wanted = 'gpuobs_serving_requests_total{api="http",model_name="",outcome="abort"} '
        line = next((ln for ln in server.metrics().splitlines() if ln.startswith(wanted)), None)
        return float(line.split()[-1]) if line else 0.0

    before, tracebacks = aborted(), server.logs().count("Traceback")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(b"POST /admin/faults/grpc_block HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and aborted() < before + 1:
        time.sleep(0.2)
    assert aborted() == before + 1
    assert server.logs().count("Traceback") == tracebacks, server.logs()[-3000:]
    assert http_json("GET", f"{server.url}/admin/faults")[1]["active"] == {}
