"""The one registry of names: metrics (native, DCGM-compatible, OpenTelemetry), spans, attributes, log fields.

Exporters, serving, the launcher, dashboards, alert rules, RCA and test fixtures import names from
here and never spell them again. Each metric domain has its own module (gpu, exporter, kernel,
serving); `spans` holds span names, tracer scopes and span attribute keys, `logs` the JSON log field
names. This package re-exports the `MetricSpec` type and the lookup helpers.
"""

from gpuobs.names.spec import MetricKind, MetricSpec, all_specs, by_native_name

__all__ = ["MetricKind", "MetricSpec", "all_specs", "by_native_name"]
