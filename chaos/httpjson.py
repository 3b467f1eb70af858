"""One small JSON-over-HTTP helper for chaos activities (standard library, so `chaos run` needs no more)."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from typing import Any

from chaoslib.exceptions import ActivityFailed

from gpuobs.chaos.incident import current

__all__ = ["check_fault_api", "request_json", "request_text"]


def request_text(method: str, url: str, body: Any = None, timeout: float = 10.0) -> tuple[int, str]:
    """(status, body text) of one request; HTTP error statuses are returned, connection errors raise."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return int(resp.status), resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode("utf-8", "replace")
    except (OSError, ValueError, http.client.HTTPException) as exc:  # a reply cut short by a dying server too
        raise ActivityFailed(f"{method} {url}: {exc}") from exc


def request_json(method: str, url: str, body: Any = None, timeout: float = 10.0) -> tuple[int, Any]:
    """(status, parsed JSON or the raw text) of one request."""
    status, text = request_text(method, url, body, timeout)
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, text


def check_fault_api(url: str, what: str) -> None:
    """Before a fault is marked: `url` (a fault API's GET) answers 200 with a JSON object, or the running
    incident records why not (Incident.fault_refused) and ActivityFailed says it. A server started without
    --enable-fault-injection answers 404 with its reason; a proxy's login page answers 200 with HTML."""
    status, body = request_json("GET", url, timeout=10)
    if status == 200 and isinstance(body, dict):
        return
    if status == 200:
        reason = f"{what}: {url} answered 200 without JSON (is it a gpuobs server?): {str(body)[:200]!r}"
    else:
        error = body.get("error") if isinstance(body, dict) else None
        said = error.get("message") if isinstance(error, dict) else error
        reason = f"{what}: {url} answered {status}: {str(said or body)[:200]}"
    current().fault_refused(reason)
    raise ActivityFailed(reason)
