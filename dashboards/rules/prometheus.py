"""Prometheus rule files (`promtool check rules` format) from the recording and alert rule definitions."""

from __future__ import annotations

from typing import Any

import yaml

from gpuobs.dashboards.options import Options
from gpuobs.dashboards.rules.alerts import AlertRule, alert_groups
from gpuobs.dashboards.rules.recording import RecordingRule, recording_groups

__all__ = [
    "ALERTS_FILE",
    "RECORDING_FILE",
    "alert_rule_file",
    "dump_yaml",
    "recording_rule_file",
    "rule_files",
]

RECORDING_FILE = "gpuobs-recording.yml"
ALERTS_FILE = "gpuobs-alerts.yml"


def _record(rule: RecordingRule) -> dict[str, Any]:
    out: dict[str, Any] = {"record": rule.record, "expr": rule.expr}
    if rule.labels:
        out["labels"] = dict(rule.labels)
    return out


def _alert(rule: AlertRule, options: Options) -> dict[str, Any]:
    out: dict[str, Any] = {"alert": rule.name, "expr": rule.expr}
    duration = rule.effective_for(options)
    if duration.strip("0smhdwy"):
        out["for"] = duration
    if rule.rule_labels():
        out["labels"] = rule.rule_labels()
    out["annotations"] = rule.annotations(options)
    return out


def recording_rule_file(options: Options) -> dict[str, Any]:
    """The recording rules as a rule file document."""
    return {
        "groups": [
            {"name": name, "rules": [_record(r) for r in rules]}
            for name, rules in recording_groups(options).items()
        ]
    }


def alert_rule_file(options: Options) -> dict[str, Any]:
    """The alert rules as a rule file document."""
    return {
        "groups": [
            {"name": name, "rules": [_alert(r, options) for r in rules]}
            for name, rules in alert_groups(options).items()
        ]
    }


def rule_files(options: Options) -> dict[str, dict[str, Any]]:
    """File name -> rule file document."""
    return {RECORDING_FILE: recording_rule_file(options), ALERTS_FILE: alert_rule_file(options)}


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(document: Any) -> str:
    """YAML with multi-line expressions as literal blocks, keys in the order given."""
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=True)
