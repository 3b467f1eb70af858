"""Kubernetes probes: how many pods matching a selector are ready."""

from __future__ import annotations

from typing import Any

from gpuobs.chaos.k8s import client as k8s_client
from gpuobs.chaos.k8s.client import call

__all__ = ["pods_ready"]


def pods_ready(
    namespace: str,
    label_selector: str = "",
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> int:
    """The number of pods matching `label_selector` in `namespace` whose Ready condition is True."""
    api = k8s_client.core_api(secrets)
    pods = call(
        api, f"listing pods {label_selector} in {namespace}", api.list_namespaced_pod, namespace,
        label_selector=label_selector,
    )
    ready = 0
    for pod in pods.items:
        conditions = (pod.status.conditions or []) if pod.status else []
        if any(c.type == "Ready" and c.status == "True" for c in conditions):
            ready += 1
    return ready
