"""Pod attribution against a real gRPC server speaking pod-resources v1 on a real unix socket."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

from gpuobs.exporters.sidecar._podresources_proto import messages
from gpuobs.exporters.sidecar.podresources import (
    PodAttributor,
    PodRef,
    PodResourcesClient,
    PodResourcesError,
    PodResourcesUnavailable,
)

LOGGER = "gpuobs.exporters.sidecar.podresources"
GPU0 = "GPU-5c7f7a0e-1b2d-4a55-9a6e-0d3c1f7a9b10"
GPU1 = "GPU-8e21c3d4-77aa-4f10-b2c9-61e0a4d5f2c3"
GPU2 = "GPU-0a1b2c3d-4e5f-6789-abcd-ef0123456789"
MIG0 = "MIG-3f9a2b1c-5d6e-5f70-8a9b-0c1d2e3f4a5b"

# (pod, namespace, [(container, [(resource, [device ids])])])
Pods = list[tuple[str, str, list[tuple[str, list[tuple[str, list[str]]]]]]]


class FakeKubelet:
    """A real gRPC server implementing `v1.PodResourcesLister/List` on a unix socket."""

    def __init__(self, socket_path: Path, pods: Pods) -> None:
        self.socket_path = socket_path
        self.pods = pods
        self.calls = 0
        self.delay_s = 0.0
        self.fail_with: grpc.StatusCode | None = None
        self._server: grpc.Server | None = None

    def _list(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.calls += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.fail_with is not None:
            context.abort(self.fail_with, "injected by the test")
        msgs = messages()
        response = msgs.ListPodResourcesResponse()
        for pod_name, namespace, containers in self.pods:
            pod = response.pod_resources.add(name=pod_name, namespace=namespace)
            for container_name, devices in containers:
                container = pod.containers.add(name=container_name)
                container.cpu_ids.extend([2, 3])
                for resource, ids in devices:
                    entry = container.devices.add(resource_name=resource, device_ids=ids)
                    entry.topology.nodes.add(ID=0)
        return response

    def start(self) -> FakeKubelet:
        msgs = messages()
        handler = grpc.method_handlers_generic_handler("v1.PodResourcesLister", {
            "List": grpc.unary_unary_rpc_method_handler(
                self._list,
                request_deserializer=msgs.ListPodResourcesRequest.FromString,
                response_serializer=msgs.ListPodResourcesResponse.SerializeToString,
            ),
        })
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        server.add_generic_rpc_handlers((handler,))
        assert server.add_insecure_port(f"unix:{self.socket_path}") != 0 or self.socket_path.exists()
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None).wait(5)
            self._server = None


@pytest.fixture
def sock(tmp_path: Path) -> Path:
    path = tmp_path / "kubelet.sock"
    assert len(str(path)) < 100, "unix socket paths are limited to 107 bytes"
    return path


@pytest.fixture
def kubelet(sock: Path) -> Iterator[Callable[[Pods], FakeKubelet]]:
    servers: list[FakeKubelet] = []

    def start(pods: Pods) -> FakeKubelet:
        servers.append(FakeKubelet(sock, pods).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


NODE: Pods = [
    ("llm-0", "serving", [
        ("server", [("nvidia.com/gpu", [GPU0, GPU1]), ("example.com/nic", ["eth1"])]),
        ("sidecar", []),
    ]),
    ("batch-7", "jobs", [("worker", [("nvidia.com/mig-1g.18gb", [MIG0])])]),
    ("shared-a", "lab", [("nb", [("nvidia.com/gpu.shared", [f"{GPU2}::1"])])]),
    ("shared-b", "lab", [("nb", [("nvidia.com/gpu.shared", [f"{GPU2}::0"])])]),
    ("cpu-only", "default", [("app", [("example.com/fpga", ["fpga0"])])]),
]


def _wait_for(predicate: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def test_client_maps_gpu_and_mig_uuids_to_containers(kubelet: Callable[[Pods], FakeKubelet],
                                                     sock: Path) -> None:
    kubelet(NODE)
    with PodResourcesClient(str(sock), timeout_s=2.0) as client:
        assignments = client.list_gpu_assignments()
        raw = client.list_pod_resources()
    assert assignments == {
        GPU0: PodRef("llm-0", "serving", "server"),
        GPU1: PodRef("llm-0", "serving", "server"),
        MIG0: PodRef("batch-7", "jobs", "worker"),
        # time-sliced replicas lose their `::n` suffix; the first pod in name order wins
        GPU2: PodRef("shared-a", "lab", "nb"),
    }
    assert [p.name for p in raw.pod_resources] == ["llm-0", "batch-7", "shared-a", "shared-b", "cpu-only"]


def test_attributor_refreshes_when_the_answer_changes(kubelet: Callable[[Pods], FakeKubelet],
                                                      sock: Path) -> None:
    server = kubelet(NODE)
    with PodAttributor(str(sock), refresh_s=0.1, timeout_s=2.0) as attributor:
        # start() refreshed once synchronously: labels are there for the first scrape
        assert attributor.available
        assert attributor.lookup(GPU0) == PodRef("llm-0", "serving", "server")
        assert attributor.lookup("GPU-not-assigned") is None
        server.pods = [("llm-1", "serving", [("server", [("nvidia.com/gpu", [GPU0])])])]
        assert _wait_for(lambda: attributor.lookup(GPU0) == PodRef("llm-1", "serving", "server"))
        assert attributor.lookup(GPU1) is None
        assert attributor.lookup(MIG0) is None
    calls = server.calls
    time.sleep(0.3)
    assert server.calls == calls, "stop() must end the refresh thread"


def test_absent_socket_means_no_labels_and_one_info_log(sock: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    with pytest.raises(PodResourcesUnavailable):
        PodResourcesClient(str(sock)).list_gpu_assignments()
    caplog.clear()
    with PodAttributor(str(sock), refresh_s=0.05) as attributor:
        time.sleep(0.4)  # several background refreshes
        assert attributor.refresh_once() is False
        assert attributor.lookup(GPU0) is None
        assert not attributor.available
    records = [r for r in caplog.records if r.name == LOGGER]
    assert [r.levelno for r in records] == [logging.INFO], [r.getMessage() for r in records]
    assert f"no pod-resources socket at {sock}" in records[0].getMessage()


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_a_file_or_folder_where_the_socket_should_be_is_named_as_such(tmp_path: Path, kind: str) -> None:
    """`--pod-resources-socket` pointed at a file or a folder was logged as "socket ... not found"."""
    path = tmp_path / "kubelet.sock"
    if kind == "file":
        path.write_text("not a socket")
    else:
        path.mkdir()
    with pytest.raises(PodResourcesUnavailable, match=f"{path} is a {kind}, not the kubelet's pod-resources"):
        PodResourcesClient(str(path)).list_gpu_assignments()


def test_kubelet_appearing_later_is_picked_up(kubelet: Callable[[Pods], FakeKubelet], sock: Path) -> None:
    with PodAttributor(str(sock), refresh_s=0.1, timeout_s=2.0) as attributor:
        assert attributor.lookup(GPU0) is None
        kubelet(NODE)
        assert _wait_for(lambda: attributor.lookup(GPU0) is not None)


def test_failing_kubelet_keeps_last_mapping_warns_once_and_recovers(
        kubelet: Callable[[Pods], FakeKubelet], sock: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    server = kubelet(NODE)
    attributor = PodAttributor(str(sock), refresh_s=60, timeout_s=1.0)
    try:
        assert attributor.refresh_once()
        before = attributor.mapping()

        server.fail_with = grpc.StatusCode.INTERNAL
        assert attributor.refresh_once() is False
        server.stop()  # the kubelet goes away
        assert attributor.refresh_once() is False
        assert attributor.refresh_once() is False
        assert attributor.mapping() == before
        assert attributor.lookup(GPU0) == PodRef("llm-0", "serving", "server")
        warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]
        assert "INTERNAL" in warnings[0].getMessage()

        # the kubelet restarts on the same path with a new answer: picked up at the next refresh
        server2 = FakeKubelet(sock, [("llm-2", "serving", [("server", [("nvidia.com/gpu", [GPU1])])])])
        server2.start()
        try:
            assert attributor.refresh_once()
            assert attributor.mapping() == {GPU1: PodRef("llm-2", "serving", "server")}
            assert attributor.available
        finally:
            server2.stop()
    finally:
        attributor.stop()


def test_hanging_kubelet_is_bounded_by_the_timeout(kubelet: Callable[[Pods], FakeKubelet],
                                                   sock: Path) -> None:
    server = kubelet(NODE)
    server.delay_s = 2.0
    client = PodResourcesClient(str(sock), timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(PodResourcesError, match="DEADLINE_EXCEEDED"):
        client.list_gpu_assignments()
    assert time.monotonic() - started < 1.5
    client.close()


def test_lookups_during_refreshes_are_consistent(kubelet: Callable[[Pods], FakeKubelet], sock: Path) -> None:
    server = kubelet(NODE)
    answers = [
        [("a", "ns", [("c", [("nvidia.com/gpu", [GPU0, GPU1])])])],
        [("b", "ns", [("c", [("nvidia.com/gpu", [GPU0, GPU1])])])],
    ]
    seen: set[tuple[str | None, str | None]] = set()
    stop = threading.Event()
    with PodAttributor(str(sock), refresh_s=0.01, timeout_s=2.0) as attributor:
        def flip() -> None:
            i = 0
            while not stop.is_set():
                server.pods = answers[i % 2]
                i += 1
                time.sleep(0.01)

        flipper = threading.Thread(target=flip)
        flipper.start()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            mapping = attributor.mapping()
            a, b = mapping.get(GPU0), mapping.get(GPU1)
            seen.add((a.pod if a else None, b.pod if b else None))
        stop.set()
        flipper.join()
    # every snapshot is one whole answer: both GPUs always belong to the same pod
    assert {pair for pair in seen if pair[0] != pair[1]} == set()
    assert {("a", "a"), ("b", "b")} <= seen
