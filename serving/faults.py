"""Engine-side fault injection (only when enabled): each fault fails the way a real occurrence does.

Faults and what they leave behind:
- `cuda_oom`: at the chosen allocation (the activations of the Nth model step from now, or of every
  step with `repeat`), a `torch.OutOfMemoryError`: on CUDA a real failing allocation (of `tried_bytes`, or
  more than is free), so the message and allocator state are PyTorch's own; on CPU the same message
  ("CUDA out of memory. Tried to allocate ...") for an H200-sized device. The
  engine fails that step's requests with finish_reason "error", logs the error as JSON with
  cuda_error_code 2, counts it and marks the step span as an error.
- `memory_leak`: every finished request leaves `bytes_per_request` allocated on the device.
- `fragmentation`: allocates many blocks of mixed sizes and frees every other one, so reserved memory
  stays high while allocated memory is low (on CUDA, the caching allocator's real fragmentation).
- `slow_kernel`: every model step takes `delay_s` longer; `hang`: the next step blocks for `hang_s`
  (bounded; `clear` releases it at once).
- `worker_crash`: the next step logs a fatal CUDA error and ends the process (`os._exit` or a signal),
  as a driver fault would; a supervisor sees the exit status. With `mode: thread` only the engine thread
  ends (an error no `except Exception` catches escapes its loop) and the HTTP server stays up: liveness
  must say the engine is dead, and requests must fail promptly instead of hanging.
- `kv_shrink`: the usable KV cache shrinks to `fraction` of its blocks (preemptions, queueing).
- `tokenizer_mismatch`: detokenisation maps ids through a shifted vocabulary (wrong text), logged as a
  vocabulary size mismatch the way a wrong tokenizer file is.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gpuobs.names import logs as log_fields
from gpuobs.serving.errors import FaultNotEnabledError
from gpuobs.serving.stats import FaultStats

__all__ = ["FAULT_KINDS", "EngineThreadCrash", "FaultInjector", "FaultNotEnabledError", "cuda_oom_message"]

logger = logging.getLogger(__name__)

FAULT_KINDS = (
    "cuda_oom", "memory_leak", "fragmentation", "slow_kernel", "hang", "worker_crash", "kv_shrink",
    "tokenizer_mismatch",
)

class EngineThreadCrash(BaseException):
    """Raised by `worker_crash` in mode `thread`: a BaseException, so it escapes `except Exception` blocks
    the way a fatal error does, and ends the engine thread unless the loop's last guard records it."""


_GIB = 1024**3
_MIB = 1024**2


def _flag(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"{name} must be true or false, got {value!r}")


def _fmt(n: float) -> str:
    """PyTorch's format_size: bytes, KiB, MiB or GiB with two decimals."""
    if n < 1024:
        return f"{int(n)} bytes"
    if n < _MIB:
        return f"{n / 1024:.2f} KiB"
    if n < _GIB:
        return f"{n / _MIB:.2f} MiB"
    return f"{n / _GIB:.2f} GiB"


def cuda_oom_message(
    tried: int, device: int, total: int, free: int, allocated: int, reserved: int, pid: int | None = None
) -> str:
    """PyTorch's CUDA caching-allocator OOM message, word for word as torch 2.11 raised it on the H200.

    With `pid` the per-process form ("Process N has ... memory in use", used when NVML lists the
    processes); without it the form "Including non-PyTorch memory, this process has ...".
    """
    in_use = max(0, total - free)
    who = (f"Process {pid} has {_fmt(in_use)} memory in use" if pid is not None
           else f"Including non-PyTorch memory, this process has {_fmt(in_use)} memory in use")
    return (
        f"CUDA out of memory. Tried to allocate {_fmt(tried)}. GPU {device} has a total capacity of "
        f"{_fmt(total)} of which {_fmt(free)} is free. {who}. Of the allocated memory {_fmt(allocated)} is "
        f"allocated by PyTorch, and {_fmt(max(0, reserved - allocated))} is reserved by PyTorch but "
        "unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
        "Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html"
        "#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)"
    )


@dataclass
class _Active:
    params: dict[str, Any] = field(default_factory=dict)
    since: float = field(default_factory=time.monotonic)


class FaultInjector:
    """Holds the active faults; the engine calls its hooks. Thread-safe; inert unless enabled."""

    def __init__(self, enabled: bool, device: str = "cpu", device_id: int = 0) -> None:
        self.enabled = enabled
        self.device = device
        self.device_id = device_id
        self._lock = threading.Lock()
        self._active: dict[str, _Active] = {}
        self._release = threading.Event()
        self._leaks: list[Any] = []
        self._frag: list[Any] = []
        self.leaked_bytes = 0
        self.fragmented_bytes = 0
        self.oom_errors_total = 0
        self.slow_steps_total = 0
        self.hangs_total = 0
        self._step_counter = 0
        self.on_kv_capacity: Any = None  # set by the engine: callable(fraction | None) -> usable blocks
        self.model_vocab_size = 0  # set by the engine (for the tokenizer-mismatch log line)
        self.model_name = ""  # set by the engine (for every log line): the served name
        self.model_id = ""  # and what it loaded
        self.kv_capacity_blocks: int | None = None

    def _fields(self, event: str, **more: Any) -> dict[str, Any]:
        return {log_fields.EVENT: event, log_fields.MODEL_NAME: self.model_name,
                log_fields.MODEL_ID: self.model_id, log_fields.DEVICE_ID: self.device_id, **more}

    # ---- control ---------------------------------------------------------------------------------
    def inject(self, kind: str, **params: Any) -> dict[str, Any]:
        """Activate a fault; returns its effective parameters. Raises FaultNotEnabledError / ValueError."""
        if not self.enabled:
            raise FaultNotEnabledError("fault injection is disabled (start with --enable-fault-injection)")
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}; known: {', '.join(FAULT_KINDS)}")
        eff = self._defaults(kind, params)
        with self._lock:
            self._active[kind] = _Active(eff)
            if kind == "cuda_oom":
                self._step_counter = 0
            if kind == "hang":
                self._release.clear()
        if kind == "fragmentation":
            self._fragment(int(eff["bytes"]))
        if kind == "kv_shrink" and self.on_kv_capacity is not None:
            self.kv_capacity_blocks = self.on_kv_capacity(float(eff["fraction"]))
        if kind == "tokenizer_mismatch":
            logger.error(
                "tokenizer vocabulary size %d does not match the model's embedding size %d: detokenised "
                "text will be wrong", eff["vocab_size"], eff["model_vocab_size"],
                extra=self._fields("tokenizer_mismatch"),
            )
        logger.warning("fault injected: %s %s", kind, eff, extra=self._fields("fault_injected"))
        return eff

    def clear(self, kind: str | None = None) -> list[str]:
        """Deactivate one fault (or all); frees leaked/fragmented memory; returns what was cleared."""
        with self._lock:
            kinds = list(self._active) if kind is None else [k for k in (kind,) if k in self._active]
            for k in kinds:
                del self._active[k]
        if "hang" in kinds or kind is None:
            self._release.set()
        if kind is None or kind == "memory_leak":
            self._leaks.clear()
            self.leaked_bytes = 0
        if kind is None or kind == "fragmentation":
            self._frag.clear()
            self.fragmented_bytes = 0
        if ("kv_shrink" in kinds) and self.on_kv_capacity is not None:
            self.kv_capacity_blocks = self.on_kv_capacity(None)
        return kinds

    def active(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {k: dict(v.params) for k, v in self._active.items()}

    def is_active(self, kind: str) -> bool:
        return kind in self._active

    def stats(self) -> FaultStats:
        with self._lock:
            active = tuple(sorted(self._active))
        return FaultStats(
            enabled=self.enabled, active=active, oom_errors_total=self.oom_errors_total,
            leaked_bytes=self.leaked_bytes, fragmented_bytes=self.fragmented_bytes,
            slow_steps_total=self.slow_steps_total, hangs_total=self.hangs_total,
            kv_capacity_blocks=self.kv_capacity_blocks if "kv_shrink" in active else None,
            tokenizer_mismatch="tokenizer_mismatch" in active,
        )

    _PARAMS: ClassVar[dict[str, tuple[str, ...]]] = {
        "cuda_oom": ("at_allocation", "tried_bytes", "repeat"),
        "memory_leak": ("bytes_per_request",),
        "fragmentation": ("bytes",),
        "slow_kernel": ("delay_s",),
        "hang": ("hang_s",),
        "worker_crash": ("mode", "exit_code", "signal"),
        "kv_shrink": ("fraction",),
        "tokenizer_mismatch": ("shift", "vocab_size"),
    }

    def _defaults(self, kind: str, p: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(p) - set(self._PARAMS[kind]))
        if unknown:
            raise ValueError(f"{kind} takes {', '.join(self._PARAMS[kind])}; unknown: {', '.join(unknown)}")

        def num(key: str, default: float, low: float, high: float) -> float:
            value = float(p.get(key, default))
            if not low <= value <= high:
                raise ValueError(f"{kind}.{key} must be in [{low}, {high}], got {value}")
            return value

        if kind == "cuda_oom":
            return {"at_allocation": int(num("at_allocation", 1, 1, 1e9)),
                    "tried_bytes": int(num("tried_bytes", 2 * _GIB, 1, 1e15)),
                    "repeat": _flag(p.get("repeat", False), "cuda_oom.repeat")}
        if kind == "memory_leak":
            return {"bytes_per_request": int(num("bytes_per_request", 8 * _MIB, 1, 64 * _GIB))}
        if kind == "fragmentation":
            return {"bytes": int(num("bytes", 256 * _MIB, _MIB, 512 * _GIB))}
        if kind == "slow_kernel":
            return {"delay_s": num("delay_s", 0.2, 0.0, 60.0)}
        if kind == "hang":
            return {"hang_s": num("hang_s", 30.0, 0.0, 3600.0)}
        if kind == "worker_crash":
            mode = str(p.get("mode", "exit"))
            if mode not in ("exit", "signal", "thread"):
                raise ValueError("worker_crash.mode must be exit, signal or thread")
            sig = str(p.get("signal", "SIGKILL"))
            if not hasattr(signal, sig):
                raise ValueError(f"unknown signal {sig}")
            return {"mode": mode, "exit_code": int(num("exit_code", 1, 1, 255)), "signal": sig}
        if kind == "kv_shrink":
            return {"fraction": num("fraction", 0.1, 0.0, 1.0)}
        # tokenizer_mismatch: a tokenizer file of another model, `shift` ids apart
        shift = int(num("shift", 7, 1, 1e6))
        vocab = int(num("vocab_size", self.model_vocab_size + shift, 1, 1e7))
        return {"shift": shift, "vocab_size": vocab, "model_vocab_size": self.model_vocab_size}

    # ---- memory helpers --------------------------------------------------------------------------
    def _alloc(self, nbytes: int) -> Any:
        import torch

        if self.device.startswith("cuda"):
            return torch.empty(nbytes, dtype=torch.uint8, device=self.device)
        return bytearray(nbytes)

    def _fragment(self, total: int) -> None:
        """Keep every other allocation of odd sizes: `total` bytes held in holes no large tensor fits."""
        kept: list[Any] = []
        held = 0
        while held < total:
            kept.append(self._alloc(2 * _MIB + 512 * 1024))
            self._alloc(3 * _MIB + 256 * 1024)  # freed at once: a hole between two kept blocks
            held += 2 * _MIB + 512 * 1024
        self._frag = kept
        self.fragmented_bytes = held

    # ---- hooks the engine calls --------------------------------------------------------------------
    def before_step(self, phase: str) -> None:
        """Called before each model step (prefill or decode); may sleep, block, raise or exit."""
        if not self.enabled or not self._active:
            return
        active = self.active()
        if "worker_crash" in active:
            self._crash(active["worker_crash"])
        if "hang" in active:
            self.hangs_total += 1
            logger.warning("%s step blocked (hang fault) for up to %.1fs", phase, active["hang"]["hang_s"],
                           extra=self._fields("hang"))
            self._release.wait(timeout=float(active["hang"]["hang_s"]))
            with self._lock:
                self._active.pop("hang", None)
        if "slow_kernel" in active:
            self.slow_steps_total += 1
            time.sleep(float(active["slow_kernel"]["delay_s"]))
        if "cuda_oom" in active:
            self._maybe_oom(active["cuda_oom"])

    def _maybe_oom(self, params: dict[str, Any]) -> None:
        with self._lock:
            self._step_counter += 1
            hit = self._step_counter >= params["at_allocation"]
            if hit and not params["repeat"]:
                self._active.pop("cuda_oom", None)
        if not hit:
            return
        import torch

        self.oom_errors_total += 1
        if self.device.startswith("cuda"):
            # a real failing allocation: the caching allocator's own error, message and bookkeeping
            free, _total = torch.cuda.mem_get_info(self.device)
            size = max(int(params["tried_bytes"]), int(free) + _GIB)
            torch.empty(size, dtype=torch.uint8, device=self.device)
        total, free, allocated, reserved = self._memory_state()
        raise torch.OutOfMemoryError(
            cuda_oom_message(int(params["tried_bytes"]), self.device_id, total, free, allocated, reserved)
        )

    def _memory_state(self) -> tuple[int, int, int, int]:
        """(total, free, allocated, reserved) bytes: the real ones on CUDA, an H200-sized model on CPU."""
        import torch

        if self.device.startswith("cuda"):
            free, total = torch.cuda.mem_get_info(self.device_id)
            allocated, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
            return int(total), int(free), int(allocated), int(reserved)
        total = int(139.8 * _GIB)
        reserved = total - 20 * _MIB
        allocated = reserved - self.fragmented_bytes - self.leaked_bytes // 2
        return total, 20 * _MIB, max(0, allocated), reserved

    def _crash(self, params: dict[str, Any]) -> None:
        message = "CUDA error: an illegal memory access was encountered (cudaErrorIllegalAddress)"
        thread_only = params["mode"] == "thread"
        logger.critical(
            "%s; %s exiting", message, "engine thread" if thread_only else "worker",
            extra=self._fields("worker_crash", cuda_error_code=700,
                               cuda_error_name="cudaErrorIllegalAddress"),
        )
        for handler in logging.getLogger("gpuobs").handlers:
            handler.flush()
        if thread_only:
            with self._lock:
                self._active.pop("worker_crash", None)  # one crash, as a real one; a new engine is clean
            raise EngineThreadCrash(message)
        if params["mode"] == "signal":
            os.kill(os.getpid(), getattr(signal, params["signal"]))
            time.sleep(5)  # the signal ends us; bounded in case it is caught
        os._exit(int(params["exit_code"]))

    def after_request(self) -> None:
        """Called when a request finishes; the leak fault keeps memory for each one."""
        params = self._active.get("memory_leak")
        if params is None:
            return
        n = int(params.params["bytes_per_request"])
        self._leaks.append(self._alloc(n))
        self.leaked_bytes += n

    def map_decode_ids(self, ids: list[int], vocab_size: int) -> list[int]:
        """Token ids as a mismatched tokenizer would read them (identity unless the fault is active)."""
        params = self._active.get("tokenizer_mismatch")
        if params is None:
            return ids
        shift = int(params.params["shift"])
        return [(i + shift) % vocab_size for i in ids]
