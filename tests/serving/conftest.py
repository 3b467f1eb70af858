"""Fixtures for the tests of serving: the reference stack and its load tester.

`model_dir` is the embedded tiny model written once for the session; `engine_factory` builds started
engines on it (stopped after the test); `logs` captures the gpuobs loggers' JSON lines as `gpuobs serve`
writes them; `otlp` is an OTLP/HTTP receiver shared by a module's `gpuobs serve` process.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.otlp import OtlpReceiver
from support.serving_model import tiny_model_dir

from gpuobs.jsonlog import JsonFormatter
from gpuobs.serving.engine import Engine, EngineConfig


class LogCapture:
    """JSON log lines of the gpuobs loggers during one test."""

    def __init__(self) -> None:
        self.stream = io.StringIO()

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stream.getvalue().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model_dir(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def otlp() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as receiver:
        yield receiver


@pytest.fixture
def logs() -> Iterator[LogCapture]:
    capture = LogCapture()
    handler = logging.StreamHandler(capture.stream)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("gpuobs")
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield capture
    root.removeHandler(handler)
    root.setLevel(old_level)


@pytest.fixture
def engine_factory(model_dir: Path) -> Iterator[Callable[..., Engine]]:
    """`make(**EngineConfig fields, tracer_provider=None)`: a started CPU engine with fault injection on,
    64 KV blocks of 4 tokens unless told otherwise."""
    engines: list[Engine] = []

    def make(**kw: Any) -> Engine:
        provider = kw.pop("tracer_provider", None)
        kw.setdefault("num_kv_blocks", 64)
        kw.setdefault("block_size", 4)
        kw.setdefault("enable_fault_injection", True)
        engine = Engine(EngineConfig(model_dir=str(model_dir), device="cpu", **kw), tracer_provider=provider)
        engine.start()
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.stop(drain=False, timeout_s=1)
