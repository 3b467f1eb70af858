"""Kubernetes Event and Pod objects -> Evidence (from a saved `kubectl get ... -o json` or the live API).

Pod statuses give OOMKilled, exit 137, CrashLoopBackOff, image-pull and scheduling states;
events give FailedScheduling (with the `Insufficient nvidia.com/gpu` resources named),
BackOff, Killing, Unhealthy and the rest. `readers.kubernetes` lists the objects from a cluster.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from gpuobs import json_input
from gpuobs.evidence import Entity, Evidence, EvidenceKind
from gpuobs.rca import keys
from gpuobs.timeparse import parse_instant

__all__ = ["evidence_from_objects", "maybe_k8s_json"]

logger = logging.getLogger(__name__)

_KINDS = {"List", "EventList", "PodList", "Event", "Pod"}
_INSUFFICIENT_RE = re.compile(r"Insufficient ([\w./-]*\w)")
_FIELD_CONTAINER_RE = re.compile(r"spec\.(?:init)?[cC]ontainers\{([^}]+)\}")


def maybe_k8s_json(text: str) -> list[dict[str, Any]] | None:
    """The Kubernetes objects in a `kubectl -o json` dump, or None when the text is not one."""
    head = text.lstrip()[:200]
    if not head.startswith("{") or ('"kind"' not in text[:4096] and '"items"' not in text[:4096]):
        return None
    try:
        data = json_input.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or (data.get("kind") not in _KINDS and "items" not in data):
        return None
    items = data.get("items") if "items" in data else [data]
    if not isinstance(items, list):
        return None
    return [item for item in items if isinstance(item, dict)]


def _ts(value: Any) -> float | None:
    """Epoch seconds of an API server time (RFC 3339), None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_instant(value)
    except ValueError:
        return None


def evidence_from_objects(objects: list[dict[str, Any]], source: str = "kubernetes") -> list[Evidence]:
    """Evidence from Event and Pod objects (other kinds are ignored).

    An object whose fields are of other types than the API's (`"metadata": 5`, a container status that is a
    number: a hand-edited or truncated dump) is skipped with one warning naming the input, and the others are
    read; the readers below take the API's shapes as given."""
    out: list[Evidence] = []
    skipped: list[str] = []
    for obj in objects:
        kind = obj.get("kind")
        try:
            if kind == "Event" or (kind is None and ("involvedObject" in obj or "regarding" in obj)):
                ev = _event(obj, source)
                if ev is not None:
                    out.append(ev)
            elif kind == "Pod" or (kind is None and "status" in obj and "spec" in obj):
                out.extend(_pod(obj, source))
        except (AttributeError, TypeError, ValueError) as exc:
            skipped.append(f"{kind or 'object'}: {exc}")
    if skipped:
        logger.warning(
            "%s: %d Kubernetes object(s) not of the API's shape were skipped (the first: %s)",
            source,
            len(skipped),
            skipped[0],
        )
    return out


def _event(obj: dict[str, Any], source: str) -> Evidence | None:
    reason = obj.get("reason")
    if not isinstance(reason, str) or not reason:
        return None
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    message = str(obj.get("message") or obj.get("note") or "")
    count = obj.get("count") or obj.get("deprecatedCount") or (obj.get("series") or {}).get("count") or 1
    when = (
        _ts(obj.get("lastTimestamp"))
        or _ts(obj.get("eventTime"))
        or _ts(obj.get("firstTimestamp"))
        or _ts((obj.get("metadata") or {}).get("creationTimestamp"))
    )
    attrs: dict[str, Any] = {
        "message": message,
        "type": obj.get("type"),
        "count": int(count),
        "object_kind": involved.get("kind"),
        "object_name": involved.get("name"),
    }
    first = _ts(obj.get("firstTimestamp"))
    if first is not None:
        attrs["first_time"] = first
    insufficient = _INSUFFICIENT_RE.findall(message)
    if insufficient:
        attrs["insufficient"] = sorted(set(insufficient))
    container = None
    field_path = involved.get("fieldPath") or ""
    m = _FIELD_CONTAINER_RE.search(field_path)
    if m:
        container = m.group(1)
    host = (obj.get("source") or {}).get("host") or obj.get("reportingInstance") or None
    pod = involved.get("name") if involved.get("kind") == "Pod" else None
    if involved.get("kind") == "Node":
        host = involved.get("name")
    entity = Entity(
        host=host or None, pod=pod, namespace=involved.get("namespace") or None, container=container
    )
    return Evidence(
        kind=EvidenceKind.EVENT,
        key=keys.K8S_EVENT,
        value=reason,
        source=source,
        time=when,
        entity=entity,
        raw=f"{obj.get('type', '')} {reason}: {message}".strip()[:2000],
        attrs={k: v for k, v in attrs.items() if v is not None},
    )


def _gpus(spec: dict[str, Any], name: str) -> int | None:
    for c in spec.get("containers") or []:
        if c.get("name") == name:
            for section in ("limits", "requests"):
                value = ((c.get("resources") or {}).get(section) or {}).get("nvidia.com/gpu")
                if value is not None:
                    try:
                        return int(value)
                    except (TypeError, ValueError):
                        return None
    return None


def _pod(obj: dict[str, Any], source: str) -> list[Evidence]:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    pod, ns, node = meta.get("name"), meta.get("namespace"), spec.get("nodeName")
    out: list[Evidence] = []
    phase = status.get("phase")

    def add(value: str, container: str | None, when: float | None, raw: str, attrs: dict[str, Any]) -> None:
        attrs = {k: v for k, v in attrs.items() if v is not None}
        attrs.setdefault("phase", phase)
        out.append(
            Evidence(
                kind=EvidenceKind.EVENT,
                key=keys.K8S_POD_STATUS,
                value=value,
                source=source,
                time=when,
                entity=Entity(host=node, pod=pod, namespace=ns, container=container),
                raw=raw[:2000],
                attrs=attrs,
            )
        )

    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        name = cs.get("name")
        restarts = cs.get("restartCount")
        gpus = _gpus(spec, name)
        for which, state in (
            ("state", cs.get("state") or {}),
            ("last_terminated", cs.get("lastState") or {}),
        ):
            waiting = state.get("waiting")
            if which == "state" and waiting and waiting.get("reason"):
                reason = waiting["reason"]
                add(
                    reason,
                    name,
                    None,
                    f"{pod}/{name} waiting: {reason} {waiting.get('message', '')}",
                    {
                        "state": "waiting",
                        "restarts": restarts,
                        "message": waiting.get("message"),
                        "gpus": gpus,
                    },
                )
            term = state.get("terminated")
            if term and (term.get("reason") or term.get("exitCode")):
                reason = term.get("reason") or f"ExitCode{term.get('exitCode')}"
                if reason == "Completed" and term.get("exitCode", 0) == 0:
                    continue
                add(
                    reason,
                    name,
                    _ts(term.get("finishedAt")),
                    f"{pod}/{name} {which.replace('_', ' ')}: {reason} exit code {term.get('exitCode')}",
                    {
                        "state": "terminated" if which == "state" else "last_terminated",
                        "exit_code": term.get("exitCode"),
                        "signal": term.get("signal"),
                        "restarts": restarts,
                        "message": term.get("message"),
                        "started": _ts(term.get("startedAt")),
                        "gpus": gpus,
                    },
                )
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            message = cond.get("message") or ""
            insufficient = sorted(set(_INSUFFICIENT_RE.findall(message)))
            add(
                cond.get("reason") or "Unschedulable",
                None,
                _ts(cond.get("lastTransitionTime")),
                f"{pod} not scheduled: {message}",
                {"state": "pending", "message": message, "insufficient": insufficient or None},
            )
    if status.get("reason") in (
        "Evicted",
        "OutOfnvidia.com/gpu",
        "UnexpectedAdmissionError",
        "NodeLost",
        "Shutdown",
        "Terminated",
    ):
        add(
            status["reason"],
            None,
            None,
            f"{pod}: {status['reason']} {status.get('message', '')}",
            {"state": "pod", "message": status.get("message")},
        )
    return out
