"""Engine-side fault injection (only when enabled): each fault fails the way a real occurrence does.

Faults and what they leave behind:
- `cuda_oom`: at the chosen allocation (the activations of the Nth model step from now, or of every
  step with `repeat`), a `torch.OutOfMemoryError`: on CUDA a real failing allocation (of `tried_bytes`, or
  more than is free), so the message and allocator state are PyTorch's own; on CPU the same message
  ("CUDA out of memory. Tried to allocate ...") with the simulated device's figures. The
  engine fails that step's requests with finish_reason "error", logs the error as JSON with
  cuda_error_code 2, counts it and marks the step span as an error.
- `memory_leak`: every request keeps `bytes_per_request` + `bytes_per_prompt_token` x its prompt length
  allocated on the device from its prefill on (a prompt cache that is never evicted). Once free memory
  runs short, the steps that need more than is left (a long prompt's prefill) fail with PyTorch's OOM
  while each request still leaks first, so allocated memory grows from one failure to the next, until
  the leak's own allocation fails.
- `fragmentation`: the device's free memory fills with live blocks and `bytes` of holes of at most
  `hole_bytes` between them, so an allocation larger than a hole fails although that much is reserved
  but unallocated (on CUDA, blocks of mixed sizes kept and freed in turn: the caching allocator's real
  fragmentation, without filling the device).
- `slow_kernel`: every model step takes `delay_s` longer; `hang`: the next step blocks for `hang_s`
  (bounded; `clear` releases it at once).
- `worker_crash`: the next step logs a fatal CUDA error and ends the process (`os._exit` or a signal),
  as a driver fault would; a supervisor sees the exit status. With `mode: thread` only the engine thread
  ends (an error no `except Exception` catches escapes its loop) and the HTTP server stays up: liveness
  must say the engine is dead, and requests must fail promptly instead of hanging.
- `kv_shrink`: the usable KV cache shrinks to `fraction` of its blocks (preemptions, queueing).
- `tokenizer_mismatch`: detokenisation maps ids through a shifted vocabulary (wrong text), logged as a
  vocabulary size mismatch the way a wrong tokenizer file is.

On CPU the memory faults run against a simulated device (simdevice.py) of `device_bytes` (the serve's
`--memory-budget-bytes`; an H200's 139.8 GiB by default) holding the engine's weights and KV cache, where
each model step also needs room for its activations (model_runner.step_activation_bytes).
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
from gpuobs.serving.simdevice import DeviceMemory, SimulatedDevice
from gpuobs.serving.stats import FaultStats

__all__ = [
    "FAULT_KINDS",
    "H200_BYTES",
    "EngineThreadCrash",
    "FaultInjector",
    "FaultNotEnabledError",
    "cuda_oom_message",
]

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
H200_BYTES = int(139.8 * _GIB)
"""The simulated device's capacity when none is given: what torch reports for an H200."""
# What the cuda_oom fault leaves free on a simulated device with room for its allocation: the rest is
# taken by the step's other tensors, as on the GPU where a forced failure was first recorded.
_FORCED_OOM_FREE = 20 * _MIB


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

    def __init__(
        self,
        enabled: bool,
        device: str = "cpu",
        device_id: int = 0,
        device_bytes: int | None = None,
        base_bytes: int = 0,
        activation_bytes_per_token: int = 0,
    ) -> None:
        """`device_bytes` and `base_bytes` (weights + KV cache) size the simulated device on CPU, where the
        fragmentation's holes fit 8 tokens' `activation_bytes_per_token`; on CUDA the real device and its
        allocator are used."""
        self.enabled = enabled
        self.device = device
        self.device_id = device_id
        self.simulated: SimulatedDevice | None = None
        if not device.startswith("cuda"):
            self.simulated = SimulatedDevice(device_bytes or H200_BYTES, base_bytes)
        self.activation_bytes_per_token = max(0, int(activation_bytes_per_token))
        self._lock = threading.Lock()
        self._active: dict[str, _Active] = {}
        self._release = threading.Event()
        self._leaks: list[Any] = []
        self._frag: list[Any] = []
        self._frag_kept = 0  # simulated device: live bytes the fragmentation fault placed between its holes
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
            self._fragment(int(eff["bytes"]), int(eff["hole_bytes"]))
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
            with self._lock:
                leaked, self.leaked_bytes = self.leaked_bytes, 0
                self._leaks.clear()
            if self.simulated is not None:
                self.simulated.release(leaked)
        if kind is None or kind == "fragmentation":
            with self._lock:
                kept, self._frag_kept = self._frag_kept, 0
                self._frag.clear()
                self.fragmented_bytes = 0
            if self.simulated is not None:
                self.simulated.defragment(kept)
        if ("kv_shrink" in kinds) and self.on_kv_capacity is not None:
            self.kv_capacity_blocks = self.on_kv_capacity(None)
        return kinds

    def active(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {k: dict(v.params) for k, v in self._active.items()}

    @property
    def simulates_memory(self) -> bool:
        """Whether steps are checked against the simulated device now (CPU, a fault active)."""
        return self.enabled and self.simulated is not None and bool(self._active)

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
        "memory_leak": ("bytes_per_request", "bytes_per_prompt_token"),
        "fragmentation": ("bytes", "hole_bytes"),
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
            return {"bytes_per_request": int(num("bytes_per_request", 8 * _MIB, 0, 64 * _GIB)),
                    "bytes_per_prompt_token": int(num("bytes_per_prompt_token", 0, 0, _GIB))}
        if kind == "fragmentation":
            # a hole fits a step of a few tokens, not a prompt's prefill (on CUDA: the allocator's blocks)
            hole = 3 * _MIB + 256 * 1024 if self.simulated is None else 8 * self.activation_bytes_per_token
            return {"bytes": int(num("bytes", 256 * _MIB, _MIB, 512 * _GIB)),
                    "hole_bytes": int(num("hole_bytes", max(hole, 1024), 512, _GIB))}
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
        """A real tensor on the CUDA device (the simulated device only counts bytes)."""
        import torch

        return torch.empty(nbytes, dtype=torch.uint8, device=self.device)

    def _fragment(self, total: int, hole: int) -> None:
        """Leave `total` reserved, unallocated bytes in holes of at most `hole` bytes among live blocks."""
        if self.simulated is not None:
            kept, holes = self.simulated.fragment(total, hole)
            with self._lock:
                self._frag_kept += kept
                self.fragmented_bytes += holes
            return
        kept_blocks: list[Any] = []
        hole_blocks: list[Any] = []
        holes = 0
        while holes < total:
            kept_blocks.append(self._alloc(2 * _MIB + 512 * 1024))
            # Held until every block is placed: one freed at once is reused by the next allocation of its
            # size (on the H200 that left 22.5 MiB reserved-unallocated for 257 MiB of "holes").
            hole_blocks.append(self._alloc(hole))
            holes += hole
        hole_blocks.clear()  # now freed: holes between kept blocks that the caching allocator keeps reserved
        with self._lock:
            self._frag = kept_blocks
            self.fragmented_bytes = holes

    # ---- hooks the engine calls --------------------------------------------------------------------
    def before_step(self, phase: str, activation_bytes: int = 0, new_prompts: tuple[int, ...] = ()) -> None:
        """Called before each model step (prefill or decode) that needs `activation_bytes` for its activations
        and starts requests of `new_prompts` prompt tokens; may sleep, block, raise (a CUDA OOM) or exit."""
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
        if "memory_leak" in active:
            leak = active["memory_leak"]
            for tokens in new_prompts:
                self._leak(int(leak["bytes_per_request"]) + int(leak["bytes_per_prompt_token"]) * tokens)
        if self.simulated is not None and activation_bytes and not self.simulated.fits(activation_bytes):
            self._raise_oom(activation_bytes)

    def _leak(self, nbytes: int) -> None:
        """Keep `nbytes` on the device until the fault is cleared; a CUDA OOM when they do not fit."""
        if nbytes <= 0:
            return
        if self.simulated is None:
            import torch

            try:
                kept = self._alloc(nbytes)
            except torch.OutOfMemoryError:
                self.oom_errors_total += 1
                raise
            with self._lock:
                self._leaks.append(kept)
                self.leaked_bytes += nbytes
            return
        with self._lock:  # one step with clear(): leaked bytes are released exactly once
            kept = self.simulated.allocate(nbytes)
            if kept:
                self.leaked_bytes += nbytes
        if not kept:
            self._raise_oom(nbytes)

    def _raise_oom(self, tried: int, state: DeviceMemory | None = None) -> None:
        import torch

        self.oom_errors_total += 1
        total, free, allocated, reserved = state or self._memory_state()
        message = cuda_oom_message(tried, self.device_id, total, free, allocated, reserved)
        raise torch.OutOfMemoryError(message)

    def _maybe_oom(self, params: dict[str, Any]) -> None:
        with self._lock:
            self._step_counter += 1
            hit = self._step_counter >= params["at_allocation"]
            if hit and not params["repeat"]:
                self._active.pop("cuda_oom", None)
        if not hit:
            return
        import torch

        tried = int(params["tried_bytes"])
        if self.simulated is None:
            # a real failing allocation: the caching allocator's own error, message and bookkeeping
            free, _total = torch.cuda.mem_get_info(self.device)
            try:
                torch.empty(max(tried, int(free) + _GIB), dtype=torch.uint8, device=self.device)
            except torch.OutOfMemoryError:
                self.oom_errors_total += 1
                raise
        total, free, allocated, reserved = self._memory_state()
        if tried <= free:  # the step's other tensors took the rest: the device is full when this one fails
            taken = free - min(free, _FORCED_OOM_FREE, tried - 1)
            free, allocated, reserved = free - taken, allocated + taken, reserved + taken
        self._raise_oom(tried, DeviceMemory(total, free, allocated, reserved))

    def _memory_state(self) -> DeviceMemory:
        """The device's memory now: the real figures on CUDA, the simulated device's on CPU."""
        if self.simulated is not None:
            return self.simulated.state()
        import torch

        free, total = torch.cuda.mem_get_info(self.device_id)
        allocated, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
        return DeviceMemory(int(total), int(free), int(allocated), int(reserved))

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

    def map_decode_ids(self, ids: list[int], vocab_size: int) -> list[int]:
        """Token ids as a mismatched tokenizer would read them (identity unless the fault is active)."""
        params = self._active.get("tokenizer_mismatch")
        if params is None:
            return ids
        shift = int(params.params["shift"])
        return [(i + shift) % vocab_size for i in ids]
