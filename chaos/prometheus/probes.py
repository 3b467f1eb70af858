"""Probes against a Prometheus server (`/api/v1/query`, `/api/v1/alerts`): thresholds and firing alerts."""

from __future__ import annotations

import logging
import time
import urllib.parse
from typing import Any

from chaoslib.exceptions import ActivityFailed

from gpuobs.chaos.httpjson import request_json
from gpuobs.chaos.incident import current
from gpuobs.chaos.safety import check_url

__all__ = ["alert_firing", "query_value", "value_below", "wait_for_alert"]

logger = logging.getLogger("chaostoolkit")

DEFAULT_PROMETHEUS = "http://127.0.0.1:9090"


def query_value(
    query: str,
    prometheus_url: str = DEFAULT_PROMETHEUS,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> float | None:
    """The value of an instant PromQL query: the largest sample of a vector, None when it is empty."""
    base = check_url(prometheus_url, configuration)
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': query})}"
    status, body = request_json("GET", url, timeout=10)
    if status != 200 or not isinstance(body, dict) or body.get("status") != "success":
        raise ActivityFailed(f"query {query!r} failed: {status} {str(body)[:200]}")
    data = body["data"]
    if data["resultType"] == "scalar":
        return float(data["result"][1])
    values = [float(item["value"][1]) for item in data["result"]]
    return max(values) if values else None


def value_below(
    query: str,
    threshold: float,
    prometheus_url: str = DEFAULT_PROMETHEUS,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> bool:
    """True when the query's value is below `threshold` (an empty result counts as below)."""
    value = query_value(query, prometheus_url, configuration)
    return value is None or value < float(threshold)


def alert_firing(
    alertname: str,
    prometheus_url: str = DEFAULT_PROMETHEUS,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> bool:
    """True when an alert named `alertname` is in the firing state."""
    base = check_url(prometheus_url, configuration)
    status, body = request_json("GET", f"{base}/api/v1/alerts", timeout=10)
    if status != 200 or not isinstance(body, dict):
        raise ActivityFailed(f"{base}/api/v1/alerts answered {status}")
    return any(
        a.get("labels", {}).get("alertname") == alertname and a.get("state") == "firing"
        for a in body.get("data", {}).get("alerts", [])
    )


def wait_for_alert(
    alertname: str,
    timeout_s: float = 30.0,
    interval_s: float = 0.1,
    prometheus_url: str = DEFAULT_PROMETHEUS,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> float:
    """Poll until `alertname` fires (a detection); returns seconds since the fault. Fails on timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if alert_firing(alertname, prometheus_url, configuration):
            at = current().mark("alert", alertname)
            current().mark("detected", f"alert {alertname} firing")
            fault = current().since_fault()
            return round(at - fault, 3) if fault is not None else 0.0
        time.sleep(interval_s)
    raise ActivityFailed(f"alert {alertname} did not fire within {timeout_s:.0f} s")
