"""The one registry of metric names: native, DCGM-compatible and OpenTelemetry names side by side.

Exporters, dashboards, alert rules and RCA queries import names from here and never spell them
again. Each domain has its own module (gpu, exporter, kernel, serving); this package re-exports
the `MetricSpec` type and the lookup helpers.
"""

from gpuobs.names.spec import MetricKind, MetricSpec, all_specs, by_native_name

__all__ = ["MetricKind", "MetricSpec", "all_specs", "by_native_name"]
