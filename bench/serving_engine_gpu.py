"""The serving engine on a GPU: greedy equality with the plain forward pass, and tokens/s on the Triton
kernels against the same engine on PyTorch ops (the baseline, measured in the same run).

Checks (each a row of the table):
- greedy decoding through the engine (batched, paged, preempting, mixed with sampled requests) gives
  the same tokens as the plain unbatched forward pass, for the tiny default model and a 150M-parameter
  random Llama (float32 for exact equality; bfloat16 reported as a token agreement rate);
- kernel.launch spans nest under the engine's prefill/decode_step spans;
- the cuda_oom fault fails a request with PyTorch's own out-of-memory error (a real failing allocation);
- a real `gpuobs serve --device DEV` subprocess serves its own kernel-launch counters (backend triton on
  CUDA) and counts the cuda_oom fault in `gpuobs_cuda_errors_total` on its /metrics;
- with every launch sampled, its `gpuobs_kernel_duration_seconds` histogram has samples of backend triton
  (torch on the CPU) after one request: the GPU time per kernel the serving dashboard shows.
Throughput: N requests of 128 prompt tokens and 128 generated tokens each, all submitted at once with
max_batch_size N, for N in 1, 16, 64; generated tokens per second from first submission to last token.

    python bench/serving_engine_gpu.py [--device cuda] [--quick] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from gpuobs.serving.engine import Engine, EngineConfig, GenerationRequest, SamplingParams
from gpuobs.serving.model import TINY_CONFIG, write_random_model

BENCH_CONFIG = replace(
    TINY_CONFIG, vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
    num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=4096, torch_dtype="bfloat16",
)


class _Done:
    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.final: Any = None
        self.event = threading.Event()

    def __call__(self, ev: Any) -> None:
        if ev.finished:
            self.final = ev
            self.event.set()
        else:
            self.tokens.append(ev.token_id)


def _greedy_reference(model: Any, prompt: list[int], n: int) -> list[int]:
    out = list(prompt)
    for _ in range(n):
        out.append(int(model.forward_dense(out)[-1].argmax()))
    return out[len(prompt):]


def _submit_all(engine: Engine, prompts: list[list[int]], params: list[SamplingParams]) -> list[_Done]:
    done = []
    for i, (p, sp) in enumerate(zip(prompts, params, strict=True)):
        d = _Done()
        engine.submit(GenerationRequest(f"r{i}-{time.monotonic_ns()}", p, sp), d)
        done.append(d)
    for d in done:
        if not d.event.wait(300):
            raise TimeoutError("request did not finish")
    return done


def equality(model_dir: Path, device: str, dtype: str, kernels: str, n_prompts: int, n_tokens: int,
             num_kv_blocks: int) -> dict[str, int]:
    """Identical greedy requests / all greedy requests, tokens before divergence, preemptions."""
    engine = Engine(EngineConfig(model_dir=str(model_dir), device=device, dtype=dtype, kernels=kernels,
                                 num_kv_blocks=num_kv_blocks, block_size=16, max_batch_size=8))
    engine.start()
    try:
        rng = random.Random(1)
        vocab = min(engine.model.config.vocab_size, 256)
        prompts = [[rng.randrange(vocab) for _ in range(rng.randint(3, 60))] for _ in range(n_prompts)]
        greedy = SamplingParams(max_tokens=n_tokens, ignore_eos=True)
        sampled = [SamplingParams(max_tokens=n_tokens, temperature=1.0, seed=i, ignore_eos=True)
                   for i in range(n_prompts)]
        params = [greedy if i % 4 else sampled[i] for i in range(n_prompts)]
        done = _submit_all(engine, prompts, params)
        req_eq = req = tok_eq = tok = 0
        for i, (p, d) in enumerate(zip(prompts, done, strict=True)):
            if i % 4 == 0:
                continue
            ref = _greedy_reference(engine.model, p, n_tokens)
            req += 1
            req_eq += int(d.tokens == ref)
            # agreement up to the first divergence (after it the contexts differ)
            same = 0
            for a, b in zip(d.tokens, ref, strict=False):
                if a != b:
                    break
                same += 1
            tok += n_tokens
            tok_eq += same
        return {"requests_equal": req_eq, "requests": req, "tokens_agreeing": tok_eq, "tokens": tok,
                "preemptions": engine.stats().preemptions_total}
    finally:
        engine.stop(drain=False, timeout_s=5)


def throughput(
    model_dir: Path, device: str, kernels: str, batch: int, prompt_len: int, gen: int
) -> dict[str, float]:
    blocks = batch * ((prompt_len + gen) // 16 + 2) + 8
    engine = Engine(EngineConfig(model_dir=str(model_dir), device=device, kernels=kernels, block_size=16,
                                 max_batch_size=batch, num_kv_blocks=blocks,
                                 bucket_wait_s=(0.0, 0.0, 0.0, 0.0), max_prefill_tokens=64 * prompt_len))
    engine.start()
    try:
        rng = random.Random(2)
        params = [SamplingParams(max_tokens=gen, ignore_eos=True)] * batch
        warm = [[rng.randrange(256) for _ in range(prompt_len)] for _ in range(batch)]
        _submit_all(engine, warm, params)  # the same shapes once: Triton compiles every variant here
        prompts = [[rng.randrange(256) for _ in range(prompt_len)] for _ in range(batch)]
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t0 = time.monotonic()
        done = _submit_all(engine, prompts, params)
        elapsed = time.monotonic() - t0
        decode_s = [(d.final.metrics.finished - d.final.metrics.first_token) / max(1, gen - 1) for d in done]
        ttft = [d.final.metrics.first_token - d.final.metrics.arrival for d in done]
        return {"tokens_per_s": batch * gen / elapsed, "elapsed_s": elapsed,
                "decode_step_ms": 1000 * sorted(decode_s)[len(decode_s) // 2],
                "ttft_ms": 1000 * sorted(ttft)[len(ttft) // 2]}
    finally:
        engine.stop(drain=False, timeout_s=5)


def spans_nest(model_dir: Path, device: str) -> tuple[int, int]:
    """(kernel.launch spans under a prefill/decode_step span, kernel.launch spans) with sampling at 100%."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from gpuobs.exporters.inprocess import launcher as launcher_mod

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    old = launcher_mod.default_launcher()
    launcher_mod.set_default_launcher(launcher_mod.KernelLauncher(sample_rate=1.0, tracer_provider=provider))
    try:
        engine = Engine(EngineConfig(model_dir=str(model_dir), device=device, num_kv_blocks=64),
                        tracer_provider=provider)
        engine.start()
        tracer = provider.get_tracer("bench")
        from opentelemetry import trace

        with tracer.start_as_current_span("request") as span:
            d = _Done()
            params = SamplingParams(max_tokens=3, ignore_eos=True)
            engine.submit(GenerationRequest("traced", [1, 2, 3, 4], params,
                                            trace_context=trace.set_span_in_context(span)), d)
            d.event.wait(60)
        engine.stop(drain=False, timeout_s=5)
        launcher_mod.default_launcher().resolve_ready(raise_errors=False)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
            time.sleep(0.2)
            launcher_mod.default_launcher().resolve_ready(raise_errors=False)
    finally:
        launcher_mod.set_default_launcher(old)
    spans = exporter.get_finished_spans()
    steps = {s.context.span_id for s in spans if s.name in ("prefill", "decode_step")}
    launches = [s for s in spans if s.name == "kernel.launch"]
    nested = sum(1 for s in launches if s.parent is not None and s.parent.span_id in steps)
    return nested, len(launches)


def oom_fault(model_dir: Path, device: str) -> str:
    engine = Engine(EngineConfig(model_dir=str(model_dir), device=device, num_kv_blocks=64,
                                 enable_fault_injection=True))
    engine.start()
    try:
        engine.faults.inject("cuda_oom", at_allocation=1)
        d = _Done()
        engine.submit(GenerationRequest("oom", [1, 2, 3], SamplingParams(max_tokens=4)), d)
        d.event.wait(60)
        return str(d.final.error or "")
    finally:
        engine.stop(drain=False, timeout_s=5)


def _http(method: str, url: str, body: Any = None, timeout: float = 60) -> tuple[int, str]:
    import json
    import urllib.error
    import urllib.request

    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:  # not listening yet
        return 0, str(exc)


def serve_counters(workdir: Path, device: str) -> dict[str, Any]:
    """A real `gpuobs serve` on DEVICE: its /metrics shows its kernel launches, the injected CUDA OOM and
    (every launch sampled) the durations of its launches by backend."""
    import os
    import socket
    import subprocess
    import sys

    from prometheus_client.parser import text_string_to_metric_families

    from gpuobs.names import kernel as kn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    log = (workdir / "serve.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "gpuobs", "serve", "--device", device, "--port", str(port),
                             "--enable-fault-injection"],
                            stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
                            env={**os.environ, kn.SPAN_SAMPLE_ENV: "1"})
    try:
        deadline = time.monotonic() + 300
        while _http("GET", base + "/ready", timeout=5)[0] != 200:
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (workdir / 'serve.log').read_text()[-800:]
                raise RuntimeError(f"serve did not become ready: {tail}")
            time.sleep(0.5)
        prompt = {"model": "gpuobs-tiny-llama", "prompt": "one two three", "max_tokens": 8}
        ok = _http("POST", base + "/v1/completions", prompt)[0]
        _http("POST", base + "/admin/faults/cuda_oom", {"at_allocation": 1})
        failed = _http("POST", base + "/v1/completions", prompt)[0]
        _http("DELETE", base + "/admin/faults")
        text = _http("GET", base + "/metrics")[1]
    finally:
        proc.terminate()
        proc.wait(30)
    launches: dict[str, float] = {}
    errors: dict[str, float] = {}
    timed: dict[str, float] = {}
    timed_s: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            for suffix, into in (("_count", timed), ("_sum", timed_s)):
                if sample.name == kn.KERNEL_DURATION.native + suffix:
                    key = sample.labels.get(kn.BACKEND_LABEL, "?")
                    into[key] = into.get(key, 0.0) + sample.value
            if sample.name == kn.KERNEL_LAUNCHES.exposed_native + "_total" or \
                    sample.name == kn.KERNEL_LAUNCHES.exposed_native:
                key = sample.labels.get("backend", "?")
                launches[key] = launches.get(key, 0.0) + sample.value
            if sample.name in (kn.CUDA_ERRORS.exposed_native, kn.CUDA_ERRORS.exposed_native + "_total"):
                key = sample.labels.get("name", "?")
                errors[key] = errors.get(key, 0.0) + sample.value
    return {"ok_status": ok, "oom_status": failed, "launches_by_backend": launches, "cuda_errors": errors,
            "timed_by_backend": timed, "timed_seconds_by_backend": timed_s}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--quick", action="store_true", help="small sizes (a CPU dry run)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    dev = args.device
    rows: list[tuple[str, str]] = []
    results: dict[str, Any] = {"device": dev, "date": time.strftime("%Y-%m-%d"),
                               "gpu": torch.cuda.get_device_name(0) if dev.startswith("cuda") else "cpu",
                               "torch": torch.__version__}
    tmp = Path(tempfile.mkdtemp(prefix="serving-bench-"))
    from gpuobs.serving.model import ensure_tiny_model

    tiny = ensure_tiny_model(tmp)
    small = replace(BENCH_CONFIG, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, vocab_size=512)
    bench_cfg = small if args.quick else BENCH_CONFIG
    t = time.monotonic()
    medium = write_random_model(tmp / "bench-llama", bench_cfg, seed=3)
    from safetensors.torch import load_file

    n_params = sum(int(v.numel()) for v in load_file(str(medium / "model.safetensors")).values())
    results["bench_model_params"] = n_params
    print(f"wrote a {n_params / 1e6:.0f}M-parameter random Llama in {time.monotonic() - t:.1f}s", flush=True)
    n_tok = 8 if args.quick else 32

    def guard(name: str, fn: Any) -> Any:
        t0 = time.monotonic()
        try:
            out = fn()
        except Exception as exc:  # one failing part must not lose the other figures of a GPU run
            print(f"{name}: FAILED {type(exc).__name__}: {exc}", flush=True)
            rows.append((name, f"FAILED {type(exc).__name__}: {str(exc)[:80]}"))
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
            return None
        print(f"{name}: {out} ({time.monotonic() - t0:.1f}s)", flush=True)
        return out

    for label, model_dir, dtype, blocks in (
        ("equal tiny fp32", tiny, "float32", 16),  # few blocks: preemption by recompute happens
        ("equal 150M fp32", medium, "float32", 40),
        ("agree 150M bf16", medium, "bfloat16", 400),
    ):
        r = guard(label, lambda md=model_dir, dt=dtype, b=blocks: equality(md, dev, dt, "kernels", 12, n_tok,
                                                                            b))
        if r is not None:
            results[label] = r
            rows.append((label, f"{r['requests_equal']}/{r['requests']} identical, {r['tokens_agreeing']}/"
                                f"{r['tokens']} tokens, {r['preemptions']} preemptions"))
    r = guard("spans", lambda: spans_nest(tiny, dev))
    if r is not None:
        results["spans"] = {"kernel_launch_under_step": r[0], "kernel_launch": r[1]}
        rows.append(("kernel.launch under step spans", f"{r[0]}/{r[1]}"))
    r = guard("oom", lambda: oom_fault(tiny, dev))
    if r is not None:
        results["oom_error"] = r
        rows.append(("cuda_oom fault error", r[:90]))
    r = guard("serve counters", lambda: serve_counters(tmp, dev))
    if r is not None:
        results["serve_counters"] = r
        rows.append(("serve /metrics: launches, CUDA errors",
                     f"{r['launches_by_backend']}; {r['cuda_errors']} (answers {r['ok_status']}, "
                     f"{r['oom_status']})"))
        backend = "triton" if dev.startswith("cuda") else "torch"
        timed = r["timed_by_backend"]
        means = {b: f"{1e6 * r['timed_seconds_by_backend'][b] / n:.1f} us" for b, n in timed.items() if n}
        verdict = "ok" if timed.get(backend, 0) > 0 else f"FAILED: no {backend} samples"
        rows.append(("serve /metrics: kernel durations", f"{verdict}; timed {timed}, mean {means}"))
    table: list[tuple[str, int, str, dict[str, float]]] = []
    batches = (1, 4) if args.quick else (1, 16, 64)
    plen, gen = (16, 8) if args.quick else (128, 128)
    for batch in batches:
        for backend in ("kernels", "reference"):
            r = guard(f"tput {backend} b{batch}",
                      lambda b=batch, k=backend: throughput(medium, dev, k, b, plen, gen))
            if r is not None:
                table.append(("150M bf16" if dev != "cpu" else "150M fp32", batch, backend, r))
                results[f"throughput_{backend}_b{batch}"] = r
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    print()
    print(f"{'check':34} result")
    for name, value in rows:
        print(f"{name:34} {value}")
    print()
    print(f"{'model':10} {'batch':>5} {'ops':10} {'tokens/s':>10} {'decode step ms':>15} {'TTFT ms':>9}")
    for model, batch, backend, r in table:
        ops = "Triton" if backend == "kernels" else "PyTorch"
        print(f"{model:10} {batch:>5} {ops:10} {r['tokens_per_s']:>10.0f} {r['decode_step_ms']:>15.2f} "
              f"{r['ttft_ms']:>9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
