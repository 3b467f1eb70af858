"""Validate dashboard JSON against what grafana-foundation-sdk carries for Grafana 11.6.

The SDK ships no JSON schema and no validator: its schema is the generated model classes. So a
dashboard is decoded with `Dashboard.from_json` (panel options and queries through the registered
plugin variants) and encoded again: a field the 11.6 schema does not have is dropped on the way and a
value of the wrong shape comes back different, and either shows as a difference. The decoded objects
are then checked against the models' type hints (enums, literals, numbers, strings), which from_json
itself does not enforce. On top of that, the fields Grafana needs are checked: uid and title, panel
ids, types the SDK knows, a unit and thresholds on every panel, Prometheus queries with an
expression, and template variables that exist.
"""

from __future__ import annotations

import enum
import json
import re
import types
import typing
from typing import Any

__all__ = ["validate_dashboard", "validate_rule_group"]

_VARIABLE = re.compile(r"\$(?:\{(\w+)[^}]*\}|(\w+))")
_BUILTIN_VARIABLES = {
    "__rate_interval",
    "__interval",
    "__range",
    "__data",
    "__all",
    "__interval_ms",
    "__range_s",
    "labels",
    "value",
}


def _encode(model: Any) -> Any:
    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    return json.loads(JSONEncoder(sort_keys=True).encode(model))


def _differences(original: Any, decoded: Any, path: str, out: list[str]) -> None:
    if isinstance(original, dict) and isinstance(decoded, dict):
        for key in sorted(set(original) | set(decoded)):
            where = f"{path}.{key}" if path else key
            if key not in decoded:
                out.append(f"{where}: not a field of the Grafana 11.6 schema (dropped by the SDK model)")
            elif key not in original:
                if decoded[key] not in ({}, [], None):
                    out.append(f"{where}: the SDK model adds {decoded[key]!r}")
            else:
                _differences(original[key], decoded[key], where, out)
    elif isinstance(original, list) and isinstance(decoded, list):
        if len(original) != len(decoded):
            out.append(f"{path}: {len(original)} items became {len(decoded)}")
        for n, (a, b) in enumerate(zip(original, decoded, strict=False)):
            _differences(a, b, f"{path}[{n}]", out)
    elif original != decoded:
        out.append(f"{path}: {original!r} does not survive the SDK model (got {decoded!r})")


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _is_model(value: Any) -> bool:
    return type(value).__module__.startswith("grafana_foundation_sdk.") and hasattr(value, "to_json")


def _check_value(value: Any, hint: Any, path: str, out: list[str]) -> None:
    """Compare a decoded value with the SDK's type hint: enums and literals by value, primitives by type,
    models recursively (from_json keeps strings of unknown enum values, so this is where they show)."""
    origin = typing.get_origin(hint)
    if hint is Any or hint is object:
        if _is_model(value):
            _check_model(value, path, out)
    elif origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None and len(options) < len(typing.get_args(hint)):
            return
        matching = [a for a in options if isinstance(a, type) and _is_model(value) and isinstance(value, a)]
        if len(options) == 1 or matching:
            _check_value(value, (matching or options)[0], path, out)
            return
        for option in options:
            trial: list[str] = []
            _check_value(value, option, path, trial)
            if not trial:
                return
        out.append(f"{path}: {value!r} is none of {hint}")
    elif origin is typing.Literal:
        if value not in typing.get_args(hint):
            out.append(f"{path}: {value!r} is not one of {typing.get_args(hint)}")
    elif origin is list:
        if not isinstance(value, list):
            out.append(f"{path}: {value!r} is not a list")
            return
        for n, item in enumerate(value):
            _check_value(item, typing.get_args(hint)[0], f"{path}[{n}]", out)
    elif origin is dict:
        if not isinstance(value, dict):
            out.append(f"{path}: {value!r} is not a mapping")
    elif isinstance(hint, type) and issubclass(hint, enum.Enum):
        raw = value.value if isinstance(value, enum.Enum) else value
        if raw not in {member.value for member in hint}:
            allowed = ", ".join(str(m.value) for m in hint)
            out.append(f"{path}: {value!r} is not a {hint.__name__} ({allowed})")
    elif hint is bool:
        if not isinstance(value, bool):
            out.append(f"{path}: {value!r} is not a boolean")
    elif hint in (int, float):
        if isinstance(value, bool) or not isinstance(value, int if hint is int else (int, float)):
            out.append(f"{path}: {value!r} is not a number of type {hint.__name__}")
    elif hint is str:
        if not isinstance(value, str):
            out.append(f"{path}: {value!r} is not a string")
    elif isinstance(hint, type) and _is_model(value):
        _check_model(value, path, out)
    elif isinstance(hint, type) and not isinstance(value, hint):
        out.append(f"{path}: {type(value).__name__} where the schema has {hint.__name__}")


def _check_model(model: Any, path: str, out: list[str]) -> None:
    for name, hint in _hints(type(model)).items():
        _check_value(getattr(model, name, None), hint, f"{path}.{name}" if path else name, out)


def _panels(data: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for panel in data.get("panels") or []:
        out.append(panel)
        out.extend(panel.get("panels") or [])
    return out


def _check_panel(panel: dict[str, Any], known_types: set[str], variables: set[str], out: list[str]) -> None:
    from grafana_foundation_sdk.cog.runtime import dataquery_from_json
    from grafana_foundation_sdk.models.prometheus import Dataquery

    where = f"panel {panel.get('id')} {panel.get('title')!r}"
    if not panel.get("title"):
        out.append(f"{where}: no title")
    grid = panel.get("gridPos") or {}
    if not (isinstance(grid.get("w"), int) and 0 < grid["w"] <= 24 and isinstance(grid.get("h"), int)):
        out.append(f"{where}: bad gridPos {grid}")
    if panel.get("type") == "row":
        return
    if panel.get("type") not in known_types:
        out.append(f"{where}: panel type {panel.get('type')!r} unknown to the SDK")
    defaults = (panel.get("fieldConfig") or {}).get("defaults") or {}
    if not defaults.get("unit"):
        out.append(f"{where}: no unit")
    if not (defaults.get("thresholds") or {}).get("steps"):
        out.append(f"{where}: no thresholds")
    if (panel.get("datasource") or {}).get("uid") != "${datasource}":
        out.append(f"{where}: does not read the datasource variable")
    targets = panel.get("targets") or []
    if not targets:
        out.append(f"{where}: no queries")
    for t in targets:
        query = dataquery_from_json(t, "prometheus")
        if not isinstance(query, Dataquery) or not query.expr or not query.ref_id:
            out.append(f"{where}: target {t} is not a Prometheus query with expr and refId")
            continue
        for match in _VARIABLE.finditer(query.expr):
            name = match.group(1) or match.group(2)
            if name not in variables and name not in _BUILTIN_VARIABLES:
                out.append(f"{where}: query uses undefined variable ${name}")


def validate_dashboard(data: dict[str, Any]) -> list[str]:
    """Problems of one dashboard's JSON (empty when it is valid)."""
    from grafana_foundation_sdk.cog.plugins import register_default_plugins
    from grafana_foundation_sdk.cog.runtime import Runtime
    from grafana_foundation_sdk.models.dashboard import Dashboard

    register_default_plugins()
    out: list[str] = []
    try:
        model = Dashboard.from_json(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return [f"the SDK model cannot decode it: {type(exc).__name__}: {exc}"]
    _differences(data, _encode(model), "", out)
    _check_model(model, "", out)
    uid = data.get("uid")
    if not isinstance(uid, str) or not 8 <= len(uid) <= 40:
        out.append(f"uid {uid!r}: must be a string of 8 to 40 characters")
    if not data.get("title"):
        out.append("no title")
    if data.get("schemaVersion") != Dashboard().schema_version:
        out.append(f"schemaVersion {data.get('schemaVersion')} is not the SDK's {Dashboard().schema_version}")
    variables = {v.get("name") for v in (data.get("templating") or {}).get("list") or []}
    if "datasource" not in variables:
        out.append("no datasource variable")
    panels = _panels(data)
    ids = [p.get("id") for p in panels]
    if len(set(ids)) != len(ids) or None in ids:
        out.append(f"panel ids are missing or repeated: {ids}")
    known = set(Runtime().panelcfg_variants)
    for panel in panels:
        _check_panel(panel, known, variables, out)
    return out


def validate_rule_group(data: dict[str, Any]) -> list[str]:
    """Problems of one Grafana-managed rule group (the SDK's RuleGroup shape)."""
    from grafana_foundation_sdk.cog.plugins import register_default_plugins
    from grafana_foundation_sdk.models.alerting import RuleGroup

    register_default_plugins()
    out: list[str] = []
    model = RuleGroup.from_json(data)
    _differences(data, _encode(model), "", out)
    _check_model(model, "", out)
    for rule in data.get("rules") or []:
        refs = [q.get("refId") for q in rule.get("data") or []]
        where = f"rule {rule.get('title')!r}"
        if rule.get("condition") not in refs:
            out.append(f"{where}: condition {rule.get('condition')!r} is none of its queries {refs}")
        if len(set(refs)) != len(refs):
            out.append(f"{where}: repeated refIds {refs}")
        if not rule.get("uid") or len(rule["uid"]) > 40:
            out.append(f"{where}: uid must be 1 to 40 characters")
        for key in ("noDataState", "execErrState", "for"):
            if not rule.get(key):
                out.append(f"{where}: no {key}")
    return out
