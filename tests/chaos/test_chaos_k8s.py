"""Kubernetes experiments against a MOCK Kubernetes API (there is no API server here): the mock stands at
the one boundary `gpuobs.chaos.k8s.client.core_api`, and the tests check the calls the actions make."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from chaoslib.experiment import run_experiment
from support.paths import EXPERIMENTS

from gpuobs.chaos.gameday.runner import load_experiment
from gpuobs.chaos.k8s import actions, probes
from gpuobs.chaos.k8s import client as k8s_client
from gpuobs.chaos.safety import SafetyError


def _pod(name: str, namespace: str, ready: bool = True) -> Any:
    cond = SimpleNamespace(type="Ready", status="True" if ready else "False")
    return SimpleNamespace(
        metadata=SimpleNamespace(name=name, namespace=namespace), status=SimpleNamespace(conditions=[cond])
    )


class MockKubernetesApi:
    """Stands in for kubernetes.client.CoreV1Api: answers lists from `pods`, records every write."""

    def __init__(self, pods: list[Any]) -> None:
        self.pods = pods
        self.cordoned: set[str] = set()
        self.calls: list[tuple[str, Any]] = []

    def read_namespaced_pod(self, name: str, namespace: str) -> Any:
        return next(p for p in self.pods if (p.metadata.name, p.metadata.namespace) == (name, namespace))

    def read_node(self, name: str) -> Any:
        return SimpleNamespace(spec=SimpleNamespace(unschedulable=name in self.cordoned or None))

    def list_namespaced_pod(self, namespace: str, label_selector: str = "") -> Any:
        return SimpleNamespace(items=[p for p in self.pods if p.metadata.namespace == namespace])

    def list_pod_for_all_namespaces(self, field_selector: str = "", label_selector: str = "") -> Any:
        self.calls.append(("list_all", field_selector))
        return SimpleNamespace(items=list(self.pods))

    def delete_namespaced_pod(self, name: str, namespace: str, grace_period_seconds: int = 30) -> None:
        self.calls.append(("delete", f"{namespace}/{name}"))

    def create_namespaced_pod_eviction(self, name: str, namespace: str, body: Any) -> None:
        self.calls.append(("evict", f"{namespace}/{name}"))

    def patch_node(self, name: str, body: Any) -> None:
        self.calls.append(("patch_node", (name, body["spec"]["unschedulable"])))
        (self.cordoned.add if body["spec"]["unschedulable"] else self.cordoned.discard)(name)


@pytest.fixture
def mock_api(monkeypatch: pytest.MonkeyPatch) -> MockKubernetesApi:
    api = MockKubernetesApi([_pod("serve-a", "gpuobs"), _pod("dcgm-x", "kube-system")])
    monkeypatch.setattr(k8s_client, "core_api", lambda secrets=None: api)
    return api


def test_pod_delete_experiment_runs_against_the_mock_api(mock_api: MockKubernetesApi) -> None:
    exp = load_experiment(EXPERIMENTS / "k8s-pod-delete.json")
    journal = run_experiment(exp, settings={}, experiment_vars=({"namespace": "gpuobs"}, {}))
    assert journal["status"] == "completed" and journal["steady_states"]["before"]["steady_state_met"]
    assert mock_api.calls == [("delete", "gpuobs/serve-a")]


def test_node_drain_experiment_cordons_evicts_and_uncordons(mock_api: MockKubernetesApi) -> None:
    exp = load_experiment(EXPERIMENTS / "k8s-node-drain.json")
    journal = run_experiment(
        exp,
        settings={"runtime": {"rollbacks": {"strategy": "always"}}},
        experiment_vars=({"namespace": "gpuobs", "node_name": "gpu-node-7"}, {}),
    )
    assert journal["status"] == "completed"
    assert mock_api.calls == [
        ("list_all", "spec.nodeName=gpu-node-7"),
        ("patch_node", ("gpu-node-7", True)),
        ("evict", "gpuobs/serve-a"),  # the kube-system pod stays
        ("patch_node", ("gpu-node-7", False)),
    ]


def test_protected_namespace_and_blast_radius_refuse_before_any_write(mock_api: MockKubernetesApi) -> None:
    with pytest.raises(SafetyError, match="protected"):
        actions.delete_pods("kube-system", name="dcgm-x")
    mock_api.pods.append(_pod("serve-b", "gpuobs"))
    with pytest.raises(SafetyError, match="blast-radius"):
        actions.delete_pods("gpuobs", label_selector="app=gpuobs-serve")
    assert [c for c in mock_api.calls if c[0] != "list_all"] == []
    assert actions.delete_pods(
        "gpuobs", "app=gpuobs-serve", configuration={"gpuobs_max_blast_radius": 2}
    ) == ["serve-a", "serve-b"]
    assert probes.pods_ready("gpuobs") == 2
