"""Atomic model hot-swap: load and warm a new engine in the background, switch, drain the old one.

`ModelManager` owns the served engine. Each request holds a lease on the engine it started on, so a
swap never moves a request between models: new requests go to the new engine the moment it is warm,
requests in flight finish on the old one, and the old engine is stopped and freed when its last lease
ends. A swap whose estimated footprint does not fit in free GPU memory (or in `memory_budget_bytes`,
the simulated capacity used on CPU) is refused with `SwapRefusedError` before anything is loaded.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuobs.errors import InputError
from gpuobs.names import logs as lf
from gpuobs.serving.errors import SwapInProgressError, SwapRefusedError, UnknownModelError
from gpuobs.serving.interface import EngineClient
from gpuobs.serving.model.config import LlamaConfig

__all__ = [
    "ModelHandle",
    "ModelManager",
    "SwapInProgressError",
    "SwapRefusedError",
    "SwapStatus",
    "UnknownModelError",
    "estimate_model_bytes",
    "shown_model_name",
]

logger = logging.getLogger(__name__)

_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


def shown_model_name(name: str, limit: int = 80) -> str:
    """A requested model name as an error message repeats it: cut past `limit` characters. A name of a
    megabyte echoed whole made a 404 body of a megabyte and, over gRPC, a status past the metadata limit
    (the client saw RESOURCE_EXHAUSTED instead of NOT_FOUND)."""
    return name if len(name) <= limit else f"{name[:limit]}... ({len(name)} characters)"


@dataclass
class ModelHandle:
    """One loaded engine and the requests holding it."""

    name: str
    engine: EngineClient
    model_dir: str | None
    generation: int
    loaded_at: float = field(default_factory=time.time)
    inflight: int = 0
    retired: bool = False
    freed: threading.Event = field(default_factory=threading.Event)


@dataclass
class SwapStatus:
    """Progress of one swap, as `GET /admin/models` shows it."""

    swap_id: str
    model_dir: str | None
    name: str
    state: str = "loading"  # loading | warming | switched | failed | refused
    error: str | None = None
    started: float = field(default_factory=time.time)
    finished: float | None = None
    estimated_bytes: int | None = None
    free_bytes: int | None = None
    # the swap failed on what the model directory holds (weights that do not match the config...), not on
    # the server: the admin API answers 422, and the log line carries the reason without a traceback
    input_error: bool = False
    done: threading.Event = field(default_factory=threading.Event)

    def as_dict(self) -> dict[str, Any]:
        return {
            "swap_id": self.swap_id,
            "model_dir": self.model_dir,
            "name": self.name,
            "state": self.state,
            "error": self.error,
            "started": self.started,
            "finished": self.finished,
            "estimated_bytes": self.estimated_bytes,
            "free_bytes": self.free_bytes,
        }


def estimate_model_bytes(
    model_dir: str | Path, kv_cache_bytes: int = 0, dtype_bytes: int | None = None
) -> int | None:
    """Weights bytes of a Hugging Face Llama directory from its config.json (None if unreadable).

    `dtype_bytes` overrides the checkpoint's `torch_dtype` (the CPU engine loads float32 weights).
    """
    try:
        c = LlamaConfig.from_dir(Path(model_dir))
    except (InputError, OSError):
        return None
    if dtype_bytes is None:
        dtype_bytes = _DTYPE_BYTES.get(c.torch_dtype, 4)
    hidden, head_dim = c.hidden_size, c.head_dim
    attn = hidden * c.num_attention_heads * head_dim * 2 + hidden * c.num_key_value_heads * head_dim * 2
    mlp = 3 * hidden * c.intermediate_size
    per_layer = attn + mlp + 2 * hidden
    embed = c.vocab_size * hidden * (1 if c.tie_word_embeddings else 2)
    params = embed + c.num_hidden_layers * per_layer + hidden
    return params * dtype_bytes + kv_cache_bytes


def _model_path(engine: EngineClient, model_dir: str | None) -> str | None:
    path = getattr(engine, "model_path", None)
    return str(path) if path is not None else model_dir


def _model_dir_problem(model_dir: str) -> str | None:
    """Why `model_dir` cannot be loaded, as far as its config.json tells (None when it reads as a Llama
    configuration); never raises on odd paths. Found here, a bad directory is a refused request; found by
    the load, it was a swap that failed later, or a 500 when the size estimate choked on it."""
    try:
        if not (Path(model_dir) / "config.json").is_file():
            return "has no config.json" if Path(model_dir).is_dir() else "does not exist"
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte: a bad request, not a 500
        return f"cannot be read ({getattr(exc, 'strerror', None) or exc})"
    try:
        LlamaConfig.from_dir(Path(model_dir))
    except InputError as exc:
        return f"cannot be served: {exc}"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return None


class ModelManager:
    """The served model, its leases, and atomic swaps to a new one.

    `factory(model_dir, name)` builds a started engine serving under `name` (None: its own default), so that
    its log lines and spans name the model as the metrics do; `warmup(engine)` runs a short request through
    it.
    """

    def __init__(
        self,
        factory: Callable[[str | None, str | None], EngineClient],
        warmup: Callable[[EngineClient], None],
        served_name: str | None = None,
        memory_budget_bytes: int | None = None,
        on_swap: Callable[[str], None] | None = None,
        on_model: Callable[[str], None] | None = None,
    ) -> None:
        self._factory = factory
        self._warmup = warmup
        self._served_name = served_name
        self._budget = memory_budget_bytes
        self._on_swap = on_swap or (lambda result: None)
        self._on_model = on_model or (lambda name: None)
        self._lock = threading.Lock()
        self._current: ModelHandle | None = None
        self._retired: list[ModelHandle] = []
        self._swap: SwapStatus | None = None
        self._history: list[SwapStatus] = []
        self._generation = 0
        self._closed = False

    # --- loading ---------------------------------------------------------------------------------
    def _name_for(self, engine: EngineClient, name: str | None) -> str:
        return name or self._served_name or engine.model_name

    def load_initial(self, model_dir: str | None) -> ModelHandle:
        """Load, warm and publish the first model (blocking; readiness turns true at the end)."""
        engine = self._factory(model_dir, self._served_name)
        try:
            self._warmup(engine)
        except Exception:
            engine.stop(drain=False, timeout_s=5)
            raise
        with self._lock:
            self._generation += 1
            handle = ModelHandle(
                self._name_for(engine, None), engine, _model_path(engine, model_dir), self._generation
            )
            self._served_name = handle.name
            self._current = handle
        self._on_model(handle.name)
        logger.info(
            "model loaded and warmed", extra={"model_name": handle.name, "model_id": handle.model_dir}
        )
        return handle

    @property
    def ready(self) -> bool:
        return self._current is not None and not self._closed

    @property
    def current(self) -> ModelHandle | None:
        return self._current

    @property
    def served_name(self) -> str:
        return self._current.name if self._current else (self._served_name or "")

    def engines(self) -> list[tuple[str, EngineClient]]:
        """Every engine alive: the current one and retired ones still draining."""
        with self._lock:
            handles = ([self._current] if self._current else []) + list(self._retired)
        return [(h.name, h.engine) for h in handles]

    # --- leases ----------------------------------------------------------------------------------
    def acquire(self, model_name: str | None = None) -> ModelHandle:
        """Lease the current engine for one request (release() it when the request ends)."""
        with self._lock:
            handle = self._current
            if handle is None or self._closed:
                raise UnknownModelError("no model is loaded yet")
            if model_name is not None and model_name != handle.name:
                raise UnknownModelError(f"The model `{shown_model_name(model_name)}` does not exist.")
            handle.inflight += 1
            return handle

    def release(self, handle: ModelHandle) -> None:
        free = False
        with self._lock:
            handle.inflight -= 1
            if handle.retired and handle.inflight <= 0 and not handle.freed.is_set():
                handle.freed.set()  # claimed under the lock: exactly one thread frees it
                free = True
        if free:
            self._free(handle)

    # --- swapping --------------------------------------------------------------------------------
    def free_bytes(self) -> int | None:
        """Free device memory: CUDA's free bytes, or the simulated budget minus live engines."""
        if self._budget is not None:
            used = 0
            for _, engine in self.engines():
                try:
                    used += int(engine.memory_bytes())
                except Exception:
                    logger.exception("memory_bytes() failed")
            return self._budget - used
        device = self._current.engine.device if self._current is not None else "cpu"
        if device.startswith("cuda"):
            import torch

            free, _total = torch.cuda.mem_get_info()
            return int(free)
        return None

    def estimate_bytes(self, model_dir: str | None) -> int | None:
        """Footprint of a model before loading it (weights from config.json plus the current KV pool)."""
        current = self._current
        current_bytes = int(current.engine.memory_bytes()) if current is not None else None
        if model_dir is None:
            return current_bytes
        dtype_bytes = None
        if current is not None and not current.engine.device.startswith("cuda"):
            # on CPU every checkpoint is loaded in the engine's dtype, whatever config.json says
            itemsize = getattr(
                getattr(getattr(current.engine, "model", None), "dtype", None), "itemsize", None
            )
            dtype_bytes = int(itemsize) if isinstance(itemsize, int) else None
        weights = estimate_model_bytes(model_dir, dtype_bytes=dtype_bytes)
        if weights is None:
            return current_bytes
        kv = 0
        if current is not None and current.model_dir is not None:
            cur_weights = estimate_model_bytes(current.model_dir, dtype_bytes=dtype_bytes)
            if cur_weights is not None and current_bytes is not None:
                kv = max(0, current_bytes - cur_weights)
        return weights + kv

    def start_swap(self, model_dir: str | None, name: str | None = None) -> SwapStatus:
        """Check the fit, then load + warm + switch in a background thread; returns its status."""
        with self._lock:
            if self._swap is not None and not self._swap.done.is_set():
                raise SwapInProgressError(f"swap {self._swap.swap_id} is still {self._swap.state}")
            if self._closed:
                raise SwapRefusedError("server is shutting down")
        if model_dir is not None:
            problem = _model_dir_problem(model_dir)
            if problem is not None:
                self._on_swap("refused")
                raise SwapRefusedError(f"model directory {model_dir[:200]} {problem}")
        status = SwapStatus(uuid.uuid4().hex[:12], model_dir, name or self.served_name)
        status.estimated_bytes = self.estimate_bytes(model_dir)
        status.free_bytes = self.free_bytes()
        if (
            status.estimated_bytes is not None
            and status.free_bytes is not None
            and status.estimated_bytes > status.free_bytes
        ):
            status.state, status.finished = "refused", time.time()
            status.error = (
                f"model needs about {status.estimated_bytes / 2**20:.1f} MiB but only "
                f"{max(0, status.free_bytes) / 2**20:.1f} MiB of device memory is free "
                "while the current model is loaded; swap refused"
            )
            status.done.set()
            self._history.append(status)
            self._on_swap("refused")
            logger.warning("hot-swap refused: %s", status.error, extra={"model_id": model_dir})
            raise SwapRefusedError(status.error)
        with self._lock:
            self._swap = status
            self._history.append(status)
        threading.Thread(
            target=self._run_swap, args=(status,), name=f"hotswap-{status.swap_id}", daemon=True
        ).start()
        return status

    def _run_swap(self, status: SwapStatus) -> None:
        engine: EngineClient | None = None
        try:
            logger.info("hot-swap loading", extra={"model_id": status.model_dir, "event": "swap_loading"})
            engine = self._factory(status.model_dir, status.name)
            status.state = "warming"
            self._warmup(engine)
            with self._lock:
                if self._closed:
                    raise RuntimeError("server shut down during the swap")
                old = self._current
                self._generation += 1
                new = ModelHandle(
                    status.name, engine, _model_path(engine, status.model_dir), self._generation
                )
                self._current = new  # from here on every new request leases the new engine
                free_old = False
                if old is not None:
                    old.retired = True
                    self._retired.append(old)
                    free_old = old.inflight <= 0 and not old.freed.is_set()
                    if free_old:
                        old.freed.set()
            self._on_model(new.name)
            status.state = "switched"
            self._on_swap("ok")
            logger.info(
                "hot-swap switched",
                extra={"model_name": new.name, "model_id": status.model_dir, "event": "swap_switched"},
            )
            if old is not None and free_old:
                self._free(old)
        except Exception as exc:
            status.state, status.input_error = "failed", isinstance(exc, InputError)
            status.error = str(exc) if status.input_error else f"{type(exc).__name__}: {exc}"
            self._on_swap("failed")
            if status.input_error:
                logger.error("hot-swap failed", extra={"model_id": status.model_dir, lf.ERROR: status.error})
            else:
                logger.exception("hot-swap failed", extra={"model_id": status.model_dir})
            if engine is not None:
                try:
                    engine.stop(drain=False, timeout_s=5)
                except Exception:
                    logger.exception("stopping the half-loaded engine failed")
        finally:
            status.finished = time.time()
            status.done.set()

    def _free(self, handle: ModelHandle) -> None:
        """Stop and drop a retired engine in the background (the caller claimed it by setting `freed`)."""

        def stop() -> None:
            try:
                handle.engine.stop(drain=True, timeout_s=30)
            except Exception:
                logger.exception("stopping the old engine failed", extra={"model_name": handle.name})
            with self._lock:
                if handle in self._retired:
                    self._retired.remove(handle)
            # drop the last reference to the engine so that its weights and KV cache can be freed now
            handle.engine = None  # type: ignore[assignment]
            gc.collect()
            try:
                import sys

                torch = sys.modules.get("torch")
                if torch is not None and torch.cuda.is_available():
                    torch.cuda.empty_cache()
            except Exception:
                logger.exception("emptying the CUDA cache failed")
            logger.info(
                "old model freed",
                extra={"model_name": handle.name, "model_id": handle.model_dir, "event": "swap_freed"},
            )

        threading.Thread(target=stop, name="hotswap-free", daemon=True).start()

    def status(self) -> dict[str, Any]:
        with self._lock:
            current = self._current
            retired = [
                {"name": h.name, "inflight": h.inflight, "generation": h.generation} for h in self._retired
            ]
            swaps = [s.as_dict() for s in self._history[-10:]]
        return {
            "current": None
            if current is None
            else {
                "name": current.name,
                "model_dir": current.model_dir,
                "generation": current.generation,
                "inflight": current.inflight,
                "loaded_at": current.loaded_at,
            },
            "draining": retired,
            "swaps": swaps,
        }

    def get_swap(self, swap_id: str) -> SwapStatus | None:
        for s in self._history:
            if s.swap_id == swap_id:
                return s
        return None

    def shutdown(self, drain: bool = True, timeout_s: float = 30) -> None:
        with self._lock:
            self._closed = True
            handles = ([self._current] if self._current else []) + list(self._retired)
        for h in handles:
            if h.engine is not None:
                try:
                    h.engine.stop(drain=drain, timeout_s=timeout_s)
                except Exception:
                    logger.exception("engine stop failed", extra={"model_name": h.name})
