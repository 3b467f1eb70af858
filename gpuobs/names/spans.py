"""Span names, tracer scopes and span attribute keys: the trace contract of serve, launcher and RCA.

Producers (the HTTP and gRPC front ends, the engine, the kernel launcher, the TensorRT adapter) and
consumers (RCA's trace reader and detectors, the trace fixture generator) import these and never spell
them again. A request trace looks like

    {operation} {model}   SERVER  (HTTP; gen_ai.* attributes)  or  Predict {model}  SERVER  (gRPC; rpc.*)
      queue                        one per request, from submission to scheduling
      prefill | decode_step        one per engine batch, child of the first traced request, linking the rest
        kernel.launch              sampled kernel launches (or TensorRT layer executions)

Request span names follow the OpenTelemetry gen_ai semantic conventions (`{gen_ai.operation.name}
{gen_ai.request.model}`), so the request span has no fixed name: use `is_request_span` to find it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "CUDA_ERROR_CODE",
    "CUDA_ERROR_NAME",
    "ENGINE_SPANS",
    "ERROR_TYPE",
    "EXCEPTION_EVENT",
    "EXCEPTION_MESSAGE",
    "EXCEPTION_TYPE",
    "GEN_AI_OPERATION_NAME",
    "GEN_AI_PROVIDER_NAME",
    "GEN_AI_REQUEST_ID",
    "GEN_AI_REQUEST_MAX_TOKENS",
    "GEN_AI_REQUEST_MODEL",
    "GEN_AI_REQUEST_SEED",
    "GEN_AI_REQUEST_STOP_SEQUENCES",
    "GEN_AI_REQUEST_STREAM",
    "GEN_AI_REQUEST_TEMPERATURE",
    "GEN_AI_REQUEST_TOP_P",
    "GEN_AI_RESPONSE_FINISH_REASONS",
    "GEN_AI_RESPONSE_ID",
    "GEN_AI_RESPONSE_MODEL",
    "GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK",
    "GEN_AI_USAGE_INPUT_TOKENS",
    "GEN_AI_USAGE_OUTPUT_TOKENS",
    "GPUOBS_BATCH_SIZE",
    "GPUOBS_BUCKET",
    "GPUOBS_ENGINE",
    "GPUOBS_ENGINE_LAYER",
    "GPUOBS_ENGINE_NAME",
    "GPUOBS_KERNEL_DEVICE",
    "GPUOBS_KERNEL_GPU_DURATION_MS",
    "GPUOBS_KERNEL_GRID",
    "GPUOBS_KERNEL_INPUT_DTYPES",
    "GPUOBS_KERNEL_INPUT_SHAPES",
    "GPUOBS_KERNEL_NAME",
    "GPUOBS_KERNEL_NUM_STAGES",
    "GPUOBS_KERNEL_NUM_WARPS",
    "GPUOBS_KERNEL_STREAM",
    "GPUOBS_KERNEL_TIMING",
    "GPUOBS_PREEMPTED",
    "GPUOBS_PREFILL_TOKENS",
    "GPUOBS_PRIORITY",
    "GPUOBS_TENANT",
    "GPU_INDEX",
    "HOST_NAME",
    "K8S_CONTAINER_NAME",
    "K8S_NAMESPACE_NAME",
    "K8S_NODE_NAME",
    "K8S_POD_NAME",
    "OPERATION_CHAT",
    "OPERATION_TEXT_COMPLETION",
    "PROVIDER_GPUOBS",
    "REQUEST_OPERATIONS",
    "RPC_METHOD",
    "RPC_METHOD_PREDICT",
    "RPC_SERVICE",
    "RPC_SYSTEM",
    "RPC_SYSTEM_GRPC",
    "SERVER_ADDRESS",
    "SERVER_PORT",
    "SERVICE_NAME",
    "SPAN_DECODE_STEP",
    "SPAN_KERNEL_LAUNCH",
    "SPAN_PREFILL",
    "SPAN_QUEUE",
    "TRACER_ENGINE",
    "TRACER_GRPC",
    "TRACER_HTTP",
    "TRACER_KERNELS",
    "grpc_span_name",
    "is_request_span",
    "request_span_name",
]

# --- instrumentation scopes (tracer names) ------------------------------------------------------------
TRACER_HTTP: Final = "gpuobs.serving"
"""Scope of the OpenAI-style HTTP front end's request spans."""
TRACER_GRPC: Final = "gpuobs.serving.grpc"
"""Scope of the gRPC Predict front end's request spans."""
TRACER_ENGINE: Final = "gpuobs.serving.engine"
"""Scope of the engine's queue / prefill / decode_step spans."""
TRACER_KERNELS: Final = "gpuobs.kernels"
"""Scope of the launcher's kernel.launch spans (and the TensorRT adapter's layer spans)."""

# --- span names ---------------------------------------------------------------------------------------
OPERATION_CHAT: Final = "chat"
"""`gen_ai.operation.name` of /v1/chat/completions."""
OPERATION_TEXT_COMPLETION: Final = "text_completion"
"""`gen_ai.operation.name` of /v1/completions."""
REQUEST_OPERATIONS: Final = frozenset({OPERATION_CHAT, OPERATION_TEXT_COMPLETION})
"""Every `gen_ai.operation.name` the HTTP front end serves."""
RPC_METHOD_PREDICT: Final = "Predict"
"""`rpc.method` of the gRPC front end's one method."""

SPAN_QUEUE: Final = "queue"
"""Engine span, one per request: from submission (or preemption) until the scheduler runs it."""
SPAN_PREFILL: Final = "prefill"
"""Engine span, one per prefill batch; attributes GPUOBS_BATCH_SIZE, GPUOBS_PREFILL_TOKENS, GPUOBS_BUCKET."""
SPAN_DECODE_STEP: Final = "decode_step"
"""Engine span, one per decode batch; attribute GPUOBS_BATCH_SIZE."""
SPAN_KERNEL_LAUNCH: Final = "kernel.launch"
"""Span of one sampled kernel launch (or one TensorRT layer execution), child of the current step."""
ENGINE_SPANS: Final = (SPAN_QUEUE, SPAN_PREFILL, SPAN_DECODE_STEP)
"""The engine's fixed-name spans."""


def request_span_name(operation: str, model: str) -> str:
    """The HTTP request span's name, gen_ai style: `chat llama-3-8b`, `text_completion tiny`."""
    return f"{operation} {model}"


def grpc_span_name(model: str, method: str = RPC_METHOD_PREDICT) -> str:
    """The gRPC request span's name: `Predict tiny`."""
    return f"{method} {model}"


# --- request span attributes: OpenTelemetry gen_ai / server / rpc / error semantic conventions -------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
"""`chat` or `text_completion` (OPERATION_*)."""
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
"""Always PROVIDER_GPUOBS for the reference stack."""
PROVIDER_GPUOBS: Final = "gpuobs"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
GEN_AI_REQUEST_TOP_P: Final = "gen_ai.request.top_p"
GEN_AI_REQUEST_SEED: Final = "gen_ai.request.seed"
GEN_AI_REQUEST_STOP_SEQUENCES: Final = "gen_ai.request.stop_sequences"
GEN_AI_REQUEST_STREAM: Final = "gen_ai.request.stream"
"""Not in semconv: whether the client asked for SSE streaming."""
GEN_AI_REQUEST_ID: Final = "gen_ai.request.id"
"""Not in semconv: the request id on engine spans and on a batch span's links (the request span carries
it as GEN_AI_RESPONSE_ID)."""
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
"""Seconds from request start to the first streamed chunk."""
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"

SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"

RPC_SYSTEM: Final = "rpc.system"
RPC_SYSTEM_GRPC: Final = "grpc"
RPC_SERVICE: Final = "rpc.service"
RPC_METHOD: Final = "rpc.method"

ERROR_TYPE: Final = "error.type"
"""Low-cardinality failure class: the CUDA error name (`cudaErrorMemoryAllocation`) when there is one."""

EXCEPTION_EVENT: Final = "exception"
"""Name of the span event `record_exception` adds; its attributes are EXCEPTION_TYPE and EXCEPTION_MESSAGE."""
EXCEPTION_TYPE: Final = "exception.type"
EXCEPTION_MESSAGE: Final = "exception.message"

GPU_INDEX: Final = "gpu.index"
"""Index of the GPU a span ran on (RCA's straggler detector compares spans per GPU)."""

# --- resource attributes (OpenTelemetry semantic conventions), set once per process ---------------------
SERVICE_NAME: Final = "service.name"
HOST_NAME: Final = "host.name"
K8S_POD_NAME: Final = "k8s.pod.name"
K8S_NAMESPACE_NAME: Final = "k8s.namespace.name"
K8S_CONTAINER_NAME: Final = "k8s.container.name"
K8S_NODE_NAME: Final = "k8s.node.name"

# --- gpuobs attributes -----------------------------------------------------------------------------------
GPUOBS_TENANT: Final = "gpuobs.tenant"
GPUOBS_PRIORITY: Final = "gpuobs.priority"
GPUOBS_BATCH_SIZE: Final = "gpuobs.batch_size"
"""Sequences in an engine batch (prefill/decode_step), or rows of a gRPC Predict request."""
GPUOBS_PREFILL_TOKENS: Final = "gpuobs.prefill_tokens"
"""Tokens a prefill batch computed."""
GPUOBS_BUCKET: Final = "gpuobs.bucket"
"""Prompt-length bucket of the scheduler (`short`, `medium`, `long`)."""
GPUOBS_PREEMPTED: Final = "gpuobs.preempted"
"""True on a queue span that follows a preemption."""

CUDA_ERROR_CODE: Final = "gpuobs.cuda.error_code"
"""Numeric cudaError_t (2 for cudaErrorMemoryAllocation), on the request span and the kernel.launch span."""
CUDA_ERROR_NAME: Final = "gpuobs.cuda.error_name"
"""Runtime spelling of the CUDA error (`cudaErrorIllegalAddress`)."""

# kernel.launch attributes
GPUOBS_KERNEL_NAME: Final = "gpuobs.kernel.name"
GPUOBS_KERNEL_GRID: Final = "gpuobs.kernel.grid"
GPUOBS_KERNEL_NUM_WARPS: Final = "gpuobs.kernel.num_warps"
GPUOBS_KERNEL_NUM_STAGES: Final = "gpuobs.kernel.num_stages"
GPUOBS_KERNEL_INPUT_SHAPES: Final = "gpuobs.kernel.input_shapes"
GPUOBS_KERNEL_INPUT_DTYPES: Final = "gpuobs.kernel.input_dtypes"
GPUOBS_KERNEL_DEVICE: Final = "gpuobs.kernel.device"
GPUOBS_KERNEL_STREAM: Final = "gpuobs.kernel.stream"
GPUOBS_KERNEL_GPU_DURATION_MS: Final = "gpuobs.kernel.gpu_duration_ms"
GPUOBS_KERNEL_TIMING: Final = "gpuobs.kernel.timing"
"""How the span was timed: `cuda_event` (GPU time, resolved later) or `host` (CPU/interpreter)."""

# engine adapters (TensorRT)
GPUOBS_ENGINE: Final = "gpuobs.engine"
"""Inference engine kind of a layer span (`tensorrt`)."""
GPUOBS_ENGINE_NAME: Final = "gpuobs.engine.name"
"""The engine's own name (the model it was built from)."""
GPUOBS_ENGINE_LAYER: Final = "gpuobs.engine.layer"


def is_request_span(name: str, attributes: Mapping[str, Any], kind: str | None = None) -> bool:
    """True for a front end's request span (HTTP gen_ai or gRPC Predict), whatever model it names.

    `kind` is the span kind in lower case (`server`, `internal`, ...) when the reader knows it; a span of
    another kind is never a request span. Attributes decide first; the name format is the fallback for
    exports that dropped attributes.
    """
    if kind is not None and kind not in ("server", "unspecified"):
        return False
    if attributes.get(GEN_AI_OPERATION_NAME) in REQUEST_OPERATIONS:
        return True
    if attributes.get(RPC_SYSTEM) == RPC_SYSTEM_GRPC and attributes.get(RPC_METHOD) == RPC_METHOD_PREDICT:
        return True
    head, sep, model = name.partition(" ")
    return bool(sep and model) and (head in REQUEST_OPERATIONS or head == RPC_METHOD_PREDICT)
