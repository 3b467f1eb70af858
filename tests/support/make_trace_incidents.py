"""Write the span- and metric-series incident cases (OTLP JSON traces, timestamped /metrics text).

The spans follow what `gpuobs serve` emits, with the names and keys of `gpuobs.names.spans`: a SERVER
request span `chat <model>` with gen_ai attributes, its `queue` span, per-batch `prefill` / `decode_step`
spans with `gpuobs.*` attributes (resource `service.name`, `host.name`, `k8s.pod.name`), in the OpenTelemetry
Collector file-exporter format (one ExportTraceServiceRequest JSON object per line). Deterministic
(seeded). Run: `.venv/bin/python tests/support/make_trace_incidents.py`; the outputs are committed.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from gpuobs.names import gpu as g
from gpuobs.names import serving as s
from gpuobs.names import spans as sp

ROOT = Path(__file__).resolve().parents[2]
INCIDENTS = ROOT / "tests" / "rca" / "incidents"
T0 = 1_795_980_000.0  # 2026-11-29T19:20:00Z


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


SERVER, INTERNAL = 2, 1  # OTLP span kinds


class Trace:
    """Spans as serve emits them: HTTP request spans, queue/prefill/decode_step in the engine's."""

    def __init__(self, seed: int, resource: dict[str, Any]) -> None:
        self.rng = random.Random(seed)
        self.resource = resource
        self.spans: dict[str, list[dict[str, Any]]] = {}

    def _id(self, n: int) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(n))

    def _span(
        self,
        scope: str,
        name: str,
        kind: int,
        start: float,
        dur: float,
        parent: dict[str, Any] | None,
        attrs: dict[str, Any],
    ) -> dict[str, Any]:
        span = {
            "traceId": parent["traceId"] if parent else self._id(32),
            "spanId": self._id(16),
            "parentSpanId": parent["spanId"] if parent else "",
            "name": name,
            "kind": kind,
            "startTimeUnixNano": str(int(start * 1e9)),
            "endTimeUnixNano": str(int((start + dur) * 1e9)),
            "attributes": [_attr(k, v) for k, v in attrs.items()],
            "status": {},
        }
        self.spans.setdefault(scope, []).append(span)
        return span

    def request(
        self, start: float, dur: float, request_id: str, model: str, prompt_tokens: int = 64
    ) -> dict[str, Any]:
        """The HTTP front end's SERVER span of one chat completion."""
        return self._span(
            sp.TRACER_HTTP,
            sp.request_span_name(sp.OPERATION_CHAT, model),
            SERVER,
            start,
            dur,
            None,
            {
                sp.GEN_AI_OPERATION_NAME: sp.OPERATION_CHAT,
                sp.GEN_AI_PROVIDER_NAME: sp.PROVIDER_GPUOBS,
                sp.GEN_AI_REQUEST_MODEL: model,
                sp.GEN_AI_RESPONSE_ID: request_id,
                sp.GEN_AI_USAGE_INPUT_TOKENS: prompt_tokens,
                sp.GEN_AI_RESPONSE_MODEL: model,
                sp.GPUOBS_TENANT: "default",
                sp.GPUOBS_PRIORITY: 0,
            },
        )

    def queue(
        self, start: float, dur: float, request: dict[str, Any], request_id: str, bucket: str = "short"
    ) -> dict[str, Any]:
        return self._span(
            sp.TRACER_ENGINE,
            sp.SPAN_QUEUE,
            INTERNAL,
            start,
            dur,
            request,
            {
                sp.GEN_AI_REQUEST_ID: request_id,
                sp.GPUOBS_BUCKET: bucket,
                sp.GPUOBS_TENANT: "default",
                sp.GPUOBS_PRIORITY: 0,
            },
        )

    def prefill(
        self, start: float, dur: float, request: dict[str, Any] | None, batch: int, tokens: int, bucket: str
    ) -> dict[str, Any]:
        """A prefill batch: child of the batch's first traced request."""
        attrs = {sp.GPUOBS_BATCH_SIZE: batch, sp.GPUOBS_PREFILL_TOKENS: tokens, sp.GPUOBS_BUCKET: bucket}
        return self._span(sp.TRACER_ENGINE, sp.SPAN_PREFILL, INTERNAL, start, dur, request, attrs)

    def decode_step(
        self, start: float, dur: float, request: dict[str, Any] | None, batch: int, gpu: int | None = None
    ) -> dict[str, Any]:
        attrs: dict[str, Any] = {sp.GPUOBS_BATCH_SIZE: batch}
        if gpu is not None:
            attrs[sp.GPU_INDEX] = gpu
        return self._span(sp.TRACER_ENGINE, sp.SPAN_DECODE_STEP, INTERNAL, start, dur, request, attrs)

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = []
        resource = {"attributes": [_attr(k, v) for k, v in self.resource.items()]}
        for scope, spans in self.spans.items():
            for chunk in range(0, len(spans), 50):
                request = {
                    "resourceSpans": [
                        {
                            "resource": resource,
                            "scopeSpans": [{"scope": {"name": scope}, "spans": spans[chunk : chunk + 50]}],
                        }
                    ]
                }
                lines.append(json.dumps(request, separators=(",", ":")))
        path.write_text("\n".join(lines) + "\n")


def _header(name: str, kind: str, help_text: str) -> list[str]:
    return [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]


RES = {
    sp.SERVICE_NAME: "gpuobs-serve",
    sp.HOST_NAME: "gpu-node-09",
    sp.K8S_POD_NAME: "serve-llama-0",
    sp.K8S_NAMESPACE_NAME: "serving",
}


def head_of_line() -> None:
    tr = Trace(1, RES)
    model = "llama-3-8b"
    t = T0
    # normal traffic: short prompts, prefill ~40 ms, queue ~2 ms
    for i in range(30):
        tokens = 300 + tr.rng.randrange(200)
        req = tr.request(t, 0.9, f"r{i}", model, tokens)
        tr.queue(t, 0.002 + tr.rng.random() * 0.003, req, f"r{i}", "short")
        tr.prefill(t + 0.005, 0.035 + tr.rng.random() * 0.01, req, 1, tokens, "short")
        t += 0.5
    # one 7,600-token prompt, prefilled in one piece
    long_req = tr.request(t, 4.1, "r-long", model, 7600)
    tr.queue(t, 0.003, long_req, "r-long", "long")
    prefill_start, prefill_dur = t + 0.004, 2.4
    tr.prefill(prefill_start, prefill_dur, long_req, 1, 7600, "long")
    end = prefill_start + prefill_dur
    first = None
    for j in range(8):  # short requests that arrived meanwhile wait until the long prefill ends
        arrive = t + 0.1 + j * 0.25
        req = tr.request(arrive, end - arrive + 0.6, f"s{j}", model, 360)
        first = first or req
        tr.queue(arrive, end - arrive + 0.01, req, f"s{j}", "short")
    tr.prefill(end + 0.012, 0.06, first, 8, 2900, "short")
    tr.write(INCIDENTS / "head_of_line_blocking" / "traces" / "otlp-spans.json")


def straggler() -> None:
    res = dict(RES, **{"k8s.pod.name": "serve-llama-70b-0"})
    tr = Trace(2, res)
    t = T0
    for _step in range(40):
        for gpu in range(8):
            base = 0.021 + tr.rng.random() * 0.002
            dur = base * (2.3 if gpu == 5 else 1.0)
            tr.decode_step(t, dur, None, 48, gpu)
        t += 0.06
    tr.write(INCIDENTS / "straggler_gpu" / "traces" / "otlp-spans.json")


def noisy_neighbor() -> None:
    tr = Trace(3, RES)
    t = T0
    for i in range(60):
        slow = i >= 30  # the neighbour's batch job starts half-way
        dur = (0.11 if slow else 0.045) + tr.rng.random() * 0.01
        req = tr.request(t, dur, f"q{i}", "llama-3-8b")
        tr.queue(t, 0.002, req, f"q{i}")
        t += 1.0
    tr.write(INCIDENTS / "noisy_neighbor" / "traces" / "otlp-spans.json")
    uuid = "GPU-1f0e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
    proc = g.PROCESS_MEMORY_USED.native
    rows = _header(proc, "gauge", "Device memory used by a process.")
    for pod, ns, pid, name, gib in (
        ("serve-llama-0", "serving", 3111, "python3", 21.5),
        ("batch-embed-7d5f9", "research", 9120, "python", 30.0),
    ):
        ms = int((T0 + 45) * 1000)
        rows.append(
            f'{proc}{{container="main",gpu="0",host="gpu-node-09",'
            f'model_name="NVIDIA H100 80GB HBM3",namespace="{ns}",pid="{pid}",pod="{pod}",'
            f'process_name="{name}",uuid="{uuid}"}} {gib * 2**30:.1f} {ms}'
        )
    (INCIDENTS / "noisy_neighbor" / "metrics.prom").write_text("\n".join(rows) + "\n")


def queue_saturation() -> None:
    waiting_name, running_name, usage_name = (
        s.NUM_REQUESTS_WAITING.native,
        s.NUM_REQUESTS_RUNNING.native,
        s.KV_CACHE_USAGE.native,
    )
    rows = _header(waiting_name, "gauge", "Number of requests waiting to be processed.")
    labels = 'engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"'
    for i in range(16):  # one scrape every 15 s for 4 minutes, waiting climbs from 2 to ~90
        waiting = 2 + i * 6
        rows.append(f"{waiting_name}{{{labels}}} {float(waiting)} {int((T0 + 15 * i) * 1000)}")
    rows += _header(running_name, "gauge", "Number of requests in model execution batches.")
    for i in range(16):
        rows.append(f"{running_name}{{{labels}}} 256.0 {int((T0 + 15 * i) * 1000)}")
    rows += _header(usage_name, "gauge", "KV-cache usage. 1 means 100 percent usage.")
    for i in range(16):
        rows.append(f"{usage_name}{{{labels}}} {0.71 + 0.01 * (i % 3):.2f} {int((T0 + 15 * i) * 1000)}")
    folder = INCIDENTS / "queue_saturation"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vllm-metrics.prom").write_text("\n".join(rows) + "\n")
    tr = Trace(4, RES)
    for i in range(40):
        start = T0 + 60 + i * 4
        wait = 1.5 + i * 0.35
        req = tr.request(start, wait + 2.0, f"w{i}", "meta-llama/Llama-3.1-8B-Instruct")
        tr.queue(start, wait, req, f"w{i}", "medium")
    tr.write(folder / "traces" / "otlp-spans.json")


def leak() -> None:
    """dcgm-exporter FB_USED (MiB) of one GPU, federated every minute for 3 hours, then the app's OOM."""
    rng = random.Random(5)
    labels = (
        'gpu="0",UUID="GPU-5d1c9a7e-2b3f-4e8d-9c0a-6f7e8d9c0b1a",pci_bus_id="00000000:18:00.0",'
        'device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node-21",container="server",'
        'namespace="serving",pod="chat-api-6b7c8d9e-lp2xk"'
    )
    fb_used = g.MEMORY_USED.dcgm
    assert fb_used is not None
    rows = _header(fb_used, "gauge", "Framebuffer memory used (in MiB).")
    start = T0 - 3 * 3600
    for minute in range(181):
        mib = 52_000 + minute * 150 + rng.randrange(-120, 120)
        rows.append(f"{fb_used}{{{labels}}} {min(mib, 80_900)} {int((start + 60 * minute) * 1000)}")
    folder = INCIDENTS / "cuda_oom_leak"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dcgm-fb-used.prom").write_text("\n".join(rows) + "\n")
    (folder / "server.log").write_text(
        "2026-11-29 19:20:31,118 ERROR request 88120 failed\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 48.00 MiB. GPU 0 has a total capacity "
        "of 79.19 GiB of which 22.31 MiB is free. Including non-PyTorch memory, this process has 79.15 GiB "
        "memory in use. Of the allocated memory 78.21 GiB is allocated by PyTorch, and 96.13 MiB is "
        "reserved by PyTorch but unallocated.\n"
    )


def thermal_straggler() -> None:
    """Straggler spans on GPU 5 and, in the same window, GPU 5's thermal slowdown from the exporter."""
    res = dict(RES, **{"k8s.pod.name": "serve-llama-70b-1", "host.name": "gpu-node-12"})
    tr = Trace(6, res)
    t = T0
    for _step in range(40):
        for gpu in range(8):
            dur = (0.021 + tr.rng.random() * 0.002) * (1.9 if gpu == 5 else 1.0)
            tr.decode_step(t, dur, None, 48, gpu)
        t += 0.06
    folder = INCIDENTS / "thermal_throttling_straggler"
    tr.write(folder / "traces" / "otlp-spans.json")
    clock, temp = g.CLOCK_EVENT_ACTIVE.native, g.GPU_TEMPERATURE.native
    rows = _header(clock, "gauge", "1 while the clock-event reason is active.")
    temps = _header(temp, "gauge", "GPU die temperature.")
    for k in range(5):
        ms = int((T0 - 60 + 15 * k) * 1000)
        for gpu in range(8):
            labels = (
                f'gpu="{gpu}",host="gpu-node-12",model_name="NVIDIA H100 80GB HBM3",'
                + f'uuid="GPU-0c{gpu:02d}-77aa"'
            )
            hot = gpu == 5
            reason = f'{{{labels},reason="hw_thermal_slowdown"}}'
            rows.append(f"{clock}{reason} {1 if hot else 0} {ms}")
            temps.append(f"{temp}{{{labels}}} {89.0 + k if hot else 61.0} {ms}")
    (folder / "exporter-metrics.prom").write_text("\n".join(rows + temps) + "\n")


def kv_metrics_only() -> None:
    """vLLM metrics only: KV cache full for 5 minutes, preemptions climbing, the queue growing."""
    labels = 'engine="0",model_name="Qwen/Qwen2.5-32B-Instruct"'
    rows = []
    for name, kind, fn in (
        (s.KV_CACHE_USAGE.native, "gauge", lambda i: 0.97 + 0.002 * (i % 10)),
        (s.NUM_PREEMPTIONS.exposed_native, "counter", lambda i: 1200.0 + 31.0 * i),
        (s.NUM_REQUESTS_WAITING.native, "gauge", lambda i: 4.0 + 2.5 * i),
        (s.NUM_REQUESTS_RUNNING.native, "gauge", lambda i: 40.0 - (i % 4)),
    ):
        rows.append(f"# TYPE {name.removesuffix('_total')} {kind}")
        for i in range(21):
            rows.append(f"{name}{{{labels}}} {fn(i):.3f} {int((T0 + 15 * i) * 1000)}")
    folder = INCIDENTS / "kv_cache_exhausted_metrics_only"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vllm-metrics.prom").write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    thermal_straggler()
    kv_metrics_only()
    leak()
    head_of_line()
    straggler()
    noisy_neighbor()
    queue_saturation()
