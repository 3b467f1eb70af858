"""The instrumented launcher: counters, sampled spans, GPU timing without sync, the histogram of sampled
launch durations, CUDA error mapping."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import torch

# No GPU here: the kernel below must be built by the Triton interpreter, decided at decoration time.
os.environ.setdefault("TRITON_INTERPRET", "1")
import triton
import triton.language as tl
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from prometheus_client import CollectorRegistry, generate_latest

from gpuobs import cuda_errors
from gpuobs.errors import InputError
from gpuobs.exporters.inprocess import launcher as L
from gpuobs.exporters.inprocess.collector import LauncherCollector
from gpuobs.exporters.inprocess.timing import CudaEventTiming, DurationHistograms
from gpuobs.jsonlog import JsonFormatter
from gpuobs.names import kernel as names
from gpuobs.names import spans as span_names


@triton.jit
def _add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


@pytest.fixture(autouse=True)
def interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("gpuobs.exporters.inprocess.launcher")
    log.addHandler(handler)
    yield stream
    log.removeHandler(handler)


class FakeKernel:
    """A launchable that fails like a CUDA launch does (stands in for a GPU this machine lacks)."""

    def __init__(self, exc: BaseException | None = None) -> None:
        self.exc = exc
        self.calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = []

    def __getitem__(self, grid: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> str:
            self.calls.append((grid, args, kwargs))
            if self.exc is not None:
                raise self.exc
            return "launched"

        return run


class FakeCudaTensor:
    """Duck-typed CUDA tensor: only the attributes the launcher reads on the sampled path."""

    is_cuda = True
    device = "cuda:0"
    shape = (4, 8)
    dtype = torch.bfloat16


class FakeGpuTiming:
    """EventTiming of a pretend GPU whose end event completes when the test says so.

    There is no GPU here: this stands at the CUDA-event boundary. It has no blocking wait at all,
    so a launcher that tried to synchronise on the sampled path could not get a duration.
    """

    def __init__(self) -> None:
        self.done = False
        self.elapsed = 2.5
        self.error: Exception | None = None
        self.started = 0
        self.queries = 0

    def start(self, device: Any) -> Any:
        self.started += 1
        return ["token"]

    def stream_text(self, token: Any) -> str:
        return "0x7"

    def stop(self, token: Any) -> Any:
        token.append("stopped")
        return token

    def ready(self, token: Any) -> bool:
        self.queries += 1
        if self.error is not None:
            raise self.error
        return self.done

    def elapsed_ms(self, token: Any) -> float:
        assert token == ["token", "stopped"]
        return self.elapsed


def test_counts_every_launch_and_runs_the_kernel() -> None:
    launcher = L.KernelLauncher(sample_rate=0.0)
    x = torch.zeros(10)
    for _ in range(3):
        launcher.launch("add_one", _add_one, (triton.cdiv(10, 4),), (x, 10), num_warps=1, BLOCK=4)
    launcher.launch("other", FakeKernel(), (1,), ())
    assert torch.equal(x, torch.full((10,), 3.0))
    assert launcher.launch_counts() == {"add_one": 3, "other": 1}


def test_sampled_span_is_child_of_current_context(spans: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = spans
    launcher = L.KernelLauncher(sample_rate=1.0, tracer_provider=provider)
    tracer = provider.get_tracer("test")
    x = torch.zeros(6)
    with tracer.start_as_current_span("decode_step") as step:
        launcher.launch("add_one", _add_one, (2,), (x, 6), num_warps=2, num_stages=1, BLOCK=4)
    finished = {s.name: s for s in exporter.get_finished_spans()}
    span = finished[span_names.SPAN_KERNEL_LAUNCH]
    assert span.parent is not None and span.parent.span_id == step.get_span_context().span_id
    attrs = dict(span.attributes or {})
    assert attrs[span_names.GPUOBS_KERNEL_NAME] == "add_one"
    assert attrs[span_names.GPUOBS_KERNEL_GRID] == "2"
    assert attrs[span_names.GPUOBS_KERNEL_NUM_WARPS] == 2
    assert attrs[span_names.GPUOBS_KERNEL_NUM_STAGES] == 1
    assert attrs[span_names.GPUOBS_KERNEL_INPUT_SHAPES] == "6"
    assert attrs[span_names.GPUOBS_KERNEL_INPUT_DTYPES] == "float32"
    assert attrs[span_names.GPUOBS_KERNEL_DEVICE] == "cpu"
    assert attrs[span_names.GPUOBS_KERNEL_TIMING] == "host"
    assert span.end_time is not None and span.start_time is not None and span.end_time >= span.start_time
    assert torch.equal(x, torch.ones(6))


def test_sampling_fraction(spans: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = spans
    launcher = L.KernelLauncher(sample_rate=0.05, tracer_provider=provider, seed=3)
    kernel = FakeKernel()
    for _ in range(4000):
        launcher.launch("k", kernel, (1,), ())
    sampled = len(exporter.get_finished_spans())
    assert 120 <= sampled <= 290, sampled  # mean 200
    assert launcher.launch_counts() == {"k": 4000}
    off = L.KernelLauncher(sample_rate=0.0, tracer_provider=provider)
    for _ in range(500):
        off.launch("k", kernel, (1,), ())
    assert len(exporter.get_finished_spans()) == sampled


@pytest.mark.parametrize("resolver", ["launch", "thread"])
def test_gpu_duration_resolved_later_without_sync(
    spans: tuple[TracerProvider, InMemorySpanExporter], resolver: str
) -> None:
    provider, exporter = spans
    timing = FakeGpuTiming()
    launcher = L.KernelLauncher(
        sample_rate=1.0, tracer_provider=provider, timing=timing, resolver=resolver, poll_interval_s=0.001,
        resolve_batch=1,
    )
    result = launcher.launch("paged", FakeKernel(), (8, 2), (FakeCudaTensor(), 3), num_warps=8)
    # The launch returned while the GPU work is still "running": nothing waited for it.
    assert result == "launched" and timing.started == 1
    assert launcher.pending == 1 and exporter.get_finished_spans() == ()
    time.sleep(0.02)
    assert launcher.pending == 1  # still not complete: no span invented
    timing.done = True
    if resolver == "launch":
        launcher.launch("next", FakeKernel(), (1,), (FakeCudaTensor(),))  # polled at the next sampled launch
    deadline = time.monotonic() + 5
    while not exporter.get_finished_spans() and time.monotonic() < deadline:
        time.sleep(0.002)
    launcher.close()
    span = next(
        s
        for s in exporter.get_finished_spans()
        if (s.attributes or {})[span_names.GPUOBS_KERNEL_NAME] == "paged"
    )
    attrs = dict(span.attributes or {})
    assert attrs[span_names.GPUOBS_KERNEL_TIMING] == "cuda_event"
    assert attrs[span_names.GPUOBS_KERNEL_GPU_DURATION_MS] == 2.5
    assert attrs[span_names.GPUOBS_KERNEL_DEVICE] == "cuda:0"
    assert attrs[span_names.GPUOBS_KERNEL_STREAM] == "0x7"
    assert span.end_time - span.start_time == 2_500_000  # type: ignore[operator]
    assert timing.queries >= 1


def test_deferred_span_keeps_the_launch_context_as_parent(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """The span is built at resolution, under another context, yet its parent is the launch's step."""
    provider, exporter = spans
    tracer = provider.get_tracer("test")
    timing = FakeGpuTiming()
    timing.elapsed = 0.75
    launcher = L.KernelLauncher(sample_rate=1.0, tracer_provider=provider, timing=timing)
    with tracer.start_as_current_span("decode_step_1") as step1:
        before = time.time_ns()
        launcher.launch("rms_norm", FakeKernel(), (64,), (FakeCudaTensor(), FakeCudaTensor(), 4096, 1e-6),
                        num_warps=8, num_stages=1, BLOCK=4096)
        after = time.time_ns()
    # Nothing built on the launch (only raw facts kept); the step itself has ended.
    assert [s.name for s in exporter.get_finished_spans()] == ["decode_step_1"]
    timing.done = True
    with tracer.start_as_current_span("decode_step_2") as step2:
        assert launcher.resolve_ready() == 1
    (span,) = [s for s in exporter.get_finished_spans() if s.name == span_names.SPAN_KERNEL_LAUNCH]
    assert span.parent is not None and span.parent.span_id == step1.get_span_context().span_id
    assert span.parent.span_id != step2.get_span_context().span_id
    assert span.context.trace_id == step1.get_span_context().trace_id
    assert dict(span.attributes or {}) == {
        span_names.GPUOBS_KERNEL_NAME: "rms_norm",
        span_names.GPUOBS_KERNEL_GRID: "64",
        span_names.GPUOBS_KERNEL_NUM_WARPS: 8,
        span_names.GPUOBS_KERNEL_NUM_STAGES: 1,
        span_names.GPUOBS_KERNEL_INPUT_SHAPES: "4x8,4x8",
        span_names.GPUOBS_KERNEL_INPUT_DTYPES: "bfloat16,bfloat16",
        span_names.GPUOBS_KERNEL_DEVICE: "cuda:0",
        span_names.GPUOBS_KERNEL_STREAM: "0x7",
        span_names.GPUOBS_KERNEL_TIMING: "cuda_event",
        span_names.GPUOBS_KERNEL_GPU_DURATION_MS: 0.75,
    }
    assert span.start_time is not None and before <= span.start_time <= after
    assert span.end_time == span.start_time + 750_000


def test_cached_attributes_follow_each_launch_configuration(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """Attribute text is cached per configuration: a new shape, dtype or grid is never mislabelled."""
    provider, exporter = spans
    timing = FakeGpuTiming()
    timing.done = True
    launcher = L.KernelLauncher(sample_rate=1.0, tracer_provider=provider, timing=timing)
    wide = FakeCudaTensor()
    wide.shape = (2, 16)  # type: ignore[misc]
    half = FakeCudaTensor()
    half.dtype = torch.float16  # type: ignore[misc]
    launches = [
        ((8,), (FakeCudaTensor(),), "8", "4x8", "bfloat16"),
        ((8,), (FakeCudaTensor(),), "8", "4x8", "bfloat16"),
        ((8,), (wide,), "8", "2x16", "bfloat16"),
        ((8,), (half,), "8", "4x8", "float16"),
        ([4, 2], (FakeCudaTensor(),), "4x2", "4x8", "bfloat16"),  # a list grid is unhashable: no cache
        ((4, 2), (FakeCudaTensor(),), "4x2", "4x8", "bfloat16"),
    ]
    for grid, args, *_ in launches:
        launcher.launch("k", FakeKernel(), grid, args)
    launcher.flush(1.0)
    got = [
        (
            a[span_names.GPUOBS_KERNEL_GRID],
            a[span_names.GPUOBS_KERNEL_INPUT_SHAPES],
            a[span_names.GPUOBS_KERNEL_INPUT_DTYPES],
            a[span_names.GPUOBS_KERNEL_GPU_DURATION_MS],
        )
        for a in (dict(s.attributes or {}) for s in exporter.get_finished_spans())
    ]
    assert got == [(g, sh, dt, 2.5) for _, _, g, sh, dt in launches]
    assert launcher.spans_started == launcher.spans_ended == len(launches)


def test_resolve_batch_defers_span_building_until_enough_are_pending(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    timing = FakeGpuTiming()
    timing.done = True  # every GPU end event has completed: only the batch size holds spans back
    launcher = L.KernelLauncher(sample_rate=1.0, tracer_provider=provider, timing=timing, resolve_batch=3)
    for expected_pending in (1, 2, 3):
        launcher.launch("k", FakeKernel(), (1,), (FakeCudaTensor(),))
        assert launcher.pending == expected_pending and exporter.get_finished_spans() == ()
    launcher.launch("k", FakeKernel(), (1,), (FakeCudaTensor(),))  # 3 pending: built before this launch
    assert len(exporter.get_finished_spans()) == 3 and launcher.pending == 1
    assert launcher.flush(1.0) and len(exporter.get_finished_spans()) == 4
    with pytest.raises(ValueError, match="resolve_batch"):
        L.KernelLauncher(sample_rate=1.0, resolve_batch=0)


def test_pending_spans_wait_at_most_resolve_after_s(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """Under light load the batch never fills: the age bound still gets the span out."""
    provider, exporter = spans
    timing = FakeGpuTiming()
    timing.done = True
    launcher = L.KernelLauncher(sample_rate=1.0, tracer_provider=provider, timing=timing,
                                resolve_batch=100, resolve_after_s=0.05)
    launcher.launch("k", FakeKernel(), (1,), (FakeCudaTensor(),))
    launcher.launch("k", FakeKernel(), (1,), (FakeCudaTensor(),))
    assert launcher.pending == 2 and exporter.get_finished_spans() == ()
    time.sleep(0.06)
    launcher.launch("k", FakeKernel(), (1,), (FakeCudaTensor(),))
    assert len(exporter.get_finished_spans()) == 2 and launcher.pending == 1


_EXIT_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from gpuobs.exporters.inprocess import launcher as L
from test_launcher import FakeCudaTensor, FakeGpuTiming, FakeKernel

class Printer(SpanExporter):
    def export(self, spans):
        for span in spans:
            print("exported", span.name, dict(span.attributes)["gpuobs.kernel.name"], flush=True)
        return SpanExportResult.SUCCESS

provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(Printer()))
timing = FakeGpuTiming()
timing.done = True
launcher = L.KernelLauncher(sample_rate=1.0, tracer_provider=provider, timing=timing)
for i in range(3):
    launcher.launch(f"k{{i}}", FakeKernel(), (1,), (FakeCudaTensor(),))
print("pending", launcher.pending, flush=True)
"""


def test_spans_still_pending_at_exit_are_exported() -> None:
    """Spans wait for a batch; a process that exits without flush() still exports them (a real exit)."""
    script = _EXIT_SCRIPT.format(tests=os.path.dirname(__file__))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [
        "pending 3", "exported kernel.launch k0", "exported kernel.launch k1", "exported kernel.launch k2"
    ], proc.stdout + proc.stderr[-2000:]


def test_launch_error_is_mapped_counted_logged_and_reraised(json_log: io.StringIO) -> None:
    launcher = L.KernelLauncher(sample_rate=0.0)
    exc = RuntimeError("CUDA error: an illegal memory access was encountered")
    x = torch.zeros(3)
    with pytest.raises(RuntimeError) as info:
        launcher.launch(
            "rms_norm", FakeKernel(exc), (128,), (x, 3, 1e-6), num_warps=8, num_stages=1, BLOCK=4096
        )
    assert info.value is exc
    assert launcher.error_counts() == {("700", "cudaErrorIllegalAddress", "rms_norm"): 1}
    line = json.loads(json_log.getvalue().strip().splitlines()[-1])
    assert line["level"] == "error" and line["event"] == "cuda_error"
    assert line["kernel"] == "rms_norm" and line["cuda_error_code"] == 700
    assert (
        line["cuda_error_name"] == "cudaErrorIllegalAddress"
        and line["cuda_error_category"] == "application_bug"
    )
    assert line["grid"] == [128] and line["num_warps"] == 8 and line["constexprs"] == {"BLOCK": 4096}
    assert line["input_shapes"] == ["3"] and line["input_dtypes"] == ["float32"]


def test_simulated_codes_and_non_cuda_errors() -> None:
    launcher = L.KernelLauncher(sample_rate=0.0)
    with pytest.raises(L.LaunchError):
        launcher.launch("alloc", FakeKernel(L.LaunchError(2)), (1,), ())
    with pytest.raises(RuntimeError):
        launcher.launch(
            "triton", FakeKernel(RuntimeError("Triton Error [CUDA]: misaligned address")), (1,), ()
        )
    with pytest.raises(ValueError):
        launcher.launch("bug", FakeKernel(ValueError("not a CUDA error")), (1,), ())
    assert launcher.error_counts() == {
        ("2", "cudaErrorMemoryAllocation", "alloc"): 1,
        ("716", "cudaErrorMisalignedAddress", "triton"): 1,
    }
    assert launcher.launch_counts() == {"alloc": 1, "triton": 1, "bug": 1}


def test_error_on_sampled_launch_ends_span_with_error(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    launcher = L.KernelLauncher(sample_rate=1.0, tracer_provider=provider, timing=FakeGpuTiming())
    with pytest.raises(RuntimeError):
        launcher.launch(
            "bad",
            FakeKernel(RuntimeError("CUDA error: unspecified launch failure")),
            (1,),
            (FakeCudaTensor(),),
        )
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})[span_names.CUDA_ERROR_CODE] == 719
    assert launcher.pending == 0


def test_error_at_later_event_poll_is_attributed_to_the_kernel(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """A sticky error surfacing at the next poll counts against the kernel whose span was pending."""
    provider, exporter = spans
    timing = FakeGpuTiming()
    launcher = L.KernelLauncher(sample_rate=1.0, tracer_provider=provider, timing=timing)
    launcher.launch("paged_attention_decode", FakeKernel(), (1,), (FakeCudaTensor(),))
    timing.error = RuntimeError("CUDA error: an illegal memory access was encountered")
    with pytest.raises(RuntimeError):
        launcher.resolve_ready()
    assert launcher.error_counts() == {("700", "cudaErrorIllegalAddress", "paged_attention_decode"): 1}
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR and launcher.pending == 0


def test_watch_maps_errors_of_any_code() -> None:
    launcher = L.KernelLauncher(sample_rate=0.0)
    with pytest.raises(RuntimeError), launcher.watch("matmul"):
        raise RuntimeError("CUDA error: CUBLAS_STATUS_EXECUTION_FAILED ... cudaErrorLaunchFailure")
    assert launcher.error_counts() == {("719", "cudaErrorLaunchFailure", "matmul"): 1}


def test_backend_of_own_launches_follows_the_triton_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert L.KernelLauncher(sample_rate=0.0).backend == names.BACKEND_TRITON_INTERPRETER
    monkeypatch.delenv("TRITON_INTERPRET")
    launcher = L.KernelLauncher(sample_rate=0.0)
    launcher.launch("k", FakeKernel(), (1,), ())
    assert launcher.launch_counts_by_backend() == {("k", names.BACKEND_TRITON): 1}


def test_an_error_is_counted_once_whoever_sees_it_again() -> None:
    launcher = L.KernelLauncher(sample_rate=0.0)
    illegal = RuntimeError("CUDA error: an illegal memory access was encountered")
    with pytest.raises(RuntimeError) as raised:
        launcher.launch("rms_norm", FakeKernel(illegal), (1,), ())
    oom = cuda_errors.by_code(2)
    assert oom is not None
    # The engine failing the step sees the same exception: not counted again.
    assert launcher.count_error(raised.value, cuda_errors.by_code(700) or oom, "") is False
    # An error outside any launch (a failed allocation) is counted with kernel "".
    alloc = RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
    assert launcher.count_error(alloc, oom) is True and launcher.count_error(alloc, oom) is False
    assert launcher.error_counts() == {
        ("700", "cudaErrorIllegalAddress", "rms_norm"): 1,
        ("2", "cudaErrorMemoryAllocation", ""): 1,
    }


def test_collector_exposition_is_promtool_clean() -> None:
    launcher = L.KernelLauncher(sample_rate=0.0)
    for _ in range(5):
        launcher.launch("silu_and_mul", FakeKernel(), (1,), ())
    with pytest.raises(RuntimeError):
        launcher.launch("rms_norm", FakeKernel(RuntimeError("CUDA error: out of memory")), (1,), ())
    launcher.count("write_kv_cache", 2, backend=names.BACKEND_TORCH)
    launcher.durations.observe("write_kv_cache", names.BACKEND_TORCH, 0.0004)
    registry = CollectorRegistry()
    registry.register(LauncherCollector(launcher))
    text = generate_latest(registry).decode()
    assert f'gpuobs_kernel_launches_total{{backend="{launcher.backend}",kernel="silu_and_mul"}} 5.0' in text
    duration = names.KERNEL_DURATION.native
    assert f"# TYPE {duration} histogram" in text
    assert f'{duration}_bucket{{backend="torch",kernel="write_kv_cache",le="0.00025"}} 0.0' in text
    assert f'{duration}_bucket{{backend="torch",kernel="write_kv_cache",le="0.0005"}} 1.0' in text
    assert f'{duration}_count{{backend="torch",kernel="write_kv_cache"}} 1.0' in text
    assert f'{duration}_sum{{backend="torch",kernel="write_kv_cache"}} 0.0004' in text
    assert 'gpuobs_kernel_launches_total{backend="torch",kernel="write_kv_cache"} 2.0' in text
    assert launcher.launch_counts() == {"silu_and_mul": 5, "rms_norm": 1, "write_kv_cache": 2}
    assert 'gpuobs_cuda_errors_total{code="2",kernel="rms_norm",name="cudaErrorMemoryAllocation"} 1.0' in text
    check = subprocess.run(
        ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_sample_rate_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[kernels]\nkernel-span-sample = 0.5\n")
    monkeypatch.setenv("GPUOBS_CONFIG", str(config))
    monkeypatch.delenv(names.SPAN_SAMPLE_ENV, raising=False)
    assert L.KernelLauncher().sample_rate == 0.5  # config file
    monkeypatch.setenv(names.SPAN_SAMPLE_ENV, "0.25")
    assert L.KernelLauncher().sample_rate == 0.25  # environment beats the file
    assert L.KernelLauncher(sample_rate=0.0).sample_rate == 0.0  # argument beats both
    monkeypatch.setenv(names.SPAN_SAMPLE_ENV, "2")
    with pytest.raises(InputError, match="GPUOBS_KERNEL_SPAN_SAMPLE"):
        L.KernelLauncher()
    config.write_text("")
    monkeypatch.delenv(names.SPAN_SAMPLE_ENV)
    assert L.KernelLauncher().sample_rate == names.DEFAULT_SPAN_SAMPLE == 0.01


def test_default_launcher_is_used_by_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuobs.kernels as K

    mine = L.KernelLauncher(sample_rate=1.0)
    old = L.set_default_launcher(mine)
    try:
        K.silu_and_mul(torch.randn(2, 8))  # the Triton interpreter
        monkeypatch.delenv("TRITON_INTERPRET")
        K.silu_and_mul(torch.randn(2, 8))  # the PyTorch reference
    finally:
        L.set_default_launcher(old)
    assert mine.launch_counts_by_backend() == {
        ("silu_and_mul", names.BACKEND_TRITON_INTERPRETER): 1,
        ("silu_and_mul", names.BACKEND_TORCH): 1,
    }
    assert {key: n for key, (n, _) in _timed(mine).items()} == {
        ("silu_and_mul", names.BACKEND_TRITON_INTERPRETER): 1,
        ("silu_and_mul", names.BACKEND_TORCH): 1,
    }


def _timed(launcher: L.KernelLauncher) -> dict[tuple[str, str], tuple[int, float]]:
    """(timed launches, seconds) per (kernel, backend)."""
    return {key: (buckets[-1][1], total) for key, (buckets, total) in launcher.duration_histograms().items()}


class _SlowOp:
    """A synchronous CPU op that takes at least `seconds` (the slowness the duration must show)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> str:
        self.calls += 1
        time.sleep(self.seconds)
        return "done"

    def __getitem__(self, grid: Any) -> Any:  # launchable like a Triton kernel
        return self


def test_sampled_cpu_launches_and_calls_are_timed_on_the_host() -> None:
    """On the CPU the synchronous call is the kernel: its host time lands in the histogram."""
    launcher = L.KernelLauncher(sample_rate=1.0)
    slow = _SlowOp(0.03)
    assert launcher.launch("interp", slow, (1,), ()) == "done"
    assert launcher.call("ref", names.BACKEND_TORCH, slow, torch.zeros(2), x=1) == "done"
    timed = _timed(launcher)
    assert set(timed) == {("interp", names.BACKEND_TRITON_INTERPRETER), ("ref", names.BACKEND_TORCH)}
    for count, seconds in timed.values():
        assert count == 1 and 0.03 <= seconds < 5.0, timed
    buckets = dict(launcher.duration_histograms()[("ref", names.BACKEND_TORCH)][0])
    assert buckets[0.025] == 0 and buckets[float("inf")] == 1  # not below the 30 ms it slept
    assert launcher.launch_counts_by_backend() == {
        ("interp", names.BACKEND_TRITON_INTERPRETER): 1, ("ref", names.BACKEND_TORCH): 1
    }


def test_only_sampled_launches_and_calls_are_timed() -> None:
    launcher = L.KernelLauncher(sample_rate=0.05, seed=5)
    kernel = FakeKernel()
    for _ in range(2000):
        launcher.launch("k", kernel, (1,), ())
        launcher.call("op", names.BACKEND_TORCH, len, ())
    timed = _timed(launcher)
    launches = timed[("k", names.BACKEND_TRITON_INTERPRETER)][0]
    calls = timed[("op", names.BACKEND_TORCH)][0]
    assert 120 <= launches + calls <= 290, timed  # one countdown for both: mean 200 of 4000
    assert launches > 0 and calls > 0
    assert launcher.launch_counts() == {"k": 2000, "op": 2000}
    off = L.KernelLauncher(sample_rate=0.0)
    for _ in range(500):
        off.launch("k", kernel, (1,), ())
        off.call("op", names.BACKEND_TORCH, len, ())
    assert off.duration_histograms() == {} and off.launch_counts() == {"k": 500, "op": 500}


def test_gpu_durations_are_observed_once_the_end_event_completed(
    spans: tuple[TracerProvider, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    """CUDA launches and torch calls on CUDA tensors: event time, observed at resolution, never before."""
    # The compile filter (a launch or call whose host time passes COMPILE_HOST_S, 5 ms) is the next test's;
    # here a descheduled process on a loaded 2-core machine must not make a warm call look like a compile.
    monkeypatch.setattr(L, "COMPILE_HOST_S", 60.0)
    provider, exporter = spans
    timing = FakeGpuTiming()
    launcher = L.KernelLauncher(sample_rate=1.0, tracer_provider=provider, timing=timing)
    launcher.launch("paged", FakeKernel(), (8,), (FakeCudaTensor(),))
    assert launcher.call("write_kv_cache", names.BACKEND_TORCH, _SlowOp(0.0), FakeCudaTensor()) == "done"
    assert timing.started == 2 and launcher.pending == 2
    assert launcher.duration_histograms() == {}  # nothing invented while the GPU runs
    timing.done = True
    assert launcher.resolve_ready() == 2
    assert _timed(launcher) == {
        ("paged", names.BACKEND_TRITON_INTERPRETER): (1, 0.0025),
        ("write_kv_cache", names.BACKEND_TORCH): (1, 0.0025),
    }
    buckets = dict(launcher.duration_histograms()[("paged", names.BACKEND_TRITON_INTERPRETER)][0])
    assert buckets[0.001] == 0 and buckets[0.0025] == 1  # 2.5 ms: in the bucket le="0.0025"
    # A timed call has no span: only the launch made one.
    assert [(s.attributes or {})[span_names.GPUOBS_KERNEL_NAME] for s in exporter.get_finished_spans()] == [
        "paged"
    ]
    assert launcher.spans_started == launcher.spans_ended == 1


def test_a_launch_that_compiles_keeps_its_span_but_not_its_duration(
    spans: tuple[TracerProvider, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The H200 bench saw a 1.26 s 'kernel' mean: first launches JIT-compile between the two events."""
    # A limit far above a warm launch's host time even on a loaded machine, and a compile far above it.
    monkeypatch.setattr(L, "COMPILE_HOST_S", 0.5)
    provider, exporter = spans
    timing = FakeGpuTiming()
    launcher = L.KernelLauncher(sample_rate=1.0, tracer_provider=provider, timing=timing)
    launcher.launch("paged", _SlowOp(2 * L.COMPILE_HOST_S), (8,), (FakeCudaTensor(),))  # compiles
    launcher.launch("paged", FakeKernel(), (8,), (FakeCudaTensor(),))  # warm
    timing.done = True
    assert launcher.resolve_ready() == 2
    assert _timed(launcher) == {("paged", names.BACKEND_TRITON_INTERPRETER): (1, 0.0025)}
    assert len(exporter.get_finished_spans()) == 2
    assert launcher.launch_counts() == {"paged": 2}


def test_error_in_a_timed_call_on_cuda_releases_its_events_and_raises() -> None:
    timing = FakeGpuTiming()
    released: list[Any] = []
    timing.release = released.append  # type: ignore[attr-defined]
    launcher = L.KernelLauncher(sample_rate=1.0, timing=timing)
    with pytest.raises(RuntimeError, match="boom"):
        launcher.call("op", names.BACKEND_TORCH, FakeKernel(RuntimeError("boom"))[1], FakeCudaTensor())
    assert released == [["token"]] and launcher.pending == 0 and launcher.duration_histograms() == {}
    assert launcher.launch_counts() == {"op": 1}


def test_duration_histograms_bucket_like_prometheus() -> None:
    hist = DurationHistograms((0.001, 0.01))
    for seconds in (0.0005, 0.001, 0.002, 0.5, float("nan"), -1.0):
        hist.observe("k", "torch", seconds)
    ((key, (buckets, total)),) = hist.snapshot().items()
    assert key == ("k", "torch")
    assert buckets == ((0.001, 2), (0.01, 3), (float("inf"), 4))  # le: a value on a bound is in it
    assert total == pytest.approx(0.5035)
    for bad in ((), (0.01, 0.001), (0.001, 0.001), (0.001, float("inf"))):
        with pytest.raises(ValueError, match="ascending"):
            DurationHistograms(bad)


class _FakeCudaEvent:
    """Stands in for torch.cuda.Event (no GPU here): counts records, completes at once."""

    created = 0

    def __init__(self, enable_timing: bool = False) -> None:
        assert enable_timing
        type(self).created += 1
        self.records = 0

    def record(self, stream: Any) -> None:
        self.records += 1

    def query(self) -> bool:
        return True

    def elapsed_time(self, other: Any) -> float:
        return 1.5


class _FakeStream:
    def __init__(self, handle: int) -> None:
        self.cuda_stream = handle


class _FakeCuda:
    Event = _FakeCudaEvent

    def __init__(self) -> None:
        self.handle = 0x10  # the raw handle of the "current stream"
        self.stream_objects = 0

    def current_stream(self, device: Any) -> Any:
        self.stream_objects += 1  # building a Stream object: the ~6 us the launcher avoids per launch
        return _FakeStream(self.handle)


class _FakeTorch:
    def __init__(self) -> None:
        self.cuda = _FakeCuda()
        self.raw_lookups: list[int] = []

        def raw_stream(index: int) -> int:
            self.raw_lookups.append(index)
            return self.cuda.handle

        self._C = type("C", (), {"_cuda_getCurrentRawStream": staticmethod(raw_stream)})


def test_cuda_event_timing_pools_event_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Event pairs are reused after their span resolved instead of being created per sampled launch."""
    timing = CudaEventTiming()
    fake = _FakeTorch()
    monkeypatch.setattr(timing, "_torch", lambda: fake)
    _FakeCudaEvent.created = 0
    for _ in range(5):
        token = timing.stop(timing.start("cuda:0"))
        assert timing.ready(token) and timing.elapsed_ms(token) == 1.5
        timing.release(token)
    assert _FakeCudaEvent.created == 2  # one pair, recorded five times
    assert token[0].records == 5 and token[1].records == 5
    tokens = [timing.start("cuda:0") for _ in range(3)]  # in flight together: distinct pairs
    assert len({id(t[0]) for t in tokens}) == 3
    assert timing.stream_of("cuda:0") == "0x10" and timing.stream_text(tokens[0]) == "0x10"


def test_cuda_event_timing_looks_the_stream_up_once_per_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    """One raw-handle lookup per start; the Stream object is built once per stream, not per launch."""
    timing = CudaEventTiming()
    fake = _FakeTorch()
    monkeypatch.setattr(timing, "_torch", lambda: fake)
    for _ in range(4):
        timing.release(timing.stop(timing.start(torch.device("cuda", 1))))
    assert fake.raw_lookups == [1, 1, 1, 1] and fake.cuda.stream_objects == 1
    fake.cuda.handle = 0x20  # the caller switched streams: the events follow it
    token = timing.stop(timing.start("cuda:1"))
    assert timing.stream_text(token) == "0x20" and token[2].cuda_stream == 0x20
    assert fake.cuda.stream_objects == 2
