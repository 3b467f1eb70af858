"""Contract: a real `gpuobs serve` serves the in-process exporter's kernel counters and the histogram of
sampled launch durations on its own /metrics.

On this CPU machine the engine runs the PyTorch reference ops; each counts as a launch of its kernel
with `backend="torch"`, and the sampled ones (every one here: the server runs with a sample rate of 1)
are timed on the host. An injected `cuda_oom` (a failed allocation outside any kernel launch) is a
CUDA error the process hit, so it shows in `gpuobs_cuda_errors_total` with the allocation's code.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.serve import ServeProcess, http_json

from gpuobs import cuda_errors
from gpuobs.names import kernel as names

MODEL = "gpuobs-tiny-llama"
DECODER_KERNELS = {"rms_norm", "rotary_embedding", "silu_and_mul", "write_kv_cache", "prefill_attention"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    workdir = tmp_path_factory.mktemp("serve-kernels")
    env = {names.SPAN_SAMPLE_ENV: "1"}
    with ServeProcess(workdir, "--enable-fault-injection", grpc=False, env=env) as proc:
        yield proc


def _samples(text: str, family: str, suffix: str = "_total") -> dict[tuple[tuple[str, str], ...], float]:
    return {
        tuple(sorted(s.labels.items())): s.value
        for f in text_string_to_metric_families(text)
        if f.name == family
        for s in f.samples
        if s.name == f"{family}{suffix}"
    }


def _complete(server: ServeProcess, prompt: str) -> tuple[int, object]:
    body = {"model": MODEL, "prompt": prompt, "max_tokens": 3, "temperature": 0, "ignore_eos": True}
    return http_json("POST", f"{server.url}/v1/completions", body, timeout=60)


def test_kernel_launches_are_counted_by_kernel_and_backend(server: ServeProcess) -> None:
    before = _samples(server.metrics(), names.KERNEL_LAUNCHES.native)
    for i in range(3):
        status, body = _complete(server, f"count {i}")
        assert status == 200, body
    after = _samples(server.metrics(), names.KERNEL_LAUNCHES.native)
    grew = {
        dict(labels)["kernel"]
        for labels, value in after.items()
        if dict(labels)[names.BACKEND_LABEL] == names.BACKEND_TORCH and value > before.get(labels, 0.0)
    }
    assert grew >= DECODER_KERNELS, (grew, after)
    assert "paged_attention_decode" in grew  # decode steps ran


def test_a_cuda_oom_outside_a_launch_is_a_counted_cuda_error(server: ServeProcess) -> None:
    oom = cuda_errors.by_name("cudaErrorMemoryAllocation")
    assert oom is not None
    key = (("code", str(oom.code)), ("kernel", "prefill"), ("name", oom.name))  # the phase it surfaced in
    before = _samples(server.metrics(), names.CUDA_ERRORS.native).get(key, 0.0)
    status, body = http_json("POST", f"{server.url}/admin/faults/cuda_oom", {"at_allocation": 1})
    assert status == 200, body
    status, body = _complete(server, "oom")
    assert status == 500, body
    after = _samples(server.metrics(), names.CUDA_ERRORS.native)
    assert after.get(key, 0.0) == before + 1, after
    status, body = _complete(server, "after the oom")  # one-shot fault: serving goes on
    assert status == 200, body


def test_sampled_launch_durations_are_a_histogram_by_kernel_and_backend(server: ServeProcess) -> None:
    duration = names.KERNEL_DURATION.native
    before = _samples(server.metrics(), duration, "_count")
    status, body = _complete(server, "time me")
    assert status == 200, body
    text = server.metrics()
    counts = _samples(text, duration, "_count")
    sums = _samples(text, duration, "_sum")
    launches = _samples(text, names.KERNEL_LAUNCHES.native)
    grew = {
        dict(labels)["kernel"]
        for labels, value in counts.items()
        if dict(labels)[names.BACKEND_LABEL] == names.BACKEND_TORCH and value > before.get(labels, 0.0)
    }
    assert grew >= DECODER_KERNELS | {"paged_attention_decode"}, (grew, counts)
    for labels, count in counts.items():
        assert 0 < count <= launches[labels], labels  # a launch that failed is counted, not timed
        assert 0.0 < sums[labels] < count * 1.0, (labels, sums[labels])  # host time, under 1 s per op
