"""`gpuobs serve` over real HTTP on loopback, driven with the official `openai` client and raw requests.

One server for the module (a real `python -m gpuobs serve` subprocess) exporting spans over OTLP/HTTP
to a receiver in the test, so the request span and the engine's spans under it are checked as a
tracing backend would see them.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.otlp import OtlpReceiver
from support.serve import ServeProcess, http_json

MODEL = "gpuobs-tiny-llama"
HI = b'{"model": "gpuobs-tiny-llama", "prompt": "hi"'  # a body's start, to be completed


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, otlp: OtlpReceiver) -> Iterator[ServeProcess]:
    workdir = tmp_path_factory.mktemp("serve-http")
    proc = ServeProcess(
        workdir,
        "--otlp-endpoint",
        otlp.url,
        "-E",
        "kv_cache_bytes=33554432",
        env={"OTEL_BSP_SCHEDULE_DELAY": "100"},
        grpc=False,
    )
    with proc:
        yield proc


@pytest.fixture(scope="module")
def client(server: ServeProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0, timeout=60)


def raw_post(
    server: ServeProcess, path: str, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        raw = resp.read()
        if resp.headers.get("content-type", "").startswith("text/event-stream"):
            events = [line[6:] for line in raw.decode().splitlines() if line.startswith("data: ")]
            assert events and events[-1] == "[DONE]", raw[-300:]
            return resp.status, {"events": events}
        return resp.status, json.loads(raw)
    finally:
        conn.close()


def test_health_ready_models(server: ServeProcess) -> None:
    status, body = http_json("GET", f"{server.url}/health")
    assert status == 200 and body["status"] == "ok"
    status, body = http_json("GET", f"{server.url}/ready")
    assert status == 200 and body == {"ready": True, "model": MODEL}
    status, body = http_json("GET", f"{server.url}/v1/models")
    assert status == 200 and [m["id"] for m in body["data"]] == [MODEL]
    assert body["data"][0]["max_model_len"] == 2048


def test_health_and_ready_answer_head(server: ServeProcess) -> None:
    """A load balancer's HEAD probe got 405 from /health."""
    for path in ("/health", "/ready"):
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        try:
            conn.request("HEAD", path)
            resp = conn.getresponse()
            assert resp.status == 200 and resp.read() == b"", (path, resp.status)
        finally:
            conn.close()


def test_openai_models_list(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == [MODEL]
    assert client.models.retrieve(MODEL).id == MODEL
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("no-such-model")


def test_completion_and_stream_agree_greedy(client: openai.OpenAI) -> None:
    full = client.completions.create(model=MODEL, prompt="The GPU said", max_tokens=12, temperature=0)
    assert full.object == "text_completion" and full.model == MODEL
    choice = full.choices[0]
    assert choice.finish_reason in ("stop", "length")
    assert full.usage is not None and full.usage.prompt_tokens == len(b"The GPU said")
    assert 1 <= full.usage.completion_tokens <= 12
    pieces, finish = [], None
    for chunk in client.completions.create(
        model=MODEL, prompt="The GPU said", max_tokens=12, temperature=0, stream=True
    ):
        assert chunk.model == MODEL
        pieces.append(chunk.choices[0].text)
        finish = chunk.choices[0].finish_reason or finish
    assert len([p for p in pieces if p]) >= 1
    assert "".join(pieces) == choice.text
    assert finish == choice.finish_reason


def test_chat_completion_and_stream(client: openai.OpenAI) -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
    resp = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=8, temperature=0, seed=3)
    assert resp.object == "chat.completion"
    assert resp.choices[0].message.role == "assistant"
    assert isinstance(resp.choices[0].message.content, str)
    assert resp.usage is not None and resp.usage.completion_tokens <= 8
    stream = client.chat.completions.create(
        model=MODEL,
        messages=messages,
        max_tokens=8,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == resp.choices[0].message.content
    finals = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finals == [resp.choices[0].finish_reason]
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == resp.usage.completion_tokens


def test_sampling_with_seed_is_reproducible(client: openai.OpenAI) -> None:
    a = client.completions.create(
        model=MODEL, prompt="abc", max_tokens=10, temperature=1.0, seed=42, extra_body={"ignore_eos": True}
    )
    b = client.completions.create(
        model=MODEL, prompt="abc", max_tokens=10, temperature=1.0, seed=42, extra_body={"ignore_eos": True}
    )
    assert a.choices[0].text == b.choices[0].text
    assert a.usage.completion_tokens == 10 and a.choices[0].finish_reason == "length"


def test_stop_string_truncates(client: openai.OpenAI) -> None:
    base = (
        client.completions.create(
            model=MODEL, prompt="xyz", max_tokens=16, temperature=0, extra_body={"ignore_eos": True}
        )
        .choices[0]
        .text
    )
    stop = next((ch for ch in base[2:] if ch.isprintable() and ch != "\ufffd"), None)
    assert stop is not None, f"no printable character in {base!r}"
    cut = client.completions.create(
        model=MODEL, prompt="xyz", max_tokens=16, temperature=0, stop=[stop], extra_body={"ignore_eos": True}
    ).choices[0]
    assert cut.finish_reason == "stop"
    assert cut.text == base[: base.index(stop)]


def test_openai_errors_surface_as_exception_types(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as nf:
        client.completions.create(model="no-such-model", prompt="hi", max_tokens=2)
    assert "no-such-model" in nf.value.message
    with pytest.raises(openai.BadRequestError) as neg:
        client.completions.create(model=MODEL, prompt="hi", max_tokens=-5)
    assert neg.value.body["param"] == "max_tokens"
    with pytest.raises(openai.BadRequestError) as huge:
        client.completions.create(model=MODEL, prompt="hi", max_tokens=10**12)
    assert "maximum context length" in huge.value.message
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=MODEL, messages=[], max_tokens=2)
    with pytest.raises(openai.BadRequestError) as long_prompt:
        client.completions.create(model=MODEL, prompt="x" * 3000, max_tokens=2)
    assert long_prompt.value.body["code"] == "context_length_exceeded"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", "invalid_json"),
        (b"", "invalid_json"),
        (b"[1, 2]", "invalid_json"),
        (b"[" * 100000, "invalid_json"),
        (b'{"model": ' + b"[" * 50000 + b"]" * 50000 + b"}", "invalid_json"),
        (b'{"model": "gpuobs-tiny-llama", "prompt": "\xff\xfe bad", "max_tokens": 2}', "invalid_utf8"),
        (b'{"model": "gpuobs-tiny-llama", "prompt": "hi", "max_tokens": "5"}', "invalid_type"),
        (b'{"model": "gpuobs-tiny-llama", "prompt": 12, "max_tokens": 5}', "invalid_type"),
        (b'{"model": "gpuobs-tiny-llama", "prompt": "hi", "temperature": "hot"}', "invalid_type"),
        (b'{"model": "gpuobs-tiny-llama", "prompt": "hi", "temperature": 7}', "invalid_value"),
        (b'{"model": "gpuobs-tiny-llama", "prompt": "hi", "max_tokens": 0}', "invalid_value"),
        (b'{"model": "gpuobs-tiny-llama", "prompt": "", "max_tokens": 2}', "empty_prompt"),
        (b'{"model": "gpuobs-tiny-llama", "prompt": [99999], "max_tokens": 2}', "invalid_token_id"),
        (b'{"prompt": "no model"}', "invalid_type"),
        (b'{"model": "gpuobs-tiny-llama", "prompt": "hi", "n": 3}', "invalid_value"),
        (b'{"model": "gpuobs-tiny-llama", "prompt": "\\ud800", "max_tokens": 2}', "invalid_text"),
        # integers too large for a float, and of more digits than Python converts (500s with tracebacks)
        (HI + b', "temperature": 1' + b"0" * 400 + b"}", "invalid_value"),
        (HI + b', "deadline_ms": 1' + b"0" * 400 + b"}", "invalid_value"),
        (HI + b', "seed": ' + b"1" * 5000 + b"}", "invalid_json"),
    ],
)
def test_bad_completion_inputs_get_400(server: ServeProcess, body: bytes, code: str) -> None:
    status, payload = raw_post(server, "/v1/completions", body)
    assert status == 400, payload
    assert payload["error"]["code"] == code, payload
    assert payload["error"]["type"] == "invalid_request_error"
    assert payload["error"]["message"]


@pytest.mark.parametrize(
    ("path", "asked"),
    [
        ("/v1/completions", {"logprobs": 2}),
        ("/v1/completions", {"logprobs": 0}),  # 0 still asks for the sampled tokens' logprobs
        ("/v1/completions", {"echo": True}),
        ("/v1/completions", {"best_of": 3}),
        ("/v1/completions", {"suffix": " end"}),
        ("/v1/completions", {"logit_bias": {"5": -100}}),
        ("/v1/chat/completions", {"logprobs": True}),
        ("/v1/chat/completions", {"top_logprobs": 3}),
        ("/v1/chat/completions", {"presence_penalty": 0.5}),
        ("/v1/chat/completions", {"frequency_penalty": -1}),
        # vLLM's extensions: answered with plain sampling before, as if applied
        ("/v1/completions", {"top_k": 5}),
        ("/v1/completions", {"top_k": -5}),
        ("/v1/chat/completions", {"min_p": 0.1}),
        ("/v1/chat/completions", {"repetition_penalty": 1.2}),
        ("/v1/completions", {"min_tokens": 4}),
        ("/v1/completions", {"stop_token_ids": [2]}),
        ("/v1/completions", {"use_beam_search": True}),
    ],
    ids=lambda v: v if isinstance(v, str) else ",".join(f"{k}={v[k]}" for k in v),
)
def test_unsupported_sampling_features_are_refused_not_ignored(
    server: ServeProcess, path: str, asked: dict
) -> None:
    """An answer computed without what the client asked for (no logprobs, no penalty) would look right and
    be wrong: the server says it does not implement the feature, naming the parameter."""
    body: dict = {"model": MODEL, "max_tokens": 2, **asked}
    if path.endswith("chat/completions"):
        body["messages"] = [{"role": "user", "content": "hi"}]
    else:
        body["prompt"] = "hi"
    status, payload = raw_post(server, path, json.dumps(body).encode())
    name = next(iter(asked))
    assert status == 400, payload
    assert payload["error"]["param"] == name and payload["error"]["code"] == "unsupported_parameter"
    assert f"{name} is not supported" in payload["error"]["message"]


def test_neutral_values_of_unsupported_features_are_served(client: openai.OpenAI) -> None:
    """What OpenAI clients send by default (penalties 0, logprobs false or null, best_of 1, no bias)."""
    chat = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "hi"}],
        max_tokens=2,
        presence_penalty=0,
        frequency_penalty=0.0,
        logprobs=False,
        logit_bias={},
    )
    assert chat.choices[0].finish_reason in ("stop", "length")
    done = client.completions.create(
        model=MODEL, prompt="hi", max_tokens=2, best_of=1, echo=False, logprobs=None, suffix="",
        extra_body={
            "top_k": -1, "min_p": 0.0, "repetition_penalty": 1.0, "min_tokens": 0, "stop_token_ids": [],
        },
    )
    assert done.choices[0].finish_reason in ("stop", "length")
    with pytest.raises(openai.BadRequestError) as asked:
        client.completions.create(model=MODEL, prompt="hi", max_tokens=2, logprobs=1)
    assert asked.value.body["param"] == "logprobs"


def test_bad_chat_inputs_and_limits(server: ServeProcess) -> None:
    status, payload = raw_post(
        server,
        "/v1/chat/completions",
        b'{"model": "gpuobs-tiny-llama", "messages": [{"role": "wizard", "content": "x"}]}',
    )
    assert status == 400 and payload["error"]["param"] == "messages"
    status, payload = raw_post(
        server,
        "/v1/chat/completions",
        b'{"model": "gpuobs-tiny-llama", "messages": [{"role": "user", "content": ""}]}',
    )
    assert status == 400 and payload["error"]["code"] == "empty_prompt"
    big = json.dumps({"model": MODEL, "prompt": "x" * (2 << 20)}).encode()
    status, payload = raw_post(server, "/v1/completions", big)
    assert status == 413 and payload["error"]["code"] == "body_too_large"
    status, payload = http_json("GET", f"{server.url}/v1/nothing-here")
    assert status == 404 and "error" in payload


def test_the_parameter_named_is_the_one_the_client_gave(server: ServeProcess) -> None:
    """Chat's max_completion_tokens of 0 was refused as `max_tokens must be at least 1`, param max_tokens."""
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 0}
    status, payload = raw_post(server, "/v1/chat/completions", json.dumps(body).encode())
    assert status == 400 and payload["error"]["param"] == "max_completion_tokens", payload
    assert payload["error"]["message"].startswith("max_completion_tokens must be at least 1")


def test_an_unknown_model_name_is_not_echoed_whole(server: ServeProcess) -> None:
    """A 900 KB model name came back whole in the 404 (and over gRPC broke the metadata limit)."""
    name = "m" * 900_000
    body = json.dumps({"model": name, "prompt": "hi"}).encode()
    status, payload = raw_post(server, "/v1/completions", body)
    assert status == 404 and len(payload["error"]["message"]) < 300, payload["error"]["message"][:300]
    assert "(900000 characters)" in payload["error"]["message"]


def _counted(server: ServeProcess, labels: str) -> float:
    """The value of gpuobs_serving_requests_total with exactly these labels (0 when absent)."""
    wanted = f"gpuobs_serving_requests_total{{{labels}}} "
    line = next((line for line in server.metrics().splitlines() if line.startswith(wanted)), None)
    return float(line.split()[-1]) if line else 0.0


def test_a_cut_upload_is_an_abort_not_a_traceback(server: ServeProcess) -> None:
    """A client that closed the connection mid-body: starlette's ClientDisconnect was a 500 and two
    tracebacks in the log per connection (a burst of them stalled the server for 40 s on log writing)."""
    before = server.logs().count("Traceback")
    for _ in range(5):
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
            conn.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    deadline, aborted = time.monotonic() + 30, 0.0
    while time.monotonic() < deadline and aborted < 5:  # counted once the server has read each close
        aborted = _counted(server, 'api="http",model_name="",outcome="abort"')
        time.sleep(0.2)
    assert aborted >= 5
    assert server.logs().count("Traceback") == before, server.logs()[-3000:]
    assert http_json("GET", f"{server.url}/health")[0] == 200


def test_huge_prompt_is_refused_fast_without_stalling_others(server: ServeProcess) -> None:
    big = json.dumps({"model": MODEL, "prompt": "a " * 480_000, "max_tokens": 2}).encode()  # < 1 MiB body
    started = time.monotonic()
    status, payload = raw_post(server, "/v1/completions", big)
    assert status == 400 and payload["error"]["code"] == "context_length_exceeded"
    assert time.monotonic() - started < 0.5
    mid = json.dumps({"model": MODEL, "prompt": "b" * 100_000, "max_tokens": 2}).encode()  # tokenized
    status, payload = raw_post(server, "/v1/completions", mid)
    assert status == 400 and "100000 tokens" in payload["error"]["message"]


def test_server_stays_healthy_after_bad_inputs(server: ServeProcess, client: openai.OpenAI) -> None:
    for body in (b"{", b"\xff", b'{"model": 1}', b"null", b'{"model": "x", "prompt": []}'):
        status, _ = raw_post(server, "/v1/completions", body)
        assert 400 <= status < 500
    assert http_json("GET", f"{server.url}/health")[0] == 200
    ok = client.completions.create(model=MODEL, prompt="still fine", max_tokens=3, temperature=0)
    assert ok.choices[0].finish_reason in ("stop", "length")
    assert 'gpuobs_serving_invalid_requests_total{api="http"' in server.metrics()


def test_concurrent_streams(server: ServeProcess, client: openai.OpenAI) -> None:
    results: list[str | BaseException] = []

    def one(i: int) -> None:
        try:
            text = "".join(
                c.choices[0].text
                for c in client.completions.create(
                    model=MODEL, prompt=f"request {i}", max_tokens=6, temperature=0, stream=True
                )
            )
            results.append(text)
        except BaseException as exc:  # collected and asserted below
            results.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 8
    assert all(isinstance(r, str) for r in results), results


def test_request_span_has_genai_attributes_and_engine_children(
    client: openai.OpenAI, otlp: OtlpReceiver, server: ServeProcess
) -> None:
    resp = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "trace me"}], max_tokens=4, temperature=0
    )

    def have(spans: list) -> bool:
        return any(
            s["attributes"].get("gen_ai.response.id") == resp.id
            for s in spans
            if s["name"].startswith("chat")
        )

    spans = otlp.wait_for(have)
    root = next(
        s
        for s in spans
        if s["attributes"].get("gen_ai.response.id") == resp.id and s["name"].startswith("chat")
    )
    attrs = root["attributes"]
    assert root["name"] == f"chat {MODEL}"
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == MODEL and attrs["gen_ai.response.model"] == MODEL
    assert attrs["gen_ai.request.max_tokens"] == 4
    assert attrs["gen_ai.usage.input_tokens"] == resp.usage.prompt_tokens
    assert attrs["gen_ai.usage.output_tokens"] == resp.usage.completion_tokens
    assert attrs["gen_ai.response.finish_reasons"] == [resp.choices[0].finish_reason]
    spans = otlp.wait_for(
        lambda ss: (
            any(s["trace_id"] == root["trace_id"] and s["name"] == "queue" for s in ss)
            and any(
                s["name"] in ("prefill", "decode_step") and (s["trace_id"] == root["trace_id"]) for s in ss
            )
        )
    )
    queue = next(s for s in spans if s["trace_id"] == root["trace_id"] and s["name"] == "queue")
    assert queue["parent_id"] == root["span_id"]
    steps = [
        s for s in spans if s["trace_id"] == root["trace_id"] and s["name"] in ("prefill", "decode_step")
    ]
    assert any(s["parent_id"] == root["span_id"] for s in steps)
    # JSON log line of the same request, joined by trace id
    logs = [r for r in server.json_logs() if r.get("request_id") == resp.id]
    assert logs and logs[-1]["trace_id"] == root["trace_id"]
    for key in ("model_id", "input_hash", "device_id", "cuda_error_code"):
        assert key in logs[-1]


def test_no_fault_routes_without_flag(server: ServeProcess) -> None:
    status, payload = http_json("POST", f"{server.url}/admin/faults/hang", {})
    assert status == 404 and "error" in payload


def test_admission_refusal_is_429_with_retry_after(tmp_path: Path) -> None:
    with ServeProcess(
        tmp_path,
        "-E",
        "max_queue_len=1",
        "-E",
        "max_batch_size=1",
        "-E",
        "kv_cache_bytes=16777216",
        grpc=False,
    ) as srv:
        cli = openai.OpenAI(base_url=f"{srv.url}/v1", api_key="unused", max_retries=0, timeout=60)
        outcomes: list[object] = []

        def one() -> None:
            try:
                cli.completions.create(
                    model=MODEL,
                    prompt="fill the queue",
                    max_tokens=64,
                    temperature=0,
                    extra_body={"ignore_eos": True},
                )
                outcomes.append("ok")
            except openai.RateLimitError as exc:
                outcomes.append(exc)
            except BaseException as exc:  # asserted below
                outcomes.append(exc)

        threads = [threading.Thread(target=one) for _ in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        limited = [o for o in outcomes if isinstance(o, openai.RateLimitError)]
        assert limited, outcomes
        assert all(o == "ok" or isinstance(o, openai.RateLimitError) for o in outcomes), outcomes
        retry_after = limited[0].response.headers.get("retry-after")
        assert retry_after is not None and int(retry_after) >= 1
        assert limited[0].body["code"] == "queue_full"
        metrics = srv.metrics()
        assert (
            f'vllm:admission_rejections_total{{model_name="{MODEL}",reason="max_num_queued_reqs"}}' in metrics
        )
        assert http_json("GET", f"{srv.url}/health")[0] == 200


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=8,
)
_FIELDS = [
    "model",
    "prompt",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "n",
    "seed",
    "stop",
    "stream",
    "stream_options",
    "user",
    "priority",
    "ignore_eos",
    "deadline_ms",
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chat=st.booleans(), overrides=st.dictionaries(st.sampled_from(_FIELDS), _JSON_VALUES, max_size=3))
def test_random_bodies_never_get_a_5xx(server: ServeProcess, chat: bool, overrides: dict) -> None:
    body: dict = {"model": MODEL, "max_tokens": 2}
    if chat:
        body["messages"] = [{"role": "user", "content": "hi"}]
    else:
        body["prompt"] = "hi"
    body.update(overrides)
    if body.get("deadline_ms") is not None:
        body.pop("deadline_ms")  # an honoured deadline that expires is a 504 by design
    raw = json.dumps(body, allow_nan=True).encode("utf-8", "surrogatepass")
    status, payload = raw_post(server, "/v1/chat/completions" if chat else "/v1/completions", raw)
    assert status < 500, (body, payload)
    if status >= 400:
        assert payload["error"]["message"] and payload["error"]["type"]


def test_tenant_header_is_counted(server: ServeProcess, client: openai.OpenAI) -> None:
    client.completions.create(model=MODEL, prompt="tenant", max_tokens=2, extra_headers={"x-tenant": "acme"})
    lines = [
        ln for ln in server.metrics().splitlines() if ln.startswith("gpuobs_serving_tenant_requests_total{")
    ]
    assert any('tenant="acme"' in ln and ln.endswith(" 1.0") for ln in lines), lines
    status, payload = raw_post(
        server,
        "/v1/completions",
        json.dumps({"model": MODEL, "prompt": "x"}).encode(),
        headers={"x-tenant": "t" * 100},
    )
    assert status == 400 and "tenant" in payload["error"]["message"]


def test_no_request_holds_the_model_after_it_ended(server: ServeProcess) -> None:
    # runs last in this module: every request above (ok, refused, streamed, failed) released its lease
    status, body = http_json("GET", f"{server.url}/admin/models")
    assert status == 200 and body["current"]["inflight"] == 0, body


def test_api_key_and_admin_token(tmp_path: Path) -> None:
    env = {"GPUOBS_API_KEY": "sk-test-key", "GPUOBS_ADMIN_TOKEN": "admin-secret"}
    with ServeProcess(tmp_path, "-E", "kv_cache_bytes=8388608", env=env, grpc=False) as srv:
        wrong = openai.OpenAI(base_url=f"{srv.url}/v1", api_key="sk-wrong", max_retries=0, timeout=30)
        with pytest.raises(openai.AuthenticationError):
            wrong.completions.create(model=MODEL, prompt="hi", max_tokens=2)
        right = openai.OpenAI(base_url=f"{srv.url}/v1", api_key="sk-test-key", max_retries=0, timeout=30)
        assert right.completions.create(model=MODEL, prompt="hi", max_tokens=2).choices
        status, body = http_json("GET", f"{srv.url}/admin/models")
        assert status == 401 and body["error"]["type"] == "authentication_error"
        req = urllib.request.Request(
            f"{srv.url}/admin/models", headers={"Authorization": "Bearer admin-secret"}
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.status == 200 and json.loads(resp.read())["current"]["name"] == MODEL
        assert http_json("GET", f"{srv.url}/health")[0] == 200  # probes and metrics stay open
        assert "vllm:num_requests_running" in srv.metrics()
