"""Shutdown of a real `gpuobs serve` with a real signal while a long stream runs (issue 10 item 10, issue 9
item 3): the drain is bounded by `--drain-timeout-s`, the cut stream ends with an SSE error event and a log
line, and the process exits 0 as its help says, with no traceback. Requests whose bytes reached the server
as its drain began are answered, not cut (the game-day's "accepted requests lost")."""

from __future__ import annotations

import http.client
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from support.serve import ServeProcess, http_json

MODEL = "gpuobs-tiny-llama"
DRAIN_S = 2.0


@pytest.mark.parametrize(
    "sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"]
)
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


def _wait_stopped(pid: int, timeout_s: float = 60.0) -> None:
    """Until the process is in state T (stopped by a signal): a condition, not a guess at a duration."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        # /proc/PID/stat: "pid (comm) state ..."; comm may hold spaces, the state follows the last ")"
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "T":
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} did not stop within {timeout_s:g} s")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc (Linux)")
@pytest.mark.parametrize("where", [("set-up",), ("backlog",), ("set-up", "backlog")], ids="+".join)
def test_requests_that_reached_the_server_as_its_drain_began_are_answered(
    tmp_path: Path, where: tuple[str, ...]
) -> None:
    """The race of the SIGTERM game-day made to happen every time. The drain_stop fault stops the process
    (SIGSTOP) right as its drain begins, as a loaded host deschedules it; while it is stopped, a request is
    written on a connection the server had already set up ("set-up"), and/or on a connection the kernel
    accepts into the listen backlog ("backlog"). The clients count them as accepted (connected and sent),
    so after SIGCONT each must get a complete answer. uvicorn's own shutdown cut both: it closes the
    listener (the kernel resets the backlog) and every connection with no request read yet (closing with
    unread bytes sends a reset)."""
    proc = ServeProcess(tmp_path, "--enable-fault-injection", grpc=False)
    payload = json.dumps({"model": MODEL, "prompt": "drain", "max_tokens": 4, "ignore_eos": True})
    headers = {"Content-Type": "application/json"}
    conns = {name: http.client.HTTPConnection("127.0.0.1", proc.port, timeout=60) for name in where}
    with proc:
        assert proc.proc is not None
        pid = proc.proc.pid
        status, body = http_json("POST", f"{proc.url}/admin/faults/drain_stop", {})
        assert status == 200, body
        if "set-up" in conns:
            conns["set-up"].connect()
            # asyncio accepts connections and makes their protocols in arrival order: once a request on a
            # later connection is answered, the server holds this one as a connection with no request yet
            status, body = http_json("GET", f"{proc.url}/health")
            assert status == 200, body
        try:
            proc.proc.send_signal(signal.SIGTERM)
            _wait_stopped(pid)
            if "backlog" in conns:
                conns["backlog"].connect()  # the kernel completes the handshake for the stopped server
            for conn in conns.values():
                conn.request("POST", "/v1/completions", payload, headers)
        finally:
            os.kill(pid, signal.SIGCONT)
        answers: dict[str, object] = {}
        for name, conn in conns.items():
            try:
                resp = conn.getresponse()
                answers[name] = (resp.status, json.loads(resp.read())["choices"][0]["finish_reason"])
            except (OSError, http.client.HTTPException) as exc:
                answers[name] = f"lost: {type(exc).__name__}: {exc}"
            finally:
                conn.close()
        code = proc.proc.wait(timeout=60)
    assert answers == dict.fromkeys(where, (200, "length")), (answers, proc.logs()[-3000:])
    assert code == 0, proc.logs()[-3000:]
    logs = proc.logs()
    assert "Traceback" not in logs, logs[-3000:]
    assert any(r.get("event") == "drain_stop" for r in proc.json_logs())
