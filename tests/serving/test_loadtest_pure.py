"""Load-test library, pure parts: percentiles, open-loop schedule, prompt mix, search, cost, bad requests."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuobs.serving.loadtest import (
    CATEGORIES,
    ArrivalProcess,
    PromptMix,
    RequestResult,
    arrival_times,
    bad_requests,
    cost_at,
    elasticity,
    normalize_base_url,
    percentile,
    plan_requests,
    rate_ladder,
    step_verdict,
    summarize,
    throughput_at_target,
)
from gpuobs.serving.loadtest.client import error_message

# --- percentiles -------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1, max_size=200),
       st.floats(min_value=0, max_value=100))
def test_percentile_matches_numpy_linear(values: list[float], q: float) -> None:
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-9, abs=1e-9)


def test_percentile_edges() -> None:
    assert percentile([], 99) is None
    assert percentile([3.0], 99) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    # An unfinished request (inf) above P99's rank drags P99 to inf only when it is in the top 1%.
    assert percentile([1.0] * 199 + [math.inf], 99) == 1.0
    assert math.isinf(percentile([1.0] * 98 + [math.inf] * 2, 99) or 0.0)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


# --- open-loop schedule ------------------------------------------------------------------------------


def test_constant_arrivals_are_evenly_spaced_and_bounded() -> None:
    times = arrival_times(4.0, 2.0, 1000, ArrivalProcess.CONSTANT)
    assert times == pytest.approx([i / 4.0 for i in range(8)])
    assert arrival_times(4.0, 100.0, 5, ArrivalProcess.CONSTANT) == pytest.approx([0, 0.25, 0.5, 0.75, 1.0])


def test_poisson_arrivals_have_the_offered_rate_and_exponential_gaps() -> None:
    times = arrival_times(50.0, 200.0, 100_000, ArrivalProcess.POISSON, seed=7)
    assert all(t < 200.0 for t in times) and times == sorted(times) and times[0] == 0.0
    assert len(times) / 200.0 == pytest.approx(50.0, rel=0.03)
    gaps = np.diff(times)
    # Exponential: mean 1/rate, coefficient of variation 1 (constant arrivals would give 0).
    assert gaps.mean() == pytest.approx(1 / 50.0, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.05)


def test_schedule_is_a_pure_function_of_the_seed() -> None:
    a = arrival_times(10.0, 5.0, 1000, seed=1)
    assert a == arrival_times(10.0, 5.0, 1000, seed=1)
    assert a != arrival_times(10.0, 5.0, 1000, seed=2)


@pytest.mark.parametrize("args", [(0.0, 1.0, 10), (-1.0, 1.0, 10), (1.0, 0.0, 10), (1.0, 1.0, 0)])
def test_schedule_rejects_bad_bounds(args: tuple[float, float, int]) -> None:
    with pytest.raises(ValueError):
        arrival_times(*args)


# --- prompt mix --------------------------------------------------------------------------------------


def test_prompt_mix_share_lengths_and_determinism() -> None:
    mix = PromptMix(long_fraction=0.3, short_words=(2, 5), long_words=(40, 60), short_max_tokens=4,
                    long_max_tokens=9)
    plan = plan_requests([i * 0.01 for i in range(4000)], mix, seed=3)
    longs = [p for p in plan if p.kind == "long"]
    assert len(longs) / len(plan) == pytest.approx(0.3, abs=0.03)
    for p in plan:
        lo, hi = mix.long_words if p.kind == "long" else mix.short_words
        assert lo <= len(p.prompt.split()) <= hi
        assert p.max_tokens == (9 if p.kind == "long" else 4)
    assert plan == plan_requests([i * 0.01 for i in range(4000)], mix, seed=3)
    with pytest.raises(ValueError):
        PromptMix(long_fraction=1.5)


# --- summaries, search, elasticity ---------------------------------------------------------------------


def _results(n: int, e2e: float, rate: float, failed: int = 0, ttft: float = 0.01) -> list[RequestResult]:
    out = []
    for i in range(n):
        r = RequestResult(index=i, kind="short" if i % 4 else "long", scheduled=i / rate, sent=i / rate)
        if i < failed:
            r.outcome, r.status = "http_error", 500
        else:
            r.outcome, r.status = "ok", 200
            r.first_token = r.scheduled + ttft
            r.chunk_times = [r.first_token + 0.002 * k for k in range(4)]
            r.finished = r.scheduled + e2e
            r.output_tokens = 4
        out.append(r)
    return out


def test_summarize_counts_throughput_and_latencies() -> None:
    s = summarize(_results(100, e2e=0.5, rate=10.0), offered_rate=10.0)
    assert (s.requests, s.completed, s.failed) == (100, 100, 0)
    assert s.duration_s == pytest.approx(9.9 + 0.5)
    assert s.throughput_rps == pytest.approx(100 / 10.4)
    assert s.output_tokens_per_s == pytest.approx(400 / 10.4)
    assert s.e2e.p99 == pytest.approx(0.5) and s.ttft.p50 == pytest.approx(0.01)
    assert s.inter_token.p50 == pytest.approx(0.002)
    assert s.slo_p99_e2e == pytest.approx(0.5)
    assert s.by_kind["long"]["requests"] == 25


def test_sparse_run_throughput_counts_the_whole_arrival_window() -> None:
    one = _results(1, e2e=0.2, rate=1.0)
    assert summarize(one, 0.1).throughput_rps == pytest.approx(1 / 0.2)        # no window: makespan only
    assert summarize(one, 0.1, window_s=10.0).throughput_rps == pytest.approx(0.1)


def test_failures_count_as_infinitely_slow_for_the_target() -> None:
    one_pct = summarize(_results(200, e2e=0.1, rate=10.0, failed=1), 10.0)
    assert step_verdict(one_pct, 0.2)[0]            # 0.5% failed: P99 still a real latency
    many = summarize(_results(200, e2e=0.1, rate=10.0, failed=5), 10.0)
    assert many.outcomes == {"http_error": 5, "ok": 195}
    ok, reason = step_verdict(many, 0.2)
    assert not ok and "failed" in reason
    assert many.to_dict()["slo_p99_e2e"] is None and many.to_dict()["slo_p99_e2e_unbounded"]
    json.dumps(many.to_dict(), allow_nan=False)


def test_refused_requests_count_as_failures_per_class_too() -> None:
    # 429s are not served: the answered-only P99 hides them, the all-requests P99 must not
    results = _results(200, e2e=0.1, rate=10.0)
    for r in results[:8]:  # indices 0 and 4 are long, the rest short
        r.outcome, r.status, r.finished, r.first_token = "rejected", 429, None, None
    s = summarize(results, 10.0)
    assert s.e2e.p99 == pytest.approx(0.1) and math.isinf(s.slo_p99_e2e or 0.0)
    long_, short = s.by_kind["long"], s.by_kind["short"]
    assert (long_["requests"], long_["failed"], short["failed"]) == (50, 2, 6)
    assert long_["p99_e2e"] == pytest.approx(0.1) and math.isinf(float(long_["p99_e2e_all"] or 0.0))
    assert math.isinf(float(short["p99_e2e_all"] or 0.0))
    clean = summarize(_results(200, e2e=0.1, rate=10.0), 10.0)
    assert clean.by_kind["long"]["p99_e2e_all"] == pytest.approx(0.1) and clean.by_kind["long"]["failed"] == 0
    data = s.to_dict()
    assert data["by_kind"]["long"]["p99_e2e_all"] is None and data["by_kind"]["long"]["p99_e2e_all_unbounded"]
    json.dumps(data, allow_nan=False)


def test_throughput_at_target_takes_highest_pass_below_first_failure() -> None:
    rates = rate_ladder(1.0, 10**0.25, 9)
    latencies = [0.1, 0.1, 0.12, 0.15, 0.2, 0.3, 0.9, 3.0, 0.2]   # the last pass is noise above a failure
    steps = [summarize(_results(50, e2e, r), r) for r, e2e in zip(rates, latencies, strict=True)]
    best = throughput_at_target(steps, target_s=0.5)
    assert best is not None
    assert best.offered_rate == pytest.approx(rates[5])
    assert best.first_failing_rate == pytest.approx(rates[6])
    assert best.p99_e2e_s == pytest.approx(0.3)
    assert throughput_at_target(steps, target_s=0.05) is None


def test_elasticity_compares_the_best_rate_with_a_tenth_of_it() -> None:
    rates = rate_ladder(1.0, 10**0.25, 6)              # 1 .. 10**1.25; best = 10 (index 4)
    lat = [0.10, 0.11, 0.12, 0.15, 0.25, 5.0]
    steps = [summarize(_results(50, e2e, r, ttft=e2e / 5), r) for r, e2e in zip(rates, lat, strict=True)]
    el = elasticity(steps, target_s=1.0)
    assert el is not None
    assert el.low_rate == pytest.approx(1.0) and el.high_rate == pytest.approx(10.0)
    assert el.load_factor == pytest.approx(10.0)
    assert el.p99_e2e_ratio == pytest.approx(2.5) and el.p50_ttft_ratio == pytest.approx(2.5)
    # Without a run near a tenth of the best rate there is nothing to compare.
    assert elasticity(steps[2:], target_s=1.0) is None


def test_rate_ladder_has_every_tenfold_step() -> None:
    ladder = rate_ladder(0.5, 10**0.25, 9)
    assert ladder[4] == pytest.approx(5.0) and ladder[8] == pytest.approx(50.0)
    with pytest.raises(ValueError):
        rate_ladder(1.0, 1.0, 3)


# --- cost --------------------------------------------------------------------------------------------


def test_cost_per_thousand_requests() -> None:
    c = cost_at(throughput_rps=10.0, output_tokens_per_s=500.0, gpu_hour_price=3.6, gpus=2)
    # 2 GPUs at 3.6/h cost 0.002 per second; 1000 requests take 100 s.
    assert c.per_1000_requests == pytest.approx(0.2)
    assert c.per_million_output_tokens == pytest.approx(0.002 / 500.0 * 1e6)
    assert cost_at(0.0, 0.0, 3.0).per_1000_requests is None
    with pytest.raises(ValueError):
        cost_at(1.0, 1.0, -1.0)


# --- bad requests ------------------------------------------------------------------------------------


def _json_or_none(body: bytes) -> object | None:
    try:
        return json.loads(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def test_bad_requests_cover_every_category_evenly_and_deterministically() -> None:
    reqs = bad_requests(1000, "tiny", seed=5)
    counts = {c: sum(1 for r in reqs if r.category == c) for c in CATEGORIES}
    assert set(counts.values()) == {125}
    assert {r.path for r in reqs} == {"/v1/completions", "/v1/chat/completions"}
    assert reqs == bad_requests(1000, "tiny", seed=5)
    assert reqs != bad_requests(1000, "tiny", seed=6)


def test_every_bad_request_is_really_bad() -> None:
    for r in bad_requests(800, "tiny", seed=11):
        body = _json_or_none(r.body)
        if r.category == "malformed_json":
            assert body is None, r.description
            continue
        if r.category == "invalid_utf8":
            try:
                text = r.body.decode("utf-8")
            except UnicodeDecodeError:
                continue
            assert "\\ud800" in text          # valid JSON escape of a lone surrogate: not encodable text
            with pytest.raises(UnicodeEncodeError):
                json.dumps(json.loads(text), ensure_ascii=False).encode("utf-8")
            continue
        if r.category == "wrong_type" and not isinstance(body, dict):
            assert isinstance(body, list)
            continue
        assert isinstance(body, dict), r
        key = "prompt" if r.path == "/v1/completions" else "messages"
        if r.category == "negative_max_tokens":
            assert body["max_tokens"] < 0
        elif r.category == "huge_max_tokens":
            assert body["max_tokens"] >= 10**7
        elif r.category == "unknown_model":
            assert body["model"] != "tiny"
        elif r.category == "empty_prompt":
            value = body[key]
            assert value in ("", []) or value == [{"role": "user", "content": ""}]
        elif r.category == "oversized_prompt":
            assert len(r.body) >= 1_000_000
        elif r.category == "wrong_type":
            good = {"model": str, "max_tokens": int, "stream": bool, "temperature": float}
            wrong = [k for k, t in good.items() if k in body and not isinstance(body[k], t)]
            wrong += [k for k, t in good.items() if k in body and t is int and isinstance(body[k], bool)]
            prompt = body.get(key)
            prompt_ok = (isinstance(prompt, str) and prompt) if key == "prompt" else (
                isinstance(prompt, list) and all(isinstance(m, dict) and isinstance(m.get("content"), str)
                                                 and "role" in m for m in prompt))
            assert wrong or not prompt_ok, r.description


def test_bad_request_count_validation() -> None:
    assert bad_requests(0, "m") == []
    with pytest.raises(ValueError):
        bad_requests(-1, "m")


# --- small helpers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("body", "message"), [
    (b'{"error": {"message": "max_tokens must be >= 1", "type": "invalid_request_error"}}',
     "max_tokens must be >= 1"),
    (b'{"detail": "Not Found"}', "Not Found"),
    (b'{"detail": [{"loc": ["body", "prompt"], "msg": "field required"}]}', "field required"),
    (b'{"error": "bad model"}', "bad model"),
    (b"Internal Server Error", None),
    (b'{"error": {"message": ""}}', None),
])
def test_error_message_shapes(body: bytes, message: str | None) -> None:
    assert error_message(body) == message


@pytest.mark.parametrize(("url", "base"), [
    ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
    ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000"),
    ("https://host/prefix/v1/", "https://host/prefix"),
])
def test_normalize_base_url(url: str, base: str) -> None:
    assert normalize_base_url(url) == base


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "ftp://x", "http://", ""])
def test_normalize_base_url_rejects(url: str) -> None:
    with pytest.raises(ValueError):
        normalize_base_url(url)


def test_random_is_not_global_state() -> None:
    random.seed(1)
    a = bad_requests(20, "m", seed=3)
    random.seed(2)
    assert a == bad_requests(20, "m", seed=3)
