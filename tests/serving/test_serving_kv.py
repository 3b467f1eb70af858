"""Paged KV block manager: allocation, reference counts, copy-on-write forks, capacity; cache copies."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuobs.serving.kv_cache import BlockManager, KVCache, NoFreeBlocksError


def test_allocate_gives_slots_in_owned_blocks_and_free_returns_them() -> None:
    bm = BlockManager(num_blocks=8, block_size=4)
    slots = bm.allocate("a", 6)
    table = bm.block_table("a")
    assert len(table) == 2 and bm.num_used == 2
    assert slots == [table[i // 4] * 4 + i % 4 for i in range(6)]
    assert bm.usage_ratio() == pytest.approx(2 / 8)
    assert bm.free("a") == 2
    assert bm.num_used == 0 and bm.free("a") == 0
    bm.check()


def test_append_slot_opens_a_new_block_at_the_boundary() -> None:
    bm = BlockManager(num_blocks=4, block_size=2)
    bm.allocate("a", 2)
    slot, copy = bm.append_slot("a")
    assert copy is None and len(bm.block_table("a")) == 2
    assert slot == bm.block_table("a")[1] * 2
    slot2, _ = bm.append_slot("a")
    assert slot2 == slot + 1 and bm.num_tokens("a") == 4
    bm.check()


def test_allocation_beyond_capacity_raises_and_changes_nothing() -> None:
    bm = BlockManager(num_blocks=2, block_size=2)
    bm.allocate("a", 4)
    with pytest.raises(NoFreeBlocksError):
        bm.append_slot("a")
    assert bm.num_tokens("a") == 4 and len(bm.block_table("a")) == 2
    with pytest.raises(NoFreeBlocksError):
        bm.allocate("b", 1)
    assert not bm.has("b")
    bm.check()


def test_fork_shares_blocks_and_copies_on_write() -> None:
    bm = BlockManager(num_blocks=8, block_size=4)
    bm.allocate("parent", 6)  # blocks: full one + half one
    bm.fork("parent", "child")
    shared = bm.block_table("parent")
    assert bm.block_table("child") == shared
    assert all(bm.ref_count(b) == 2 for b in shared)
    slot, copy = bm.append_slot("child")
    assert copy is not None and copy[0] == shared[1]
    new_last = bm.block_table("child")[1]
    assert copy == (shared[1], new_last) and slot == new_last * 4 + 2
    assert bm.ref_count(shared[0]) == 2 and bm.ref_count(shared[1]) == 1 and bm.ref_count(new_last) == 1
    # the parent's own last block is no longer shared: no copy
    _, copy2 = bm.append_slot("parent")
    assert copy2 is None
    bm.free("parent")
    assert bm.ref_count(shared[0]) == 1  # still held by the child
    bm.free("child")
    assert bm.num_used == 0
    bm.check()


def test_shrunk_capacity_limits_new_blocks_but_keeps_held_ones() -> None:
    bm = BlockManager(num_blocks=10, block_size=1)
    bm.allocate("a", 5)
    bm.set_capacity(4)
    assert bm.num_free == 0 and bm.usage_ratio() == 1.0
    assert not bm.can_allocate(1)
    with pytest.raises(NoFreeBlocksError):
        bm.append_slot("a")
    bm.set_capacity(10)
    assert bm.num_free == 5


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["alloc", "append", "fork", "free"]), st.integers(0, 5),
                          st.integers(1, 9)), max_size=60))
def test_random_operations_keep_the_invariants(ops: list[tuple[str, int, int]]) -> None:
    bm = BlockManager(num_blocks=12, block_size=3)
    live: set[str] = set()
    counter = 0
    refusals = 0
    for op, pick, n in ops:
        names = sorted(live)
        try:
            if op == "alloc":
                counter += 1
                bm.allocate(f"s{counter}", n)
                live.add(f"s{counter}")
            elif op == "append" and names:
                bm.append_slot(names[pick % len(names)])
            elif op == "fork" and names:
                counter += 1
                bm.fork(names[pick % len(names)], f"s{counter}")
                live.add(f"s{counter}")
            elif op == "free" and names:
                bm.free(names[pick % len(names)])
                live.discard(names[pick % len(names)])
        except NoFreeBlocksError:
            refusals += 1  # a legitimate refusal; the invariants below must still hold
            assert bm.num_free < 4  # refused only when (nearly) full
        bm.check()
        # distinct sequences never write the same slot unless they share a block read-only
        for name in live:
            assert len(bm.block_table(name)) == bm.blocks_for(bm.num_tokens(name))
    for name in list(live):
        bm.free(name)
    assert bm.num_used == 0


def test_kv_cache_copy_blocks_copies_every_layer() -> None:
    kv = KVCache(num_layers=2, num_blocks=4, block_size=2, num_kv_heads=1, head_dim=2, dtype=torch.float32,
                 device="cpu")
    for i in range(2):
        kv.keys[i][1] = float(i + 1)
        kv.values[i][1] = float(-(i + 1))
    kv.copy_blocks([(1, 3)])
    for i in range(2):
        assert torch.equal(kv.keys[i][3], kv.keys[i][1]) and torch.equal(kv.values[i][3], kv.values[i][1])
    assert kv.nbytes() == 2 * 2 * 4 * 2 * 1 * 2 * 4
