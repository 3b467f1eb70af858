"""The CPU engine's stand-in for a GPU's memory: a capacity that fills up and fails the way CUDA's caching
allocator does, for fault injection on machines without a GPU.

Bookkeeping only (no host memory is held for the bytes it counts), in PyTorch's terms: `allocated` is live
tensors (the model's weights and KV cache, and what faults keep), `reserved` adds the free blocks the
allocator keeps cached (the holes a fragmentation leaves between live blocks), `free` is what the driver
still has. An allocation is served from free memory, or from a hole when it fits in one; otherwise it fails,
and the caller raises PyTorch's OutOfMemoryError with these figures (faults.cuda_oom_message).
"""

from __future__ import annotations

import threading
from typing import NamedTuple

__all__ = ["DeviceMemory", "SimulatedDevice"]


class DeviceMemory(NamedTuple):
    """One reading of a device's memory, in bytes (PyTorch's figures: torch.cuda.mem_get_info,
    memory_allocated, memory_reserved)."""

    total: int
    free: int
    allocated: int
    reserved: int


class SimulatedDevice:
    """A device of `total` bytes, `base` of them (weights, KV cache) allocated at load. Thread-safe."""

    def __init__(self, total: int, base: int = 0) -> None:
        if total <= 0:
            raise ValueError(f"a device needs a capacity above 0 bytes, got {total}")
        self.total = int(total)
        self.base = int(base)
        self._held = 0  # allocated beyond the base (what faults keep)
        self._holes = 0  # reserved but unallocated, in blocks of at most _hole_size bytes
        self._hole_size = 0
        self._lock = threading.Lock()

    def state(self) -> DeviceMemory:
        with self._lock:
            return self._state()

    def _state(self) -> DeviceMemory:
        allocated = self.base + self._held
        reserved = allocated + self._holes
        return DeviceMemory(self.total, max(0, self.total - reserved), allocated, reserved)

    def _fits(self, nbytes: int) -> str | None:
        """Where an allocation of `nbytes` would come from: "free", "hole", or None when it fails."""
        if nbytes <= self.total - self.base - self._held - self._holes:
            return "free"
        if self._holes >= nbytes and nbytes <= self._hole_size:
            return "hole"
        return None

    def fits(self, nbytes: int) -> bool:
        """Whether a transient allocation (a step's activations, freed after the step) would succeed."""
        with self._lock:
            return self._fits(nbytes) is not None

    def allocate(self, nbytes: int) -> bool:
        """Keep `nbytes` allocated (until `release`); False, and nothing changes, when they do not fit."""
        with self._lock:
            where = self._fits(nbytes)
            if where is None:
                return False
            if where == "hole":
                self._holes -= nbytes
            self._held += nbytes
            return True

    def release(self, nbytes: int) -> None:
        """Free `nbytes` kept by `allocate` (their memory goes back to the driver)."""
        with self._lock:
            self._held = max(0, self._held - nbytes)

    def fragment(self, hole_bytes: int, hole_size: int) -> tuple[int, int]:
        """Fill the free memory with live blocks and holes of at most `hole_size` bytes between them,
        `hole_bytes` of holes in all (as many as the free memory allows): what a mix of allocation sizes freed
        in the wrong order leaves in a caching allocator. Returns (bytes kept live, bytes in holes); undo
        with `defragment`."""
        with self._lock:
            free = max(0, self.total - self.base - self._held - self._holes)
            holes = min(hole_bytes, free)
            kept = free - holes
            self._held += kept
            self._holes += holes
            self._hole_size = max(self._hole_size, hole_size)
            return kept, holes

    def defragment(self, kept: int) -> None:
        """Free the live blocks `fragment` kept and give every hole back to the driver (as empty_cache)."""
        with self._lock:
            self._held = max(0, self._held - kept)
            self._holes = 0
            self._hole_size = 0
