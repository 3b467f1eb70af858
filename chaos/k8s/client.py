"""Where the Kubernetes activities get their API client (tests replace `core_api` at this boundary)."""

from __future__ import annotations

from typing import Any

__all__ = ["core_api"]


def core_api(secrets: dict[str, Any] | None = None) -> Any:
    """A `kubernetes.client.CoreV1Api` from the in-cluster config, else the current kubeconfig context."""
    try:
        from kubernetes import client, config
    except ImportError as exc:
        from chaoslib.exceptions import ActivityFailed

        raise ActivityFailed(
            "Kubernetes activities need the kubernetes package: pip install 'gpuobs[k8s]'"
        ) from exc
    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config(context=(secrets or {}).get("kube_context"))
    return client.CoreV1Api()
