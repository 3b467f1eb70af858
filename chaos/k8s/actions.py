"""Kubernetes actions: delete or evict a pod, cordon, uncordon and drain a node (through the client).

Every action refuses protected namespaces (kube-system by default) and more objects than the
blast-radius limit (`gpuobs.chaos.safety`); dry runs list what would be touched.
"""

from __future__ import annotations

import logging
from typing import Any

from chaoslib.exceptions import ActivityFailed

from gpuobs.chaos.incident import current
from gpuobs.chaos.k8s import client as k8s_client
from gpuobs.chaos.safety import check_blast_radius, check_namespace, is_dry_run

__all__ = ["cordon_node", "delete_pods", "drain_node", "evict_pod", "uncordon_node"]

logger = logging.getLogger("chaostoolkit")


def delete_pods(
    namespace: str,
    label_selector: str = "",
    name: str | None = None,
    grace_period_s: int = 30,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> list[str]:
    """Delete the pod `name`, or the pods matching `label_selector`, in `namespace`; returns their names."""
    check_namespace(namespace, configuration)
    api = k8s_client.core_api(secrets)
    if name:
        names = [name]
    else:
        if not label_selector:
            raise ActivityFailed("delete_pods needs a pod name or a label_selector")
        pods = api.list_namespaced_pod(namespace, label_selector=label_selector)
        names = [p.metadata.name for p in pods.items]
    if not names:
        raise ActivityFailed(f"no pod matches {name or label_selector} in {namespace}")
    check_blast_radius(len(names), configuration, "pods")
    if is_dry_run(configuration):
        logger.info("dry run: would delete pods %s in %s", names, namespace)
        return names
    current().mark("fault", {"action": "delete_pods", "pods": names})
    for pod in names:
        api.delete_namespaced_pod(pod, namespace, grace_period_seconds=grace_period_s)
    return names


def evict_pod(
    name: str,
    namespace: str,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> str:
    """Evict one pod through the Eviction API (PodDisruptionBudgets apply, as in a drain)."""
    from kubernetes import client

    check_namespace(namespace, configuration)
    check_blast_radius(1, configuration, "pods")
    if is_dry_run(configuration):
        return name
    api = k8s_client.core_api(secrets)
    current().mark("fault", {"action": "evict_pod", "pod": name})
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace))
    api.create_namespaced_pod_eviction(name, namespace, body)
    return name


def _set_unschedulable(api: Any, node: str, value: bool) -> None:
    api.patch_node(node, {"spec": {"unschedulable": value}})


def cordon_node(
    name: str,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> str:
    """Mark node `name` unschedulable; the undo uncordons it."""
    check_blast_radius(1, configuration, "nodes")
    if is_dry_run(configuration):
        return name
    api = k8s_client.core_api(secrets)
    current().add_undo(f"k8s.cordon.{name}", lambda: _set_unschedulable(api, name, False))
    current().mark("fault", {"action": "cordon_node", "node": name})
    _set_unschedulable(api, name, True)
    return name


def uncordon_node(
    name: str,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> str:
    """Mark node `name` schedulable again (the rollback of cordon_node and drain_node)."""
    if is_dry_run(configuration):
        return name
    current().pop_undos(f"k8s.cordon.{name}")
    _set_unschedulable(k8s_client.core_api(secrets), name, False)
    return name


def drain_node(
    name: str,
    label_selector: str = "",
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> list[str]:
    """Cordon node `name` and evict its pods (those matching `label_selector`, when given).

    Pods in protected namespaces stay where they are; more pods than the blast-radius limit is refused
    before anything is touched. Returns the evicted pods as namespace/name.
    """
    api = k8s_client.core_api(secrets)
    pods = api.list_pod_for_all_namespaces(
        field_selector=f"spec.nodeName={name}", label_selector=label_selector
    )
    protected, targets = [], []
    for pod in pods.items:
        try:
            check_namespace(pod.metadata.namespace, configuration)
            targets.append(pod)
        except ActivityFailed:
            protected.append(f"{pod.metadata.namespace}/{pod.metadata.name}")
    if protected:
        logger.info("drain %s leaves pods of protected namespaces alone: %s", name, protected)
    check_blast_radius(len(targets), configuration, "pods")
    evicted = [f"{p.metadata.namespace}/{p.metadata.name}" for p in targets]
    if is_dry_run(configuration):
        return evicted
    cordon_node(name, configuration, secrets)
    for pod in targets:
        evict_pod(pod.metadata.name, pod.metadata.namespace, configuration, secrets)
    return evicted
