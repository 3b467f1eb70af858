"""The Prometheus HTTP API as chaos activities and the game day read it: each reply checked, one line a fault.

A game day pointed at the wrong server (a proxy's login page, an RBAC refusal, a Grafana, an exporter's
`/metrics`, a Prometheus without gpuobs's rules) must say so in one line, not with a KeyError from a reply
of another shape, and an alert that never fired must say whether its rule is loaded at all. Every reader
here raises ActivityFailed with what was asked, of which server, and what came back.
"""

from __future__ import annotations

import json
import math
import urllib.parse
from typing import Any

from chaoslib.exceptions import ActivityFailed

from gpuobs.chaos.httpjson import request_json

__all__ = ["api_data", "check_prometheus", "firing_alerts", "instant_value", "rule_report"]

_SHOWN = 160  # characters of an unexpected reply quoted in an error


def _quoted(body: Any) -> str:
    text = body if isinstance(body, str) else json.dumps(body, default=str)
    return repr(" ".join(text.split())[:_SHOWN])


def api_data(base: str, path: str, params: dict[str, str] | None = None, timeout: float = 10.0) -> Any:
    """The `data` of a successful Prometheus API reply to GET `base` + `path`, else ActivityFailed.

    Prometheus answers `{"status": "success", "data": ...}`, or `{"status": "error", "errorType": ...,
    "error": ...}` with a 4xx or 5xx (a bad query is a 400 `bad_data`)."""
    url = f"{base}{path}"
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    status, body = request_json("GET", url + query, timeout=timeout)
    if isinstance(body, dict) and body.get("status") == "success" and "data" in body:
        return body["data"]
    if isinstance(body, dict) and body.get("status") == "error":
        kind = body.get("errorType") or "error"
        raise ActivityFailed(f"{url} answered {status}: {kind}: {str(body.get('error'))[:_SHOWN]}")
    if not isinstance(body, dict | list):
        said = _quoted(body or "")
        raise ActivityFailed(f"{url} answered {status} without JSON (is it a Prometheus?): {said}")
    raise ActivityFailed(f"{url} answered {status} with JSON not of the Prometheus API: {_quoted(body)}")


def _sample(query: str, value: Any) -> float:
    """One sample's value ([time, "text"]) as a float; ActivityFailed for anything else."""
    if isinstance(value, list) and len(value) == 2 and isinstance(value[1], str):
        try:
            return float(value[1])
        except ValueError:
            pass
    raise ActivityFailed(f"query {query!r}: a sample is not [time, \"number\"]: {_quoted(value)}")


def instant_value(base: str, query: str, timeout: float = 10.0) -> float | None:
    """The largest sample of an instant query (its value for a scalar), None when the vector is empty.

    NaN samples (a ratio over no traffic) are left out; a result of NaN only fails, naming the query, rather
    than compare false against every threshold. A range query or a string result fails with its type."""
    data = api_data(base, "/api/v1/query", {"query": query}, timeout)
    kind = data.get("resultType") if isinstance(data, dict) else None
    result = data.get("result") if isinstance(data, dict) else None
    if kind == "scalar":
        values = [_sample(query, result)]
    elif kind == "vector" and isinstance(result, list):
        values = [_sample(query, item.get("value") if isinstance(item, dict) else item) for item in result]
    elif kind in ("matrix", "string"):
        raise ActivityFailed(f"query {query!r} gives a {kind}, not an instant vector or a scalar")
    else:
        raise ActivityFailed(f"query {query!r}: {base} answered data not of a query: {_quoted(data)}")
    finite = [v for v in values if not math.isnan(v)]
    if values and not finite:
        raise ActivityFailed(f"query {query!r} is NaN ({len(values)} sample(s)): nothing to compare")
    return max(finite) if finite else None


def firing_alerts(base: str, timeout: float = 10.0) -> set[str]:
    """The names of the alerts firing now (`/api/v1/alerts`)."""
    data = api_data(base, "/api/v1/alerts", timeout=timeout)
    alerts = data.get("alerts") if isinstance(data, dict) else None
    if not isinstance(alerts, list):
        raise ActivityFailed(f"{base}/api/v1/alerts answered data without an alert list: {_quoted(data)}")
    names = set()
    for alert in alerts:
        labels = alert.get("labels") if isinstance(alert, dict) else None
        name = labels.get("alertname") if isinstance(labels, dict) else None
        if isinstance(name, str) and alert.get("state") == "firing":
            names.add(name)
    return names


def _alerting_rules(base: str, timeout: float) -> list[dict[str, Any]]:
    data = api_data(base, "/api/v1/rules", {"type": "alert"}, timeout)
    groups = data.get("groups") if isinstance(data, dict) else None
    if not isinstance(groups, list):
        raise ActivityFailed(f"{base}/api/v1/rules answered data without rule groups: {_quoted(data)}")
    rules = [r for g in groups if isinstance(g, dict) for r in g.get("rules") or [] if isinstance(r, dict)]
    return [r for r in rules if r.get("type", "alerting") == "alerting"]


def rule_report(base: str, alertname: str, timeout: float = 5.0) -> str:
    """Why an alert may not have fired, from its rule: not loaded, or its state, health and last error."""
    try:
        rules = _alerting_rules(base, timeout)
    except ActivityFailed as exc:
        return f"its rules could not be read: {exc}"
    mine = [r for r in rules if r.get("name") == alertname]
    if not mine:
        return f"that Prometheus has no alerting rule named {alertname} ({len(rules)} alerting rules loaded)"
    rule = mine[0]
    said = [f"its rule is {rule.get('state', '?')}", f"health {rule.get('health', '?')}"]
    if rule.get("duration"):
        said.append(f"for {rule['duration']} s")
    if rule.get("lastError"):
        said.append(f"last evaluation error: {str(rule['lastError'])[:_SHOWN]}")
    return ", ".join(said)


def check_prometheus(base: str, alertnames: set[str], timeout: float = 5.0) -> str | None:
    """Before a game day against a named stack: ActivityFailed unless `base` answers an instant query as the
    Prometheus HTTP API does (Prometheus, Thanos, Mimir and VictoriaMetrics all do); then a warning when its
    alerting rules cannot be read or none of `alertnames` is loaded there (no alert can mark a detection),
    else None."""
    if instant_value(base, "vector(1)", timeout) != 1.0:
        said = f"{base}/api/v1/query answered vector(1) with another value"
        raise ActivityFailed(f"{said}: not a Prometheus query API")
    try:
        loaded = {r.get("name") for r in _alerting_rules(base, timeout)}
    except ActivityFailed as exc:
        return f"{base}: its alerting rules could not be read ({exc}); alerts may not mark a detection"
    if alertnames and not alertnames & loaded:
        return (
            f"{base} has none of gpuobs's {len(alertnames)} alerting rules loaded ({len(loaded)} others): no "
            "alert can mark a detection; load the rules of `gpuobs dashboards build` there"
        )
    return None
