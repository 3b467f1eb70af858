"""The engine end to end on CPU: greedy output through batching, paging, preemption and both schedulers
equals the plain unbatched forward pass; sampling, stops, aborts, deadlines, admission, validation,
draining, forward_logits, stats and spans."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.serving_model import Collector, greedy_reference, tiny_model_dir

from gpuobs.serving.engine import (
    Engine,
    EngineClosedError,
    EngineConfig,
    GenerationRequest,
    InvalidRequestError,
    QueueFullError,
    SamplingParams,
)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model_dir(tmp_path_factory.mktemp("cache"))


@pytest.fixture
def make_engine(model_dir: Path) -> Iterator[Any]:
    engines: list[Engine] = []

    def make(start: bool = True, tracer_provider: Any = None, **kw: Any) -> Engine:
        kw.setdefault("num_kv_blocks", 128)
        kw.setdefault("block_size", 4)
        config = EngineConfig(model_dir=str(model_dir), device="cpu", **kw)
        engine = Engine(config, tracer_provider=tracer_provider)
        engines.append(engine)
        if start:
            engine.start()
        return engine

    yield make
    for engine in engines:
        engine.stop(drain=False, timeout_s=1)


def _prompts(engine: Engine, n: int, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    words = ["paged", "attention", "hello", "kernel", "GPU", "batch", "queue", "tensor", "é", "🚀"]
    return [engine.tokenizer.encode(" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))))
            for _ in range(n)]


def _run(engine: Engine, prompts: list[list[int]], params: list[SamplingParams] | SamplingParams,
         **req_kw: Any) -> list[Collector]:
    collectors = []
    for i, prompt in enumerate(prompts):
        c = Collector()
        p = params[i] if isinstance(params, list) else params
        engine.submit(GenerationRequest(f"r{i}", prompt, p, **req_kw), c)
        collectors.append(c)
    for c in collectors:
        c.wait(60)
    return collectors


@pytest.mark.parametrize("scheduler", ["bucketed", "fifo_static"])
def test_greedy_tokens_equal_the_unbatched_forward_pass(make_engine: Any, scheduler: str) -> None:
    engine = make_engine(scheduler=scheduler, max_batch_size=4, buckets=(8, 24),
                         bucket_wait_s=(0.001, 0.002, 0.004))
    prompts = _prompts(engine, 10)
    greedy = SamplingParams(max_tokens=12, ignore_eos=True)
    sampled = [SamplingParams(max_tokens=9, temperature=0.8, top_p=0.9, seed=i, ignore_eos=True)
               for i in range(10)]
    # greedy requests mixed with sampled ones, all batched together
    params = [greedy if i % 3 else sampled[i] for i in range(len(prompts))]
    results = _run(engine, prompts, params)
    for i, (prompt, c) in enumerate(zip(prompts, results, strict=True)):
        final = c.events[-1]
        assert final.finished and final.finish_reason == "length" and final.error is None
        if i % 3:
            assert c.tokens == greedy_reference(engine.model, prompt, 12), f"request {i} diverged"
        else:
            assert len(c.tokens) == 9
    stats = engine.stats()
    assert stats.requests_finished_total["length"] == 10
    assert stats.generation_tokens_total == sum(len(c.tokens) for c in results)
    assert stats.prompt_tokens_total == sum(map(len, prompts))
    assert stats.running == 0 and stats.waiting == 0 and stats.kv_usage_ratio == 0.0
    assert stats.steps_total > 12 and 1 <= stats.last_batch_size <= 4
    engine.blocks.check()


def test_greedy_tokens_survive_preemption_by_recompute(make_engine: Any) -> None:
    # 14 blocks of 4 slots: four 8-token prompts are admitted, but they cannot all grow to 28 tokens
    engine = make_engine(num_kv_blocks=14, max_batch_size=6, bucket_wait_s=(0.001, 0.001, 0.001, 0.001))
    prompts = [engine.tokenizer.encode(f"prompt {i}") for i in range(6)]
    results = _run(engine, prompts, SamplingParams(max_tokens=20, ignore_eos=True))
    for prompt, c in zip(prompts, results, strict=True):
        assert c.tokens == greedy_reference(engine.model, prompt, 20)
    stats = engine.stats()
    assert stats.preemptions_total > 0
    assert sum(c.events[-1].metrics.preemptions for c in results) == stats.preemptions_total
    engine.blocks.check()
    assert engine.blocks.num_used == 0


def test_seeded_sampling_is_reproducible(make_engine: Any) -> None:
    engine = make_engine()
    prompt = engine.tokenizer.encode("sampling")
    p = SamplingParams(max_tokens=16, temperature=1.5, seed=42, ignore_eos=True)
    a = _run(engine, [prompt], p)[0].tokens
    b = _run(engine, [prompt], p)[0].tokens
    other = SamplingParams(max_tokens=16, temperature=1.5, seed=43, ignore_eos=True)
    c = _run(engine, [prompt], other)[0].tokens
    assert a == b and len(a) == 16
    assert a != c


def test_stop_tokens_end_the_request_without_being_delivered(make_engine: Any) -> None:
    engine = make_engine()
    prompt = engine.tokenizer.encode("stop here")
    ref = greedy_reference(engine.model, prompt, 8)
    stop = ref[3]
    first = ref.index(stop)
    c = _run(engine, [prompt], SamplingParams(max_tokens=8, stop_token_ids=(stop,), ignore_eos=True))[0]
    assert c.tokens == ref[:first] and c.events[-1].finish_reason == "stop"
    assert c.events[-1].metrics.generation_tokens == first + 1


def test_eos_stops_unless_ignored(make_engine: Any) -> None:
    engine = make_engine()
    # find a prompt whose greedy continuation reaches EOS early
    for text in ("hello world", "a", "b", "GPU", "queue", "x y z"):
        prompt = engine.tokenizer.encode(text)
        ref = greedy_reference(engine.model, prompt, 24)
        if 257 in ref:
            break
    else:
        pytest.fail("no prompt reaches EOS within 24 tokens")
    c = _run(engine, [prompt], SamplingParams(max_tokens=24))[0]
    assert c.events[-1].finish_reason == "stop" and c.tokens == ref[: ref.index(257)]


def test_abort_and_deadline_finish_requests_and_free_blocks(make_engine: Any) -> None:
    engine = make_engine(max_model_len=512)
    slow = Collector()
    engine.faults.enabled = True
    engine.faults.inject("slow_kernel", delay_s=0.01)
    engine.submit(GenerationRequest("long", [1, 2, 3], SamplingParams(max_tokens=400, ignore_eos=True)), slow)
    time.sleep(0.1)
    engine.abort("long")
    assert slow.wait(10).finish_reason == "abort"
    assert 0 < len(slow.tokens) < 400
    late = Collector()
    engine.submit(GenerationRequest("late", [1, 2, 3], SamplingParams(max_tokens=400, ignore_eos=True),
                                    deadline=time.monotonic() + 0.15), late)
    final = late.wait(10)
    assert final.finish_reason == "deadline" and final.metrics.finished - final.metrics.arrival < 2
    engine.abort("no-such-request")  # ignored
    stats = engine.stats()
    assert stats.requests_finished_total["abort"] == 1 and stats.requests_finished_total["deadline"] == 1
    assert engine.blocks.num_used == 0


def test_admission_control_refuses_with_retry_after(make_engine: Any) -> None:
    engine = make_engine(start=False, max_queue_len=2)
    for i in range(2):
        engine.submit(GenerationRequest(f"q{i}", [1, 2], SamplingParams(max_tokens=2)), Collector())
    with pytest.raises(QueueFullError) as info:
        engine.submit(GenerationRequest("q2", [1, 2], SamplingParams(max_tokens=2)), Collector())
    assert info.value.retry_after_s > 0
    assert engine.stats().rejected_total == 1 and engine.stats().waiting == 2
    assert engine.stats().bucket_depth["1-64"] == 2


def test_bad_requests_raise_invalid_request_error(make_engine: Any) -> None:
    engine = make_engine(start=False, max_model_len=64)
    cases = {
        "empty": ([], SamplingParams()),
        "context": ([1] * 60, SamplingParams(max_tokens=10)),
        "vocabulary": ([1, 999], SamplingParams()),
        "max_tokens": ([1], SamplingParams(max_tokens=0)),
        "top_p": ([1], SamplingParams(top_p=0.0)),
        "temperature": ([1], SamplingParams(temperature=-1.0)),
        "stop_token_ids": ([1], SamplingParams(stop_token_ids=(10_000,))),
    }
    for word, (prompt, params) in cases.items():
        with pytest.raises(InvalidRequestError, match=word.split("_")[0] if word != "context" else "context"):
            engine.submit(GenerationRequest(word, prompt, params), Collector())
    engine.submit(GenerationRequest("dup", [1], SamplingParams()), Collector())
    with pytest.raises(InvalidRequestError, match="already in flight"):
        engine.submit(GenerationRequest("dup", [1], SamplingParams()), Collector())


def test_stop_drains_in_flight_requests_then_refuses_new_ones(make_engine: Any) -> None:
    engine = make_engine()
    collectors = [Collector() for _ in range(3)]
    for i, c in enumerate(collectors):
        params = SamplingParams(max_tokens=20, ignore_eos=True)
        engine.submit(GenerationRequest(f"d{i}", [5, 6, 7], params), c)
    engine.stop(drain=True, timeout_s=30)
    assert all(c.done.is_set() and c.events[-1].finish_reason == "length" for c in collectors)
    with pytest.raises(EngineClosedError):
        engine.submit(GenerationRequest("after", [1], SamplingParams()), Collector())


def test_stop_without_drain_aborts(make_engine: Any) -> None:
    engine = make_engine(start=False)
    c = Collector()
    engine.submit(GenerationRequest("x", [5, 6, 7], SamplingParams(max_tokens=20)), c)
    engine.stop(drain=False)
    assert c.wait(1).finish_reason == "abort"


def test_forward_logits_matches_dense_and_handles_padding(make_engine: Any) -> None:
    engine = make_engine(start=False)
    ids = [10, 20, 30, 40]
    ref = engine.model.forward_dense(ids)[-1].tolist()
    masks = [[1] * 4, [0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 0]]
    out = engine.forward_logits([ids, [0, 0, *ids], [*ids, 0]], masks)
    assert len(out) == 3 and all(len(row) == engine.model.config.vocab_size for row in out)
    for row in out:
        assert row == pytest.approx(ref, abs=1e-4)
    with pytest.raises(InvalidRequestError, match="masks every token"):
        engine.forward_logits([[1, 2]], [[0, 0]])
    with pytest.raises(InvalidRequestError, match="lengths differ"):
        engine.forward_logits([[1, 2]], [[1]])
    with pytest.raises(InvalidRequestError, match="vocabulary"):
        engine.forward_logits([[1, 100_000]], [[1, 1]])


def test_memory_bytes_counts_weights_and_kv(make_engine: Any) -> None:
    engine = make_engine(start=False, num_kv_blocks=10)
    assert engine.memory_bytes() == engine.model.parameter_bytes() + engine.kv.nbytes()
    assert engine.kv.nbytes() == 10 * 4 * engine.model.kv_bytes_per_token()
    assert engine.model_name == "gpuobs-tiny-llama-v1" and engine.tokenizer.eos_token_id == 257


def test_stats_report_buckets_tenants_and_kv_usage_while_running(make_engine: Any) -> None:
    engine = make_engine(max_batch_size=2, num_kv_blocks=64)
    engine.faults.enabled = True
    engine.faults.inject("slow_kernel", delay_s=0.02)
    cs = []
    for i, (tenant, prompt) in enumerate([("a", [1] * 5), ("b", [2] * 100), ("a", [3] * 5), ("b", [4] * 6)]):
        c = Collector()
        engine.submit(GenerationRequest(f"t{i}", prompt, SamplingParams(max_tokens=30, ignore_eos=True),
                                        tenant=tenant), c)
        cs.append(c)
    deadline = time.monotonic() + 10
    seen = None
    while time.monotonic() < deadline:
        s = engine.stats()
        if s.running == 2 and s.waiting == 2:
            seen = s
            break
        time.sleep(0.005)
    assert seen is not None, "never saw 2 running + 2 waiting"
    assert 0 < seen.kv_usage_ratio < 1 and seen.num_kv_blocks == 64
    assert sum(seen.tenant_running.values()) == 2 and sum(seen.tenant_waiting.values()) == 2
    assert sum(seen.bucket_depth.values()) == 2
    engine.faults.clear()
    for c in cs:
        c.wait(30)
    final = engine.stats()
    assert final.tenant_finished_total == {"a": 2, "b": 2}
    m = cs[1].events[-1].metrics
    assert m.bucket == "65-256" and m.prompt_tokens == 100 and m.tenant == "b" and m.max_tokens == 30
    assert m.arrival <= m.first_scheduled <= m.first_token <= m.finished  # type: ignore[operator]


def test_spans_queue_prefill_decode_under_the_request_context(make_engine: Any) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    engine = make_engine(tracer_provider=provider, max_batch_size=4)
    tracer = provider.get_tracer("test")
    parents = []
    collectors = []
    for i in range(2):
        request_span = tracer.start_span("request", attributes={"gen_ai.request.model": engine.model_name})
        parents.append(request_span)
        ctx = trace.set_span_in_context(request_span)
        c = Collector()
        engine.submit(GenerationRequest(f"s{i}", [7, 8, 9], SamplingParams(max_tokens=3, ignore_eos=True),
                                        trace_context=ctx), c)
        collectors.append(c)
    for c in collectors:
        c.wait(10)
    for s in parents:
        s.end()
    spans = exporter.get_finished_spans()
    by_name: dict[str, list[Any]] = {}
    for s in spans:
        by_name.setdefault(s.name, []).append(s)
    parent_ids = {p.get_span_context().span_id for p in parents}
    trace_ids = {p.get_span_context().trace_id for p in parents}
    assert len(by_name["queue"]) == 2
    assert {s.parent.span_id for s in by_name["queue"]} == parent_ids
    assert by_name["prefill"] and by_name["decode_step"]
    for s in by_name["prefill"] + by_name["decode_step"]:
        assert s.parent is not None and s.parent.span_id in parent_ids
        assert s.context.trace_id in trace_ids
        linked = {link.context.span_id for link in s.links}
        assert linked | {s.parent.span_id} <= parent_ids
    batched = [s for s in by_name["decode_step"] if s.attributes["gpuobs.batch_size"] == 2]
    assert batched and all(len(s.links) == 1 for s in batched)


def test_going_idle_flushes_the_kernel_launcher_once(make_engine: Any) -> None:
    """The launcher builds sampled CUDA spans in batches: an engine going idle flushes it, once."""
    from gpuobs.exporters.inprocess import launcher as L

    class CountingLauncher(L.KernelLauncher):
        flushes = 0

        def flush(self, timeout_s: float = 5.0) -> bool:
            CountingLauncher.flushes += 1
            return super().flush(timeout_s)

    launcher = CountingLauncher(sample_rate=1.0)
    previous = L.set_default_launcher(launcher)
    try:
        engine = make_engine(kernels="kernels")
        time.sleep(0.3)
        assert CountingLauncher.flushes == 0, "an engine that never ran flushes nothing"
        c = Collector()
        engine.submit(GenerationRequest("k", [5, 6, 7], SamplingParams(max_tokens=2, ignore_eos=True)), c)
        c.wait(60)
        deadline = time.monotonic() + 5
        while CountingLauncher.flushes == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sum(launcher.launch_counts().values()) > 0
        assert CountingLauncher.flushes == 1
        time.sleep(0.3)
        assert CountingLauncher.flushes == 1, "staying idle must not flush again"
    finally:
        L.set_default_launcher(previous)
