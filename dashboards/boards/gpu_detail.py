"""One-GPU detail: every per-GPU metric of the exporter, one panel each, generated from gpuobs.names.

Sections place the metrics; any GPU metric added to gpuobs.names.gpu later and not placed here still
gets a panel in the "Other metrics" row, so the dashboard always shows every counter.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dash_b
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.models import dashboard as dash_m

from gpuobs.dashboards.boards.panels import (
    Steps,
    finish,
    new_dashboard,
    query_variable,
    stat_panel,
    table_panel,
    timeseries_panel,
    unit_of,
)
from gpuobs.dashboards.options import Options
from gpuobs.dashboards.promql import matchers, or_zero, series
from gpuobs.names import exporter as ex
from gpuobs.names import gpu as g
from gpuobs.names.spec import MetricKind, MetricSpec

__all__ = ["FILE", "SECTIONS", "UID", "dashboard", "gpu_specs"]

UID = "gpuobs-gpu"
FILE = "gpuobs-gpu-detail.json"

SEL = matchers(instance="~$instance", gpu="~$gpu")

SECTIONS: tuple[tuple[str, tuple[MetricSpec, ...]], ...] = (
    ("Identity and state", (g.GPU_INFO, ex.GPU_UP, g.PSTATE, g.COMPUTE_MODE, g.MIG_MODE, ex.SLOW_FIELD_AGE)),
    ("Clocks and throttling", (g.SM_CLOCK, g.MEMORY_CLOCK, g.CLOCK_EVENT_ACTIVE)),
    (
        "Utilisation",
        (g.GPU_UTILIZATION, g.MEMORY_COPY_UTILIZATION, g.ENCODER_UTILIZATION, g.DECODER_UTILIZATION),
    ),
    ("Profiling (GPM)", (g.GR_ENGINE_ACTIVE, g.SM_ACTIVE, g.SM_OCCUPANCY, g.TENSOR_ACTIVE, g.DRAM_ACTIVE)),
    (
        "Memory",
        (
            g.MEMORY_USED,
            g.MEMORY_FREE,
            g.MEMORY_RESERVED,
            g.MEMORY_TOTAL,
            g.PROCESS_MEMORY_USED,
            g.MIG_DEVICE_MEMORY_USED,
            g.MIG_DEVICE_MEMORY_TOTAL,
        ),
    ),
    (
        "Power and temperature",
        (g.POWER_USAGE, g.POWER_LIMIT, g.ENERGY, g.GPU_TEMPERATURE, g.MEMORY_TEMPERATURE, g.FAN_SPEED),
    ),
    (
        "Interconnect",
        (
            g.PCIE_TX_RATE,
            g.PCIE_RX_RATE,
            g.PCIE_REPLAYS,
            g.NVLINK_RATE,
            g.NVLINK_TX_RATE,
            g.NVLINK_RX_RATE,
            g.NVLINK_BANDWIDTH,
        ),
    ),
    (
        "Errors",
        (
            g.XID_ERRORS,
            g.XID_LAST,
            g.ECC_SBE_VOLATILE,
            g.ECC_DBE_VOLATILE,
            g.ECC_SBE_AGGREGATE,
            g.ECC_DBE_AGGREGATE,
            g.ROWS_REMAPPED_CORRECTABLE,
            g.ROWS_REMAPPED_UNCORRECTABLE,
            g.ROW_REMAP_PENDING,
            g.ROW_REMAP_FAILURE,
        ),
    ),
)

_BAD: Steps = ((None, "green"), (1.0, "red"))
_STEPS: dict[str, Steps] = {
    g.GPU_TEMPERATURE.native: ((None, "green"), (80.0, "orange"), (87.0, "red")),
    g.MEMORY_TEMPERATURE.native: ((None, "green"), (85.0, "orange"), (95.0, "red")),
    g.XID_ERRORS.native: _BAD,
    g.ECC_DBE_VOLATILE.native: _BAD,
    g.ECC_DBE_AGGREGATE.native: _BAD,
    g.ROW_REMAP_FAILURE.native: _BAD,
    g.ROW_REMAP_PENDING.native: ((None, "green"), (1.0, "orange")),
    ex.GPU_UP.native: ((None, "red"), (1.0, "green")),
}
# Series that a healthy GPU may not have (no MIG, no process, no XID yet): 0 rather than No data.
_MAY_BE_ABSENT = {
    g.MIG_DEVICE_MEMORY_USED.native,
    g.MIG_DEVICE_MEMORY_TOTAL.native,
    g.PROCESS_MEMORY_USED.native,
}
_RATE_UNITS = {"joules": "watt", "bytes": "Bps"}


def gpu_specs() -> list[MetricSpec]:
    """Every per-GPU metric spec of gpuobs.names.gpu."""
    return [v for v in vars(g).values() if isinstance(v, MetricSpec)]


def _title(spec: MetricSpec) -> str:
    return spec.help.split(". ")[0].rstrip(".")


def _legend(spec: MetricSpec) -> str:
    extra = [label for label in spec.labels if label not in g.GPU_LABELS]
    return " ".join("{{" + label + "}}" for label in extra) or "gpu {{gpu}}"


def _panel(spec: MetricSpec) -> Builder[dash_m.Panel]:
    name = series(spec, SEL)
    description = f"{spec.help} (`{spec.exposed_native}`)"
    steps = _STEPS.get(spec.native)
    extra = [label for label in spec.labels if label not in g.GPU_LABELS]
    if spec is g.GPU_INFO:
        return table_panel("GPU identity", name, "none", description, width=24)
    if spec.kind is MetricKind.COUNTER and spec.unit in _RATE_UNITS:
        return timeseries_panel(
            f"{_title(spec)} (rate)",
            [(f"rate({name}[$__rate_interval])", _legend(spec))],
            _RATE_UNITS[spec.unit],
            description,
            steps,
            width=8,
        )
    if spec.kind is MetricKind.COUNTER:
        by = f"sum by ({', '.join(extra)}) " if extra else "sum "
        return timeseries_panel(
            _title(spec),
            [(or_zero(f"{by}({name})"), _legend(spec))],
            "none",
            description + ", cumulative",
            steps,
            width=8,
        )
    expr = or_zero(name) if spec.native in _MAY_BE_ABSENT else name
    unit = unit_of(spec)
    return timeseries_panel(
        _title(spec),
        [(expr, _legend(spec))],
        unit,
        description,
        steps,
        max_value=1 if unit == "percentunit" else None,
        min_value=None if spec.unit == "celsius" else 0,
        width=8,
    )


def _now(o: Options) -> list[Builder[dash_m.Panel]]:
    return [
        stat_panel(
            "Answers",
            series(ex.GPU_UP, SEL),
            "none",
            "1 while the GPU answers NVML.",
            _STEPS[ex.GPU_UP.native],
        ),
        stat_panel("Utilisation", series(g.GPU_UTILIZATION, SEL), "percentunit", "Kernel-busy fraction."),
        stat_panel(
            "Memory used",
            f"{series(g.MEMORY_USED, SEL)} / {series(g.MEMORY_TOTAL, SEL)}",
            "percentunit",
            "Framebuffer memory used.",
            ((None, "green"), (0.95, "orange"), (o.gpu_memory_full_ratio, "red")),
            decimals=1,
        ),
        stat_panel(
            "Temperature",
            series(g.GPU_TEMPERATURE, SEL),
            "celsius",
            "Die temperature.",
            _STEPS[g.GPU_TEMPERATURE.native],
        ),
        stat_panel("Power", series(g.POWER_USAGE, SEL), "watt", "Power draw."),
        stat_panel(
            "XID errors",
            or_zero(f"sum({series(g.XID_ERRORS, SEL)})"),
            "none",
            "XID errors since the exporter started.",
            _BAD,
        ),
    ]


def dashboard(o: Options) -> dash_m.Dashboard:
    """The one-GPU detail dashboard."""
    up = series(ex.GPU_UP)
    board = (
        new_dashboard(UID, "gpuobs / GPU detail", "Every counter of one GPU, as the exporter serves it.")
        .with_variable(
            query_variable(
                "instance", "Exporter", f"label_values({up}, instance)", multi=False, include_all=False
            )
        )
        .with_variable(
            query_variable(
                "gpu",
                "GPU",
                f"label_values({series(ex.GPU_UP, matchers(instance='~$instance'))}, gpu)",
                multi=False,
                include_all=False,
                numeric=True,
            )
        )
        .with_row(dash_b.Row("Now"))
    )
    for panel in _now(o):
        board = board.with_panel(panel)
    placed = {spec.native for _, specs in SECTIONS for spec in specs}
    other = tuple(spec for spec in gpu_specs() if spec.native not in placed)
    for title, specs in (*SECTIONS, ("Other metrics", other)):
        if not specs:
            continue
        board = board.with_row(dash_b.Row(title))
        for spec in specs:
            board = board.with_panel(_panel(spec))
    return finish(board)
