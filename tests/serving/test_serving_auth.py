"""`--api-key` on a real `gpuobs serve`: gRPC Predict obeys it like HTTP, and `/admin/*` is never left
open when a key is set without `--admin-token` (issue 10 items 1 and 2)."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from support.serve import ServeProcess, http_json

from gpuobs.serving.grpc_api import PredictClient

KEY = "sk-auth-test-key"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    workdir = tmp_path_factory.mktemp("serve-auth")
    with ServeProcess(workdir, "-E", "kv_cache_bytes=8388608", env={"GPUOBS_API_KEY": KEY}) as proc:
        yield proc


def test_grpc_predict_needs_the_api_key(server: ServeProcess) -> None:
    for key in (None, "sk-wrong"):
        with PredictClient(server.grpc_target, api_key=key) as anonymous:
            with pytest.raises(grpc.RpcError) as err:
                anonymous.predict([[1, 2, 3]], timeout=60)
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with PredictClient(server.grpc_target, api_key=KEY) as client:
        result = client.predict([[1, 2, 3]], timeout=60)
    assert len(result.logits) == 1 and result.logits[0]
    assert 'gpuobs_serving_invalid_requests_total{api="grpc",reason="unauthorized"' in server.metrics()


def test_admin_routes_need_the_api_key_when_no_admin_token_is_set(
    server: ServeProcess, tmp_path: Path
) -> None:
    status, body = http_json("POST", f"{server.url}/admin/models/load", {"model": "/no/such/dir"})
    assert status == 401 and body["error"]["type"] == "authentication_error"
    assert http_json("GET", f"{server.url}/admin/models")[0] == 401
    req = urllib.request.Request(f"{server.url}/admin/models", headers={"Authorization": f"Bearer {KEY}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200
    assert http_json("GET", f"{server.url}/health")[0] == 200
