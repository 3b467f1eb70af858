"""The one place that wires the OpenTelemetry SDK (library code depends on the API only)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

__all__ = [
    "CollectorAnswers",
    "OutageLog",
    "configure_tracing",
    "node_name",
    "quiet_otlp_retry_logs",
    "resource_attributes",
]

# The OTLP exporters' own loggers print a line per retry and per failed batch; OutageLog reports instead.
_OTLP_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.proto.http._log_exporter",
)
_RETRY_NOISE = ("Transient error", "Failed to export")
# Seconds a span export waits for the collector (the SDK's own default).
_SPAN_EXPORT_TIMEOUT_S = 10.0

logger = logging.getLogger(__name__)


def node_name() -> str:
    """The node name: `NODE_NAME` (downward API; in a pod the hostname is the pod name) or the hostname."""
    import os
    import socket

    return os.environ.get("NODE_NAME") or socket.gethostname()


def resource_attributes(service_name: str) -> dict[str, str]:
    """Resource attributes with `host.name` and, inside Kubernetes, pod and namespace."""
    import os

    from gpuobs.names import spans

    attrs = {spans.SERVICE_NAME: service_name, spans.HOST_NAME: node_name()}
    pod = os.environ.get("POD_NAME") or os.environ.get("HOSTNAME")
    namespace = os.environ.get("POD_NAMESPACE")
    if os.environ.get("KUBERNETES_SERVICE_HOST") and pod:
        attrs[spans.K8S_POD_NAME] = pod
    if namespace:
        attrs[spans.K8S_NAMESPACE_NAME] = namespace
    return attrs


class OutageLog:
    """Logs a remote endpoint's outage as one warning, a reminder every `remind_s`, and one recovery line.

    A collector that is down must not write a line every export interval into the JSON logs, nor
    disappear from them: the reminder says how long it has failed and how many attempts were lost.
    """

    def __init__(self, what: str, remind_s: float = 300.0, clock: Callable[[], float] = time.monotonic,
                 log: logging.Logger | None = None) -> None:
        self.what = what
        self.remind_s = remind_s
        self._clock = clock
        self._log = log or logger
        self._lock = threading.Lock()
        self._since: float | None = None
        self._last_said = 0.0
        self._failures = 0

    @property
    def failing(self) -> bool:
        return self._since is not None

    def failed(self, error: str) -> None:
        """Record one failed attempt; warns at the first and reminds at most every `remind_s`."""
        now = self._clock()
        with self._lock:
            self._failures += 1
            if self._since is None:
                self._since, self._last_said, self._failures = now, now, 1
                self._log.warning("%s failed (%s); retrying quietly, a reminder every %.0f s",
                                  self.what, error, self.remind_s)
            elif now - self._last_said >= self.remind_s:
                self._last_said = now
                self._log.warning("%s still failing after %.0f s (%d attempts): %s",
                                  self.what, now - self._since, self._failures, error)

    def ok(self) -> None:
        """Record a success; says once that the endpoint works again after an outage."""
        with self._lock:
            if self._since is None:
                return
            lasted, failures = self._clock() - self._since, self._failures
            self._since, self._failures = None, 0
        self._log.info("%s works again after %.0f s (%d failed attempts)", self.what, lasted, failures)


class CollectorAnswers:
    """The last HTTP answer an OTLP/HTTP exporter got, kept by a response hook on the session it posts with.

    The SDK logs why an export failed (lines quieted here: see quiet_otlp_retry_logs) and takes any 200 as
    delivered, so a proxy's login page or a UI's URL answering 200 swallowed every batch without a word, and a
    refusal was reported without its status. `judge` reads an export's result against that answer.
    """

    def __init__(self, endpoint: str, timeout_s: float) -> None:
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self._last: tuple[int, str, str] | None = None

    def session(self) -> Any:
        """A requests session for the exporter (its `session=`), noting each answer."""
        import requests

        session = requests.Session()
        session.hooks["response"].append(self._note)
        return session

    def _note(self, response: Any, *args: Any, **kwargs: Any) -> None:
        from gpuobs.http_body import body_excerpt

        kind = str(response.headers.get("Content-Type", ""))
        self._last = (int(response.status_code), kind, body_excerpt(response.content))

    def forget(self) -> None:
        """Before an export: what answered the last one says nothing of this one."""
        self._last = None

    def judge(self, ok: bool, error: str) -> tuple[bool, str]:
        """(delivered, why not) of an export the SDK called `ok`, `error` its own reason (if any)."""
        if self._last is None:
            if ok:
                return True, ""
            wait = f"{self.timeout_s:g} s"
            return False, error or f"the collector gave no answer (no connection, or none within {wait})"
        status, kind, words = self._last
        if ok and kind.lower().startswith("text/html"):
            return False, (
                f"{self.endpoint} answered 200 with {kind}, not an OTLP response (is it a collector?): "
                f"{words!r}"
            )
        if not ok and status != 200:
            return False, f"the collector answered {status}" + (f": {words}" if words else "")
        return ok, "" if ok else (error or "the collector did not take the batch")


class _DropRetryNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_RETRY_NOISE)


_RETRY_FILTER = _DropRetryNoise()


def quiet_otlp_retry_logs() -> None:
    """Drop the OTLP exporters' per-retry and per-batch failure lines (an OutageLog reports instead)."""
    for name in _OTLP_LOGGERS:
        target = logging.getLogger(name)
        if _RETRY_FILTER not in target.filters:
            target.addFilter(_RETRY_FILTER)


class _OutageReportingSpanExporter:
    """Wraps a span exporter so that failed exports are reported through an OutageLog."""

    def __init__(
        self, inner: SpanExporter, outage: OutageLog, answers: CollectorAnswers | None = None
    ) -> None:
        self._inner = inner
        self._outage = outage
        self._answers = answers

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        from opentelemetry.sdk.trace.export import SpanExportResult

        if self._answers is not None:
            self._answers.forget()
        try:
            result = self._inner.export(spans)
        except Exception as exc:  # reported, and the batch processor goes on
            self._outage.failed(f"{type(exc).__name__}: {exc}")
            return SpanExportResult.FAILURE
        ok, error = result == SpanExportResult.SUCCESS, ""
        if self._answers is not None:
            ok, error = self._answers.judge(ok, "")
        if ok:
            self._outage.ok()
            return SpanExportResult.SUCCESS
        self._outage.failed(f"{len(spans)} spans not accepted" + (f": {error}" if error else ""))
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self._inner.force_flush(timeout_millis))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def configure_tracing(
    service_name: str,
    otlp_endpoint: str | None = None,
    exporter: SpanExporter | None = None,
    set_global: bool = True,
) -> TracerProvider:
    """A TracerProvider exporting to OTLP/HTTP at `otlp_endpoint` and/or to `exporter`."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create(resource_attributes(service_name)))
    if otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        endpoint = otlp_endpoint.rstrip("/")
        if not endpoint.endswith("/v1/traces"):
            endpoint += "/v1/traces"
        quiet_otlp_retry_logs()
        answers = CollectorAnswers(endpoint, _SPAN_EXPORT_TIMEOUT_S)
        inner = OTLPSpanExporter(endpoint=endpoint, timeout=_SPAN_EXPORT_TIMEOUT_S, session=answers.session())
        reporting = _OutageReportingSpanExporter(inner, OutageLog(f"OTLP span export to {endpoint}"), answers)
        provider.add_span_processor(BatchSpanProcessor(reporting))  # type: ignore[arg-type]
        logger.info("exporting spans over OTLP/HTTP to %s", endpoint)
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    if set_global:
        trace.set_tracer_provider(provider)
    return provider
