"""The `MetricSpec` record and the registry that every names module registers into."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = ["MetricKind", "MetricSpec", "all_specs", "by_native_name", "register"]


class MetricKind(enum.StrEnum):
    """Prometheus instrument type of a metric."""

    GAUGE = "gauge"
    COUNTER = "counter"
    HISTOGRAM = "histogram"
    INFO = "info"


@dataclass(frozen=True)
class MetricSpec:
    """One metric under all its names.

    `native` is the gpuobs Prometheus name (base units, `gpuobs_` prefix, counters without the
    `_total` suffix that prometheus_client adds). `dcgm` is the dcgm-exporter field name with the
    `dcgm_scale` factor that turns the native value into DCGM's unit (e.g. bytes -> MiB). `otel`
    is the OpenTelemetry semantic-convention name and `otel_unit` its UCUM unit.
    """

    native: str
    kind: MetricKind
    help: str
    unit: str = ""
    labels: tuple[str, ...] = ()
    dcgm: str | None = None
    dcgm_kind: MetricKind | None = None
    dcgm_scale: float = 1.0
    otel: str | None = None
    otel_unit: str | None = None
    otel_scale: float = 1.0
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def exposed_native(self) -> str:
        """The name as it appears in the exposition (counters gain `_total`)."""
        return f"{self.native}_total" if self.kind is MetricKind.COUNTER else self.native


_REGISTRY: dict[str, MetricSpec] = {}


def register(*specs: MetricSpec) -> None:
    """Add specs to the registry; a name registered twice is a programming error."""
    for spec in specs:
        if spec.native in _REGISTRY and _REGISTRY[spec.native] != spec:
            raise ValueError(f"metric {spec.native} registered twice with different specs")
        _REGISTRY[spec.native] = spec


def _load_all() -> None:
    # Import every names module so that they register; kept lazy to avoid import cycles.
    from gpuobs.names import exporter, gpu, kernel, serving  # noqa: F401


def all_specs() -> list[MetricSpec]:
    """Every registered metric, sorted by native name."""
    _load_all()
    return sorted(_REGISTRY.values(), key=lambda s: s.native)


def by_native_name(name: str) -> MetricSpec:
    """The spec of a native metric name (with or without `_total`)."""
    _load_all()
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name.endswith("_total") and name[: -len("_total")] in _REGISTRY:
        return _REGISTRY[name[: -len("_total")]]
    raise KeyError(name)
