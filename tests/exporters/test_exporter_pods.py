"""Pod attribution end to end: a real gRPC kubelet on a unix socket labels the exporter's GPU series."""

from __future__ import annotations

import time
import urllib.request
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from prometheus_client.parser import text_string_to_metric_families

from gpuobs.exporters.sidecar._podresources_proto import messages
from gpuobs.exporters.sidecar.service import Exporter, ExporterConfig
from gpuobs.exporters.sidecar.sim import SimBackend
from gpuobs.names import exporter as ex
from gpuobs.names import gpu as g


def _kubelet(sock: Path, gpu_uuid: str) -> grpc.Server:
    """A real `v1.PodResourcesLister/List` server: pod llm-0/serving, container server, holds one GPU."""
    msgs = messages()

    def list_pods(request: Any, context: grpc.ServicerContext) -> Any:
        response = msgs.ListPodResourcesResponse()
        pod = response.pod_resources.add(name="llm-0", namespace="serving")
        container = pod.containers.add(name="server")
        container.devices.add(resource_name="nvidia.com/gpu", device_ids=[gpu_uuid])
        return response

    handler = grpc.method_handlers_generic_handler(
        "v1.PodResourcesLister",
        {
            "List": grpc.unary_unary_rpc_method_handler(
                list_pods,
                request_deserializer=msgs.ListPodResourcesRequest.FromString,
                response_serializer=msgs.ListPodResourcesResponse.SerializeToString,
            ),
        },
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"unix:{sock}")
    server.start()
    return server


def _series(url: str) -> list[tuple[str, dict[str, str], float]]:
    with urllib.request.urlopen(url, timeout=5) as resp:
        text = resp.read().decode()
    return [(s.name, s.labels, s.value) for fam in text_string_to_metric_families(text) for s in fam.samples]


def test_attributed_gpu_carries_pod_labels_in_both_namings(tmp_path: Path) -> None:
    sock = tmp_path / "kubelet.sock"
    backend = SimBackend(gpus=2)
    uuid0 = backend.devices()[0].uuid
    kubelet = _kubelet(sock, uuid0)
    exp = Exporter(
        ExporterConfig(backend="sim", gpus=2, naming="both", port=0, pod_resources_socket=str(sock)),
        backend=backend,
    ).start()
    try:
        deadline = time.monotonic() + 15
        series: list[tuple[str, dict[str, str], float]] = []
        while time.monotonic() < deadline:
            series = _series(f"{exp.url}/metrics")
            if any(labels.get("pod") for _, labels, _ in series):
                break
            time.sleep(0.1)
        native = {labels["gpu"]: labels for name, labels, _ in series if name == g.POWER_USAGE.native}
        assert native["0"]["pod"] == "llm-0" and native["0"]["namespace"] == "serving"
        assert native["0"]["container"] == "server" and native["0"]["uuid"] == uuid0
        assert "pod" not in native["1"], "an unattributed GPU gets no pod labels"
        dcgm = {labels["gpu"]: labels for name, labels, _ in series if name == "DCGM_FI_DEV_POWER_USAGE"}
        assert (dcgm["0"]["pod"], dcgm["0"]["namespace"], dcgm["0"]["container"]) == (
            "llm-0",
            "serving",
            "server",
        )
        success = {
            labels["collector"]: v for name, labels, v in series if name == ex.COLLECTOR_SUCCESS.native
        }
        assert success["pods"] == 1.0
    finally:
        exp.stop()
        kubelet.stop(grace=None).wait(5)


def test_absent_socket_is_not_an_error(tmp_path: Path) -> None:
    exp = Exporter(
        ExporterConfig(backend="sim", gpus=1, port=0, pod_resources_socket=str(tmp_path / "nope.sock"))
    ).start()
    try:
        series = _series(f"{exp.url}/metrics")
        success = {
            labels["collector"]: v for name, labels, v in series if name == ex.COLLECTOR_SUCCESS.native
        }
        assert success["pods"] == 1.0
        assert not any("pod" in labels for _, labels, _ in series)
    finally:
        exp.stop()
