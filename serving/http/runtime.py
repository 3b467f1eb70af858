"""The process-wide state behind both front ends (HTTP and gRPC): config, model manager, metrics, faults.

`ServingRuntime` builds engines for the hot-swap manager (from `EngineConfig` and the `-E` options), warms
them up before they serve, and holds what the server reports: the load error, the gRPC block fault.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from gpuobs.errors import InputError
from gpuobs.names import logs as lf
from gpuobs.serving import stat_loggers
from gpuobs.serving.hotswap import ModelManager
from gpuobs.serving.interface import EngineClient, GenerationRequest, SamplingParams, TokenEvent

__all__ = [
    "DRAIN_TIMEOUT_S_DEFAULT",
    "MAX_BODY_BYTES_DEFAULT",
    "MAX_CONNECTIONS_DEFAULT",
    "READ_TIMEOUT_S_DEFAULT",
    "SHUTDOWN_TAIL_S",
    "WARMUP_TIMEOUT_S",
    "ServerConfig",
    "ServingRuntime",
]

logger = logging.getLogger(__name__)

MAX_BODY_BYTES_DEFAULT = 1 << 20  # 1 MiB: larger bodies get a 413
WARMUP_TIMEOUT_S = 120.0
# On SIGTERM/SIGINT requests in flight get this long to finish; the rest end with an error event. With the
# tail after it (gRPC grace 2 s, engine stop 5 s, uvicorn's backstop) it fits a pod's 30 s grace period.
DRAIN_TIMEOUT_S_DEFAULT = 20.0
# A request (headers and body) must arrive whole within this long; slower clients get a 408 (connections.py).
READ_TIMEOUT_S_DEFAULT = 30.0
# Open HTTP connections past this get a 503 on their first request (connections.py): below the usual
# descriptor limit of 1024, so the listener never runs out of descriptors to accept with.
MAX_CONNECTIONS_DEFAULT = 900
SHUTDOWN_TAIL_S = 9.0


@dataclass
class ServerConfig:
    """Everything `gpuobs serve` needs; the CLI resolves flags into this."""

    model_dir: str | None = None
    served_name: str | None = None
    address: str = "127.0.0.1"
    port: int = 8000
    grpc_port: int | None = None
    enable_fault_injection: bool = False
    scheduler: str = "bucketed"
    device: str = "auto"
    max_body_bytes: int = MAX_BODY_BYTES_DEFAULT
    max_grpc_batch: int = 64
    # device capacity on machines without a GPU: the hot-swap fit check's, and the simulated device's that
    # the memory faults fill (EngineConfig.device_memory_bytes)
    memory_budget_bytes: int | None = None
    engine_options: dict[str, Any] = field(default_factory=dict)
    log_level: str = "info"
    api_key: str | None = (
        None  # when set, /v1/* needs `Authorization: Bearer <api_key>` (as vLLM's --api-key)
    )
    admin_token: str | None = None  # when set, /admin/* needs `Authorization: Bearer <admin_token>`
    drain_timeout_s: float = DRAIN_TIMEOUT_S_DEFAULT
    read_timeout_s: float = READ_TIMEOUT_S_DEFAULT
    max_connections: int = MAX_CONNECTIONS_DEFAULT


class ServingRuntime:
    """The process-wide state behind both APIs: model manager, metrics, faults, readiness."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.registry = stat_loggers.new_registry()
        self.stats = stat_loggers.PrometheusStatLogger(self.registry)
        self.manager = ModelManager(
            factory=self._build_engine,
            warmup=self._warmup,
            served_name=config.served_name,
            memory_budget_bytes=config.memory_budget_bytes,
            on_swap=self.stats.record_swap,
            on_model=self._on_model,
        )
        self.registry.register(
            stat_loggers.EngineStatsCollector(
                self.manager.engines, lambda: self.manager.ready, lambda: self.manager.served_name
            )
        )
        self.load_error: str | None = None
        self.grpc_block = threading.Event()  # fault: the gRPC handler blocks, ignoring its deadline
        self.grpc_unblock = threading.Event()
        self.grpc_block_s = 60.0
        # fault: the shutdown drain begins with the process stopped (SIGSTOP) until something sends it
        # SIGCONT, as a CPU-starved host deschedules it between SIGTERM and closing its connections
        self.drain_stop = threading.Event()
        # set once the shutdown drain has run out: requests still going end with an error (responses.py)
        self.drain_expired = asyncio.Event()
        self.started = time.time()

    def _on_model(self, name: str) -> None:
        current = self.manager.current
        self.stats.register_model(name, current.engine.max_model_len if current is not None else 2048)

    def _build_engine(self, model_dir: str | None, name: str | None = None) -> EngineClient:
        from gpuobs.extras import require

        mod = require("gpuobs.serving.engine", "serving")
        options = dict(self.config.engine_options)
        options.setdefault("scheduler", self.config.scheduler)
        options.setdefault("device", self.config.device)
        options.setdefault("enable_fault_injection", self.config.enable_fault_injection)
        if self.config.memory_budget_bytes is not None:
            options.setdefault("device_memory_bytes", self.config.memory_budget_bytes)
        if name or self.config.served_name:  # a swap keeps the served name unless it is given another
            options.setdefault("model_name", name or self.config.served_name)
        try:
            engine_config = mod.EngineConfig(model_dir=model_dir, **options)
        except TypeError as exc:
            raise InputError(f"bad engine option: {exc}") from None
        engine: EngineClient = mod.Engine(engine_config)
        engine.start()
        return engine

    def _warmup(self, engine: EngineClient) -> None:
        """Run one short greedy request and one forward pass; raise if either fails."""
        done = threading.Event()
        result: list[TokenEvent] = []

        def on_event(ev: TokenEvent) -> None:
            if ev.finished:
                result.append(ev)
                done.set()

        ids = engine.tokenizer.encode("warm up") or [0]
        req = GenerationRequest(
            request_id=f"warmup-{uuid.uuid4().hex[:8]}",
            prompt_token_ids=ids,
            params=SamplingParams(max_tokens=2, ignore_eos=True),
        )
        engine.submit(req, on_event)
        if not done.wait(WARMUP_TIMEOUT_S):
            raise RuntimeError(f"warm-up request did not finish in {WARMUP_TIMEOUT_S:g} s")
        if result[0].finish_reason == "error":
            raise RuntimeError(f"warm-up request failed: {result[0].error}")
        engine.forward_logits([ids], [[1] * len(ids)])

    def load(self) -> None:
        """Load and warm the initial model (run in a thread at startup; /ready flips when done)."""
        try:
            self.manager.load_initial(self.config.model_dir)
        except InputError as exc:
            # A bad flag or model directory: the message says it all, a traceback would only bury it.
            self.load_error = f"{type(exc).__name__}: {exc}"
            raise
        except Exception as exc:
            self.load_error = f"{type(exc).__name__}: {exc}"
            logger.exception("model load failed", extra={lf.MODEL_ID: self.config.model_dir})
            raise
