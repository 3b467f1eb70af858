"""A Kubernetes namespace -> Evidence: its events and pod statuses, listed from the API server.

Uses the `kubernetes` client (imported lazily, extra `k8s`) with the current kubeconfig context, or the
in-cluster configuration inside a pod.
"""

from __future__ import annotations

import os
import re
from typing import Any

from gpuobs import json_input
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
    cfg = _configuration(k8s, namespace)
    cfg.retries = 1
    api = k8s.client.CoreV1Api(k8s.client.ApiClient(cfg))
    try:
        # Raw JSON, not the typed models: the evidence only needs a few fields, and raw parsing does
        # not break on fields a newer API server adds.
        raw_events = api.list_namespaced_event(namespace, _preload_content=False, _request_timeout=20)
        raw_pods = api.list_namespaced_pod(namespace, _preload_content=False, _request_timeout=20)
        events = json_input.loads(raw_events.data).get("items", [])
        pods = json_input.loads(raw_pods.data).get("items", [])
    except Exception as exc:
        raise InputError(
            f"Kubernetes API {cfg.host}: cannot list events/pods in {namespace} ({_api_failure(exc)})"
        ) from exc
    for item in events:
        item.setdefault("kind", "Event")
    for item in pods:
        item.setdefault("kind", "Pod")
    return [*events, *pods]


def _configuration(k8s: Any, namespace: str) -> Any:
    """The client configuration of the kubeconfig (KUBECONFIG, read now: the client reads it once at import
    time) or, with none, of the pod this runs in. A kubeconfig that exists but cannot be used is said as such:
    it used to be reported as "no Kubernetes configuration found (Service host/port is not set.)"."""
    cfg = k8s.client.Configuration()
    path = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    in_pod = bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    if any(os.path.exists(os.path.expanduser(p)) for p in path.split(os.pathsep) if p):
        try:
            k8s.config.load_kube_config(config_file=path, client_configuration=cfg)
            return cfg
        except Exception as exc:
            if not in_pod:
                raise InputError(
                    f"--k8s-namespace {namespace}: kubeconfig {path} cannot be used ({_one_line(exc)})"
                ) from exc
    try:
        k8s.config.load_incluster_config(client_configuration=cfg)
    except Exception as exc:
        raise InputError(
            f"--k8s-namespace {namespace}: no Kubernetes configuration found (no kubeconfig at {path}, and "
            f"not inside a pod: {_one_line(exc)})"
        ) from exc
    return cfg


def _api_failure(exc: Exception) -> str:
    """One line for a failed list call: the API server's status and message, or why it was not reached (the
    client's own text is several lines of headers and body, or urllib3's retry chain)."""
    status = getattr(exc, "status", None)
    if status:  # the server answered (kubernetes.client.ApiException)
        try:
            message = str(json_input.loads(getattr(exc, "body", None) or "{}").get("message", ""))
        except (ValueError, AttributeError):  # a body that is not a JSON object (a proxy's page)
            message = ""
        return f"HTTP {status} {getattr(exc, 'reason', '')}".rstrip() + (f": {message}" if message else "")
    text = _one_line(getattr(exc, "reason", None) or exc)  # urllib3's MaxRetryError carries the cause
    errno = re.search(r"\[Errno [^\]]+\][^)\"']*", text)
    return f"unreachable: {errno.group(0).strip()}" if errno else text


def _one_line(exc: object) -> str:
    return " ".join(str(exc).split())[:300]
