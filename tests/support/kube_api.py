"""A MOCK Kubernetes API server for tests (no real API server can run here): a loopback HTTP server that
answers the two list calls gpuobs makes (events and pods of the `serving` namespace) with the recorded
objects below, and a kubeconfig that points the real `kubernetes` client at it."""

# ruff: noqa: E501  (real Kubernetes messages are longer than the code line limit)

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

__all__ = ["EVENTS", "PODS", "MockApiServer", "mock_kube_api", "write_kubeconfig"]

EVENTS: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "List",
    "metadata": {"resourceVersion": ""},
    "items": [
        {
            "apiVersion": "v1",
            "kind": "Event",
            "count": 14,
            "type": "Warning",
            "reason": "FailedScheduling",
            "message": "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
            "3 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: 1 Preemption is not helpful "
            "for scheduling, 3 No preemption victims found for incoming pod.",
            "firstTimestamp": "2026-11-29T09:50:00Z",
            "lastTimestamp": "2026-11-29T10:00:00Z",
            "involvedObject": {"kind": "Pod", "name": "llm-7b-6f9c", "namespace": "serving"},
            "metadata": {"name": "llm-7b-6f9c.17", "namespace": "serving"},
            "source": {"component": "default-scheduler"},
        },
        {
            "apiVersion": "v1",
            "kind": "Event",
            "count": 31,
            "type": "Warning",
            "reason": "BackOff",
            "message": "Back-off restarting failed container vllm in pod vllm-0_serving(1234)",
            "lastTimestamp": "2026-11-29T10:01:00Z",
            "involvedObject": {
                "kind": "Pod",
                "name": "vllm-0",
                "namespace": "serving",
                "fieldPath": "spec.containers{vllm}",
            },
            "source": {"component": "kubelet", "host": "gpu-node-3"},
            "metadata": {"name": "vllm-0.1"},
        },
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "reason": "Unhealthy",
            "type": "Warning",
            "note": "Readiness probe failed: HTTP probe failed with statuscode: 503",
            "deprecatedCount": 5,
            "eventTime": "2026-11-29T10:02:00.123456Z",
            "reportingInstance": "gpu-node-3",
            "regarding": {"kind": "Pod", "name": "vllm-0", "namespace": "serving"},
            "metadata": {"name": "e3"},
        },
    ],
}

PODS: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "vllm-0", "namespace": "serving"},
            "spec": {
                "nodeName": "gpu-node-3",
                "containers": [
                    {
                        "name": "vllm",
                        "resources": {"limits": {"nvidia.com/gpu": "1", "memory": "64Gi"}},
                        "env": [{"name": "HF_TOKEN", "value": "hf_abcdefghijklmnopqrstuvwxyz0123456789"}],
                    }
                ],
            },
            "status": {
                "phase": "Running",
                "containerStatuses": [
                    {
                        "name": "vllm",
                        "restartCount": 7,
                        "ready": False,
                        "state": {
                            "waiting": {
                                "reason": "CrashLoopBackOff",
                                "message": "back-off 5m0s restarting failed container=vllm",
                            }
                        },
                        "lastState": {
                            "terminated": {
                                "reason": "OOMKilled",
                                "exitCode": 137,
                                "startedAt": "2026-11-29T09:58:00Z",
                                "finishedAt": "2026-11-29T09:59:30Z",
                            }
                        },
                    }
                ],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "llm-7b-6f9c", "namespace": "serving"},
            "spec": {"containers": [{"name": "llm", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
            "status": {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "lastTransitionTime": "2026-11-29T09:50:00Z",
                        "message": "0/4 nodes are available: 3 Insufficient nvidia.com/gpu, 1 Insufficient memory.",
                    }
                ],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "batch-1", "namespace": "serving"},
            "spec": {"nodeName": "gpu-node-1", "containers": [{"name": "job"}]},
            "status": {
                "phase": "Failed",
                "containerStatuses": [
                    {
                        "name": "job",
                        "restartCount": 0,
                        "state": {
                            "terminated": {
                                "reason": "Error",
                                "exitCode": 137,
                                "finishedAt": "2026-11-29T10:03:00Z",
                            }
                        },
                    }
                ],
            },
        },
    ],
}


class MockApiServer(BaseHTTPRequestHandler):
    """MOCK Kubernetes API server: answers the two list calls the live source makes, records paths."""

    seen: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        MockApiServer.seen.append(self.path)
        path = self.path.split("?")[0]
        if path == "/api/v1/namespaces/serving/events":
            body = {**EVENTS, "kind": "EventList"}
        elif path == "/api/v1/namespaces/serving/pods":
            body = {**PODS, "kind": "PodList"}
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def write_kubeconfig(path: Path, server: str, namespace: str | None = None) -> Path:
    """A kubeconfig whose one context points the real `kubernetes` client at `server` (a token that is no
    secret); returns `path`."""
    context: dict[str, str] = {"cluster": "mock", "user": "u"}
    if namespace:
        context["namespace"] = namespace
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "mock",
        "clusters": [{"name": "mock", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "not-a-real-token"}}],
        "contexts": [{"name": "mock", "context": context}],
    }
    path.write_text(json.dumps(config))
    return path


@contextmanager
def mock_kube_api(kubeconfig: Path) -> Iterator[str]:
    """Serve the MOCK API on loopback and write a kubeconfig for it at `kubeconfig` (namespace `serving`);
    yields the server URL. Point KUBECONFIG at the file."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), MockApiServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    write_kubeconfig(kubeconfig, url, namespace="serving")
    MockApiServer.seen.clear()
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()
