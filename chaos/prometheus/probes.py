"""Probes against a Prometheus server (`/api/v1/query`, `/api/v1/alerts`): thresholds and firing alerts.

The replies are read by `api`, so a server that is not a Prometheus, or answers in another shape, fails a
probe with one line; an alert that did not fire in time says what its rule was doing, or that none is."""

from __future__ import annotations

import logging
import time
from typing import Any

from chaoslib.exceptions import ActivityFailed

from gpuobs.chaos.incident import current
from gpuobs.chaos.prometheus.api import firing_alerts, instant_value, rule_report
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
    return instant_value(check_url(prometheus_url, configuration), query)


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
    return alertname in firing_alerts(check_url(prometheus_url, configuration))


def wait_for_alert(
    alertname: str,
    timeout_s: float = 30.0,
    interval_s: float = 0.1,
    prometheus_url: str = DEFAULT_PROMETHEUS,
    configuration: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> float:
    """Poll until `alertname` fires (a detection); returns seconds since the fault. Fails on timeout, saying
    what the alert's rule was doing then (or that no rule of that name is loaded)."""
    base = check_url(prometheus_url, configuration)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if alertname in firing_alerts(base):
            at = current().mark("alert", alertname)
            current().mark("detected", f"alert {alertname} firing")
            fault = current().since_fault()
            return round(at - fault, 3) if fault is not None else 0.0
        time.sleep(interval_s)
    why = rule_report(base, alertname)
    raise ActivityFailed(f"alert {alertname} did not fire within {timeout_s:.0f} s: {why}")
