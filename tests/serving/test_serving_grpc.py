"""gRPC `inference.InferenceService/Predict` of a real `gpuobs serve` over a real socket."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import descriptor_pb2
from support.otlp import OtlpReceiver
from support.serve import ServeProcess, http_json, overload_grpc

from gpuobs.serving.grpc_api import FULL_METHOD, PredictClient, file_descriptor_proto, message_classes

MODEL = "gpuobs-tiny-llama"
VOCAB = 260


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, otlp: OtlpReceiver) -> Iterator[ServeProcess]:
    workdir = tmp_path_factory.mktemp("serve-grpc")
    args = (
        "--enable-fault-injection",
        "--max-grpc-batch",
        "8",
        "-E",
        "kv_cache_bytes=16777216",
        "--otlp-endpoint",
        otlp.url,
    )
    with ServeProcess(workdir, *args, env={"OTEL_BSP_SCHEDULE_DELAY": "100"}) as proc:
        yield proc


@pytest.fixture(scope="module")
def client(server: ServeProcess) -> Iterator[PredictClient]:
    with PredictClient(server.grpc_target) as c:
        yield c


def test_proto_file_matches_runtime_descriptor(repo_root: Path, tmp_path: Path) -> None:
    proto_dir = repo_root / "serving" / "proto"
    out = tmp_path / "inference.pb"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{proto_dir}",
            f"--descriptor_set_out={out}",
            str(proto_dir / "inference.proto"),
        ],
        check=True,
    )
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(out.read_bytes())
    assert fds.file[0] == file_descriptor_proto()


def test_messages_roundtrip_on_the_wire() -> None:
    c = message_classes()
    req = c["PredictRequest"](model_name="m")
    req.input_ids.add().ids.extend([1, 2, 3])
    again = c["PredictRequest"].FromString(req.SerializeToString())
    assert list(again.input_ids[0].ids) == [1, 2, 3] and again.model_name == "m"


def test_predict_returns_logits_and_latency(client: PredictClient) -> None:
    result = client.predict([[72, 105], [1, 2, 3, 4]], model_name=MODEL, timeout=30)
    assert result.model_name == MODEL
    assert [len(r) for r in result.logits] == [VOCAB, VOCAB]
    assert result.latency_ms > 0
    assert result.logits[0] != result.logits[1]


def test_padding_with_mask_gives_same_logits(client: PredictClient) -> None:
    plain = client.predict([[10, 20, 30]], timeout=30).logits[0]
    padded = client.predict([[0, 0, 10, 20, 30]], [[0, 0, 1, 1, 1]], timeout=30).logits[0]
    assert max(abs(a - b) for a, b in zip(plain, padded, strict=True)) < 1e-4


def test_empty_model_name_means_the_served_model(client: PredictClient) -> None:
    assert client.predict([[5]], timeout=30).model_name == MODEL


@pytest.mark.timeout(120)
def test_a_call_with_no_deadline_is_answered(client: PredictClient) -> None:
    """A client that sets no deadline (grpcurl, a client without `timeout`): grpcio reports hundreds of years
    left, which the wait for the forward pass could not take (OverflowError: every such call failed with
    INTERNAL). Every other test here passes a deadline."""
    result = client.predict([[5, 6]])
    assert result.model_name == MODEL and len(result.logits) == 1 and result.logits[0]


@pytest.mark.parametrize(
    ("ids", "mask", "model", "code", "words"),
    [
        ([], None, MODEL, grpc.StatusCode.INVALID_ARGUMENT, "empty"),
        ([[1]] * 9, None, MODEL, grpc.StatusCode.INVALID_ARGUMENT, "exceeds the limit of 8"),
        ([[1, 2]], [[1]], MODEL, grpc.StatusCode.INVALID_ARGUMENT, "attention_mask 0 has 1 values"),
        ([[1, 2]], [[1, 1], [1, 1]], MODEL, grpc.StatusCode.INVALID_ARGUMENT, "2 rows for 1 sequences"),
        ([[1, 2]], [[0, 0]], MODEL, grpc.StatusCode.INVALID_ARGUMENT, "at least one 1"),
        ([[1, 2]], [[1, 7]], MODEL, grpc.StatusCode.INVALID_ARGUMENT, "0/1"),
        ([[1, 99999]], None, MODEL, grpc.StatusCode.INVALID_ARGUMENT, "outside [0, 260)"),
        ([[-3]], None, MODEL, grpc.StatusCode.INVALID_ARGUMENT, "outside"),
        ([[]], None, MODEL, grpc.StatusCode.INVALID_ARGUMENT, "sequence 0 is empty"),
        ([[1] * 3000], None, MODEL, grpc.StatusCode.INVALID_ARGUMENT, "at most 2048"),
        ([[1]], None, "other-model", grpc.StatusCode.NOT_FOUND, "not served"),
    ],
)
def test_bad_predict_inputs(
    client: PredictClient,
    ids: list[list[int]],
    mask: list[list[int]] | None,
    model: str,
    code: grpc.StatusCode,
    words: str,
) -> None:
    with pytest.raises(grpc.RpcError) as err:
        client.predict(ids, mask, model_name=model, timeout=30)
    assert err.value.code() == code
    assert words in (err.value.details() or "")


@pytest.mark.parametrize("raw", [b"\xff\xff\xff\xff", b"\x0a\x10ab"], ids=["garbage", "truncated"])
def test_bytes_that_are_no_request_are_invalid_argument(server: ServeProcess, raw: bytes) -> None:
    """grpcio answered a request that does not decode INTERNAL ("Exception deserializing request!"), a server
    fault by its code; the client's mistake is INVALID_ARGUMENT, and counted as an invalid request."""
    with grpc.insecure_channel(server.grpc_target) as channel:
        call = channel.unary_unary(FULL_METHOD, request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.RpcError) as err:
            call(raw, timeout=30)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, err.value.details()
    assert "not a PredictRequest" in (err.value.details() or "")
    assert 'gpuobs_serving_invalid_requests_total{api="grpc",reason="undecodable"}' in server.metrics()


def test_an_unknown_model_name_is_not_echoed_whole(client: PredictClient) -> None:
    """A model name of a megabyte came back whole in the status: past gRPC's metadata limit, so the client saw
    RESOURCE_EXHAUSTED ("received metadata size exceeds hard limit"), not NOT_FOUND."""
    with pytest.raises(grpc.RpcError) as err:
        client.predict([[1]], model_name="m" * 1_000_000, timeout=30)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND, err.value.details()
    assert "(1000000 characters)" in (err.value.details() or "") and len(err.value.details() or "") < 300


def test_server_healthy_after_bad_predicts(server: ServeProcess, client: PredictClient) -> None:
    for _ in range(5):
        with pytest.raises(grpc.RpcError):
            client.predict([[1]] * 100, timeout=10)
    assert client.predict([[1, 2]], timeout=30).logits
    assert http_json("GET", f"{server.url}/health")[0] == 200
    assert 'gpuobs_serving_invalid_requests_total{api="grpc",reason="batch_too_large"}' in server.metrics()


def test_deadline_is_honoured_while_the_forward_pass_runs(client: PredictClient) -> None:
    # 8 sequences of 2000 tokens take seconds on this CPU; the answer must come at the deadline.
    big = [[(i * 7 + j) % 256 for j in range(2000)] for i in range(8)]
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as err:
        client.predict(big, timeout=0.3)
    elapsed = time.monotonic() - started
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert elapsed < 1.5
    assert client.predict([[1, 2, 3]], timeout=60).logits  # the server still answers


def test_grpc_block_fault_ignores_deadlines_until_cleared(
    server: ServeProcess, client: PredictClient
) -> None:
    status, body = http_json("POST", f"{server.url}/admin/faults/grpc_block", {"hang_s": 20})
    assert status == 200 and body["params"]["hang_s"] == 20
    assert "grpc_block" in http_json("GET", f"{server.url}/admin/faults")[1]["active"]
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as err:
        client.predict([[1, 2]], timeout=0.5)
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert time.monotonic() - started < 3
    assert '"event": "grpc_block"' in server.logs()
    status, body = http_json("DELETE", f"{server.url}/admin/faults/grpc_block")
    assert status == 200 and body["cleared"] == ["grpc_block"]
    assert client.predict([[1, 2]], timeout=30).logits


def test_overload_is_resource_exhausted(server: ServeProcess, client: PredictClient) -> None:
    codes = overload_grpc(server, client, 80)
    assert len(codes) == 80
    assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) >= 10, codes
    assert set(codes) <= {grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.DEADLINE_EXCEEDED}
    assert client.predict([[1, 2]], timeout=30).logits  # healthy again once the fault is cleared


def test_predict_span(client: PredictClient, otlp: OtlpReceiver) -> None:
    client.predict([[3, 4, 5], [6, 7]], model_name=MODEL, timeout=30)

    def found(spans: list) -> bool:
        return any(
            x["name"] == f"Predict {MODEL}" and x["attributes"].get("gpuobs.batch_size") == 2 for x in spans
        )

    span = next(
        x
        for x in otlp.wait_for(found)
        if x["name"] == f"Predict {MODEL}" and x["attributes"].get("gpuobs.batch_size") == 2
    )
    assert span["attributes"]["rpc.system"] == "grpc"
    assert span["attributes"]["rpc.method"] == "Predict"
    assert span["attributes"]["gen_ai.request.model"] == MODEL
