"""What `gpuobs bundle` tests feed in and read back: saved `kubectl get pods -o json`, archive members."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

__all__ = ["archive_members", "pod", "pod_list"]


def pod(
    name: str,
    namespace: str,
    containers: list[dict[str, Any]],
    *,
    node: str | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One Pod as `kubectl get pods -o json` lists it (`status` defaults to a running pod)."""
    spec: dict[str, Any] = {"nodeName": node} if node else {}
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {**spec, "containers": containers},
        "status": status or {"phase": "Running"},
    }


def pod_list(*items: dict[str, Any]) -> dict[str, Any]:
    """The `kind: List` around `items` that `kubectl get ... -o json` prints."""
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def archive_members(path: Path) -> dict[str, bytes]:
    """Every member of the gzipped tar at `path`, by name, with its bytes."""
    out = {}
    with tarfile.open(path, "r:gz") as tar:
        for m in tar.getmembers():
            fh = tar.extractfile(m)
            assert fh is not None
            out[m.name] = fh.read()
    return out
