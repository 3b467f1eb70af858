"""Kubernetes actions: delete or evict a pod, cordon, uncordon and drain a node (through the client).

Every action refuses protected namespaces (kube-system by default) and more objects than the
blast-radius limit (`gpuobs.chaos.safety`); dry runs list what would be touched. A fault is marked only
once the API server took the first write (at the time it was sent), so an API that refuses one (RBAC, a
proxy's login page, no server at all) fails the action at once, with the server's own words, and the probes
after it do not wait for a fault that never went in. A node that someone else cordoned is left to them.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from chaoslib.exceptions import ActivityFailed

from gpuobs.chaos.incident import current
from gpuobs.chaos.k8s import client as k8s_client
from gpuobs.chaos.k8s.client import call
from gpuobs.chaos.safety import check_blast_radius, check_namespace, is_dry_run

__all__ = ["cordon_node", "delete_pods", "drain_node", "evict_pod", "uncordon_node"]

logger = logging.getLogger("chaostoolkit")


def _refused(reason: str) -> ActivityFailed:
    """No fault went in: the probes after this action fail at once with `reason`."""
    current().fault_refused(reason)
    return ActivityFailed(reason)


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
    if not name and not label_selector:
        raise ActivityFailed("delete_pods needs a pod name or a label_selector")
    api = k8s_client.core_api(secrets)
    try:
        if name:
            call(api, f"reading pod {namespace}/{name}", api.read_namespaced_pod, name, namespace)
            names = [name]
        else:
            pods = call(
                api, f"listing pods {label_selector} in {namespace}", api.list_namespaced_pod, namespace,
                label_selector=label_selector,
            )
            names = [p.metadata.name for p in pods.items]
    except ActivityFailed as exc:
        raise _refused(str(exc)) from None
    if not names:
        raise _refused(f"no pod matches {name or label_selector} in {namespace}")
    check_blast_radius(len(names), configuration, "pods")
    if is_dry_run(configuration):
        logger.info("dry run: would delete pods %s in %s", names, namespace)
        return names
    for done, pod in enumerate(names):
        sent = time.time()
        try:
            call(
                api, f"deleting pod {namespace}/{pod}", api.delete_namespaced_pod, pod, namespace,
                grace_period_seconds=grace_period_s,
            )
        except ActivityFailed as exc:
            if not done:
                raise _refused(str(exc)) from None
            raise ActivityFailed(f"{exc} (deleted before it: {', '.join(names[:done])})") from None
        current().mark("fault", {"action": "delete_pods", "pods": names}, at=sent)
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
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace))
    sent = time.time()
    try:
        what = f"evicting pod {namespace}/{name}"
        call(api, what, api.create_namespaced_pod_eviction, name, namespace, body)
    except ActivityFailed as exc:
        if current().since_fault() is None:  # the first write of the experiment: nothing went in
            raise _refused(str(exc)) from None
        raise
    current().mark("fault", {"action": "evict_pod", "pod": name}, at=sent)
    return name


def _set_unschedulable(api: Any, node: str, value: bool) -> None:
    verb = "cordoning" if value else "uncordoning"
    call(api, f"{verb} node {node}", api.patch_node, node, {"spec": {"unschedulable": value}})


def _is_cordoned(api: Any, node: str) -> bool:
    found = call(api, f"reading node {node}", api.read_node, node)
    return bool(getattr(getattr(found, "spec", None), "unschedulable", False))


def cordon_node(
    name: str,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> str:
    """Mark node `name` unschedulable; the undo uncordons it. A node already cordoned (by an operator, or
    an earlier run's rollback that failed) is refused: the rollback would uncordon what was not ours."""
    check_blast_radius(1, configuration, "nodes")
    if is_dry_run(configuration):
        return name
    api = k8s_client.core_api(secrets)
    try:
        if _is_cordoned(api, name):
            raise ActivityFailed(
                f"node {name} is already cordoned (by someone else, or a run whose rollback failed): it is "
                "left as it is; uncordon it yourself if it should take pods"
            )
        sent = time.time()
        _set_unschedulable(api, name, True)
    except ActivityFailed as exc:
        raise _refused(str(exc)) from None
    current().add_undo(f"k8s.cordon.{name}/", lambda: _set_unschedulable(api, name, False))
    current().mark("fault", {"action": "cordon_node", "node": name}, at=sent)
    return name


def uncordon_node(
    name: str,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> str:
    """Mark node `name` schedulable again: the rollback of cordon_node and drain_node. A node this run did
    not cordon (its cordon was refused, or someone else's) is left as it is."""
    if is_dry_run(configuration):
        return name
    if not current().pop_undos(f"k8s.cordon.{name}/"):  # "/": node-1 is not node-10
        logger.info("node %s was not cordoned by this experiment: left as it is", name)
        return name
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
    try:
        pods = call(
            api, f"listing the pods of node {name}", api.list_pod_for_all_namespaces,
            field_selector=f"spec.nodeName={name}", label_selector=label_selector,
        )
    except ActivityFailed as exc:
        raise _refused(str(exc)) from None
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
