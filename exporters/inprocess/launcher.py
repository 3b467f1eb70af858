"""The instrumented kernel launcher: every Triton launch of gpuobs.kernels goes through it.

What it adds to a launch:
- an always-on launch counter per kernel (a plain dict increment; the counted launch costs about
  the host time of a plain `kernel[grid](...)` call because it calls `kernel.run` directly),
  exposed as `gpuobs_kernel_launches_total{kernel,backend}` by `collector.LauncherCollector`; the backend of
  its own launches is `triton` (or `triton_interpreter` under `TRITON_INTERPRET=1`), and `count()`
  adds what others ran (`torch` reference ops on the CPU path, `tensorrt` layers);
- for a sampled fraction of launches (`GPUOBS_KERNEL_SPAN_SAMPLE`, default 1%, drawn as a
  geometric countdown so unsampled launches pay no random draw) an OpenTelemetry span
  `kernel.launch`, child of the context current at launch, with the kernel name, grid,
  num_warps, num_stages, input shapes and dtypes, device and stream. On CUDA, two timing events
  bracket the launch; the GPU duration is resolved later without synchronising (the end event is
  polled, never waited on). The launch itself only records raw facts (context, start time, grid,
  the (shape, dtype) objects of the tensor arguments, device, the stream the events went on); the
  span is built once, at resolution, in one `start_span(..., context=<launch context>,
  start_time=..., attributes=...)` plus `end(end_time = start + GPU duration)`, from attribute
  dicts cached per launch configuration. On the CPU (Triton interpreter) the span is the host
  duration and is emitted at once;
- the duration of every sampled launch, as the histogram `gpuobs_kernel_duration_seconds{kernel,backend}`
  (`durations`, exposed by the collector): the CUDA-event GPU time once resolved, or on the CPU the
  `perf_counter` time of the synchronous call. `call()` runs someone else's kernel (a PyTorch reference
  op) counted like `count()` and, at the same sampled fraction, timed the same way (events on CUDA
  tensors, resolved with the spans; `perf_counter` on the CPU) without a span: the histogram covers
  the `torch` backend too. Unsampled launches and calls are never timed;
- CUDA error mapping: an exception at launch, at a later event poll or at `synchronize()` that
  names a CUDA error becomes `gpuobs_cuda_errors_total{code,name,kernel}` plus one JSON log line
  with the launch configuration, then is re-raised. `count_error()` counts the CUDA errors a
  process hits outside a launch (a failed allocation), once per exception.

Library code here depends on opentelemetry-api only; torch is imported only on the sampled CUDA
path (it is already loaded there).

Use from a serving process:

    from gpuobs.exporters.inprocess.collector import LauncherCollector
    from gpuobs.exporters.inprocess.launcher import default_launcher
    registry.register(LauncherCollector(default_launcher))   # counters, durations on its /metrics
    ...
    default_launcher().synchronize()   # where the step synchronises anyway: maps late CUDA errors

Spans are resolved by sampled launches (`resolver="launch"`, the default: no extra thread
competing for the GIL), at `synchronize()` and at `flush()`: a sampled launch builds the pending
spans once `resolve_batch` of them (default 16) are pending or the oldest is `resolve_after_s`
(default 0.5 s) old, so they are built back to back with warm caches (on the H200 decode loop a
traced launch cost 118 us of loop time so, 221 us resolving one per sampled launch).
Spans still pending when the process exits are built by an exit hook. `resolver="thread"` adds a
polling thread for processes that go idle with spans pending. Counts
are plain dict increments under the GIL, so concurrent launchers on a free-threaded build could
lose an occasional increment.

Why this module is over 500 lines: `KernelLauncher` is one object whose hot path, sampled path,
span resolution and CUDA error mapping share its state (counters, the pending deque, the timing);
what stands apart lives beside it: timing.py (CUDA events, duration histograms), spans.py (launch
facts and their text), collector.py (the Prometheus collector).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import logging
import math
import os
import random
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from gpuobs import cuda_errors
from gpuobs.config import KERNELS_TABLE, resolve
from gpuobs.errors import ExporterError
from gpuobs.exporters.inprocess.spans import (
    PendingLaunch,
    arg_facts,
    describe_args,
    describe_inputs,
    grid_attr,
    grid_text,
    kernel_tracer,
)
from gpuobs.exporters.inprocess.timing import (
    CudaEventTiming,
    DurationHistograms,
    EventTiming,
    HistogramSnapshot,
)
from gpuobs.names import kernel as names
from gpuobs.names import spans

__all__ = [
    "KernelLauncher",
    "LaunchError",
    "default_launcher",
    "map_cuda_error",
    "parse_sample_rate",
    "set_default_launcher",
]

logger = logging.getLogger(__name__)

COMPILE_HOST_S = 0.005
"""Host time of one launch above which its CUDA event pair is not a kernel duration: a warm Triton launch
costs about 16 us of host time on the H200, a JIT compile or an autotune run tens of milliseconds or more."""


def parse_sample_rate(raw: Any) -> float:
    """A sampling fraction in [0, 1] from a number or a string."""
    value = float(raw)
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise ValueError(f"must be a fraction between 0 and 1, got {raw!r}")
    return value


def map_cuda_error(exc: BaseException) -> cuda_errors.CudaError | None:
    """The CUDA error an exception carries (an integer code attribute, or its message), or None."""
    for attr in ("cuda_error_code", "error_code"):
        code = getattr(exc, attr, None)
        if isinstance(code, int) and not isinstance(code, bool):
            found = cuda_errors.by_code(code)
            if found is not None and found.code != 0:
                return found
    return cuda_errors.from_text(str(exc))


_COUNTED = "_gpuobs_cuda_error_counted"


def _mark_counted(exc: BaseException) -> None:
    """Mark an exception whose CUDA error is counted (exceptions take no weak references)."""
    with contextlib.suppress(AttributeError, TypeError):
        setattr(exc, _COUNTED, True)


class LaunchError(ExporterError, RuntimeError):
    """Raised by test doubles and adapters to simulate a CUDA error with a given code."""

    def __init__(self, cuda_error_code: int, message: str = "") -> None:
        known = cuda_errors.by_code(cuda_error_code)
        text = message or (known.message if known and known.message else f"CUDA error {cuda_error_code}")
        super().__init__(text)
        self.cuda_error_code = cuda_error_code






class KernelLauncher:
    """Launches Triton kernels with counting, sampled spans and CUDA error mapping (see module doc)."""

    def __init__(
        self,
        sample_rate: float | None = None,
        tracer_provider: Any = None,
        timing: EventTiming | None = None,
        poll_interval_s: float = 0.005,
        seed: int | None = None,
        resolver: str = "launch",
        resolve_batch: int = 16,
        resolve_after_s: float = 0.5,
    ) -> None:
        if sample_rate is None:
            sample_rate = resolve(
                KERNELS_TABLE, names.SPAN_SAMPLE_SETTING, None, names.DEFAULT_SPAN_SAMPLE, parse_sample_rate
            )
        self.sample_rate = parse_sample_rate(sample_rate)
        self._rng = random.Random(seed)
        self._log_q = math.log1p(-self.sample_rate) if 0.0 < self.sample_rate < 1.0 else 0.0
        self._countdown = self._next_interval()
        # Launches per kernel, per backend; `_counts` is the dict of this launcher's own launches.
        interpreted = os.environ.get("TRITON_INTERPRET") == "1"
        self.backend = names.BACKEND_TRITON_INTERPRETER if interpreted else names.BACKEND_TRITON
        self._counts: dict[str, int] = {}
        self._by_backend: dict[str, dict[str, int]] = {self.backend: self._counts}
        self._errors: dict[tuple[str, str, str], int] = {}
        self._last_kernel = ""
        self._tracer_provider = tracer_provider
        self._tracer: Any = None
        self._current_context: Callable[[], Any] | None = None
        # Span attributes that do not change between launches of one configuration, built once.
        self._attr_cache: dict[tuple[Any, ...], dict[str, Any]] = {}
        self._timing: EventTiming = timing if timing is not None else CudaEventTiming()
        self._pending: collections.deque[PendingLaunch] = collections.deque()
        self._resolve_lock = threading.Lock()
        self._wake = threading.Event()
        self._poll_interval_s = poll_interval_s
        if resolver not in ("thread", "launch"):
            raise ValueError(f"resolver must be 'thread' or 'launch', got {resolver!r}")
        self._resolver_mode = resolver
        if resolve_batch < 1:
            raise ValueError(f"resolve_batch must be at least 1, got {resolve_batch}")
        self._resolve_batch = resolve_batch
        self._resolve_after_ns = int(resolve_after_s * 1e9)
        self._resolver: threading.Thread | None = None
        self._closed = False
        self.spans_started = 0
        self.spans_ended = 0
        self._exit_hooked = False
        self.durations = DurationHistograms(names.KERNEL_DURATION_BUCKETS)
        """Durations of the sampled launches and calls (`gpuobs_kernel_duration_seconds`)."""

    # -- hot path ---------------------------------------------------------------------------------
    def launch(
        self,
        name: str,
        kernel: Any,
        grid: Any,
        args: tuple[Any, ...],
        num_warps: int = 4,
        num_stages: int = 2,
        **meta: Any,
    ) -> Any:
        """`kernel[grid](*args, num_warps=..., num_stages=..., **meta)`, counted and maybe traced."""
        counts = self._counts
        if name in counts:
            counts[name] += 1
        else:
            counts[name] = 1
        self._last_kernel = name
        self._countdown -= 1
        if self._countdown > 0:
            try:
                # Triton's `kernel[grid](...)` is a lambda around `kernel.run(..., grid=, warmup=False)`:
                # calling run directly saves that layer on the hot path.
                run = getattr(kernel, "run", None)
                if run is not None:
                    return run(*args, grid=grid, warmup=False, num_warps=num_warps, num_stages=num_stages,
                               **meta)
                return kernel[grid](*args, num_warps=num_warps, num_stages=num_stages, **meta)
            except Exception as exc:
                self._on_error(exc, name, "launch", grid, args, num_warps, num_stages, meta)
                raise
        return self._launch_sampled(name, kernel, grid, args, num_warps, num_stages, meta)

    # -- sampled path -----------------------------------------------------------------------------
    def _next_interval(self) -> int:
        if self.sample_rate >= 1.0:
            return 1
        if self.sample_rate <= 0.0:
            return sys.maxsize
        # Geometric number of launches until the next sampled one (mean 1 / sample_rate).
        u = 1.0 - self._rng.random()
        return int(math.log(u) / self._log_q) + 1

    def _get_tracer(self) -> Any:
        if self._tracer is None:
            self._tracer = kernel_tracer(self._tracer_provider)
        return self._tracer

    def _context_getter(self) -> Callable[[], Any]:
        if self._current_context is None:
            from opentelemetry.context import get_current

            self._current_context = get_current
        return self._current_context

    def _launch_sampled(
        self,
        name: str,
        kernel: Any,
        grid: Any,
        args: tuple[Any, ...],
        num_warps: int,
        num_stages: int,
        meta: Mapping[str, Any],
    ) -> Any:
        # Only raw facts here: the span (attribute text, validation, export) is built at resolution.
        self._countdown = self._next_interval()
        self._resolve_if_due()
        inputs, cuda_device = arg_facts(args)
        get_context = self._current_context or self._context_getter()
        item = PendingLaunch(name, get_context(), time.time_ns(), grid, num_warps, num_stages, inputs,
                             cuda_device, backend=self.backend)
        self.spans_started += 1
        try:
            if cuda_device is not None:
                item.token = self._timing.start(cuda_device)
            t0 = time.perf_counter()
            run = getattr(kernel, "run", None)
            if run is not None:
                result = run(*args, grid=grid, warmup=False, num_warps=num_warps, num_stages=num_stages,
                             **meta)
            else:
                result = kernel[grid](*args, num_warps=num_warps, num_stages=num_stages, **meta)
            host_s = time.perf_counter() - t0
            if item.token is not None:
                item.token = self._timing.stop(item.token)
                # The start event was recorded before the host-side launch: a first launch that JIT-compiles
                # (seconds on the H200 bench) leaves the GPU idle between the events, so that pair measures
                # the compile, not the kernel. Its span keeps the figure; the histogram does not.
                item.observe = host_s < COMPILE_HOST_S
        except Exception as exc:
            error = self._on_error(exc, name, "launch", grid, args, num_warps, num_stages, meta)
            self._release(item.token)
            self._emit_error(item, exc, error)
            raise
        if item.token is None:
            self.durations.observe(name, self.backend, host_s)  # the CPU: the call was the kernel
            self._emit(item, time.time_ns(), None)
        else:
            self._add_pending(item)
        return result

    def _resolve_if_due(self) -> None:
        """Resolve the pending launches once a batch of them waits or the oldest is old enough."""
        pending = self._pending
        if pending and (
            len(pending) >= self._resolve_batch
            or time.time_ns() - pending[0].start_ns >= self._resolve_after_ns
        ):
            self.resolve_ready()

    def _add_pending(self, item: PendingLaunch) -> None:
        self._pending.append(item)
        if not self._exit_hooked:
            self._exit_hooked = True
            _flush_at_exit_too(self)
        self._ensure_resolver()

    # -- span building (off the launch) -----------------------------------------------------------
    def _attributes(self, item: PendingLaunch, stream: str | None) -> dict[str, Any]:
        """The span attributes of a launch, as plain str/int values (one validation pass in the SDK).

        Built once per (kernel, grid, warps, stages, inputs, device, stream) and copied afterwards:
        a decode loop repeats the same few configurations.
        """
        key = (item.kernel, item.grid, item.num_warps, item.num_stages, item.inputs, item.device, stream)
        try:
            cached = self._attr_cache.get(key)
            hashable = True
        except TypeError:  # an unhashable grid or shape: build without the cache
            cached, hashable = None, False
        if cached is None:
            shapes, dtypes = describe_inputs(item.inputs)
            cached = {
                spans.GPUOBS_KERNEL_NAME: item.kernel,
                spans.GPUOBS_KERNEL_GRID: grid_text(item.grid),
                spans.GPUOBS_KERNEL_NUM_WARPS: item.num_warps,
                spans.GPUOBS_KERNEL_NUM_STAGES: item.num_stages,
                spans.GPUOBS_KERNEL_INPUT_SHAPES: ",".join(shapes),
                spans.GPUOBS_KERNEL_INPUT_DTYPES: ",".join(dtypes),
                spans.GPUOBS_KERNEL_DEVICE: str(item.device) if item.device is not None else "cpu",
            }
            if stream is not None:
                cached[spans.GPUOBS_KERNEL_STREAM] = stream
            if hashable:
                if len(self._attr_cache) >= 1024:
                    self._attr_cache.clear()
                self._attr_cache[key] = cached
        return dict(cached)

    def _stream_text(self, token: Any) -> str | None:
        return None if token is None else self._timing.stream_text(token)

    def _emit(self, item: PendingLaunch, end_ns: int, elapsed_ms: float | None) -> None:
        """Build and end the span of a launch in one go: parent = the context current at launch."""
        if not item.span:
            return
        attributes = self._attributes(item, self._stream_text(item.token))
        if elapsed_ms is None:
            attributes[spans.GPUOBS_KERNEL_TIMING] = "host"
        else:
            attributes[spans.GPUOBS_KERNEL_TIMING] = "cuda_event"
            attributes[spans.GPUOBS_KERNEL_GPU_DURATION_MS] = elapsed_ms
        tracer = self._tracer or self._get_tracer()
        span = tracer.start_span(
            spans.SPAN_KERNEL_LAUNCH, context=item.context, start_time=item.start_ns, attributes=attributes
        )
        span.end(end_time=end_ns)
        self.spans_ended += 1

    def _emit_error(self, item: PendingLaunch, exc: BaseException,
                    error: cuda_errors.CudaError | None) -> None:
        if not item.span:
            return
        from opentelemetry.trace import Status, StatusCode

        attributes = self._attributes(item, self._stream_text(item.token))
        attributes[spans.GPUOBS_KERNEL_TIMING] = "host" if item.token is None else "cuda_event"
        if error is not None:
            attributes[spans.CUDA_ERROR_CODE] = error.code
            attributes[spans.CUDA_ERROR_NAME] = error.name
        tracer = self._tracer or self._get_tracer()
        span = tracer.start_span(
            spans.SPAN_KERNEL_LAUNCH, context=item.context, start_time=item.start_ns, attributes=attributes
        )
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, str(exc)[:200]))
        span.end()
        self.spans_ended += 1

    def _release(self, token: Any) -> None:
        if token is not None:
            release = getattr(self._timing, "release", None)
            if release is not None:
                release(token)

    # -- resolution of GPU durations --------------------------------------------------------------
    def resolve_ready(self, raise_errors: bool = True) -> int:
        """End the spans (and observe the durations) whose GPU end event has completed; never blocks.
        Returns how many launches resolved.

        An error reported by an event poll (a sticky CUDA error from an earlier kernel) is mapped
        and counted against the kernel of that span, and re-raised when `raise_errors`.
        """
        ended = 0
        timing = self._timing
        with self._resolve_lock:
            pending = self._pending
            while pending:
                item = pending[0]
                try:
                    if not timing.ready(item.token):
                        break
                    elapsed_ms = timing.elapsed_ms(item.token)
                except Exception as exc:
                    pending.popleft()
                    error = self._on_error(exc, item.kernel, "event_query", None, (), None, None, {})
                    self._emit_error(item, exc, error)
                    self._fail_pending(exc, error)
                    if raise_errors:
                        raise
                    return ended
                pending.popleft()
                if item.observe:
                    self.durations.observe(item.kernel, item.backend, elapsed_ms / 1e3)
                self._emit(item, item.start_ns + int(elapsed_ms * 1e6), elapsed_ms)
                self._release(item.token)
                ended += 1
        return ended

    def _fail_pending(self, exc: BaseException, error: cuda_errors.CudaError | None) -> None:
        while self._pending:
            self._emit_error(self._pending.popleft(), exc, error)

    @property
    def pending(self) -> int:
        """Sampled launches (spans, timed calls) still waiting for their GPU end event."""
        return len(self._pending)

    def _ensure_resolver(self) -> None:
        if self._resolver_mode != "thread":
            return  # resolved at the next sampled launch, synchronize() or flush()
        self._wake.set()
        if self._resolver is None or not self._resolver.is_alive():
            self._resolver = threading.Thread(
                target=self._resolve_loop, name="gpuobs-kernel-spans", daemon=True
            )
            self._resolver.start()

    def _resolve_loop(self) -> None:
        while not self._closed:
            self._wake.wait(timeout=1.0)
            if self._closed:
                return
            if not self._pending:
                self._wake.clear()
                continue
            try:
                self.resolve_ready(raise_errors=False)
            except Exception:  # the resolver must survive anything; the error was already logged
                logger.debug("kernel span resolver poll failed", exc_info=True)
            time.sleep(self._poll_interval_s)

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait (by polling, without synchronising) until every sampled span has ended."""
        deadline = time.monotonic() + timeout_s
        while self._pending and time.monotonic() < deadline:
            self.resolve_ready(raise_errors=False)
            if self._pending:
                time.sleep(0.001)
        return not self._pending

    def close(self) -> None:
        """Stop the resolver thread (pending spans are ended as far as they are ready)."""
        self._closed = True
        self._wake.set()
        if self._resolver is not None:
            self._resolver.join(timeout=2.0)
        self.resolve_ready(raise_errors=False)

    # -- errors -----------------------------------------------------------------------------------
    def _on_error(
        self,
        exc: BaseException,
        kernel: str,
        phase: str,
        grid: Any,
        args: tuple[Any, ...],
        num_warps: int | None,
        num_stages: int | None,
        meta: Mapping[str, Any],
    ) -> cuda_errors.CudaError | None:
        error = map_cuda_error(exc)
        if error is None:
            return None
        self._count_error(error, kernel)
        _mark_counted(exc)
        shapes, dtypes, device = describe_args(args)
        logger.error(
            "CUDA error %d %s in kernel %s at %s: %s",
            error.code, error.name, kernel, phase, str(exc)[:300],
            extra={
                "event": "cuda_error",
                "kernel": kernel,
                "cuda_error_code": error.code,
                "cuda_error_name": error.name,
                "cuda_error_category": error.category,
                "cuda_error_sticky": error.sticky,
                "phase": phase,
                "grid": grid_attr(grid) if grid is not None else None,
                "num_warps": num_warps,
                "num_stages": num_stages,
                "constexprs": {k: v for k, v in meta.items() if isinstance(v, int | float | str | bool)},
                "input_shapes": shapes,
                "input_dtypes": dtypes,
                "device": str(device) if device is not None else None,
            },
        )
        return error

    @contextlib.contextmanager
    def watch(self, kernel: str) -> Iterator[None]:
        """Map and count a CUDA error raised inside the block (e.g. torch ops) against `kernel`."""
        try:
            yield
        except Exception as exc:
            self._on_error(exc, kernel, "watch", None, (), None, None, {})
            raise

    def synchronize(self, device: Any = None) -> None:
        """`torch.cuda.synchronize(device)`, mapping an error to the last launched kernel."""
        torch = sys.modules.get("torch")
        if torch is None:
            return
        try:
            torch.cuda.synchronize(device)
        except Exception as exc:
            self._on_error(exc, self._last_kernel or "unknown", "synchronize", None, (), None, None, {})
            raise
        self.resolve_ready(raise_errors=False)

    def _count_error(self, error: cuda_errors.CudaError, kernel: str) -> None:
        key = (str(error.code), error.name, kernel)
        self._errors[key] = self._errors.get(key, 0) + 1

    def count_error(self, exc: BaseException, error: cuda_errors.CudaError, kernel: str = "") -> bool:
        """Count a CUDA error hit outside a launch (the caller logs it); False if already counted.

        An exception the launcher mapped at launch or synchronisation is marked, so a caller that
        sees it again (the engine failing the step) does not count it twice.
        """
        if getattr(exc, _COUNTED, False):
            return False
        self._count_error(error, kernel)
        _mark_counted(exc)
        return True

    # -- adapters (engines that launch their own kernels) -----------------------------------------
    def count(self, kernel: str, n: int = 1, backend: str | None = None) -> None:
        """Count `n` runs of `kernel` by someone else: a PyTorch reference op, a TensorRT layer.

        `backend` is one of gpuobs.names.kernel's BACKEND_* (default: this launcher's own).
        """
        counts = self._by_backend.get(backend or self.backend)
        if counts is None:
            counts = self._by_backend.setdefault(backend or self.backend, {})
        counts[kernel] = counts.get(kernel, 0) + n

    def call(self, kernel: str, backend: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """`fn(*args, **kwargs)`: a kernel someone else runs (a PyTorch reference op), counted as one
        launch of `kernel` by `backend` and, at the sampled fraction, timed into `durations` (no span).

        On CUDA tensors the GPU time is taken with events and resolved with the pending spans (never
        synchronised); on the CPU the op is synchronous and its `perf_counter` time is its duration.
        """
        self.count(kernel, 1, backend)
        self._countdown -= 1
        if self._countdown > 0:
            return fn(*args, **kwargs)
        return self._call_sampled(kernel, backend, fn, args, kwargs)

    def _call_sampled(
        self, kernel: str, backend: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        self._countdown = self._next_interval()
        _, cuda_device = arg_facts((*args, *kwargs.values()))
        if cuda_device is None:
            t0 = time.perf_counter()
            result = fn(*args, **kwargs)
            self.durations.observe(kernel, backend, time.perf_counter() - t0)
            return result
        self._resolve_if_due()
        item = PendingLaunch(kernel, None, time.time_ns(), None, 0, 0, (), cuda_device, backend=backend,
                             span=False)
        item.token = self._timing.start(cuda_device)
        try:
            t0 = time.perf_counter()
            result = fn(*args, **kwargs)
            item.observe = time.perf_counter() - t0 < COMPILE_HOST_S  # a first call's lazy init, not the op
            item.token = self._timing.stop(item.token)
        except Exception:
            self._release(item.token)
            raise
        self._add_pending(item)
        return result

    def record_error(
        self, exc_or_text: BaseException | str, kernel: str, phase: str
    ) -> cuda_errors.CudaError | None:
        """Map, count and log a CUDA error reported outside a launch (e.g. an engine's log line)."""
        exc = exc_or_text if isinstance(exc_or_text, BaseException) else RuntimeError(exc_or_text)
        return self._on_error(exc, kernel, phase, None, (), None, None, {})

    # -- read-out ---------------------------------------------------------------------------------
    def launch_counts(self) -> dict[str, int]:
        """Launches per kernel since start, over every backend."""
        total: dict[str, int] = {}
        for counts in list(self._by_backend.values()):
            for kernel, n in list(counts.items()):
                total[kernel] = total.get(kernel, 0) + n
        return total

    def launch_counts_by_backend(self) -> dict[tuple[str, str], int]:
        """Launches per (kernel, backend) since start."""
        return {
            (kernel, backend): n
            for backend, counts in list(self._by_backend.items())
            for kernel, n in list(counts.items())
        }

    def error_counts(self) -> dict[tuple[str, str, str], int]:
        """CUDA errors per (code, name, kernel) since start."""
        return dict(self._errors)

    def duration_histograms(self) -> dict[tuple[str, str], HistogramSnapshot]:
        """Timed launches per (kernel, backend): (cumulative buckets ending with +Inf, sum in seconds)."""
        return self.durations.snapshot()




_at_exit: weakref.WeakSet[KernelLauncher] = weakref.WeakSet()
_at_exit_lock = threading.Lock()
_at_exit_hooked = False


def _flush_at_exit_too(launcher: KernelLauncher) -> None:
    """Build the spans still pending when the process exits (spans are built in batches).

    The hook is registered at the first pending span, normally after the tracer provider (whose
    own exit hook shuts it down), so it runs before the provider is shut down.
    """
    global _at_exit_hooked
    with _at_exit_lock:
        if not _at_exit_hooked:
            _at_exit_hooked = True
            atexit.register(_flush_pending_at_exit)
        _at_exit.add(launcher)


def _flush_pending_at_exit() -> None:
    for launcher in list(_at_exit):
        if launcher.pending:
            try:
                launcher.flush(1.0)
            except Exception:  # at exit: report, never raise
                logger.debug("flushing kernel spans at exit failed", exc_info=True)


_default: KernelLauncher | None = None
_default_lock = threading.Lock()


def default_launcher() -> KernelLauncher:
    """The process-wide launcher gpuobs.kernels uses (created on first use from the settings)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = KernelLauncher()
    return _default


def set_default_launcher(launcher: KernelLauncher | None) -> KernelLauncher | None:
    """Replace the process-wide launcher (None: recreate from settings on next use); returns the old one."""
    global _default
    with _default_lock:
        old, _default = _default, launcher
    return old
