"""Schedulers without a model: buckets and wait budgets, priorities, tenant weights, admission,
preemption by recompute, deadlines, and the FIFO static baseline."""

from __future__ import annotations

import pytest

from gpuobs.serving.engine import GenerationRequest, SamplingParams
from gpuobs.serving.kv_cache import BlockManager
from gpuobs.serving.scheduler import (
    BucketedScheduler,
    FifoStaticScheduler,
    QueueFullError,
    SchedulerConfig,
    SeqStatus,
    SequenceState,
    bucket_names,
    make_scheduler,
)


def _cfg(**kw: object) -> SchedulerConfig:
    base: dict[str, object] = {"max_batch_size": 4, "buckets": (8, 32), "bucket_wait_s": (0.01, 0.05, 0.1),
                               "max_queue_len": 3, "watermark": 0.0}
    base.update(kw)
    return SchedulerConfig(**base)  # type: ignore[arg-type]


def _seq(sched: BucketedScheduler | FifoStaticScheduler, rid: str, n: int, now: float, *, prio: int = 0,
         tenant: str = "default", deadline: float | None = None, max_tokens: int = 4) -> SequenceState:
    req = GenerationRequest(rid, list(range(1, n + 1)), SamplingParams(max_tokens=max_tokens), tenant=tenant,
                            priority=prio, deadline=deadline)
    b = sched.bucket_of(n)
    seq = SequenceState(request=req, arrival=now, bucket=b, bucket_name=sched.names[b])
    sched.add(seq, now)
    return seq


def test_bucket_names_and_assignment() -> None:
    assert bucket_names((8, 32)) == ["1-8", "9-32", "33+"]
    s = BucketedScheduler(_cfg(), BlockManager(64, 4))
    assert [s.bucket_of(n) for n in (1, 8, 9, 32, 33, 1000)] == [0, 0, 1, 1, 2, 2]
    with pytest.raises(ValueError, match="bucket_wait_s"):
        BucketedScheduler(_cfg(bucket_wait_s=(0.1,)), BlockManager(4, 4))
    with pytest.raises(ValueError, match="unknown scheduler"):
        make_scheduler("lifo", _cfg(), BlockManager(4, 4))


def test_a_lone_request_waits_its_bucket_budget_then_runs() -> None:
    s = BucketedScheduler(_cfg(), BlockManager(64, 4))
    seq = _seq(s, "a", 5, now=0.0)
    assert s.schedule(0.005).prefill == []
    assert s.next_wakeup(0.005) == pytest.approx(0.005)
    out = s.schedule(0.011)
    assert out.prefill == [seq] and seq.status is SeqStatus.RUNNING and seq.first_scheduled == 0.011
    assert len(seq.prefill_slots) == 5 and s.blocks.num_used == 2


def test_a_bucket_that_fills_the_free_slots_goes_at_once() -> None:
    s = BucketedScheduler(_cfg(max_queue_len=10), BlockManager(64, 4))
    seqs = [_seq(s, str(i), 3, now=0.0) for i in range(4)]
    assert s.schedule(0.0).prefill == seqs


def test_picker_trades_wait_against_fill_and_keeps_a_prefill_batch_in_one_bucket() -> None:
    s = BucketedScheduler(_cfg(max_queue_len=10), BlockManager(256, 4))
    long_ = [_seq(s, f"l{i}", 20, now=0.0) for i in range(2)]
    short = [_seq(s, f"s{i}", 4, now=0.04) for i in range(2)]
    # t=0.051: both due; score = fill + waited/budget: short 0.5 + 1.1 beats long 0.5 + 1.02
    out = s.schedule(0.051)
    assert out.prefill == short
    out2 = s.schedule(0.052)
    assert out2.prefill == long_ and len(s.running) == 4
    # a bucket that fills the batch goes at once, before a lone request still inside its budget ...
    s2 = BucketedScheduler(_cfg(max_queue_len=10), BlockManager(256, 4))
    lone = _seq(s2, "lone", 20, now=0.0)
    full = [_seq(s2, f"f{i}", 4, now=0.045) for i in range(4)]
    assert s2.schedule(0.0495).prefill == full
    s2.remove(full[0])
    assert s2.schedule(0.0496).prefill == [lone]  # one free slot: the lone request fills it
    # ... but once that request has waited its budget, it goes before the full bucket
    s3 = BucketedScheduler(_cfg(max_queue_len=10), BlockManager(256, 4))
    lone = _seq(s3, "lone", 20, now=0.0)
    full = [_seq(s3, f"f{i}", 4, now=0.045) for i in range(4)]
    assert s3.schedule(0.0505).prefill == [lone]


def _stream(s: BucketedScheduler, *, backlog: int, per_step: int, run_steps: int, long_at: float,
            horizon_s: float, dt: float = 0.001) -> tuple[SequenceState, list[SequenceState]]:
    """Drive the scheduler step by step: `backlog` short prompts at t=0, then `per_step` more every step;
    each sequence runs `run_steps` steps once prefilled; one long prompt (bucket 33+) arrives at `long_at`.
    Returns the long sequence and every short one."""
    shorts = [_seq(s, f"s{i}", 4, now=0.0) for i in range(backlog)]
    long_: SequenceState | None = None
    finish: dict[str, int] = {}
    for k in range(round(horizon_s / dt)):
        now = k * dt
        for seq in [q for q in s.running if finish.get(q.seq_id, 1 << 30) <= k]:
            s.remove(seq)
        shorts += [_seq(s, f"s{len(shorts)}", 4, now=now) for _ in range(per_step)]
        if long_ is None and now >= long_at:
            long_ = _seq(s, "long", 40, now=now)
        for seq in s.schedule(now).prefill:
            finish[seq.seq_id] = k + run_steps
    assert long_ is not None
    return long_, shorts


def test_a_long_prompt_is_scheduled_within_its_wait_budget_under_a_stream_of_short_ones() -> None:
    # Shorts arrive as fast as they leave (2 per 1 ms step, 4 slots, 2 steps each) over a standing
    # backlog of 16: the short bucket always fills the free slots and its oldest has waited 8 ms, inside
    # its 10 ms budget. The long prompt (budget 100 ms) must still be admitted once its budget is up;
    # a picker that compares waited/budget (8 ms/10 ms against waited/100 ms) would hold it about 130 ms.
    s = BucketedScheduler(_cfg(max_queue_len=10_000), BlockManager(4096, 4))
    long_, shorts = _stream(s, backlog=16, per_step=2, run_steps=2, long_at=0.005, horizon_s=0.4)
    budget = s.config.bucket_wait_s[long_.bucket]
    assert long_.first_scheduled is not None
    assert long_.first_scheduled - long_.queued <= budget + 0.002
    assert all(q.first_scheduled is not None for q in shorts[:-40])  # the shorts keep flowing too


def test_an_overloaded_short_bucket_does_not_starve_the_long_bucket() -> None:
    # Shorts arrive faster than they can be served (3 per step for 2 slots per step): the short queue
    # grows without bound and is always overdue. The long prompt must not wait behind shorts that
    # arrived after it was due (earliest due time first), and is admitted within the run.
    s = BucketedScheduler(_cfg(max_queue_len=10_000), BlockManager(8192, 4))
    long_, shorts = _stream(s, backlog=0, per_step=3, run_steps=2, long_at=0.05, horizon_s=0.6)
    assert long_.first_scheduled is not None, "long prompt starved behind the short stream"
    due = long_.queued + s.config.bucket_wait_s[long_.bucket]
    later = [q for q in shorts if q.queued >= due]
    assert later and all(q.first_scheduled is None or q.first_scheduled >= long_.first_scheduled
                         for q in later)
    assert s.num_waiting > 100  # it really was overloaded


def test_priority_then_tenant_weight_order_inside_a_bucket() -> None:
    s = BucketedScheduler(_cfg(max_batch_size=1, max_queue_len=10, tenant_weights={"gold": 4.0}),
                          BlockManager(64, 4))
    s.account("gold", 100)  # gold's share: 100/4 = 25
    s.account("bronze", 50)  # bronze's share: 50/1 = 50
    low = _seq(s, "low", 3, now=0.0, tenant="bronze")
    gold = _seq(s, "gold", 3, now=0.001, tenant="gold")
    urgent = _seq(s, "urgent", 3, now=0.002, tenant="bronze", prio=5)
    assert s.schedule(1.0).prefill == [urgent]
    s.remove(urgent)
    assert s.schedule(1.0).prefill == [gold]
    s.remove(gold)
    assert s.schedule(1.0).prefill == [low]


def test_admission_bounds_each_bucket_queue_with_a_retry_after() -> None:
    s = BucketedScheduler(_cfg(), BlockManager(64, 4))
    for i in range(3):
        _seq(s, f"s{i}", 3, now=0.0)
    with pytest.raises(QueueFullError) as info:
        _seq(s, "s3", 3, now=0.0)
    assert 0.5 <= info.value.retry_after_s <= 60 and "1-8" in str(info.value)
    _seq(s, "long", 20, now=0.0)  # another bucket still has room
    assert s.bucket_depths() == {"1-8": 3, "9-32": 1, "33+": 0}


def test_preemption_by_recompute_when_blocks_run_out() -> None:
    s = BucketedScheduler(_cfg(max_queue_len=10), BlockManager(4, 2))
    hi = _seq(s, "hi", 4, now=0.0, prio=1)  # 2 blocks, full
    lo = _seq(s, "lo", 3, now=0.001)  # 2 blocks
    out = s.schedule(1.0)
    assert out.prefill == [hi, lo] and s.blocks.num_free == 0
    lo.output_ids.append(9)
    hi.output_ids.append(9)
    out = s.schedule(1.1)  # hi needs a 3rd block: lo (lower priority) is preempted, then lo's slot is gone
    assert out.preempted == [lo] and out.decode == [hi]
    assert lo.status is SeqStatus.WAITING and lo.preemptions == 1 and not s.blocks.has("lo")
    assert s.preemptions_total == 1 and s.queues[0][0] is lo
    s.remove(hi)
    out = s.schedule(1.2)  # recompute: prompt + generated tokens prefilled again
    assert out.prefill == [lo] and len(lo.prefill_slots) == lo.num_tokens == 4
    s.blocks.check()


def test_the_admission_watermark_follows_a_shrunk_cache() -> None:
    """vLLM keeps 1% of the usable blocks free at admission: a cache shrunk to 60 of its 1000 blocks keeps
    one block, not the ten of the full cache, so it still admits what it can hold and does not strand a
    request that fits in it."""
    s = BucketedScheduler(_cfg(watermark=0.01, max_queue_len=10), BlockManager(1000, 4))
    assert s.watermark_blocks == 10
    s.blocks.set_capacity(60)
    assert s.watermark_blocks == 1
    big = _seq(s, "big", 4 * 58, now=0.0)  # 58 blocks + 1 for its next token + the watermark: 60
    out = s.schedule(1.0)
    assert out.prefill == [big] and out.unfittable == []
    assert BucketedScheduler(_cfg(watermark=0.0), BlockManager(8, 4)).watermark_blocks == 0
    with pytest.raises(ValueError, match="watermark"):
        BucketedScheduler(_cfg(watermark=1.0), BlockManager(8, 4))


def test_deadlines_expire_waiting_and_running_sequences() -> None:
    s = BucketedScheduler(_cfg(max_queue_len=10), BlockManager(64, 4))
    running = _seq(s, "r", 3, now=0.0, deadline=0.5)
    s.schedule(0.02)
    waiting = _seq(s, "w", 20, now=0.1, deadline=0.3)
    assert s.next_wakeup(0.1) == pytest.approx(0.05)
    out = s.schedule(0.31)
    assert out.expired == [waiting]
    out = s.schedule(0.6)
    assert out.expired == [running] and s.blocks.num_used == 0 and not s.running


def test_batch_size_and_prefill_token_budget_are_respected() -> None:
    s = BucketedScheduler(_cfg(max_queue_len=10, max_prefill_tokens=10), BlockManager(64, 4))
    seqs = [_seq(s, str(i), 6, now=0.0) for i in range(4)]
    out = s.schedule(1.0)
    assert out.prefill == seqs[:1]  # 6 + 6 > 10 tokens
    assert len(s.schedule(1.0).prefill) == 1
    s2 = BucketedScheduler(_cfg(max_queue_len=10), BlockManager(64, 4))
    for i in range(6):
        _seq(s2, str(i), 2, now=0.0)
    assert len(s2.schedule(1.0).prefill) == 4 and s2.num_waiting == 2


def test_fifo_static_runs_a_batch_to_completion_before_the_next() -> None:
    s = FifoStaticScheduler(_cfg(max_batch_size=2, max_queue_len=10), BlockManager(64, 4))
    a = _seq(s, "a", 20, now=0.0)
    b = _seq(s, "b", 3, now=0.001)
    c = _seq(s, "c", 3, now=0.002)
    out = s.schedule(0.002)
    assert out.prefill == [a, b]  # arrival order, whatever the length
    s.remove(b)  # b finished early: its slot stays empty
    out = s.schedule(0.5)
    assert out.prefill == [] and out.decode == [a] and c.status is SeqStatus.WAITING
    s.remove(a)
    assert s.schedule(0.6).prefill == [c]
    assert s.bucket_depths() == {"fifo": 0}


def test_fifo_static_waits_to_fill_a_batch_up_to_the_budget() -> None:
    s = FifoStaticScheduler(_cfg(max_batch_size=3, max_queue_len=10), BlockManager(64, 4))
    a = _seq(s, "a", 3, now=0.0)
    assert s.schedule(0.05).prefill == []
    assert s.schedule(0.1).prefill == [a]
    with pytest.raises(QueueFullError):
        for i in range(11):
            _seq(s, f"x{i}", 3, now=0.2)
