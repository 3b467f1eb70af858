"""OTLP/HTTP push of the exporter's GPU metrics under OpenTelemetry hardware semantic-convention names.

`OtlpMetricsPusher` reads the current points through a callable (the exporter's latest samples
turned into `OtlpPoint`s), publishes them through observable instruments of a private
`MeterProvider` named by `MetricSpec.otel` (unit `otel_unit`, value times `otel_scale`), and
exports them with the SDK's OTLP/HTTP metric exporter to `<endpoint>/v1/metrics` every
`interval_s`. One read per export: the pusher's own thread reads the points, then has the
`PeriodicExportingMetricReader` (its timer off) collect and export them. The instrument follows
the spec's kind (gauge -> observable gauge, counter -> observable counter) unless
`spec.extra["otel.instrument"]` says `gauge`, `counter` or `updowncounter` (the semconv makes
`hw.gpu.memory.usage`/`.limit` up-down counters); `spec.extra["otel.attr.<key>"]` entries are
fixed attributes added to every point of that spec (e.g. `hw.gpu.task`). Specs without `otel`
are skipped. A collector that is down costs one warning per outage, a reminder every few minutes
(`gpuobs.telemetry.OutageLog`), and never an exception.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpuobs.errors import InputError
from gpuobs.names.spec import MetricKind, MetricSpec
from gpuobs.telemetry import CollectorAnswers, OutageLog, quiet_otlp_retry_logs
from gpuobs.user_input import require_http_url

if TYPE_CHECKING:
    from opentelemetry.metrics import CallbackOptions, Observation
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

__all__ = ["OtlpMetricsPusher", "OtlpPoint", "metrics_endpoint"]

logger = logging.getLogger(__name__)

AttributeValue = str | int | float | bool
_INSTRUMENTS = ("gauge", "counter", "updowncounter")
_ATTR_PREFIX = "otel.attr."


@dataclass(frozen=True)
class OtlpPoint:
    """One value of one metric for one entity (a GPU, a MIG device), in the spec's native unit."""

    spec: MetricSpec
    value: float
    attributes: dict[str, AttributeValue] = field(default_factory=dict)


def metrics_endpoint(url: str) -> str:
    """`<url>/v1/metrics` (kept as is when already there); InputError unless an http(s) URL."""
    require_http_url("--otlp-endpoint", url, "http://otel-collector:4318")
    endpoint = url.strip().rstrip("/")
    return endpoint if endpoint.endswith("/v1/metrics") else f"{endpoint}/v1/metrics"


def _instrument_kind(spec: MetricSpec) -> str | None:
    declared = spec.extra.get("otel.instrument")
    if declared:
        return declared if declared in _INSTRUMENTS else None
    if spec.kind is MetricKind.GAUGE:
        return "gauge"
    if spec.kind is MetricKind.COUNTER:
        return "counter"
    return None  # histograms and info metrics are not pushed


def _fixed_attributes(spec: MetricSpec) -> dict[str, str]:
    return {k[len(_ATTR_PREFIX):]: v for k, v in spec.extra.items() if k.startswith(_ATTR_PREFIX)}


@dataclass
class _Instrument:
    name: str
    kind: str
    unit: str
    observations: list[tuple[float, dict[str, AttributeValue]]] = field(default_factory=list)


class OtlpMetricsPusher:
    """Pushes `read_points()` over OTLP/HTTP every `interval_s` from a daemon thread."""

    def __init__(self, endpoint: str, interval_s: float, read_points: Callable[[], list[OtlpPoint]],
                 resource_attributes: dict[str, Any] | None = None, timeout_s: float | None = None) -> None:
        if interval_s <= 0:
            raise InputError(f"OTLP push interval must be positive, got {interval_s}")
        self.endpoint = metrics_endpoint(endpoint)
        self.interval_s = interval_s
        self.timeout_s = timeout_s if timeout_s is not None else min(10.0, max(1.0, interval_s))
        self._read_points = read_points
        self._extra_resource = dict(resource_attributes or {})
        self._instruments: dict[str, _Instrument] = {}
        self._skipped: set[str] = set()
        self._push_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._outage = OutageLog(f"OTLP push to {self.endpoint}", log=logger)
        self._closed = False
        self._provider: MeterProvider | None = None
        self._reader: PeriodicExportingMetricReader | None = None
        self._exporter: Any = None
        self._meter: Any = None
        self.pushes = 0
        self.failures = 0
        # What the endpoint answered each push: a failed push is reported with it (the SDK's lines are
        # quieted), and a web page answering 200 (a proxy's login page, a UI's URL) is no collector.
        self._answers = CollectorAnswers(self.endpoint, self.timeout_s)

    # -- SDK wiring (lazy: nothing of the SDK is imported until the first push) -------------------

    def _ensure_provider(self) -> None:
        if self._provider is not None:
            return
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource

        from gpuobs import __version__
        from gpuobs.telemetry import resource_attributes

        quiet_otlp_retry_logs()
        attributes: dict[str, Any] = dict(resource_attributes("gpuobs-exporter"))
        attributes.update(self._extra_resource)
        self._exporter = _recorder_class()(
            OTLPMetricExporter(
                endpoint=self.endpoint, timeout=self.timeout_s, session=self._answers.session()
            )
        )
        # The reader's own timer is off: push_once() decides when to collect, so that each export
        # sees exactly one read of the points.
        self._reader = PeriodicExportingMetricReader(
            self._exporter, export_interval_millis=math.inf, export_timeout_millis=self.timeout_s * 1000)
        self._provider = MeterProvider(resource=Resource.create(attributes), metric_readers=[self._reader])
        self._meter = self._provider.get_meter("gpuobs.exporters", __version__)
        logger.info("pushing GPU metrics over OTLP/HTTP to %s every %.3g s", self.endpoint, self.interval_s)

    def _instrument_for(self, spec: MetricSpec) -> _Instrument | None:
        name = spec.otel
        if not name:
            return None
        kind = _instrument_kind(spec)
        unit = spec.otel_unit or ""
        existing = self._instruments.get(name)
        if existing is not None:
            if (existing.kind, existing.unit) != (kind, unit) and spec.native not in self._skipped:
                self._skipped.add(spec.native)
                logger.warning("%s: OTel name %s is already a %s in %r; this %s in %r is not pushed",
                               spec.native, name, existing.kind, existing.unit, kind, unit)
            return existing if (existing.kind, existing.unit) == (kind, unit) else None
        if kind is None:
            if spec.native not in self._skipped:
                self._skipped.add(spec.native)
                logger.debug("%s (%s) has no OTLP instrument; not pushed", spec.native, spec.kind)
            return None
        instrument = _Instrument(name, kind, unit)
        create = {
            "gauge": self._meter.create_observable_gauge,
            "counter": self._meter.create_observable_counter,
            "updowncounter": self._meter.create_observable_up_down_counter,
        }[kind]
        create(name, callbacks=[self._callback(instrument)], unit=unit, description=spec.help)
        self._instruments[name] = instrument
        return instrument

    @staticmethod
    def _callback(instrument: _Instrument) -> Callable[[CallbackOptions], Iterable[Observation]]:
        from opentelemetry.metrics import Observation

        def observe(options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(value, attributes) for value, attributes in instrument.observations]

        return observe

    # -- pushing ----------------------------------------------------------------------------------

    def push_once(self) -> bool:
        """Read the points and export them now; True when the collector accepted them. Never raises."""
        with self._push_lock:
            if self._closed:
                return False
            try:
                self._ensure_provider()
                points = self._read_points()
                self._publish(points)
                assert self._reader is not None and self._exporter is not None
                # no data points means no export call, which is not a failure
                self._exporter.last_ok, self._exporter.last_error = True, ""
                self._answers.forget()
                self._reader.force_flush(timeout_millis=self.timeout_s * 1000)
                ok, error = self._answers.judge(self._exporter.last_ok, self._exporter.last_error)
            except Exception as exc:  # a push must never take the exporter down
                ok, error = False, f"{type(exc).__name__}: {exc}"
            self.pushes += 1
            self._record(ok, error)
            return ok

    def _publish(self, points: Sequence[OtlpPoint]) -> None:
        fresh: dict[str, list[tuple[float, dict[str, AttributeValue]]]] = {}
        for point in points:
            instrument = self._instrument_for(point.spec)
            if instrument is None:
                continue
            value = float(point.value) * point.spec.otel_scale
            if math.isnan(value):
                continue
            attributes: dict[str, AttributeValue] = {**_fixed_attributes(point.spec), **point.attributes}
            fresh.setdefault(instrument.name, []).append((value, attributes))
        for name, instrument in self._instruments.items():
            instrument.observations = fresh.get(name, [])

    def _record(self, ok: bool, error: str) -> None:
        if ok:
            self._outage.ok()
            return
        self.failures += 1
        self._outage.failed(error)

    def start(self) -> OtlpMetricsPusher:
        """Push every `interval_s` from a daemon thread (the first push after one interval)."""
        if self._thread is None and not self._closed:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="gpuobs-otlp", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.push_once()

    def stop(self, flush: bool = True) -> None:
        """Stop the thread, push the latest points once more (flush) and shut the SDK down."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(self.timeout_s + self.interval_s + 1.0)
        if flush:
            self.push_once()
        with self._push_lock:
            self._closed = True
            provider, self._provider = self._provider, None
        if provider is not None:
            try:
                provider.shutdown(timeout_millis=self.timeout_s * 1000)
            except Exception as exc:  # shutting down must not raise either
                logger.debug("OTLP meter provider shutdown: %s", exc)

    def __enter__(self) -> OtlpMetricsPusher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@functools.cache
def _recorder_class() -> type:
    from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult

    class ResultRecorder(MetricExporter):  # type: ignore[misc]
        """Delegates to the OTLP exporter and remembers the last result, which the reader discards."""

        def __init__(self, inner: MetricExporter) -> None:
            super().__init__(
                preferred_temporality=getattr(inner, "_preferred_temporality", None),
                preferred_aggregation=getattr(inner, "_preferred_aggregation", None),
            )
            self.inner = inner
            self.last_ok = True
            self.last_error = ""

        def export(self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> Any:
            try:
                result = self.inner.export(metrics_data, timeout_millis=timeout_millis, **kwargs)
            except Exception as exc:
                self.last_ok, self.last_error = False, f"{type(exc).__name__}: {exc}"
                return MetricExportResult.FAILURE
            self.last_ok = result is MetricExportResult.SUCCESS
            self.last_error = ""  # the SDK logs its reason; CollectorAnswers.judge says it from the answer
            return result

        def force_flush(self, timeout_millis: float = 10_000) -> bool:
            return bool(self.inner.force_flush(timeout_millis=timeout_millis))

        def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
            self.inner.shutdown(timeout_millis=timeout_millis, **kwargs)

    return ResultRecorder
