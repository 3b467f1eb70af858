"""The HTTP request span: opened when a request is accepted, closed with its outcome (gen_ai conventions).

The only place the HTTP front end touches span names and attribute keys; all come from
`gpuobs.names.spans`. The engine's queue/prefill/decode spans hang under this span's context; a failure
caused by a CUDA error sets `error.type` to its name and the CUDA error code under CUDA_ERROR_CODE.
"""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.propagate import extract
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from gpuobs import cuda_errors
from gpuobs.names import spans as sn
from gpuobs.serving.http.protocol import Outcome, PreparedRequest

__all__ = ["finish_request_span", "start_request_span"]

tracer = trace.get_tracer(sn.TRACER_HTTP)


def start_request_span(
    prep: PreparedRequest, headers: Mapping[str, str], request_id: str, address: str, port: int
) -> Span:
    """A SERVER span named `{operation} {model}`, child of the caller's trace context (W3C headers)."""
    parent = extract(dict(headers))
    span = tracer.start_span(
        sn.request_span_name(prep.kind, prep.model),
        context=parent,
        kind=SpanKind.SERVER,
        attributes={
            sn.GEN_AI_OPERATION_NAME: prep.kind,
            sn.GEN_AI_PROVIDER_NAME: sn.PROVIDER_GPUOBS,
            sn.GEN_AI_REQUEST_MODEL: prep.model,
            sn.GEN_AI_REQUEST_MAX_TOKENS: prep.max_tokens,
            sn.GEN_AI_REQUEST_TEMPERATURE: prep.temperature,
            sn.GEN_AI_REQUEST_TOP_P: prep.top_p,
            sn.GEN_AI_REQUEST_STREAM: prep.stream,
            sn.GEN_AI_RESPONSE_ID: request_id,
            sn.GEN_AI_USAGE_INPUT_TOKENS: len(prep.prompt_ids),
            sn.SERVER_ADDRESS: address,
            sn.SERVER_PORT: port,
            sn.GPUOBS_TENANT: prep.tenant,
            sn.GPUOBS_PRIORITY: prep.priority,
        },
    )
    if prep.seed is not None:
        span.set_attribute(sn.GEN_AI_REQUEST_SEED, prep.seed)
    if prep.stops:
        span.set_attribute(sn.GEN_AI_REQUEST_STOP_SEQUENCES, prep.stops)
    return span


def finish_request_span(
    span: Span, model_name: str, outcome: Outcome, ttfc: float | None, error_type: str | None
) -> None:
    """Record the outcome (finish reason, usage, time to first chunk, error) and end the span."""
    span.set_attribute(sn.GEN_AI_RESPONSE_MODEL, model_name)
    span.set_attribute(sn.GEN_AI_RESPONSE_FINISH_REASONS, [outcome.finish_reason])
    span.set_attribute(sn.GEN_AI_USAGE_OUTPUT_TOKENS, outcome.completion_tokens)
    if ttfc is not None:
        span.set_attribute(sn.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, ttfc)
    if error_type:
        cuda = cuda_errors.from_text(outcome.error) if outcome.error else None
        if cuda is not None:  # low-cardinality and specific: the CUDA error name
            error_type = cuda.name
            span.set_attribute(sn.CUDA_ERROR_CODE, cuda.code)
            span.set_attribute(sn.CUDA_ERROR_NAME, cuda.name)
        span.set_attribute(sn.ERROR_TYPE, error_type)
        span.set_status(Status(StatusCode.ERROR, outcome.error or error_type))
    span.end()
