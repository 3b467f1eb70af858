"""Guard rails every chaos action passes through: a target allowlist, dry runs, Kubernetes limits.

Settings come from the experiment's configuration (or the game-day's): `gpuobs_allowed_hosts`
(hosts an action may touch; loopback only by default), `gpuobs_dry_run` (log what would be done, do
nothing), `gpuobs_protected_namespaces` (default kube-system) and `gpuobs_max_blast_radius` (most
Kubernetes objects one action may touch; default 1). Kernel lines a fault invents go only to a file of the
game day's own, never to a system log, unless `gpuobs_allow_system_log` is set.
"""

from __future__ import annotations

import logging
import os
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from chaoslib.exceptions import ActivityFailed

from gpuobs.user_input import http_url_problem, url_without_credentials

__all__ = [
    "DEFAULT_ALLOWED_HOSTS",
    "DEFAULT_PROTECTED_NAMESPACES",
    "SYSTEM_LOG_DIRS",
    "SafetyError",
    "check_blast_radius",
    "check_grpc_target",
    "check_log_target",
    "check_namespace",
    "check_url",
    "is_dry_run",
]

logger = logging.getLogger("chaostoolkit")

DEFAULT_ALLOWED_HOSTS = ("127.0.0.1", "localhost", "::1")
DEFAULT_PROTECTED_NAMESPACES = ("kube-system",)
DEFAULT_MAX_BLAST_RADIUS = 1
# Where the system's own loggers write: invented kernel lines there would read as real to every other reader
# of that log (a log shipper, node-problem-detector, the on-call engineer of the next real incident).
SYSTEM_LOG_DIRS = ("/var/log", "/run/log", "/dev", "/proc", "/sys")


class SafetyError(ActivityFailed):
    """An action was refused by a guard rail (target not allowed, protected namespace, blast radius)."""


def _list(value: Any, default: Iterable[str]) -> tuple[str, ...]:
    if value is None or value == "":
        return tuple(default)
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(str(v) for v in value)


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def is_dry_run(configuration: dict[str, Any] | None) -> bool:
    """True when the configuration asks for a dry run: actions log what they would do and return."""
    return _truthy((configuration or {}).get("gpuobs_dry_run", False))


def allowed_hosts(configuration: dict[str, Any] | None) -> tuple[str, ...]:
    return _list((configuration or {}).get("gpuobs_allowed_hosts"), DEFAULT_ALLOWED_HOSTS)


def _not_allowed(host: str, hosts: tuple[str, ...]) -> SafetyError:
    return SafetyError(
        f"target {host} is not on the allowlist ({', '.join(hosts)}); add it to gpuobs_allowed_hosts "
        f"(`gpuobs gameday --allow-host {host}`) to allow it"
    )


def check_url(url: str, configuration: dict[str, Any] | None) -> str:
    """Return `url` if its host is on the allowlist; raise SafetyError otherwise."""
    problem = http_url_problem(url)
    if problem is not None:
        raise SafetyError(f"not an http(s) URL ({problem}): {url_without_credentials(url)!r}")
    host = urllib.parse.urlsplit(url.strip()).hostname or ""  # never empty: http_url_problem requires one
    hosts = allowed_hosts(configuration)
    if host not in hosts:
        raise _not_allowed(host, hosts)
    return url.rstrip("/")


def check_grpc_target(target: str, configuration: dict[str, Any] | None) -> str:
    """Return a gRPC `host:port` target if its host is on the allowlist; raise SafetyError otherwise."""
    host, sep, port = target.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit():
        raise SafetyError(f"not a gRPC host:port target: {target!r}")
    hosts = allowed_hosts(configuration)
    if host not in hosts:
        raise _not_allowed(host, hosts)
    return target.strip()


def check_namespace(namespace: str, configuration: dict[str, Any] | None) -> str:
    """Return `namespace` unless it is protected (kube-system by default)."""
    protected = _list((configuration or {}).get("gpuobs_protected_namespaces"), DEFAULT_PROTECTED_NAMESPACES)
    if namespace in protected:
        raise SafetyError(f"namespace {namespace} is protected ({', '.join(protected)}); refusing")
    return namespace


def check_blast_radius(count: int, configuration: dict[str, Any] | None, what: str = "objects") -> None:
    """Refuse an action that would touch more than `gpuobs_max_blast_radius` objects."""
    raw = (configuration or {}).get("gpuobs_max_blast_radius", DEFAULT_MAX_BLAST_RADIUS)
    try:
        limit = int(raw)
    except (TypeError, ValueError) as exc:
        raise SafetyError(f"gpuobs_max_blast_radius must be an integer, got {raw!r}") from exc
    if count > limit:
        raise SafetyError(f"{count} {what} exceed the blast-radius limit of {limit}; refusing")


def check_log_target(path: str, configuration: dict[str, Any] | None) -> Path:
    """Return the kernel-log file a fault may append its invented lines to; SafetyError for a system log
    (`SYSTEM_LOG_DIRS`, links followed) unless `gpuobs_allow_system_log` is set, and for an empty path."""
    if not str(path).strip():
        raise SafetyError("the kernel-log file to write is empty: name a file of the game day's own")
    resolved = Path(os.path.realpath(path))
    system = next((d for d in SYSTEM_LOG_DIRS if resolved == Path(d) or Path(d) in resolved.parents), None)
    if system and not _truthy((configuration or {}).get("gpuobs_allow_system_log", False)):
        raise SafetyError(
            f"{path} is under {system}, a system log: the fault's invented kernel lines there would read as "
            "real to every other reader of it; name a file of the game day's own (diagnose reads it with "
            "--logs), or set gpuobs_allow_system_log to true on a node you own"
        )
    return resolved
