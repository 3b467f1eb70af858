"""Field names of gpuobs' JSON log lines: the entity fields every component logs and RCA reads back.

`gpuobs.jsonlog` writes `ts`, `level`, `msg`, `logger` and then the fields a call passes in `extra`;
the serving stack's per-request line carries MODEL_ID, INPUT_HASH, DEVICE_ID and CUDA_ERROR_CODE (the
card's promise), plus the trace and span ids that join it to its request span.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CONTAINER",
    "CUDA_ERROR_CODE",
    "CUDA_ERROR_NAME",
    "DEVICE_ID",
    "ENTITY_FIELDS",
    "ERROR",
    "EVENT",
    "EXC",
    "FINISH_REASON",
    "GENERATION_TOKENS",
    "GPU",
    "HOST",
    "INPUT_HASH",
    "KERNEL",
    "LATENCY_S",
    "LEVEL",
    "LOGGER",
    "MODEL_ID",
    "MODEL_NAME",
    "MSG",
    "NAMESPACE",
    "PCI_BUS_ID",
    "POD",
    "PROMPT_TOKENS",
    "REQUEST_ID",
    "SPAN_ID",
    "TENANT",
    "TRACE_ID",
    "TS",
    "UUID",
    "XID",
]

# Written by the formatter on every line.
TS: Final = "ts"
"""UTC time, ISO 8601 with milliseconds and `Z`."""
LEVEL: Final = "level"
MSG: Final = "msg"
LOGGER: Final = "logger"
EXC: Final = "exc"
"""The formatted traceback, on lines logged with exc_info."""

# Entity fields (copied from `extra`).
HOST: Final = "host"
GPU: Final = "gpu"
UUID: Final = "uuid"
PCI_BUS_ID: Final = "pci_bus_id"
POD: Final = "pod"
NAMESPACE: Final = "namespace"
CONTAINER: Final = "container"
MODEL_ID: Final = "model_id"
"""The model's directory (or served name when it has none): what was loaded."""
MODEL_NAME: Final = "model_name"
"""The served model name (as in vLLM's `model_name` label)."""
TENANT: Final = "tenant"
INPUT_HASH: Final = "input_hash"
"""Short hash of the prompt token ids: joins repeats of one input without logging it."""
DEVICE_ID: Final = "device_id"
"""The device the engine runs on (`cuda:0`, `cpu`; the CUDA ordinal in engine lines)."""
CUDA_ERROR_CODE: Final = "cuda_error_code"
"""Numeric cudaError_t of the failure, null when none."""
CUDA_ERROR_NAME: Final = "cuda_error_name"
KERNEL: Final = "kernel"
XID: Final = "xid"
REQUEST_ID: Final = "request_id"
TRACE_ID: Final = "trace_id"
"""32 hex digits: the request span's trace."""
SPAN_ID: Final = "span_id"
EVENT: Final = "event"
"""Machine-readable event kind (`preemption`, `engine_error`, `fault_injected`, ...)."""

ENTITY_FIELDS: Final = (
    HOST, GPU, UUID, PCI_BUS_ID, POD, NAMESPACE, CONTAINER, MODEL_ID, MODEL_NAME, TENANT, INPUT_HASH,
    DEVICE_ID, CUDA_ERROR_CODE, CUDA_ERROR_NAME, KERNEL, XID, REQUEST_ID, TRACE_ID, SPAN_ID, EVENT,
)
"""The fields that say what a line is about; readers lift them into the evidence entity."""

# The serving stack's per-request line ("request finished").
FINISH_REASON: Final = "finish_reason"
PROMPT_TOKENS: Final = "prompt_tokens"
GENERATION_TOKENS: Final = "generation_tokens"
ERROR: Final = "error"
LATENCY_S: Final = "latency_s"
"""Seconds from request arrival to its last byte."""
