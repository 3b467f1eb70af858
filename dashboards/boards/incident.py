"""Incident view: what fires now and which failure signature each alert points to, restarts, scrape
targets, injected faults, with game-day annotations from Grafana's annotation store (tag `gameday`)."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dash_b
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.models import dashboard as dash_m

from gpuobs.dashboards.boards.panels import (
    DATASOURCE,
    GRAFANA_DATASOURCE,
    bar_gauge,
    finish,
    new_dashboard,
    stat_panel,
    table_panel,
    timeline_panel,
    timeseries_panel,
)
from gpuobs.dashboards.options import Options
from gpuobs.dashboards.promql import ALERTS, UP, matchers, or_zero, regex_union, series
from gpuobs.dashboards.rules.alerts import PROCESS_START_TIME
from gpuobs.names import serving as s

__all__ = ["FILE", "GAMEDAY_TAG", "UID", "dashboard"]

UID = "gpuobs-incident"
FILE = "gpuobs-incident.json"
GAMEDAY_TAG = "gameday"
"""Tag of the Grafana annotations that mark game-days (post them to /api/annotations with this tag)."""

FIRING = ALERTS + matchers(alertstate="firing")
_BAD_IF_ANY = ((None, "green"), (1.0, "red"))


def _jobs(o: Options) -> str:
    return matchers(job="~" + regex_union((o.exporter_job, o.serving_job)))


def _now(o: Options) -> list[Builder[dash_m.Panel]]:
    critical = ALERTS + matchers(alertstate="firing", severity="critical")
    pending = ALERTS + matchers(alertstate="pending")
    return [
        stat_panel("Firing alerts", or_zero(f"count({FIRING})"), "none", "Alerts firing now.", _BAD_IF_ANY),
        stat_panel(
            "Critical", or_zero(f"count({critical})"), "none", "Critical alerts firing now.", _BAD_IF_ANY
        ),
        stat_panel(
            "Pending",
            or_zero(f"count({pending})"),
            "none",
            "Alerts whose condition holds but whose `for` has not passed yet.",
            ((None, "green"), (1.0, "orange")),
        ),
        stat_panel(
            "Targets down",
            or_zero(f"count({UP}{_jobs(o)} == 0)"),
            "none",
            "gpuobs exporters and servers Prometheus cannot scrape.",
            _BAD_IF_ANY,
        ),
        stat_panel(
            "Serving restarts",
            or_zero(
                f"sum(increase({series(s.SERVING_WORKER_RESTARTS)}[$__range]))"
                f" + sum(changes({PROCESS_START_TIME}{matchers(job=o.serving_job)}[$__range]))"
            ),
            "none",
            "Worker restarts by the supervisor plus server process restarts in the time range.",
            ((None, "green"), (1.0, "orange")),
            decimals=0,
        ),
        stat_panel(
            "Injected faults",
            or_zero(f"sum({series(s.SERVING_FAULT_ACTIVE)})"),
            "none",
            "Faults injected into the serving engine now (chaos experiments).",
            ((None, "green"), (1.0, "purple")),
        ),
    ]


def _annotations(o: Options) -> list[dash_b.AnnotationQuery]:
    return [
        dash_b.AnnotationQuery()
        .name("Firing alerts")
        .datasource(DATASOURCE)
        .enable(True)
        .icon_color("red")
        .expr(FIRING),
        dash_b.AnnotationQuery()
        .name("Injected faults")
        .datasource(DATASOURCE)
        .enable(True)
        .icon_color("purple")
        .expr(f"{series(s.SERVING_FAULT_ACTIVE)} > 0"),
        dash_b.AnnotationQuery()
        .name("Game days")
        .datasource(GRAFANA_DATASOURCE)
        .enable(True)
        .icon_color("orange")
        .target(dash_b.AnnotationTarget().type("tags").tags([GAMEDAY_TAG]).match_any(True).limit(100)),
    ]


def dashboard(o: Options) -> dash_m.Dashboard:
    """The incident view dashboard."""
    runbook = (
        dash_b.DashboardLink("Runbook")
        .type(dash_m.DashboardLinkType.LINK)
        .url(o.runbook_base_url.rstrip("/") + "/${__data.fields.alertname}.md")
        .target_blank(True)
    )
    board = new_dashboard(
        UID,
        "gpuobs / Incident view",
        "What is firing, which failure signature it points to (run `gpuobs diagnose` for the "
        "ranked root cause), what restarted, and game-days.",
    )
    board = board.with_row(dash_b.Row("Now"))
    for panel in _now(o):
        board = board.with_panel(panel)
    for annotation in _annotations(o):
        board = board.annotation(annotation)
    firing_table = table_panel(
        "Firing alerts",
        or_zero(f"count by (alertname, severity, signature, instance, host, gpu, model_name) ({FIRING})"),
        "none",
        "One row per firing alert with the RCA signature it points to; the alert name links to its runbook.",
        width=16,
        steps=_BAD_IF_ANY,
    ).data_links([runbook])
    board = (
        board.with_row(dash_b.Row("Alerts and signatures"))
        .with_panel(firing_table)
        .with_panel(
            bar_gauge(
                "Failure signatures",
                or_zero(f"count by (signature) ({FIRING})"),
                "{{signature}}",
                "none",
                "Firing alerts by the `gpuobs diagnose` signature they point to.",
                _BAD_IF_ANY,
                width=8,
            )
        )
        .with_panel(
            timeline_panel(
                "Alert timeline",
                or_zero(f"count by (alertname, severity) ({FIRING})"),
                "{{alertname}} {{severity}}",
                "When each alert fired.",
                ((None, "transparent"), (1.0, "red")),
            )
        )
        .with_row(dash_b.Row("Restarts, targets, faults"))
        .with_panel(
            timeseries_panel(
                "Restarts",
                [
                    (
                        or_zero(
                            f"sum by (instance) (increase({series(s.SERVING_WORKER_RESTARTS)}"
                            f"[$__rate_interval]))"
                        ),
                        "worker {{instance}}",
                    ),
                    (
                        or_zero(
                            f"sum by (job, instance) (changes({PROCESS_START_TIME}{_jobs(o)}"
                            f"[$__rate_interval]))"
                        ),
                        "process {{job}} {{instance}}",
                    ),
                ],
                "none",
                "Serving worker restarts and process restarts.",
                ((None, "green"), (1.0, "orange")),
                width=8,
            )
        )
        .with_panel(
            timeseries_panel(
                "Scrape targets up",
                [(f"{UP}{_jobs(o)}", "{{job}} {{instance}}")],
                "none",
                "1 while Prometheus scrapes the target.",
                ((None, "red"), (1.0, "green")),
                max_value=1,
                width=8,
            )
        )
        .with_panel(
            timeseries_panel(
                "Injected faults",
                [
                    (
                        or_zero(f"sum by (fault, model_name) ({series(s.SERVING_FAULT_ACTIVE)})"),
                        "{{fault}} {{model_name}}",
                    )
                ],
                "none",
                "Faults injected into the serving engine (chaos experiments, game-days).",
                ((None, "green"), (1.0, "purple")),
                width=8,
            )
        )
    )
    return finish(board)
