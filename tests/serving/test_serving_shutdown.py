"""Shutdown of a real `gpuobs serve` with a real signal while a long stream runs (issue 10 item 10, issue 9
item 3): the drain is bounded by `--drain-timeout-s`, the cut stream ends with an SSE error event and a log
line, and the process exits 0 as its help says, with no traceback."""

from __future__ import annotations

import http.client
import json
import signal
import threading
import time
from pathlib import Path

import pytest
from support.serve import ServeProcess, http_json

MODEL = "gpuobs-tiny-llama"
DRAIN_S = 2.0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_drains_then_cuts_a_long_stream_with_an_error_event(
    tmp_path: Path, sig: signal.Signals
) -> None:
    proc = ServeProcess(
        tmp_path,
        "--enable-fault-injection",
        "--drain-timeout-s",
        str(DRAIN_S),
        "-E",
        "kv_cache_bytes=8388608",
        grpc=False,
    )
    with proc:
        # each step takes 0.2 s: 2000 tokens would take minutes, far past the drain
        status, body = http_json("POST", f"{proc.url}/admin/faults/slow_kernel", {"delay_s": 0.2})
        assert status == 200, body
        conn = http.client.HTTPConnection("127.0.0.1", proc.port, timeout=120)
        payload = {"model": MODEL, "prompt": "hi", "max_tokens": 2000, "stream": True, "ignore_eos": True}
        conn.request("POST", "/v1/completions", json.dumps(payload), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200
        events: list[str] = []
        first = threading.Event()

        def read() -> None:
            for raw in resp:
                line = raw.decode().strip()
                if line.startswith("data: "):
                    events.append(line[6:])
                    first.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert first.wait(60), "no first chunk"
        assert proc.proc is not None
        proc.proc.send_signal(sig)
        started = time.monotonic()
        code = proc.proc.wait(timeout=60)
        took = time.monotonic() - started
        reader.join(30)
    assert code == 0, proc.logs()[-3000:]
    assert took < 60
    assert events[-1] == "[DONE]", events[-3:]
    error = json.loads(events[-2])["error"]
    assert error["code"] == "shutting_down" and "drain" in error["message"]
    logs = proc.logs()
    assert "Traceback" not in logs and "CancelledError" not in logs, logs[-3000:]
    assert any(r.get("event") == "request_cut_by_shutdown" for r in proc.json_logs())
