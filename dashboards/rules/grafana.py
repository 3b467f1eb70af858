"""The alert rules again as Grafana-managed rules (grafana-foundation-sdk alerting builders), with a contact
point and a notification policy, written as Grafana's file-provisioning documents.

Each rule is three queries: A, the Prometheus alert expression counted per series (one series, value
1, per alert instance, so the labels are the alert's labels); B, the last value of A; C, B > 0. No
series means nothing is wrong, so "no data" is OK; a query error is Error. The SLO burn alerts read
the recording rules, which must be loaded in the Prometheus that Grafana queries.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, cast

from grafana_foundation_sdk.builders import alerting, expr, prometheus
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import alerting as alerting_m
from grafana_foundation_sdk.models import dashboard as dash_m

from gpuobs.dashboards.options import Options
from gpuobs.dashboards.rules.alerts import AlertRule, alert_groups

__all__ = [
    "CONTACT_POINT",
    "CONTACT_POINTS_FILE",
    "POLICIES_FILE",
    "RULES_FILE",
    "contact_point",
    "notification_policy",
    "provisioning_files",
    "rule_groups",
]

CONTACT_POINT = "gpuobs-alertmanager"
RULES_FILE = "alert-rules.yml"
CONTACT_POINTS_FILE = "contact-points.yml"
POLICIES_FILE = "notification-policies.yml"
_EVAL_INTERVAL_S = 60
_LOOKBACK_S = 600
# Grafana's integration type for an external Alertmanager; the SDK's Literal of types lacks it.
_ALERTMANAGER_TYPE = cast(Literal["alertmanager"], "prometheus-alertmanager")
# Keys of a rule in the file-provisioning format (the SDK's Rule also has the HTTP API's keys).
_PROVISIONED_RULE_KEYS = (
    "uid",
    "title",
    "condition",
    "data",
    "noDataState",
    "execErrState",
    "for",
    "annotations",
    "labels",
    "isPaused",
)


def _uid(rule: AlertRule, shared_name: bool) -> str:
    slug = re.sub(r"(?<!^)(?=[A-Z])", "-", rule.name).lower()
    return f"{slug}-{rule.severity}" if shared_name else slug


def _rule(rule: AlertRule, options: Options, shared_name: bool) -> alerting.Rule:
    source = dash_m.DataSourceRef(type_val="prometheus", uid=options.grafana_datasource_uid)
    server_side = dash_m.DataSourceRef(type_val="__expr__", uid="__expr__")
    title = f"{rule.name} ({rule.severity})" if shared_name else rule.name
    return (
        alerting.Rule(title)
        .uid(_uid(rule, shared_name))
        .condition("C")
        .for_val(rule.effective_for(options))
        .no_data_state("OK")
        .exec_err_state("Error")
        .is_paused(False)
        .labels(rule.rule_labels())
        .annotations(rule.annotations(options))
        .with_query(
            alerting.Query("A")
            .datasource_uid(options.grafana_datasource_uid)
            .relative_time_range(alerting_m.RelativeTimeRange(from_val=_LOOKBACK_S, to=0))
            .model(
                prometheus.Dataquery()
                .expr(f"count without () (\n{rule.expr}\n)")
                .instant()
                .ref_id("A")
                .datasource(source)
            )
        )
        .with_query(
            alerting.Query("B")
            .datasource_uid("__expr__")
            .model(expr.TypeReduce().expression("A").reducer("last").ref_id("B").datasource(server_side))
        )
        .with_query(
            alerting.Query("C")
            .datasource_uid("__expr__")
            .model(
                expr.TypeThreshold()
                .expression("B")
                .ref_id("C")
                .datasource(server_side)
                .conditions(
                    [
                        expr.ExprTypeThresholdConditions().evaluator(
                            expr.ExprTypeThresholdConditionsEvaluator().type("gt").params([0])
                        )
                    ]
                )
            )
        )
    )


def rule_groups(options: Options) -> list[alerting_m.RuleGroup]:
    """One Grafana rule group per Prometheus alert group."""
    out = []
    for name, rules in alert_groups(options).items():
        counts: dict[str, int] = {}
        for rule in rules:
            counts[rule.name] = counts.get(rule.name, 0) + 1
        group = alerting.RuleGroup(name).interval(_EVAL_INTERVAL_S)
        for rule in rules:
            group = group.with_rule(_rule(rule, options, counts[rule.name] > 1))
        out.append(group.build())
    return out


def contact_point(options: Options) -> alerting_m.ContactPoint:
    """Grafana-managed alerts go to the same Alertmanager as Prometheus's."""
    return (
        alerting.ContactPoint()
        .uid(CONTACT_POINT)
        .name(CONTACT_POINT)
        .type(_ALERTMANAGER_TYPE)
        .settings({"url": options.alertmanager_url})
        .disable_resolve_message(False)
        .build()
    )


def notification_policy(options: Options) -> alerting_m.NotificationPolicy:
    """Group by alert and signature; critical alerts repeat hourly, warnings every 4 hours."""

    def route(severity: str, wait: str, repeat: str) -> alerting.NotificationPolicy:
        return (
            alerting.NotificationPolicy()
            .receiver(CONTACT_POINT)
            .object_matchers([["severity", "=", severity]])
            .group_wait(wait)
            .repeat_interval(repeat)
        )

    return (
        alerting.NotificationPolicy()
        .receiver(CONTACT_POINT)
        .group_by(["grafana_folder", "alertname", "signature"])
        .group_wait("30s")
        .group_interval("5m")
        .repeat_interval("4h")
        .routes([route("critical", "10s", "1h"), route("warning", "30s", "4h")])
        .build()
    )


def _plain(model: Any) -> Any:
    return json.loads(JSONEncoder(sort_keys=False).encode(model))


def provisioning_files(options: Options) -> dict[str, dict[str, Any]]:
    """File name -> Grafana alerting provisioning document (apiVersion 1)."""
    groups = []
    for group in rule_groups(options):
        data = _plain(group)
        rules = [{key: rule[key] for key in _PROVISIONED_RULE_KEYS if key in rule} for rule in data["rules"]]
        groups.append(
            {
                "orgId": 1,
                "name": data["title"],
                "folder": options.grafana_folder,
                "interval": f"{data['interval']}s",
                "rules": rules,
            }
        )
    point = _plain(contact_point(options))
    receiver = {key: point[key] for key in ("uid", "type", "settings", "disableResolveMessage")}
    return {
        RULES_FILE: {"apiVersion": 1, "groups": groups},
        CONTACT_POINTS_FILE: {
            "apiVersion": 1,
            "contactPoints": [{"orgId": 1, "name": point["name"], "receivers": [receiver]}],
        },
        POLICIES_FILE: {"apiVersion": 1, "policies": [{"orgId": 1, **_plain(notification_policy(options))}]},
    }
