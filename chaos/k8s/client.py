"""Where the Kubernetes activities get their API client (tests replace `core_api` at this boundary), and how
one API call's failure reads in the game-day report: one line naming what was asked and what the server said,
not the client's exception with its response headers (a 403) or a pydantic error (a proxy's login page)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, TypeVar

from chaoslib.exceptions import ActivityFailed

__all__ = ["call", "core_api"]

T = TypeVar("T")


def core_api(secrets: dict[str, Any] | None = None) -> Any:
    """A `kubernetes.client.CoreV1Api` from the in-cluster config, else the current kubeconfig context."""
    try:
        import yaml
        from kubernetes import client, config
    except ImportError as exc:
        raise ActivityFailed(
            "Kubernetes activities need the kubernetes package: pip install 'gpuobs[k8s]'"
        ) from exc
    try:
        config.load_incluster_config()
    except config.ConfigException:
        named = os.environ.get("KUBECONFIG") or None  # read now: the client reads it once, at its import
        where = named or "~/.kube/config"
        try:
            config.load_kube_config(config_file=named, context=(secrets or {}).get("kube_context"))
        except (config.ConfigException, OSError, ValueError, TypeError, yaml.YAMLError) as exc:
            why = " ".join(str(exc).split()) or type(exc).__name__  # a YAML error spans several lines
            raise ActivityFailed(
                f"no Kubernetes API configured: not inside a cluster, and the kubeconfig {where} cannot be "
                f"used ({why[:300]})"
            ) from None
    return client.CoreV1Api()


def _server(api: Any) -> str:
    try:
        return str(api.api_client.configuration.host)
    except AttributeError:
        return "the API server"


def _refusal(exc: Any) -> str:
    """An ApiException in words: its status and the Status object's message, or what answered instead."""
    status, reason = getattr(exc, "status", None), getattr(exc, "reason", None) or ""
    body = getattr(exc, "body", None)
    headers = getattr(exc, "headers", None) or {}
    kind = str(headers.get("Content-Type", "")) if hasattr(headers, "get") else ""
    message = ""
    if isinstance(body, bytes | str) and body:
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("message"), str):
            message = doc["message"]
        elif "html" in kind or str(body).lstrip()[:1] == "<":
            message = "an HTML page, not a Kubernetes Status (a proxy or a login page?)"
        else:
            message = " ".join(str(body).split())[:200]
    if status is None:
        return message or str(reason) or "the request failed"
    return f"the API server answered {status} {reason}".rstrip() + (f": {message}" if message else "")


def call(api: Any, what: str, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`method(*args, **kwargs)` on the API client; a failure is an ActivityFailed in one line that says
    `what` was asked of which server and why it did not happen."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    server = _server(api)
    try:
        return method(*args, **kwargs)
    except ApiException as exc:
        raise ActivityFailed(f"{what} at {server}: {_refusal(exc)}") from None
    except HTTPError as exc:  # connection refused, a name that does not resolve, a TLS failure, retries spent
        reason = getattr(exc, "reason", None) or exc
        raise ActivityFailed(f"{what}: cannot reach the Kubernetes API at {server}: {reason}") from None
    except ValueError:  # the client could not read the answer as the object asked for (pydantic's error)
        raise ActivityFailed(
            f"{what} at {server}: the answer is not a Kubernetes API object (a proxy's or a login page?)"
        ) from None
