"""`gpuobs serve` as a new user first runs it: where it listens in one line, the random-weights warning
once, a busy port / bad -E / missing GPU as one line and exit 2, fault routes that say why they are off."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support.prometheus import free_port
from support.serve import ServeProcess, http_json


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuobs", "serve", "--address", "127.0.0.1", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_startup_line_warning_and_fault_routes_that_say_why(tmp_path: Path) -> None:
    with ServeProcess(tmp_path, "--device", "cpu") as proc:
        lines = proc.logs().splitlines()
        assert lines[0] == (
            f"gpuobs serve: HTTP {proc.url}/v1, gRPC {proc.grpc_target}; model the embedded tiny Llama; "
            "device cpu"
        ), lines[:3]
        warnings = [line for line in lines if "random weights" in line]
        assert len(warnings) == 1 and lines[1] == warnings[0], lines[:3]
        for method, path in (("GET", "/admin/faults"), ("POST", "/admin/faults/step_oom")):
            status, body = http_json(method, proc.url + path, body={} if method == "POST" else None)
            assert status == 404, (status, body)
            assert "--enable-fault-injection" in body["error"]["message"], body
        # the harness refuses a second start while its server runs: a second process could not bind, /ready
        # would still answer from the first, and stop() would stop only the second (a server leaked so once)
        first = proc.proc
        assert first is not None
        with pytest.raises(RuntimeError, match=f"already running \\(pid {first.pid}\\)"):
            proc.start()
        assert proc.proc is first and first.poll() is None
    assert first.poll() is not None, "the one server stopped with the context"


@pytest.mark.parametrize("which", ["--port", "--grpc-port"])
def test_a_port_in_use_is_one_line_and_exit_2(which: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        ports = {"--port": str(free_port()), "--grpc-port": str(free_port()), which: str(taken)}
        done = serve(*(x for pair in ports.items() for x in pair))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == done.stderr.strip().splitlines()[0], done.stderr
    assert f"{which} {taken}" in done.stderr and "already in use" in done.stderr
    assert "Traceback" not in done.stderr and "random weights" not in done.stderr, "checked before loading"


@pytest.mark.parametrize(
    ("option", "words"),
    [
        ("max_batch_sise=8", "-E max_batch_sise: no such engine option"),
        ("max_batch_size=eight", "-E max_batch_size=eight: expected an integer"),
        ("kv_cache_memory_fraction=half", "expected a number"),
        ("enable_fault_injection=maybe", "expected true or false"),
    ],
)
def test_a_bad_engine_option_names_the_key_and_its_type(option: str, words: str) -> None:
    done = serve("--port", str(free_port()), "-E", option)
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert "could not be loaded" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("option", "words"),
    [
        ("kv_cache_memory_fraction=2", "-E kv_cache_memory_fraction must be in (0, 1], got 2.0"),
        ("max_model_len=0", "-E max_model_len must be >= 1 (or none), got 0"),
        ("kernels=triton", "-E kernels must be kernels | reference | auto, got 'triton'"),
        ("bucket_wait_s=nan,nan,nan,nan", "-E bucket_wait_s must be seconds >= 0"),
        ("buckets=512,64", "-E buckets must be increasing prompt lengths >= 1, got (512, 64)"),
    ],
)
def test_an_engine_option_out_of_range_is_refused_before_the_model_loads(option: str, words: str) -> None:
    """A value of the right type that no engine can run with: a KV fraction of 2 and a model length of 0
    used to serve, an unknown kernel backend died in the model load as "the model could not be loaded" with
    a traceback in a JSON log line, and NaN waits reached the scheduler."""
    done = serve("--port", str(free_port()), "-E", option)
    assert done.returncode == 2 and words in done.stderr, done.stderr[-2000:]
    assert "random weights" not in done.stderr and "Traceback" not in done.stderr, "checked before loading"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--memory-budget-bytes", "-5"], "--memory-budget-bytes must be positive, got -5"),
        (["--otlp-endpoint", "collector:4318"], "--otlp-endpoint 'collector:4318' is not an http(s) URL"),
        (["--served-model-name", " "], "--served-model-name is empty"),
        (["--served-model-name", "a\nb"], "--served-model-name holds a control character"),
        (["--served-model-name", "m" * 257], "--served-model-name is 257 characters long (at most 256)"),
        (["--api-key", ""], "--api-key is empty (an unset variable?)"),
        (["--admin-token", ""], "--admin-token is empty (an unset variable?)"),
    ],
    ids=[
        "negative budget", "OTLP with no scheme", "blank model name", "model name with a newline",
        "model name too long", "empty API key", "empty admin token",
    ],
)
def test_a_setting_that_cannot_work_is_refused_before_the_model_loads(args: list[str], words: str) -> None:
    """These used to start: a negative budget died in the model load with a traceback in a JSON log line, an
    OTLP endpoint without a scheme warned of failed exports every 300 s, a blank name was served (a newline
    in one split every log line and metric label that carried it, and a long one rode on each), and an empty
    `--api-key "$KEY"` (KEY unset) served /v1 with no key at all."""
    done = serve("--port", str(free_port()), *args)
    assert done.returncode == 2 and words in done.stderr, done.stderr[-2000:]
    assert "random weights" not in done.stderr and "Traceback" not in done.stderr, "checked before loading"


def test_device_cuda_without_a_gpu_is_the_message_only() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here")
    done = serve("--port", str(free_port()), "--device", "cuda")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: device 'cuda' asked for but no CUDA GPU is visible to torch"
    ], done.stderr
