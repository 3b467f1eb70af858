"""Paged KV cache: a block manager (allocate, free, reference counts, copy-on-write) and the cache tensors.

The manager is pure bookkeeping (no torch): sequences own lists of block ids; forking a sequence
shares its blocks (reference count + 1); appending a token to a shared last block first copies it
(copy-on-write), and the copy to perform is returned to the caller, who owns the tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuobs.serving.errors import NoFreeBlocksError

__all__ = ["BlockAllocation", "BlockManager", "KVCache", "NoFreeBlocksError"]


@dataclass
class BlockAllocation:
    """The blocks of one sequence and how many token slots of them are filled."""

    blocks: list[int] = field(default_factory=list)
    num_tokens: int = 0


class BlockManager:
    """Fixed pool of `num_blocks` blocks of `block_size` token slots each."""

    def __init__(self, num_blocks: int, block_size: int) -> None:
        if num_blocks < 1 or block_size < 1:
            raise ValueError("num_blocks and block_size must be >= 1")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self._free: list[int] = list(range(num_blocks - 1, -1, -1))  # pop() hands out low ids first
        self._refs = [0] * num_blocks
        self._seqs: dict[str, BlockAllocation] = {}
        self._capacity = num_blocks  # lowered by the kv-shrink fault

    # ---- queries ---------------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        """Blocks usable now (num_blocks unless shrunk)."""
        return self._capacity

    @property
    def num_used(self) -> int:
        return self.num_blocks - len(self._free)

    @property
    def num_free(self) -> int:
        """Blocks that can be handed out now (respecting a shrunk capacity)."""
        return max(0, self._capacity - self.num_used)

    def usage_ratio(self) -> float:
        """Used blocks over usable blocks (vLLM's kv_cache_usage_perc, as a ratio 0..1)."""
        return min(1.0, self.num_used / self._capacity) if self._capacity else 1.0

    def blocks_for(self, num_tokens: int) -> int:
        return -(-num_tokens // self.block_size)

    def can_allocate(self, num_tokens: int) -> bool:
        return self.blocks_for(num_tokens) <= self.num_free

    def has(self, seq_id: str) -> bool:
        return seq_id in self._seqs

    def block_table(self, seq_id: str) -> list[int]:
        return list(self._seqs[seq_id].blocks)

    def num_tokens(self, seq_id: str) -> int:
        return self._seqs[seq_id].num_tokens

    def ref_count(self, block: int) -> int:
        return self._refs[block]

    def slot(self, seq_id: str, index: int) -> int:
        """Flat cache slot of token `index` of the sequence."""
        alloc = self._seqs[seq_id]
        return alloc.blocks[index // self.block_size] * self.block_size + index % self.block_size

    # ---- changes ---------------------------------------------------------------------------
    def _take(self) -> int:
        if self.num_free < 1:
            raise NoFreeBlocksError(f"no free KV block ({self.num_used}/{self._capacity} used)")
        block = self._free.pop()
        self._refs[block] = 1
        return block

    def _release(self, block: int) -> None:
        self._refs[block] -= 1
        if self._refs[block] == 0:
            self._free.append(block)

    def allocate(self, seq_id: str, num_tokens: int) -> list[int]:
        """Blocks for a new sequence's first `num_tokens` tokens; returns their flat slots."""
        if seq_id in self._seqs:
            raise ValueError(f"sequence {seq_id} already has blocks")
        need = self.blocks_for(num_tokens)
        if need > self.num_free:
            raise NoFreeBlocksError(f"{need} blocks needed, {self.num_free} free")
        alloc = BlockAllocation([self._take() for _ in range(need)], num_tokens)
        self._seqs[seq_id] = alloc
        return [self.slot(seq_id, i) for i in range(num_tokens)]

    def append_slot(self, seq_id: str) -> tuple[int, tuple[int, int] | None]:
        """Reserve the slot of the sequence's next token: `(slot, copy)`.

        `copy` is `(src_block, dst_block)` when the last block was shared and had to be copied first
        (copy-on-write); the caller copies the cache contents before writing the slot. Raises
        NoFreeBlocksError (leaving the sequence unchanged) when a new block is needed and none is free.
        """
        alloc = self._seqs[seq_id]
        index = alloc.num_tokens
        copy: tuple[int, int] | None = None
        if index % self.block_size == 0 and index // self.block_size == len(alloc.blocks):
            alloc.blocks.append(self._take())
        else:
            last = alloc.blocks[-1]
            if self._refs[last] > 1:
                new = self._take()
                self._release(last)
                alloc.blocks[-1] = new
                copy = (last, new)
        alloc.num_tokens += 1
        return self.slot(seq_id, index), copy

    def fork(self, parent_id: str, child_id: str) -> None:
        """The child shares every block of the parent (copy-on-write on the next divergent append)."""
        if child_id in self._seqs:
            raise ValueError(f"sequence {child_id} already has blocks")
        parent = self._seqs[parent_id]
        for block in parent.blocks:
            self._refs[block] += 1
        self._seqs[child_id] = BlockAllocation(list(parent.blocks), parent.num_tokens)

    def free(self, seq_id: str) -> int:
        """Drop the sequence's references; returns how many blocks went back to the pool."""
        alloc = self._seqs.pop(seq_id, None)
        if alloc is None:
            return 0
        before = len(self._free)
        for block in alloc.blocks:
            self._release(block)
        return len(self._free) - before

    def set_capacity(self, blocks: int) -> None:
        """Limit usable blocks (the kv-shrink fault); blocks already held stay valid."""
        self._capacity = max(0, min(self.num_blocks, blocks))

    def check(self) -> None:
        """Invariants (for tests): reference counts equal the holders, free list disjoint from held blocks."""
        refs = [0] * self.num_blocks
        for alloc in self._seqs.values():
            assert len(alloc.blocks) == self.blocks_for(alloc.num_tokens) or alloc.num_tokens == 0
            for b in alloc.blocks:
                refs[b] += 1
        assert refs == self._refs, "reference counts disagree with holders"
        free = set(self._free)
        assert len(free) == len(self._free), "block freed twice"
        assert all(refs[b] == 0 for b in free), "a held block is on the free list"
        assert len(free) + sum(1 for r in refs if r) == self.num_blocks, "a block leaked"


class KVCache:
    """Per-layer K and V tensors [num_blocks, block_size, num_kv_heads, head_dim]."""

    def __init__(
        self, num_layers: int, num_blocks: int, block_size: int, num_kv_heads: int, head_dim: int,
        dtype: Any, device: Any,
    ) -> None:
        import torch

        shape = (num_blocks, block_size, num_kv_heads, head_dim)
        self.keys = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.values = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]

    def layer(self, i: int) -> tuple[Any, Any]:
        return self.keys[i], self.values[i]

    def copy_blocks(self, pairs: list[tuple[int, int]]) -> None:
        """Copy whole blocks src -> dst in every layer (copy-on-write)."""
        if not pairs:
            return
        import torch

        src = torch.tensor([p[0] for p in pairs], device=self.keys[0].device)
        dst = torch.tensor([p[1] for p in pairs], device=self.keys[0].device)
        for k, v in zip(self.keys, self.values, strict=True):
            k[dst] = k[src]
            v[dst] = v[src]

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (*self.keys, *self.values))
