"""Kubernetes source: saved `kubectl get events/pods -o json` dumps, and the live path through the real
`kubernetes` client against a MOCK API server (a loopback HTTP server answering the two list calls;
no Kubernetes API server can run here)."""

# ruff: noqa: E501  (real log lines and Kubernetes messages are longer than the code line limit)

from __future__ import annotations

import calendar
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from gpuobs.errors import InputError
from gpuobs.rca import DiagnoseInputs, TimeWindow, collect, keys
from gpuobs.rca.parsers.k8s import evidence_from_objects, maybe_k8s_json
from gpuobs.rca.readers.kubernetes import fetch_live

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


def _ts(*parts: int) -> float:
    return float(calendar.timegm((*parts, 0, 0, 0)))


def test_saved_events_dump() -> None:
    objects = maybe_k8s_json(json.dumps(EVENTS))
    assert objects is not None
    evs = evidence_from_objects(objects, source="events.json")
    assert [e.value for e in evs] == ["FailedScheduling", "BackOff", "Unhealthy"]
    sched = evs[0]
    assert sched.key == keys.K8S_EVENT and sched.attrs["insufficient"] == ["nvidia.com/gpu"]
    assert sched.attrs["count"] == 14 and sched.time == _ts(2026, 11, 29, 10, 0, 0)
    assert sched.entity.pod == "llm-7b-6f9c" and sched.entity.namespace == "serving"
    backoff = evs[1]
    assert backoff.entity.container == "vllm" and backoff.entity.host == "gpu-node-3"
    unhealthy = evs[2]
    assert unhealthy.attrs["count"] == 5 and unhealthy.time == pytest.approx(
        _ts(2026, 11, 29, 10, 2, 0) + 0.123456
    )


def test_saved_pods_dump() -> None:
    evs = evidence_from_objects(maybe_k8s_json(json.dumps(PODS)) or [], source="pods.json")
    got = [(e.value, e.entity.pod, e.attrs.get("state"), e.attrs.get("exit_code")) for e in evs]
    assert got == [
        ("CrashLoopBackOff", "vllm-0", "waiting", None),
        ("OOMKilled", "vllm-0", "last_terminated", 137),
        ("Unschedulable", "llm-7b-6f9c", "pending", None),
        ("Error", "batch-1", "terminated", 137),
    ]
    oom = evs[1]
    assert oom.attrs["restarts"] == 7 and oom.attrs["gpus"] == 1 and oom.entity.host == "gpu-node-3"
    assert oom.time == _ts(2026, 11, 29, 9, 59, 30)
    assert evs[2].attrs["insufficient"] == ["memory", "nvidia.com/gpu"]


def test_dumps_among_log_inputs(tmp_path: Path) -> None:
    (tmp_path / "events.json").write_text(json.dumps(EVENTS, indent=2))
    (tmp_path / "pods.json").write_text(json.dumps(PODS))
    result = collect(DiagnoseInputs(logs=[str(tmp_path)], live=False))
    assert sorted({e.key for e in result.evidence}) == [keys.K8S_EVENT, keys.K8S_POD_STATUS]
    assert len(result.evidence) == 7
    # a window filters by time
    window = collect(
        DiagnoseInputs(logs=[str(tmp_path)], window=TimeWindow(_ts(2026, 11, 29, 10, 0, 30), None), live=False)
    )
    assert sorted(str(e.value) for e in window.evidence if e.time is not None) == [
        "BackOff",
        "Error",
        "Unhealthy",
    ]
    assert maybe_k8s_json('{"msg": "not kubernetes"}') is None


class _MockApiServer(BaseHTTPRequestHandler):
    """MOCK Kubernetes API server: answers the two list calls the live source makes, records paths."""

    seen: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        _MockApiServer.seen.append(self.path)
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


@pytest.fixture
def mock_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _MockApiServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "mock",
                "clusters": [{"name": "mock", "cluster": {"server": url}}],
                "users": [{"name": "u", "user": {"token": "not-a-real-token"}}],
                "contexts": [
                    {"name": "mock", "context": {"cluster": "mock", "user": "u", "namespace": "serving"}}
                ],
            }
        )
    )
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    _MockApiServer.seen.clear()
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()


def test_live_namespace_through_the_kubernetes_client(mock_api: str) -> None:
    evs = fetch_live("serving")
    assert [p.split("?")[0] for p in _MockApiServer.seen] == [
        "/api/v1/namespaces/serving/events",
        "/api/v1/namespaces/serving/pods",
    ]
    assert sorted(str(e.value) for e in evs) == sorted(
        [
            "FailedScheduling",
            "BackOff",
            "Unhealthy",
            "CrashLoopBackOff",
            "OOMKilled",
            "Unschedulable",
            "Error",
        ]
    )
    assert all(e.source == "kubernetes:serving" for e in evs)
    oom = next(e for e in evs if e.value == "OOMKilled")
    assert oom.attrs["exit_code"] == 137 and oom.time == _ts(2026, 11, 29, 9, 59, 30)


def test_live_api_failure_is_a_problem(mock_api: str) -> None:
    result = collect(DiagnoseInputs(k8s_namespace="other-namespace", live=False))
    assert result.evidence == [] and len(result.problems) == 1
    assert result.problems[0].startswith("[kubernetes]") and "other-namespace" in result.problems[0]


def test_no_kubeconfig_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(InputError, match="no Kubernetes configuration"):
        fetch_live("serving")
