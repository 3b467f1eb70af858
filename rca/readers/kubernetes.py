"""A Kubernetes namespace -> Evidence: its events and pod statuses, listed from the API server.

Uses the `kubernetes` client (imported lazily, extra `k8s`) with the current kubeconfig context, or the
in-cluster configuration inside a pod.
"""

from __future__ import annotations

import json
import os
from typing import Any

from gpuobs.errors import InputError
from gpuobs.evidence import Evidence
from gpuobs.rca.parsers.k8s import evidence_from_objects

__all__ = ["fetch_live", "fetch_live_objects"]


def fetch_live(
    namespace: str,
    start: float | None = None,
    end: float | None = None,
    raw: dict[str, Any] | None = None,
) -> list[Evidence]:
    """Events and pod statuses of `namespace` from the current kubeconfig context (or in-cluster).

    With `raw`, the listed objects are also stored in it under `k8s:<namespace>` (for bundles).
    """
    objects = fetch_live_objects(namespace)
    if raw is not None:
        raw[f"k8s:{namespace}"] = {"apiVersion": "v1", "kind": "List", "items": objects}
    evidence = evidence_from_objects(objects, source=f"kubernetes:{namespace}")
    if start is not None or end is not None:
        evidence = [
            e
            for e in evidence
            if e.time is None or ((start is None or e.time >= start) and (end is None or e.time <= end))
        ]
    return evidence


def fetch_live_objects(namespace: str) -> list[dict[str, Any]]:
    """The Event and Pod objects of `namespace`, as the API server's JSON."""
    from gpuobs.extras import require

    k8s = require("kubernetes", "k8s")
    cfg = k8s.client.Configuration()
    try:
        try:
            # KUBECONFIG read now: the client reads it once at import time.
            path = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
            k8s.config.load_kube_config(config_file=path, client_configuration=cfg)
        except Exception:  # no kubeconfig: maybe we run inside a pod
            k8s.config.load_incluster_config(client_configuration=cfg)
    except Exception as exc:
        raise InputError(f"--k8s-namespace {namespace}: no Kubernetes configuration found ({exc})") from exc
    cfg.retries = 1
    api = k8s.client.CoreV1Api(k8s.client.ApiClient(cfg))
    try:
        # Raw JSON, not the typed models: the evidence only needs a few fields, and raw parsing does
        # not break on fields a newer API server adds.
        raw_events = api.list_namespaced_event(namespace, _preload_content=False, _request_timeout=20)
        raw_pods = api.list_namespaced_pod(namespace, _preload_content=False, _request_timeout=20)
        events = json.loads(raw_events.data).get("items", [])
        pods = json.loads(raw_pods.data).get("items", [])
    except Exception as exc:
        raise InputError(f"Kubernetes API: cannot list events/pods in {namespace} ({exc})") from exc
    for item in events:
        item.setdefault("kind", "Event")
    for item in pods:
        item.setdefault("kind", "Pod")
    return [*events, *pods]
