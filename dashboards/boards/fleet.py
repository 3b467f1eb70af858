"""Fleet overview: GPUs up, utilisation, memory, power, temperature, XID/ECC events and throttling, by node
and pod, and the health of the exporters that report them."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dash_b
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.models import dashboard as dash_m

from gpuobs.dashboards.boards.panels import (
    finish,
    new_dashboard,
    query_variable,
    stat_panel,
    timeseries_panel,
)
from gpuobs.dashboards.options import Options
from gpuobs.dashboards.promql import UP, matchers, or_zero, regex_union, series
from gpuobs.dashboards.rules import recording as rec
from gpuobs.dashboards.rules.alerts import POWER_REASONS, THERMAL_REASONS
from gpuobs.names import exporter as ex
from gpuobs.names import gpu as g

__all__ = ["FILE", "UID", "dashboard"]

UID = "gpuobs-fleet"
FILE = "gpuobs-fleet-overview.json"

SEL = matchers(host="~$host", instance="~$instance")
HOST = matchers(host="~$host")
THROTTLING = (*THERMAL_REASONS, *POWER_REASONS, "hw_slowdown")
THROTTLED = matchers(host="~$host", instance="~$instance", reason="~" + regex_union(THROTTLING))
_TEMP_STEPS = ((None, "green"), (80.0, "orange"), (87.0, "red"))
_BAD_IF_ANY = ((None, "green"), (1.0, "red"))


def _memory_steps(o: Options) -> tuple[tuple[float | None, str], ...]:
    """Orange where engines usually stop reserving, red where GpuMemoryNearFull fires."""
    return ((None, "green"), (0.95, "orange"), (o.gpu_memory_full_ratio, "red"))


def _pod(expr: str) -> str:
    """GPUs without pod attribution are grouped as pod="unattributed" instead of disappearing."""
    return f'label_replace({expr}, "pod", "unattributed", "pod", "")'


def _glance(o: Options) -> list[Builder[dash_m.Panel]]:
    gpu_up = series(ex.GPU_UP, SEL)
    return [
        stat_panel("GPUs up", f"sum({gpu_up})", "none", "GPUs that answer NVML."),
        stat_panel(
            "GPUs lost",
            or_zero(f"count({gpu_up} == 0)"),
            "none",
            "GPUs that stopped answering (fallen off the bus).",
            _BAD_IF_ANY,
        ),
        stat_panel(
            "Exporters down",
            or_zero(f"count({UP}{matchers(job=o.exporter_job, instance='~$instance')} == 0)"),
            "none",
            "GPU exporter targets Prometheus cannot scrape.",
            _BAD_IF_ANY,
        ),
        stat_panel(
            "GPU utilisation",
            f"avg({series(g.GPU_UTILIZATION, SEL)})",
            "percentunit",
            "Mean kernel-busy fraction over the selected GPUs.",
            decimals=1,
        ),
        stat_panel(
            "GPU memory used",
            f"sum({series(g.MEMORY_USED, SEL)}) / sum({series(g.MEMORY_TOTAL, SEL)})",
            "percentunit",
            "Framebuffer memory used over the selected GPUs.",
            _memory_steps(o),
            decimals=1,
        ),
        stat_panel(
            "Power draw", f"sum({series(g.POWER_USAGE, SEL)})", "watt", "Power drawn by the selected GPUs."
        ),
        stat_panel(
            "Hottest GPU",
            f"max({series(g.GPU_TEMPERATURE, SEL)})",
            "celsius",
            "Highest die temperature.",
            _TEMP_STEPS,
        ),
        stat_panel(
            "XID errors",
            or_zero(f"sum({series(g.XID_ERRORS, SEL)})"),
            "none",
            "XID errors counted by the exporters since they started.",
            _BAD_IF_ANY,
        ),
        stat_panel(
            "Uncorrectable ECC",
            or_zero(f"sum({series(g.ECC_DBE_VOLATILE, SEL)})"),
            "none",
            "Double-bit ECC errors since the drivers loaded.",
            _BAD_IF_ANY,
        ),
        stat_panel(
            "Throttled GPUs",
            or_zero(f"count(max by (instance, gpu) ({series(g.CLOCK_EVENT_ACTIVE, THROTTLED)}) == 1)"),
            "none",
            "GPUs whose clocks a thermal, power or hardware slowdown holds down now.",
            ((None, "green"), (1.0, "orange")),
        ),
    ]


def dashboard(o: Options) -> dash_m.Dashboard:
    """The fleet overview dashboard."""
    util = series(g.GPU_UTILIZATION, SEL)
    used = series(g.MEMORY_USED, SEL)
    board = (
        new_dashboard(
            UID,
            "gpuobs / Fleet overview",
            "Every GPU of the fleet: health, load, memory, power, heat, errors, by node and pod.",
        )
        .with_variable(query_variable("host", "Node", f"label_values({series(ex.GPU_UP)}, host)"))
        .with_variable(
            query_variable("instance", "Exporter", f"label_values({series(ex.GPU_UP, HOST)}, instance)")
        )
        .with_row(dash_b.Row("Fleet at a glance"))
    )
    for panel in _glance(o):
        board = board.with_panel(panel)
    board = (
        board.with_row(dash_b.Row("Utilisation and memory"))
        .with_panel(
            timeseries_panel(
                "GPU utilisation by node",
                [(f"{rec.HOST_UTILIZATION}{HOST}", "{{host}}")],
                "percentunit",
                "Mean utilisation of each node's GPUs (recorded).",
                max_value=1,
            )
        )
        .with_panel(
            timeseries_panel(
                "GPU utilisation by GPU",
                [(util, "{{host}} gpu {{gpu}}")],
                "percentunit",
                "Kernel-busy fraction of each GPU.",
                max_value=1,
            )
        )
        .with_panel(
            timeseries_panel(
                "GPU memory used by GPU",
                [(f"{used} / {series(g.MEMORY_TOTAL, SEL)}", "{{host}} gpu {{gpu}}")],
                "percentunit",
                "Framebuffer memory used of each GPU.",
                _memory_steps(o),
                max_value=1,
            )
        )
        .with_panel(
            timeseries_panel(
                "GPU memory used by node",
                [(f"{rec.HOST_MEMORY_USED}{HOST}", "{{host}}")],
                "bytes",
                "Framebuffer memory used on each node (recorded).",
            )
        )
        .with_panel(
            timeseries_panel(
                "GPU memory by pod",
                [(f"sum by (namespace, pod) ({_pod(used)})", "{{namespace}}/{{pod}}")],
                "bytes",
                "Memory of the GPUs each pod holds (kubelet pod-resources "
                "attribution); GPUs no pod holds are `unattributed`.",
            )
        )
        .with_panel(
            timeseries_panel(
                "GPU utilisation by pod",
                [(f"avg by (namespace, pod) ({_pod(util)})", "{{namespace}}/{{pod}}")],
                "percentunit",
                "Mean utilisation of the GPUs each pod holds.",
                max_value=1,
            )
        )
        .with_row(dash_b.Row("Power and temperature"))
        .with_panel(
            timeseries_panel(
                "Power by node",
                [(f"{rec.HOST_POWER}{HOST}", "{{host}}")],
                "watt",
                "Power drawn by each node's GPUs (recorded).",
            )
        )
        .with_panel(
            timeseries_panel(
                "Power against the limit",
                [(f"{series(g.POWER_USAGE, SEL)} / {series(g.POWER_LIMIT, SEL)}", "{{host}} gpu {{gpu}}")],
                "percentunit",
                "Power draw over the enforced power limit.",
                ((None, "green"), (0.95, "orange")),
                max_value=1,
            )
        )
        .with_panel(
            timeseries_panel(
                "GPU temperature",
                [(series(g.GPU_TEMPERATURE, SEL), "{{host}} gpu {{gpu}}")],
                "celsius",
                "Die temperature; thermal slowdown starts near 87 C.",
                _TEMP_STEPS,
                min_value=None,
            )
        )
        .with_panel(
            timeseries_panel(
                "HBM temperature",
                [(series(g.MEMORY_TEMPERATURE, SEL), "{{host}} gpu {{gpu}}")],
                "celsius",
                "Memory temperature.",
                ((None, "green"), (85.0, "orange"), (95.0, "red")),
                min_value=None,
            )
        )
        .with_row(dash_b.Row("Errors and throttling"))
        .with_panel(
            timeseries_panel(
                "XID errors by code",
                [
                    (
                        or_zero(f"sum by (host, gpu, code) ({series(g.XID_ERRORS, SEL)})"),
                        "{{host}} gpu {{gpu}} XID {{code}}",
                    )
                ],
                "none",
                "XID errors counted since each exporter started, by code.",
                _BAD_IF_ANY,
            )
        )
        .with_panel(
            timeseries_panel(
                "ECC errors",
                [
                    (
                        or_zero(f"sum by (host, gpu) ({series(g.ECC_DBE_VOLATILE, SEL)})"),
                        "uncorrectable {{host}} gpu {{gpu}}",
                    ),
                    (
                        or_zero(f"sum by (host, gpu) ({series(g.ECC_SBE_VOLATILE, SEL)})"),
                        "corrected {{host}} gpu {{gpu}}",
                    ),
                ],
                "none",
                "ECC errors since the driver loaded (volatile counters).",
            )
        )
        .with_panel(
            timeseries_panel(
                "GPUs throttled, by reason",
                [
                    (
                        f"sum by (reason) ({rec.HOST_THROTTLE_REASONS}"
                        f"{matchers(host='~$host', reason='~' + regex_union(THROTTLING))})",
                        "{{reason}}",
                    )
                ],
                "none",
                "How many GPUs each slowdown reason holds down (recorded per node).",
                ((None, "green"), (1.0, "orange")),
            )
        )
        .with_panel(
            timeseries_panel(
                "Row remapping",
                [
                    (
                        f"sum by (host, gpu) ({series(g.ROW_REMAP_PENDING, SEL)})",
                        "pending {{host}} gpu {{gpu}}",
                    ),
                    (
                        f"sum by (host, gpu) ({series(g.ROW_REMAP_FAILURE, SEL)})",
                        "failed {{host}} gpu {{gpu}}",
                    ),
                ],
                "none",
                "A pending remap waits for a GPU reset; a failed one means replacement.",
                _BAD_IF_ANY,
            )
        )
        .with_row(dash_b.Row("Exporters"))
        .with_panel(
            timeseries_panel(
                "Exporter targets up",
                [(f"{UP}{matchers(job=o.exporter_job, instance='~$instance')}", "{{instance}}")],
                "none",
                "1 when Prometheus scrapes the exporter.",
                ((None, "red"), (1.0, "green")),
                max_value=1,
                width=8,
            )
        )
        .with_panel(
            timeseries_panel(
                "GPU backend up",
                [(series(ex.NVML_UP, matchers(instance="~$instance")), "{{instance}}")],
                "none",
                "1 when NVML (or the simulator) is initialised.",
                ((None, "red"), (1.0, "green")),
                max_value=1,
                width=8,
            )
        )
        .with_panel(
            timeseries_panel(
                "Collectors failing",
                [
                    (
                        or_zero(
                            f"count by (collector) "
                            f"({series(ex.COLLECTOR_SUCCESS, matchers(instance='~$instance'))} == 0)"
                        ),
                        "{{collector}}",
                    )
                ],
                "none",
                "Collectors whose last run failed (their samples are dropped).",
                _BAD_IF_ANY,
                width=8,
            )
        )
    )
    return finish(board)
