"""Shared dashboard pieces built with grafana-foundation-sdk: variables, panels with units and thresholds.

Every panel reads the `datasource` variable; every panel sets a unit; panels of event counts wrap
their query in `or_zero` so a healthy fleet shows 0 rather than "No data". `finish()` numbers the
panels and adds the standard annotations and the links between the gpuobs dashboards.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grafana_foundation_sdk.builders import bargauge, prometheus, stat, statetimeline, table, timeseries
from grafana_foundation_sdk.builders import common as common_b
from grafana_foundation_sdk.builders import dashboard as dash_b
from grafana_foundation_sdk.models import common as common_m
from grafana_foundation_sdk.models import dashboard as dash_m
from grafana_foundation_sdk.models import prometheus as prom_m

from gpuobs.names.spec import MetricSpec

__all__ = [
    "DATASOURCE",
    "TAG",
    "Steps",
    "bar_gauge",
    "datasource_variable",
    "finish",
    "new_dashboard",
    "query_variable",
    "stat_panel",
    "table_panel",
    "target",
    "timeline_panel",
    "timeseries_panel",
    "unit_of",
]

TAG = "gpuobs"
DATASOURCE = dash_m.DataSourceRef(type_val="prometheus", uid="${datasource}")
GRAFANA_DATASOURCE = dash_m.DataSourceRef(type_val="grafana", uid="-- Grafana --")

Steps = Sequence[tuple[float | None, str]]
"""Threshold steps: (lower bound, colour); the first bound is None (from minus infinity)."""

_UNITS = {
    "ratio": "percentunit",
    "bytes": "bytes",
    "bytes_per_second": "Bps",
    "hertz": "hertz",
    "celsius": "celsius",
    "watts": "watt",
    "joules": "joule",
    "seconds": "s",
    "": "none",
}


def unit_of(spec: MetricSpec) -> str:
    """Grafana's unit id for a spec's base unit."""
    return _UNITS[spec.unit]


def new_dashboard(uid: str, title: str, description: str) -> dash_b.Dashboard:
    """A dashboard with the gpuobs defaults: last hour, 30 s refresh, shared crosshair, UTC-neutral."""
    return (
        dash_b.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags([TAG])
        .time("now-1h", "now")
        .refresh("30s")
        .timezone("browser")
        .tooltip(dash_m.DashboardCursorSync.CROSSHAIR)
        .editable()
        .with_variable(datasource_variable())
    )


def datasource_variable() -> dash_b.DatasourceVariable:
    return dash_b.DatasourceVariable("datasource").label("Data source").type("prometheus")


def query_variable(
    name: str, label: str, query: str, multi: bool = True, include_all: bool = True, numeric: bool = False
) -> dash_b.QueryVariable:
    """A Prometheus label_values() variable; with include_all, All means the regex `.*`."""
    variable = (
        dash_b.QueryVariable(name)
        .label(label)
        .datasource(DATASOURCE)
        .query(query)
        .refresh(dash_m.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(dash_m.VariableSort.NUMERICAL_ASC if numeric else dash_m.VariableSort.ALPHABETICAL_ASC)
        .multi(multi)
        .include_all(include_all)
    )
    if include_all:
        variable = variable.all_value(".*").current(
            dash_m.VariableOption(selected=True, text="All", value="$__all")
        )
    return variable


def target(
    expr: str, legend: str = "", instant: bool = False, ref: str = "A", table_format: bool = False
) -> prometheus.Dataquery:
    query = prometheus.Dataquery().expr(expr).ref_id(ref)
    if legend:
        query = query.legend_format(legend)
    query = query.instant() if instant else query.range()
    if table_format:
        query = query.format(prom_m.PromQueryFormat.TABLE)
    return query


def _thresholds(steps: Steps) -> dash_b.ThresholdsConfig:
    return (
        dash_b.ThresholdsConfig()
        .mode(dash_m.ThresholdsMode.ABSOLUTE)
        .steps([dash_m.Threshold(value=bound, color=colour) for bound, colour in steps])
    )


_GREEN: Steps = ((None, "green"),)


def stat_panel(
    title: str,
    expr: str,
    unit: str,
    description: str,
    steps: Steps = _GREEN,
    width: int = 4,
    decimals: float | None = None,
) -> stat.Panel:
    """A single-value panel of an instant query; colour by `steps`."""
    panel = (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .with_target(target(expr, instant=True))
        .unit(unit)
        .thresholds(_thresholds(steps))
        .color_mode(common_m.BigValueColorMode.VALUE)
        .graph_mode(common_m.BigValueGraphMode.NONE)
        .reduce_options(common_b.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .span(width)
        .height(4)
    )
    if decimals is not None:
        panel = panel.decimals(decimals)
    return panel


def timeseries_panel(
    title: str,
    queries: Sequence[tuple[str, str]],
    unit: str,
    description: str,
    steps: Steps | None = None,
    min_value: float | None = 0,
    max_value: float | None = None,
    width: int = 12,
    stacked: bool = False,
) -> timeseries.Panel:
    """A graph of range queries given as (expr, legend); `steps` also draws threshold lines."""
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .line_width(1)
        .fill_opacity(10)
        .legend(
            common_b.VizLegendOptions()
            .display_mode(common_m.LegendDisplayMode.TABLE)
            .placement(common_m.LegendPlacement.BOTTOM)
            .show_legend(True)
            .calcs(["lastNotNull", "max"])
        )
        .tooltip(
            common_b.VizTooltipOptions()
            .mode(common_m.TooltipDisplayMode.MULTI)
            .sort(common_m.SortOrder.DESCENDING)
        )
        .span(width)
        .height(8)
    )
    for n, (expr, legend) in enumerate(queries):
        panel = panel.with_target(target(expr, legend, ref=chr(ord("A") + n)))
    if min_value is not None:
        panel = panel.min(min_value)
    if max_value is not None:
        panel = panel.max(max_value)
    panel = panel.thresholds(_thresholds(steps or _GREEN)).thresholds_style(
        common_b.GraphThresholdsStyleConfig().mode(
            common_m.GraphThresholdsStyleMode.DASHED if steps else common_m.GraphThresholdsStyleMode.OFF
        )
    )
    if stacked:
        panel = panel.stacking(common_b.StackingConfig().mode(common_m.StackingMode.NORMAL))
    return panel


def table_panel(
    title: str, expr: str, unit: str, description: str, width: int = 12, steps: Steps = _GREEN
) -> table.Panel:
    """One row per series of an instant query, its labels as columns."""
    return (
        table.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .with_target(target(expr, instant=True, table_format=True))
        .unit(unit)
        .thresholds(_thresholds(steps))
        .align(common_m.FieldTextAlignment.AUTO)
        .inspect(False)
        .show_header(True)
        .span(width)
        .height(8)
    )


def bar_gauge(
    title: str,
    expr: str,
    legend: str,
    unit: str,
    description: str,
    steps: Steps = _GREEN,
    width: int = 12,
    max_value: float | None = None,
) -> bargauge.Panel:
    """Horizontal bars, one per series of an instant query."""
    panel = (
        bargauge.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .with_target(target(expr, legend, instant=True))
        .unit(unit)
        .min(0)
        .thresholds(_thresholds(steps))
        .orientation(common_m.VizOrientation.HORIZONTAL)
        .display_mode(common_m.BarGaugeDisplayMode.GRADIENT)
        .reduce_options(common_b.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .span(width)
        .height(8)
    )
    if max_value is not None:
        panel = panel.max(max_value)
    return panel


def timeline_panel(
    title: str, expr: str, legend: str, description: str, steps: Steps, width: int = 24
) -> statetimeline.Panel:
    """A state timeline (one lane per series), coloured by `steps`."""
    return (
        statetimeline.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .with_target(target(expr, legend))
        .unit("none")
        .thresholds(_thresholds(steps))
        .show_value(common_m.VisibilityMode.AUTO)
        .merge_values(True)
        .fill_opacity(70)
        .line_width(0)
        .legend(
            common_b.VizLegendOptions()
            .display_mode(common_m.LegendDisplayMode.LIST)
            .placement(common_m.LegendPlacement.BOTTOM)
            .show_legend(True)
        )
        .tooltip(
            common_b.VizTooltipOptions()
            .mode(common_m.TooltipDisplayMode.SINGLE)
            .sort(common_m.SortOrder.NONE)
        )
        .span(width)
        .height(7)
    )


def finish(builder: dash_b.Dashboard) -> dash_m.Dashboard:
    """Build the dashboard: links to the other gpuobs dashboards, the built-in annotations, panel ids."""
    builder = builder.link(
        dash_b.DashboardLink("gpuobs dashboards")
        .type(dash_m.DashboardLinkType.DASHBOARDS)
        .tags([TAG])
        .as_dropdown(True)
        .include_vars(False)
        .keep_time(True)
    )
    board = builder.build()
    builtin = dash_m.AnnotationQuery(
        name="Annotations & Alerts",
        datasource=GRAFANA_DATASOURCE,
        enable=True,
        hide=True,
        icon_color="rgba(0, 211, 255, 1)",
        type_val="dashboard",
        built_in=1,
    )
    board.annotations.list_val = [builtin, *(board.annotations.list_val or [])]
    next_id = 1
    for panel in board.panels or []:
        panel.id_val = next_id
        next_id += 1
        for inner in getattr(panel, "panels", None) or []:
            inner.id_val = next_id
            next_id += 1
    return board


def to_json(board: dash_m.Dashboard) -> dict[str, Any]:
    """The dashboard as plain JSON data (what Grafana provisioning reads)."""
    import json

    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    data: dict[str, Any] = json.loads(JSONEncoder(sort_keys=True).encode(board))
    return data
