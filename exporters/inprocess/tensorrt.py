"""TensorRT adapter: per-layer times become `kernel.launch` spans; engine errors become CUDA error counts.

Importable without TensorRT. `SpanProfiler` implements the `tensorrt.IProfiler` protocol
(`report_layer_time(layer_name, ms)`) and `CountingLogger` the `tensorrt.ILogger` protocol
(`log(severity, msg)`); both work duck-typed. `make_profiler()` / `make_logger()` return instances
that also derive from the real `tensorrt.IProfiler` / `tensorrt.ILogger` when TensorRT is installed,
which TensorRT requires before it accepts them:

    context.profiler = make_profiler()                  # IExecutionContext
    runtime = tensorrt.Runtime(make_logger())

Layer executions are counted in the launcher's
`gpuobs_kernel_launches_total{kernel=<layer>,backend="tensorrt"}`;
CUDA errors named in engine messages in `gpuobs_cuda_errors_total{code,name,kernel="tensorrt"}`;
every message in `gpuobs_engine_log_messages_total{engine="tensorrt",severity}`.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from gpuobs.exporters.inprocess.launcher import KernelLauncher, default_launcher
from gpuobs.exporters.inprocess.spans import kernel_tracer
from gpuobs.names import kernel as names
from gpuobs.names import spans

__all__ = [
    "ENGINE",
    "SEVERITIES",
    "CountingLogger",
    "EngineLogCollector",
    "SpanProfiler",
    "make_logger",
    "make_profiler",
    "severity_name",
]

logger = logging.getLogger(__name__)

ENGINE = "tensorrt"
# tensorrt.ILogger.Severity values, most severe first.
SEVERITIES = ("internal_error", "error", "warning", "info", "verbose")
_LEVELS = {
    "internal_error": logging.CRITICAL,
    "error": logging.ERROR,
    "warning": logging.WARNING,
    "info": logging.INFO,
    "verbose": logging.DEBUG,
}
# A burst of layer reports belongs to one inference when reports are this close together.
_BURST_GAP_NS = 50_000_000


def severity_name(severity: Any) -> str:
    """`internal_error`, `error`, `warning`, `info` or `verbose` from a TensorRT Severity, int or name."""
    name = getattr(severity, "name", None)
    if isinstance(name, str) and name.lower() in SEVERITIES:
        return name.lower()
    if isinstance(severity, str):
        text = severity.rsplit(".", 1)[-1].lower()
        if text in SEVERITIES:
            return text
    try:
        index = int(severity)
    except (TypeError, ValueError):
        return "info"
    return SEVERITIES[index] if 0 <= index < len(SEVERITIES) else "info"


def _tensorrt_base(name: str) -> type | None:
    try:
        trt = importlib.import_module("tensorrt")
    except ImportError:
        return None
    base = getattr(trt, name, None)
    return base if isinstance(base, type) else None


class SpanProfiler:
    """IProfiler: each `report_layer_time(layer, ms)` becomes a `kernel.launch` span and a launch count.

    TensorRT reports the layers of one inference in execution order after it ran, so the spans of
    a burst are laid back to back ending at the first report's time plus their durations; call
    `begin(start_ns)` before an inference to anchor them at its real start instead. Spans are
    children of the context current at report time (e.g. the request span).
    """

    def __init__(
        self,
        tracer_provider: Any = None,
        launcher: KernelLauncher | None = None,
        engine_name: str = "",
    ) -> None:
        super().__init__()
        self._tracer_provider = tracer_provider
        self._tracer: Any = None
        self._launcher = launcher
        self.engine_name = engine_name
        self._cursor_ns: int | None = None
        self._last_report_ns = 0
        self._lock = threading.Lock()
        self.layers_reported = 0

    def _get_tracer(self) -> Any:
        if self._tracer is None:
            self._tracer = kernel_tracer(self._tracer_provider)
        return self._tracer

    def begin(self, start_ns: int | None = None) -> None:
        """Anchor the next burst of layer reports at `start_ns` (default: now)."""
        with self._lock:
            self._cursor_ns = time.time_ns() if start_ns is None else start_ns
            self._last_report_ns = time.time_ns()

    def report_layer_time(self, layer_name: str, ms: float) -> None:
        """TensorRT callback: `layer_name` ran for `ms` milliseconds."""
        duration_ns = max(0, int(float(ms) * 1e6))
        now = time.time_ns()
        with self._lock:
            if self._cursor_ns is None or now - self._last_report_ns > _BURST_GAP_NS:
                self._cursor_ns = now
            start = self._cursor_ns
            self._cursor_ns = start + duration_ns
            self._last_report_ns = now
            self.layers_reported += 1
        (self._launcher or default_launcher()).count(layer_name, backend=names.BACKEND_TENSORRT)
        attributes: dict[str, Any] = {
            spans.GPUOBS_KERNEL_NAME: layer_name,
            spans.GPUOBS_ENGINE: ENGINE,
            spans.GPUOBS_ENGINE_LAYER: layer_name,
            spans.GPUOBS_KERNEL_GPU_DURATION_MS: float(ms),
            spans.GPUOBS_KERNEL_TIMING: "engine_profiler",
        }
        if self.engine_name:
            attributes[spans.GPUOBS_ENGINE_NAME] = self.engine_name
        span = self._get_tracer().start_span(
            spans.SPAN_KERNEL_LAUNCH, start_time=start, attributes=attributes
        )
        span.end(end_time=start + duration_ns)


class CountingLogger:
    """ILogger: counts every message by severity, logs it as JSON, maps CUDA errors it names."""

    def __init__(self, launcher: KernelLauncher | None = None, min_severity: Any = "warning") -> None:
        super().__init__()
        self._launcher = launcher
        self.min_severity = severity_name(min_severity)
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def log(self, severity: Any, msg: str) -> None:
        """TensorRT callback: one engine message."""
        sev = severity_name(severity)
        with self._lock:
            self._counts[sev] = self._counts.get(sev, 0) + 1
        error = None
        if sev in ("internal_error", "error"):
            error = (self._launcher or default_launcher()).record_error(str(msg), ENGINE, "engine_log")
        if SEVERITIES.index(sev) > SEVERITIES.index(self.min_severity):
            return
        extra: dict[str, Any] = {"event": "engine_log", "engine": ENGINE, "severity": sev}
        if error is not None:
            extra.update(cuda_error_code=error.code, cuda_error_name=error.name)
        logger.log(_LEVELS[sev], "TensorRT %s: %s", sev, msg, extra=extra)

    def counts(self) -> dict[str, int]:
        """Messages seen per severity."""
        with self._lock:
            return dict(self._counts)


class EngineLogCollector:
    """prometheus_client collector of `gpuobs_engine_log_messages_total{engine,severity}`."""

    def __init__(self, engine_logger: CountingLogger) -> None:
        self._logger = engine_logger

    def describe(self) -> list[Any]:
        return list(self._families({}))

    def collect(self) -> Iterator[Any]:
        yield from self._families(self._logger.counts())

    def _families(self, counts: dict[str, int]) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily

        spec = names.ENGINE_LOG_MESSAGES
        family = CounterMetricFamily(spec.native, spec.help, labels=list(spec.labels))
        for sev in SEVERITIES:
            if sev in counts:
                family.add_metric([ENGINE, sev], counts[sev])
        yield family


def make_profiler(
    tracer_provider: Any = None, launcher: KernelLauncher | None = None, engine_name: str = ""
) -> SpanProfiler:
    """A SpanProfiler that TensorRT accepts as `IExecutionContext.profiler` when TensorRT is installed."""
    base = _tensorrt_base("IProfiler")
    cls: type[SpanProfiler] = (
        SpanProfiler if base is None else type("GpuobsTrtProfiler", (SpanProfiler, base), {})
    )
    return cls(tracer_provider=tracer_provider, launcher=launcher, engine_name=engine_name)


def make_logger(launcher: KernelLauncher | None = None, min_severity: Any = "warning") -> CountingLogger:
    """A CountingLogger that `tensorrt.Runtime` / `tensorrt.Builder` accept when TensorRT is installed."""
    base = _tensorrt_base("ILogger")
    cls: type[CountingLogger] = (
        CountingLogger if base is None else type("GpuobsTrtLogger", (CountingLogger, base), {})
    )
    return cls(launcher=launcher, min_severity=min_severity)
