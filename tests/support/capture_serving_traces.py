"""Regenerate the incident cases whose spans are captured from the reference serving stack on this CPU.

`gpuobs serve` (the embedded tiny model, fault injection on) exports its spans over OTLP/HTTP to a
real receiver on loopback, which writes them as the Collector's file exporter does; the server's JSON
log is saved beside them. The spans of the server's own scopes are kept (the HTTP front end, the
engine, the kernel launcher), not the web framework's per-route spans, and not the `/admin/faults`
requests nor the log's `fault_injected` lines: a case carries only what a real incident leaves.
Run: `.venv/bin/python tests/support/capture_serving_traces.py` from the repository root.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from gpuobs.names import logs as log_fields  # noqa: E402
from gpuobs.names import spans as sp  # noqa: E402
from support.otlp import OtlpReceiver  # noqa: E402
from support.serve import ServeProcess, http_json  # noqa: E402

INCIDENTS = ROOT / "tests" / "rca" / "incidents"
MODEL = "gpuobs-tiny-llama"
SCOPES = {sp.TRACER_HTTP, sp.TRACER_ENGINE, sp.TRACER_KERNELS}


def _complete(server: ServeProcess, tag: str) -> None:
    body = {"model": MODEL, "prompt": f"capture {tag}", "max_tokens": 4, "temperature": 0, "ignore_eos": True}
    status, answer = http_json("POST", f"{server.url}/v1/completions", body, timeout=60)
    if status != 200:
        raise RuntimeError(f"completion {tag}: {status} {answer}")


def _own_spans(request: dict[str, Any]) -> dict[str, Any] | None:
    """One OTLP/JSON export request with only the server's own scopes, or None when nothing is left."""
    kept = []
    for rs in request.get("resourceSpans", []):
        scopes = [ss for ss in rs.get("scopeSpans", []) if ss.get("scope", {}).get("name") in SCOPES]
        if scopes:
            kept.append({**rs, "scopeSpans": scopes})
    return {"resourceSpans": kept} if kept else None


def _write_case(name: str, top: str, origin: str, receiver: OtlpReceiver, server: ServeProcess) -> None:
    folder = INCIDENTS / name
    (folder / "traces").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "spans.jsonl"
        receiver.write_otlp_json(raw)
        requests = [_own_spans(json.loads(line)) for line in raw.read_text().splitlines() if line]
    lines = [json.dumps(r, separators=(",", ":")) for r in requests if r]
    (folder / "traces" / "otlp-spans.json").write_text("".join(line + "\n" for line in lines))
    log = [
        line
        for line in server.logs().splitlines()
        if line.startswith("{") and json.loads(line).get(log_fields.EVENT) != "fault_injected"
    ]
    (folder / "gpuobs-serve.jsonl").write_text("".join(line + "\n" for line in log))
    (folder / "expected.json").write_text(json.dumps({"top": top, "origin": origin}) + "\n")


def kernel_slowdown() -> None:
    """20 normal completions, then 10 with every model step 150 ms slower (the slow_kernel fault)."""
    with tempfile.TemporaryDirectory() as tmp, OtlpReceiver() as receiver, ServeProcess(
        Path(tmp), "--enable-fault-injection", "--otlp-endpoint", receiver.url,
        env={"OTEL_BSP_SCHEDULE_DELAY": "100"}, grpc=False,
    ) as server:  # fmt: skip
        for i in range(20):
            _complete(server, f"base {i}")
        http_json("POST", f"{server.url}/admin/faults/slow_kernel", {"delay_s": 0.15})
        for i in range(10):
            _complete(server, f"slow {i}")
        http_json("DELETE", f"{server.url}/admin/faults/slow_kernel")
        receiver.wait_for(lambda spans: sum(s["name"] == sp.SPAN_DECODE_STEP for s in spans) >= 90)
        _write_case(
            "kernel_slowdown_serving",
            "kernel_slowdown",
            "captured from gpuobs serve on CPU: 20 normal completions, then 10 under the slow_kernel "
            "fault (every model step 150 ms longer, batch size 1 throughout); the server's OTLP spans "
            "(its own scopes) and JSON log, injection markers removed",
            receiver,
            server,
        )


if __name__ == "__main__":
    kernel_slowdown()
