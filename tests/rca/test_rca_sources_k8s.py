"""Kubernetes source: saved `kubectl get events/pods -o json` dumps, and the live path through the real
`kubernetes` client against a MOCK API server (a loopback HTTP server answering the two list calls;
no Kubernetes API server can run here)."""

from __future__ import annotations

import calendar
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.kube_api import EVENTS, PODS, MockApiServer, mock_kube_api

from gpuobs.errors import InputError
from gpuobs.rca import DiagnoseInputs, TimeWindow, collect, diagnose, keys
from gpuobs.rca.parsers.k8s import evidence_from_objects, maybe_k8s_json
from gpuobs.rca.readers.kubernetes import fetch_live


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


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        (
            "UnexpectedAdmissionError",
            "Pod was rejected: Allocate failed due to requested number of devices unavailable for "
            "nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected",
        ),
        ("OutOfnvidia.com/gpu", "Pod Node didn't have enough resource: nvidia.com/gpu, requested: 1"),
    ],
)
def test_a_pod_the_kubelet_refused_for_its_gpu_names_no_gpu_visible(
    tmp_path: Path, reason: str, message: str
) -> None:
    """`kubectl get pods -o json` of a pod the kubelet would not admit: the Kubernetes reader's record is
    what the catalog's no_device variant reads (the describe-text form is in the message tests)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "train-job-7c9f", "namespace": "ml"},
        "spec": {"nodeName": "gpu-node-3"},
        "status": {"phase": "Failed", "reason": reason, "message": message},
    }
    (tmp_path / "pods.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod]}))
    report = diagnose(DiagnoseInputs(logs=[str(tmp_path / "pods.json")], live=False))
    assert [c.id for c in report.causes][:1] == ["gpu_not_visible"]

def test_dumps_among_log_inputs(tmp_path: Path) -> None:
    (tmp_path / "events.json").write_text(json.dumps(EVENTS, indent=2))
    (tmp_path / "pods.json").write_text(json.dumps(PODS))
    result = collect(DiagnoseInputs(logs=[str(tmp_path)], live=False))
    assert sorted({e.key for e in result.evidence}) == [keys.K8S_EVENT, keys.K8S_POD_STATUS]
    assert len(result.evidence) == 7
    # a window filters by time
    window = collect(
        DiagnoseInputs(
            logs=[str(tmp_path)], window=TimeWindow(_ts(2026, 11, 29, 10, 0, 30), None), live=False
        )
    )
    assert sorted(str(e.value) for e in window.evidence if e.time is not None) == [
        "BackOff",
        "Error",
        "Unhealthy",
    ]
    assert maybe_k8s_json('{"msg": "not kubernetes"}') is None


@pytest.fixture
def mock_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    kubeconfig = tmp_path / "kubeconfig"
    with mock_kube_api(kubeconfig) as url:
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        yield url


def test_live_namespace_through_the_kubernetes_client(mock_api: str) -> None:
    evs = fetch_live("serving")
    assert [p.split("?")[0] for p in MockApiServer.seen] == [
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
    """The MOCK server answers 404 for any other namespace: one line with the status (the client's own text
    ran over several lines of headers and body)."""
    result = collect(DiagnoseInputs(k8s_namespace="other-namespace", live=False))
    assert result.evidence == [] and len(result.problems) == 1
    problem = result.problems[0]
    assert problem.startswith("[kubernetes]") and "other-namespace" in problem
    assert "(HTTP 404 Not Found)" in problem and "\n" not in problem, problem


def test_an_unreachable_api_server_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """urllib3's retry chain (`Max retries exceeded ... NewConnectionError(...)`) is said as what it means."""
    kubeconfig = tmp_path / "kubeconfig"
    with mock_kube_api(kubeconfig) as url:
        pass  # the server is stopped: its port refuses connections
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    with pytest.raises(InputError) as err:
        fetch_live("serving")
    assert str(err.value) == (
        f"Kubernetes API {url}: cannot list events/pods in serving "
        "(unreachable: [Errno 111] Connection refused)"
    )


def test_a_broken_kubeconfig_is_named_not_reported_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kubeconfig that exists but cannot be read was reported as "no Kubernetes configuration found
    (Service host/port is not set.)": the in-cluster fallback's error, which hid the file's."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("clusters: [unclosed\n")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    expected = rf"kubeconfig {re.escape(str(kubeconfig))} cannot be used \(while parsing"
    with pytest.raises(InputError, match=expected):
        fetch_live("serving")


@pytest.mark.parametrize("namespace", ["Serving", "gpu_pods", "-serving", "a" * 64, "serving!"])
def test_a_namespace_that_cannot_exist_is_a_usage_error(namespace: str) -> None:
    with pytest.raises(InputError, match="is not a namespace name"):
        DiagnoseInputs(k8s_namespace=namespace)


def test_no_kubeconfig_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(InputError, match="no Kubernetes configuration"):
        fetch_live("serving")
