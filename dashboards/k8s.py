"""Kubernetes manifests of the same build: a prometheus-operator PrometheusRule with every rule group,
ConfigMaps that Grafana's dashboard sidecar loads (label `grafana_dashboard: "1"`), a ConfigMap of the
Grafana alerting provisioning files for the alerts sidecar (label `grafana_alert: "1"`), and the
kustomization that lists them."""

from __future__ import annotations

import json
from typing import Any

from gpuobs.dashboards.options import Options

__all__ = [
    "ALERTING_FILE",
    "DASHBOARDS_FILE",
    "KUSTOMIZATION_FILE",
    "PROMETHEUS_RULE_FILE",
    "manifests",
]

PROMETHEUS_RULE_FILE = "prometheusrule.yaml"
DASHBOARDS_FILE = "dashboards.yaml"
ALERTING_FILE = "grafana-alerting.yaml"
KUSTOMIZATION_FILE = "kustomization.yaml"
_LABELS = {"app.kubernetes.io/name": "gpuobs", "app.kubernetes.io/component": "monitoring"}


def _meta(name: str, extra_labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"name": name, "labels": {**_LABELS, **(extra_labels or {})}}


def _prometheus_rule(rule_documents: list[dict[str, Any]]) -> dict[str, Any]:
    groups = [group for document in rule_documents for group in document["groups"]]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": _meta("gpuobs-rules"),
        "spec": {"groups": groups},
    }


def _dashboard_map(file: str, dashboard: dict[str, Any]) -> dict[str, Any]:
    name = "gpuobs-dashboard-" + file.removeprefix("gpuobs-").removesuffix(".json")
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(name, {"grafana_dashboard": "1"}),
        "data": {file: json.dumps(dashboard, indent=2, sort_keys=True) + "\n"},
    }


def _alerting_map(alerting_texts: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta("gpuobs-grafana-alerting", {"grafana_alert": "1"}),
        "data": dict(alerting_texts),
    }


def manifests(
    options: Options,
    dashboards: dict[str, dict[str, Any]],
    rule_documents: list[dict[str, Any]],
    alerting_texts: dict[str, str],
) -> dict[str, list[dict[str, Any]]]:
    """File name -> the objects it holds (the kustomization is one object too)."""
    files = {
        PROMETHEUS_RULE_FILE: [_prometheus_rule(rule_documents)],
        DASHBOARDS_FILE: [_dashboard_map(file, board) for file, board in sorted(dashboards.items())],
        ALERTING_FILE: [_alerting_map(alerting_texts)],
    }
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "namespace": options.namespace,
        "resources": list(files),
    }
    return {**files, KUSTOMIZATION_FILE: [kustomization]}
