"""gRPC `inference.InferenceService/Predict` of `gpuobs serve`: token ids in, last-position logits out.

The message classes are built at run time from a FileDescriptorProto equal to
`serving/proto/inference.proto`, so there is no generated code to go stale against the protobuf
runtime installed (the GPU machine has another protobuf than this one). Deadlines are honoured: a
request whose deadline passes while the forward pass runs is answered DEADLINE_EXCEEDED at once. Every
call that ends DEADLINE_EXCEEDED gets one warning line (`Predict DEADLINE_EXCEEDED after N ms: where the
time went`), also one whose handler is still stuck when gRPC ends it at the deadline (it is counted
then, from gRPC's end-of-call callback, not when the handler finally returns).
Bad input (unknown model, empty or oversized batch, ragged masks, ids outside the vocabulary) is
INVALID_ARGUMENT or NOT_FOUND with a clear message; the server stays healthy.

Metrics: every call is counted by outcome and timed in the families every path in shares
(`gpuobs_serving_requests_total{api="grpc"}`, `gpuobs_serving_request_duration_seconds`), and a call
refused because `max_concurrent` calls are in flight is RESOURCE_EXHAUSTED at once, counted in
`vllm:admission_rejections_total{reason="max_concurrent_rpcs"}` too. gRPC's own
`maximum_concurrent_rpcs` refuses before any application code runs (no interceptor or handler sees
the refusal), so the server applies the same limit itself, in the thread pool it hands to gRPC: every
call gRPC accepts is submitted there, so the pool sees each one and can count what it refuses.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from gpuobs.names import logs as log_fields
from gpuobs.names import serving as serving_names
from gpuobs.names import spans
from gpuobs.serving.auth import bearer_matches
from gpuobs.serving.hotswap import shown_model_name

__all__ = [
    "FULL_METHOD",
    "SERVICE",
    "PredictClient",
    "PredictResult",
    "file_descriptor_proto",
    "message_classes",
    "start_grpc_server",
]

logger = logging.getLogger(__name__)
tracer = trace.get_tracer(spans.TRACER_GRPC)

SERVICE = "inference.InferenceService"
FULL_METHOD = f"/{SERVICE}/{spans.RPC_METHOD_PREDICT}"
MAX_MESSAGE_BYTES = 64 << 20


def file_descriptor_proto() -> descriptor_pb2.FileDescriptorProto:
    """The descriptor of `inference.proto`, built in code."""
    f = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="inference.proto", package="inference", syntax="proto3")

    def message(name: str, *fields: tuple[str, int, int, int, str | None]) -> None:
        msg = fdp.message_type.add(name=name)
        for fname, number, ftype, label, type_name in fields:
            field = msg.field.add(name=fname, number=number, type=ftype, label=label, json_name=_json(fname))
            if type_name:
                field.type_name = type_name

    rep, opt = f.LABEL_REPEATED, f.LABEL_OPTIONAL
    message("TokenIds", ("ids", 1, f.TYPE_INT64, rep, None))
    message("Mask", ("values", 1, f.TYPE_INT32, rep, None))
    message("Logits", ("values", 1, f.TYPE_FLOAT, rep, None))
    message(
        "PredictRequest",
        ("model_name", 1, f.TYPE_STRING, opt, None),
        ("input_ids", 2, f.TYPE_MESSAGE, rep, ".inference.TokenIds"),
        ("attention_mask", 3, f.TYPE_MESSAGE, rep, ".inference.Mask"),
    )
    message(
        "PredictResponse",
        ("model_name", 1, f.TYPE_STRING, opt, None),
        ("logits", 2, f.TYPE_MESSAGE, rep, ".inference.Logits"),
        ("latency_ms", 3, f.TYPE_DOUBLE, opt, None),
    )
    service = fdp.service.add(name="InferenceService")
    service.method.add(
        name="Predict", input_type=".inference.PredictRequest", output_type=".inference.PredictResponse"
    )
    return fdp


def _json(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


_CLASSES: dict[str, Any] = {}
_LOCK = threading.Lock()


def message_classes() -> dict[str, Any]:
    """Message classes by short name (PredictRequest, PredictResponse, TokenIds, Mask, Logits)."""
    with _LOCK:
        if not _CLASSES:
            pool = descriptor_pool.DescriptorPool()
            pool.AddSerializedFile(file_descriptor_proto().SerializeToString())
            for name in ("TokenIds", "Mask", "Logits", "PredictRequest", "PredictResponse"):
                desc = pool.FindMessageTypeByName(f"inference.{name}")
                get = getattr(message_factory, "GetMessageClass", None)
                if get is not None:
                    _CLASSES[name] = get(desc)
                else:  # protobuf < 4.21
                    _CLASSES[name] = message_factory.MessageFactory(pool).GetPrototype(desc)
        return dict(_CLASSES)


class _Invalid(Exception):
    def __init__(self, code: grpc.StatusCode, message: str, reason: str) -> None:
        super().__init__(message)
        self.code, self.message, self.reason = code, message, reason


@dataclass(frozen=True)
class _Undecodable:
    """A request whose bytes are not the message: the handler answers INVALID_ARGUMENT (grpcio's own answer
    to a deserializer that raises is INTERNAL, "Exception deserializing request!", a server fault by its
    code)."""

    reason: str


def _reader(message: Any) -> Callable[[bytes], Any]:
    """The request deserializer: the message, or _Undecodable for bytes that do not decode."""

    def read(data: bytes) -> Any:
        try:
            return message.FromString(data)
        except Exception as exc:  # protobuf's DecodeError, and UnicodeDecodeError for a bad string field
            return _Undecodable(f"{type(exc).__name__}: {exc}"[:200])

    return read


_call_state = threading.local()
"""Per handler thread: `refused` (the admission pool refused this call: answer it at once) and
`recorded` (the handler counted the call)."""


class _AdmissionPool(concurrent.futures.ThreadPoolExecutor):
    """The pool gRPC runs handlers on, admitting at most `limit` calls in flight (queued or running).

    This is the limit gRPC's `maximum_concurrent_rpcs` would apply, applied where it can be counted:
    gRPC submits every call it accepts here. A call past the limit runs on a small pool of its own
    (never queued behind admitted work), flagged so that the handler answers RESOURCE_EXHAUSTED at
    once; `on_refused` is called for it. An admitted call that ends without its handler counting it
    (the client cancelled, or its deadline passed while it waited for a thread, so gRPC never called
    the handler) is reported to `on_dropped` with the seconds it waited: every call is counted once.
    """

    def __init__(
        self,
        workers: int,
        limit: int,
        on_refused: Callable[[], None],
        on_dropped: Callable[[float], None],
    ) -> None:
        super().__init__(max_workers=workers, thread_name_prefix="grpc")
        self.limit = limit
        self._on_refused = on_refused
        self._on_dropped = on_dropped
        self._in_flight = 0
        self._lock = threading.Lock()
        self._refusals = concurrent.futures.ThreadPoolExecutor(
            max_workers=2, thread_name_prefix="grpc-refuse"
        )

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        with self._lock:
            admitted = self._in_flight < self.limit
            if admitted:
                self._in_flight += 1
        if admitted:
            return super().submit(self._run_admitted, time.perf_counter(), fn, args, kwargs)
        try:
            self._on_refused()
        except Exception:  # counting must never break serving
            logger.exception("counting a refused gRPC call failed")
        return self._refusals.submit(_run_refused, fn, args, kwargs)

    def _run_admitted(
        self, submitted: float, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        _call_state.recorded = False
        try:
            return fn(*args, **kwargs)
        finally:
            with self._lock:
                self._in_flight -= 1
            if not _call_state.recorded:
                try:
                    self._on_dropped(time.perf_counter() - submitted)
                except Exception:  # counting must never break serving
                    logger.exception("counting a dropped gRPC call failed")

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._refusals.shutdown(wait=wait, cancel_futures=cancel_futures)
        super().shutdown(wait=wait, cancel_futures=cancel_futures)


def _run_refused(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    _call_state.refused = True
    try:
        return fn(*args, **kwargs)
    finally:
        _call_state.refused = False


_OUTCOME_OF_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: serving_names.OUTCOME_INVALID,
    grpc.StatusCode.NOT_FOUND: serving_names.OUTCOME_INVALID,
    grpc.StatusCode.UNAUTHENTICATED: serving_names.OUTCOME_INVALID,
    grpc.StatusCode.RESOURCE_EXHAUSTED: serving_names.OUTCOME_REJECTED,
    grpc.StatusCode.DEADLINE_EXCEEDED: serving_names.OUTCOME_DEADLINE,
    grpc.StatusCode.UNAVAILABLE: serving_names.OUTCOME_UNAVAILABLE,
    grpc.StatusCode.CANCELLED: serving_names.OUTCOME_ABORT,
}


_DEADLINE_SLACK_S = 0.1
"""A call gRPC ends this close to its deadline ended at it: the client's deadline timer fires a little
before the server's (the server's deadline starts when the call arrives), and its cancel comes first."""
# grpcio gives a call with no deadline a remaining time of hundreds of years, past what a wait can take
# (`future.result(timeout=...)` raised OverflowError: every Predict without a client deadline failed).
_NO_DEADLINE_S = 365 * 24 * 3600.0


def _deadline_left(context: grpc.ServicerContext) -> float | None:
    """Seconds until the call's deadline, or None when the client set none."""
    remaining = context.time_remaining()
    return None if remaining is None or remaining > _NO_DEADLINE_S else float(remaining)


@dataclass
class _Call:
    """What the metrics of one Predict call need to know once it ends, and whether it was counted.

    Two parties may end a call: its handler, and gRPC when the call's deadline passes while the
    handler still runs (a handler blocked past its deadline never ends in time). Whichever comes first
    counts it (`claim`); `deadline_detail` says where the time went when it ends DEADLINE_EXCEEDED.
    """

    model: str = ""
    invalid_reason: str | None = None
    deadline_detail: str = "the deadline passed while the handler ran"
    _counted: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def claim(self) -> bool:
        """True for the first caller only: that caller counts (and logs) the call."""
        with self._lock:
            first = not self._counted
            self._counted = True
            return first


class _Servicer:
    def __init__(self, runtime: Any, max_batch: int, workers: int) -> None:
        self.runtime = runtime
        self.max_batch = max_batch
        self.classes = message_classes()
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="predict")

    def _validate(self, request: Any, engine: Any) -> tuple[list[list[int]], list[list[int]]]:
        n = len(request.input_ids)
        if n == 0:
            raise _Invalid(
                grpc.StatusCode.INVALID_ARGUMENT,
                "input_ids is empty: send at least one sequence",
                "empty_batch",
            )
        if n > self.max_batch:
            raise _Invalid(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"batch of {n} sequences exceeds the limit of {self.max_batch}",
                "batch_too_large",
            )
        if request.attention_mask and len(request.attention_mask) != n:
            raise _Invalid(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"attention_mask has {len(request.attention_mask)} rows for {n} sequences",
                "mask_shape",
            )
        limit = int(engine.max_model_len)
        vocab = int(getattr(engine.tokenizer, "vocab_size", 0) or 0)
        ids: list[list[int]] = []
        masks: list[list[int]] = []
        for i, seq in enumerate(request.input_ids):
            row = list(seq.ids)
            if not row:
                raise _Invalid(grpc.StatusCode.INVALID_ARGUMENT, f"sequence {i} is empty", "empty_sequence")
            if len(row) > limit:
                raise _Invalid(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"sequence {i} has {len(row)} tokens; the model takes at most {limit}",
                    "sequence_too_long",
                )
            if vocab and (min(row) < 0 or max(row) >= vocab):
                raise _Invalid(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"sequence {i} has token ids outside [0, {vocab})",
                    "invalid_token_id",
                )
            mask = list(request.attention_mask[i].values) if request.attention_mask else [1] * len(row)
            if len(mask) != len(row):
                raise _Invalid(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"attention_mask {i} has {len(mask)} values for {len(row)} tokens",
                    "mask_shape",
                )
            if any(v not in (0, 1) for v in mask) or not any(mask):
                raise _Invalid(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"attention_mask {i} must hold 0/1 values with at least one 1",
                    "mask_values",
                )
            ids.append(row)
            masks.append(mask)
        return ids, masks

    def predict(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Predict, counted by outcome and timed (one record per call, whatever way it ends)."""
        if getattr(_call_state, "refused", False):  # counted by the pool when it refused the call
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                "Concurrent RPC limit exceeded: the server has its maximum of calls in flight; retry later",
            )
        started = time.perf_counter()
        call = _Call()
        # gRPC ends the call at its deadline even while the handler still runs; the callback counts it
        # then (not when a stuck handler finally returns, nor never). A call already over adds none.
        context.add_callback(lambda: self._on_rpc_end(context, call, started))
        outcome = serving_names.OUTCOME_OK
        try:
            return self._predict(request, context, started, call)
        except BaseException:
            code = context.code() if hasattr(context, "code") else None
            outcome = _OUTCOME_OF_CODE.get(code, serving_names.OUTCOME_ERROR)  # type: ignore[arg-type]
            raise
        finally:
            _call_state.recorded = True
            if call.claim():
                self._record(call, outcome, time.perf_counter() - started)

    def _on_rpc_end(self, context: grpc.ServicerContext, call: _Call, started: float) -> None:
        """gRPC ended the call (any way): past its deadline with the handler still running, count it now."""
        try:
            remaining = context.time_remaining()
            if remaining is None or remaining > _DEADLINE_SLACK_S or not call.claim():
                return  # answered by the handler, or cancelled by the client (the handler counts it)
            call.deadline_detail = "the handler was still running when gRPC ended the call at its deadline"
            call.model = call.model or self._served_name()  # as the pool counts a call it dropped
            self._record(call, serving_names.OUTCOME_DEADLINE, time.perf_counter() - started)
        except Exception:  # counting must never break serving
            logger.exception("counting a gRPC call that ended at its deadline failed")

    def _served_name(self) -> str:
        return str(getattr(self.runtime.manager, "served_name", "") or "")

    def _record(self, call: _Call, outcome: str, elapsed_s: float) -> None:
        """Count one call by outcome and time it; a DEADLINE_EXCEEDED call also gets its warning line."""
        stats, api = self.runtime.stats, serving_names.API_GRPC
        if call.invalid_reason is not None:
            stats.record_invalid(api, call.invalid_reason, call.model)
            return
        if outcome == serving_names.OUTCOME_DEADLINE:
            model = call.model or self._served_name()
            logger.warning(
                "Predict DEADLINE_EXCEEDED after %.1f ms: %s",
                elapsed_s * 1000.0,
                call.deadline_detail,
                extra={
                    log_fields.MODEL_NAME: model,
                    log_fields.EVENT: serving_names.OUTCOME_DEADLINE,
                    log_fields.LATENCY_S: round(elapsed_s, 6),
                },
            )
        stats.record_request(api, call.model, outcome, elapsed_s)

    def _predict(self, request: Any, context: grpc.ServicerContext, started: float, call: _Call) -> Any:
        runtime = self.runtime
        api_key = getattr(runtime.config, "api_key", None)
        if api_key:  # the same rule as HTTP's /v1/*: `authorization: Bearer KEY` in the call's metadata
            metadata = {str(k).lower(): v for k, v in (context.invocation_metadata() or ())}
            authorization = metadata.get("authorization")
            if not bearer_matches(authorization if isinstance(authorization, str) else None, api_key):
                call.invalid_reason = "unauthorized"
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        if runtime.grpc_block.is_set():
            # Fault: the handler waits on something with no timeout of its own (client deadlines are
            # ignored), as a handler stuck on a lock or a queue does. Bounded so tests end.
            logger.warning("gRPC handler blocked by fault injection", extra={log_fields.EVENT: "grpc_block"})
            runtime.grpc_unblock.wait(runtime.grpc_block_s)
        if isinstance(request, _Undecodable):
            call.invalid_reason = "undecodable"
            reason = f"the request is not a PredictRequest: {request.reason}"
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, reason)
        manager = runtime.manager
        if not manager.ready:
            context.abort(grpc.StatusCode.UNAVAILABLE, "model is still loading; retry later")
        name = request.model_name or manager.served_name
        try:
            handle = manager.acquire(name)
        except Exception:
            call.invalid_reason = "unknown_model"
            context.abort(
                grpc.StatusCode.NOT_FOUND,
                f"model {shown_model_name(request.model_name)!r} is not served "
                f"(served: {manager.served_name!r})",
            )
        call.model = handle.name
        span = tracer.start_span(
            spans.grpc_span_name(handle.name),
            kind=SpanKind.SERVER,
            attributes={
                spans.RPC_SYSTEM: spans.RPC_SYSTEM_GRPC,
                spans.RPC_SERVICE: SERVICE,
                spans.RPC_METHOD: spans.RPC_METHOD_PREDICT,
                spans.GEN_AI_REQUEST_MODEL: handle.name,
                spans.GEN_AI_PROVIDER_NAME: spans.PROVIDER_GPUOBS,
                spans.GPUOBS_BATCH_SIZE: len(request.input_ids),
            },
        )
        try:
            try:
                ids, masks = self._validate(request, handle.engine)
            except _Invalid as exc:
                call.invalid_reason = exc.reason
                span.set_attribute(spans.ERROR_TYPE, exc.reason)
                context.abort(exc.code, exc.message)
            remaining = _deadline_left(context)
            if remaining is not None and remaining <= 0:
                call.deadline_detail = "the deadline had passed before the handler could run the model"
                context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline already passed")
            ctx = trace.set_span_in_context(span)

            def run() -> list[list[float]]:
                from opentelemetry import context as otel_context

                token = otel_context.attach(ctx)
                try:
                    return [list(map(float, row)) for row in handle.engine.forward_logits(ids, masks)]
                finally:
                    otel_context.detach(token)

            future = self.pool.submit(run)
            try:
                logits = future.result(timeout=remaining)
            except concurrent.futures.TimeoutError:
                future.cancel()
                span.set_attribute(spans.ERROR_TYPE, "deadline_exceeded")
                span.set_status(Status(StatusCode.ERROR, "deadline exceeded"))
                waited = (time.perf_counter() - started) * 1000
                call.deadline_detail = "the forward pass was still running"
                context.abort(
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                    f"deadline exceeded after {waited:.1f} ms (forward pass still running)",
                )
            except Exception as exc:
                from gpuobs import cuda_errors

                cuda = cuda_errors.from_text(str(exc))
                span.set_attribute(spans.ERROR_TYPE, cuda.name if cuda else type(exc).__name__)
                if cuda is not None:
                    span.set_attribute(spans.CUDA_ERROR_CODE, cuda.code)
                    span.set_attribute(spans.CUDA_ERROR_NAME, cuda.name)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                logger.error(
                    "Predict failed: %s",
                    exc,
                    extra={
                        log_fields.MODEL_NAME: handle.name,
                        log_fields.MODEL_ID: handle.model_dir or handle.name,
                        log_fields.DEVICE_ID: str(getattr(handle.engine, "device", "cpu")),
                        log_fields.CUDA_ERROR_CODE: cuda.code if cuda else None,
                        log_fields.CUDA_ERROR_NAME: cuda.name if cuda else None,
                    },
                )
                context.abort(grpc.StatusCode.INTERNAL, f"forward pass failed: {type(exc).__name__}: {exc}")
            latency_ms = (time.perf_counter() - started) * 1000.0
            c = self.classes
            response = c["PredictResponse"](model_name=handle.name, latency_ms=latency_ms)
            for row in logits:
                response.logits.add().values.extend(row)
            return response
        finally:
            span.end()
            manager.release(handle)

    def handler(self) -> grpc.GenericRpcHandler:
        c = self.classes
        return grpc.method_handlers_generic_handler(
            SERVICE,
            {
                spans.RPC_METHOD_PREDICT: grpc.unary_unary_rpc_method_handler(
                    self.predict,
                    request_deserializer=_reader(c["PredictRequest"]),
                    response_serializer=c["PredictResponse"].SerializeToString,
                ),
            },
        )


def start_grpc_server(
    runtime: Any, address: str, port: int, workers: int = 8, max_concurrent: int = 64
) -> grpc.Server:
    """Start the Predict server on address:port (port 0 picks one; `server.bound_port` tells it)."""
    servicer = _Servicer(runtime, getattr(runtime.config, "max_grpc_batch", 64), workers)

    def served_name() -> str:
        return str(getattr(runtime.manager, "served_name", "") or "")

    def refused() -> None:
        reason = serving_names.REASON_MAX_CONCURRENT_RPCS
        runtime.stats.record_rejection(served_name(), reason, api=serving_names.API_GRPC)

    def dropped(waited_s: float) -> None:
        api, outcome = serving_names.API_GRPC, serving_names.OUTCOME_ABORT
        runtime.stats.record_request(api, served_name(), outcome, waited_s)

    server = grpc.server(
        # beyond `max_concurrent` calls in flight: RESOURCE_EXHAUSTED at once (HTTP's 429), counted
        _AdmissionPool(workers, max_concurrent, refused, dropped),
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.so_reuseport", 0),
        ],
    )
    server.add_generic_rpc_handlers((servicer.handler(),))
    bound = server.add_insecure_port(f"{address}:{port}")
    if bound == 0:
        raise OSError(f"cannot bind gRPC on {address}:{port}")
    server.start()
    server.bound_port = bound  # type: ignore[attr-defined]
    logger.info("gRPC Predict listening on %s:%d", address, bound)
    return server


@dataclass(frozen=True)
class PredictResult:
    """What Predict returned."""

    model_name: str
    logits: list[list[float]]
    latency_ms: float


class PredictClient:
    """A small client for `inference.InferenceService/Predict` (used by tests and the load tester)."""

    def __init__(self, target: str, api_key: str | None = None) -> None:
        c = message_classes()
        self._metadata = (("authorization", f"Bearer {api_key}"),) if api_key else None
        self._request = c["PredictRequest"]
        self.channel = grpc.insecure_channel(
            target,
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ],
        )
        self._call = self.channel.unary_unary(
            FULL_METHOD,
            request_serializer=c["PredictRequest"].SerializeToString,
            response_deserializer=c["PredictResponse"].FromString,
        )

    def predict(
        self,
        input_ids: list[list[int]],
        attention_mask: list[list[int]] | None = None,
        model_name: str = "",
        timeout: float | None = None,
    ) -> PredictResult:
        req = self._request(model_name=model_name)
        for row in input_ids:
            req.input_ids.add().ids.extend(row)
        for row in attention_mask or []:
            req.attention_mask.add().values.extend(row)
        resp = self._call(req, timeout=timeout, metadata=self._metadata)
        return PredictResult(resp.model_name, [list(r.values) for r in resp.logits], resp.latency_ms)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> PredictClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
