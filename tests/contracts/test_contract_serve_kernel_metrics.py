"""Contract: a real `gpuobs serve` serves the in-process exporter's kernel counters on its own /metrics.

On this CPU machine the engine runs the PyTorch reference ops; each counts as a launch of its kernel
with `backend="torch"`. An injected `cuda_oom` (a failed allocation outside any kernel launch) is a
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
    with ServeProcess(workdir, "--enable-fault-injection", grpc=False) as proc:
        yield proc


def _samples(text: str, family: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {
        tuple(sorted(s.labels.items())): s.value
        for f in text_string_to_metric_families(text)
        if f.name == family
        for s in f.samples
        if s.name == f"{family}_total"
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
