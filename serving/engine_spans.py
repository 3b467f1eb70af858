"""The engine's spans (queue, prefill, decode_step) through opentelemetry-api; no-ops without an SDK.

A batch step's span is the child of the first traced request in the batch and links the others, so every
request's trace reaches the steps that served it; kernel launch spans nest under the step's span because
it is current while the model runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from gpuobs.names import spans
from gpuobs.serving.scheduler import SequenceState

try:  # opentelemetry-api is a core dependency; guarded so the engine also runs where it is absent
    from opentelemetry import trace as otel_trace
except ImportError:  # pragma: no cover - exercised on the bare GPU machine
    otel_trace = None  # type: ignore[assignment]

__all__ = ["EngineTracer"]


class EngineTracer:
    """Span creation for the engine (no-op without an SDK or without the package)."""

    def __init__(self, provider: Any = None) -> None:
        self._tracer: Any
        if otel_trace is None:
            self._tracer = None
        elif provider is not None:
            self._tracer = provider.get_tracer(spans.TRACER_ENGINE)
        else:
            self._tracer = otel_trace.get_tracer(spans.TRACER_ENGINE)

    @property
    def on(self) -> bool:
        return self._tracer is not None

    def start(
        self,
        name: str,
        parent: Any,
        start_ns: int | None = None,
        links: Any = None,
        attributes: dict[str, Any] | None = None,
    ) -> Any:
        if self._tracer is None:
            return None
        return self._tracer.start_span(
            name, context=parent, start_time=start_ns, links=links or None, attributes=attributes
        )

    @contextlib.contextmanager
    def batch_span(self, name: str, seqs: list[SequenceState], attributes: dict[str, Any]) -> Iterator[Any]:
        """One span for a batch step: child of the first traced request, linking the other requests."""
        if self._tracer is None or otel_trace is None:
            yield None
            return
        parent = next((s.request.trace_context for s in seqs if s.request.trace_context is not None), None)
        links = []
        for s in seqs:
            ctx = s.request.trace_context
            if ctx is None or ctx is parent:
                continue
            sc = otel_trace.get_current_span(ctx).get_span_context()
            if sc.is_valid:
                links.append(otel_trace.Link(sc, {spans.GEN_AI_REQUEST_ID: s.request_id}))
        span = self._tracer.start_span(name, context=parent, links=links, attributes=attributes)
        with otel_trace.use_span(span, end_on_exit=True, record_exception=True, set_status_on_exception=True):
            yield span

    @staticmethod
    def end(span: Any, error: str | None = None) -> None:
        if span is None:
            return
        if error is not None and otel_trace is not None:
            span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, error))
        span.end()

    @staticmethod
    def mark_error(span: Any, exc: BaseException) -> None:
        """Record a failed step on its span (the exception event and an ERROR status)."""
        if span is not None and otel_trace is not None:
            span.record_exception(exc)
            span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, str(exc)[:200]))
