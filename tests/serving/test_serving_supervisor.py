"""`gpuobs serve --supervise` as a real process tree: the worker is killed with real signals (and by the
engine's worker_crash fault) and comes back, restarts are counted and exposed, SIGTERM stops it all.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.procs import stop_process
from support.prometheus import free_port
from support.serve import ServeProcess, http_json

from gpuobs.serving.supervisor import BackoffPolicy, HealthWatch, Supervisor, describe_exit, health_url


def test_backoff_grows_and_caps() -> None:
    policy = BackoffPolicy(initial_s=0.5, factor=2, max_s=3)
    assert [policy.delay(n) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_describe_exit() -> None:
    assert describe_exit(1) == "exit code 1"
    assert describe_exit(-signal.SIGKILL) == "signal SIGKILL"


def test_supervisor_restarts_a_crashing_child_and_gives_up(tmp_path: Path) -> None:
    marker = tmp_path / "runs"
    script = (
        "import os, pathlib\n"
        f"p = pathlib.Path({str(marker)!r})\n"
        "p.write_text((p.read_text() if p.exists() else '') + os.environ['GPUOBS_WORKER_RESTARTS'])\n"
        "raise SystemExit(3)\n"
    )
    sup = Supervisor([sys.executable, "-c", script], BackoffPolicy(initial_s=0.05, max_s=0.1, max_restarts=3))
    started = time.monotonic()
    assert sup.run() == 1
    assert time.monotonic() - started < 20
    assert sup.restarts == 3
    assert marker.read_text() == "0123"  # each worker saw its restart count


def test_supervisor_does_not_restart_a_usage_error(tmp_path: Path) -> None:
    sup = Supervisor([sys.executable, "-c", "raise SystemExit(2)"], BackoffPolicy(initial_s=0.05))
    assert sup.run() == 2 and sup.restarts == 0


class HealthServer:
    """A real HTTP server on loopback whose /health answers `status` (what a worker's would); with `cut`, it
    announces the body's length and closes the connection before sending it (a worker killed mid-reply)."""

    def __init__(self, status: int, cut: bool = False) -> None:
        import http.server
        import json
        import threading

        answer = json.dumps({"status": "x", "problems": ["engine of m is dead: test"]}).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                if not cut:
                    self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                return

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/health"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_health_url_reaches_a_wildcard_address_over_loopback() -> None:
    assert health_url("0.0.0.0", 8000) == "http://127.0.0.1:8000/health"
    assert health_url("::", 8000) == "http://[::1]:8000/health"
    assert health_url("10.1.2.3", 81) == "http://10.1.2.3:81/health"


@pytest.mark.parametrize("cut", [False, True], ids=["answered-503", "503-body-cut-short"])
def test_supervisor_restarts_a_worker_whose_health_stays_503(cut: bool) -> None:
    """A 503 counts as unhealthy whether its body arrives whole or is cut short."""
    sick = HealthServer(503, cut=cut)
    try:
        watch = HealthWatch(sick.url, unhealthy_after_s=0.5, period_s=0.1, stop_grace_s=5)
        sup = Supervisor(
            [sys.executable, "-c", "import time; time.sleep(120)"],
            BackoffPolicy(initial_s=0.05, max_s=0.1, max_restarts=1),
            health=watch,
        )
        started = time.monotonic()
        assert sup.run() == 1  # restarted once, then gave up: each worker was stopped for its health
        assert sup.restarts == 1 and time.monotonic() - started < 60
    finally:
        sick.close()


@pytest.mark.parametrize("cut", [False, True], ids=["answered-200", "answer-cut-short"])
def test_supervisor_leaves_a_worker_it_cannot_call_unhealthy_alone(cut: bool) -> None:
    """A worker answering 200 is left alone; so is one whose /health reply is cut mid-body (a worker killed
    while answering, as `make test` once caught): that is a worker going away, not a crash of the
    supervisor's loop, which keeps watching."""
    import threading

    server = HealthServer(200, cut=cut)
    try:
        watch = HealthWatch(server.url, unhealthy_after_s=0.3, period_s=0.05)
        sup = Supervisor([sys.executable, "-c", "import time; time.sleep(120)"], health=watch)
        runner = threading.Thread(target=sup.run)
        runner.start()
        time.sleep(2.0)  # some forty probes, more than six times the threshold
        assert runner.is_alive(), "the supervisor's loop died"
        assert sup.restarts == 0 and sup.child is not None and sup.child.poll() is None
        sup.stop()
        runner.join(30)
        assert not runner.is_alive()
    finally:
        server.close()


def _worker(proc: ServeProcess) -> dict:
    status, body = http_json("GET", f"{proc.url}/health", timeout=5)
    assert status == 200
    return dict(body)


def _wait_new_worker(proc: ServeProcess, old_pid: int, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status, _ = http_json("GET", f"{proc.url}/ready", timeout=2)
            if status == 200:
                health = _worker(proc)
                if health["pid"] != old_pid:
                    return health
        except OSError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"no new worker after {timeout} s: {proc.logs()[-2000:]}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); check its state
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_supervised_worker_is_restarted_after_kill_and_crash(tmp_path: Path) -> None:
    proc = ServeProcess(
        tmp_path, "--supervise", "--enable-fault-injection", "-E", "kv_cache_bytes=8388608", grpc=False
    )
    with proc:
        first = _worker(proc)
        assert first["restarts"] == 0 and first["pid"] != proc.proc.pid  # type: ignore[union-attr]

        os.kill(first["pid"], signal.SIGKILL)  # a real crash: the kernel kills the worker
        second = _wait_new_worker(proc, first["pid"])
        assert second["restarts"] == 1
        assert "gpuobs_serving_worker_restarts_total 1.0" in proc.metrics()

        # the engine's own fault: the next model step logs a fatal CUDA error and the process dies
        status, _ = http_json(
            "POST", f"{proc.url}/admin/faults/worker_crash", {"mode": "signal", "signal": "SIGSEGV"}
        )
        assert status == 200
        # the connection dies with the worker, as it would with a real crash
        with contextlib.suppress(OSError):
            http_json(
                "POST",
                f"{proc.url}/v1/completions",
                {"model": "gpuobs-tiny-llama", "prompt": "boom", "max_tokens": 2},
                timeout=10,
            )
        third = _wait_new_worker(proc, second["pid"])
        assert third["restarts"] == 2
        assert "gpuobs_serving_worker_restarts_total 2.0" in proc.metrics()

        logs = proc.json_logs()
        crashes = [r for r in logs if r.get("event") == "worker_crashed"]
        assert [r["exit"] for r in crashes] == ["signal SIGKILL", "signal SIGSEGV"]
        assert any(r.get("event") == "worker_crash" and r.get("cuda_error_code") == 700 for r in logs)

        # SIGTERM to the supervisor stops the worker and exits 0
        assert proc.stop(timeout=30) == 0
        assert not _pid_alive(third["pid"])


def test_sighup_to_the_supervisor_drains_the_worker_and_exits_0(tmp_path: Path) -> None:
    """SIGHUP (a closed terminal, a process manager's reload) ended the supervisor at once, by its default
    action, and the worker went with it undrained; now it stops everything as SIGTERM does."""
    proc = ServeProcess(tmp_path, "--supervise", grpc=False)
    with proc:
        worker = _worker(proc)
        assert worker["supervised"] is True  # what the game-day's SIGKILL action asks before it kills
        assert stop_process(proc.proc, signal.SIGHUP, timeout=30) == 0  # type: ignore[arg-type]
        assert not _pid_alive(worker["pid"])
        logs = proc.json_logs()
        assert any("supervisor got SIGHUP" in str(r.get("msg")) for r in logs), logs[-5:]
        assert any(r.get("event") == "shutdown_drain" for r in logs), logs[-5:]


def test_supervised_worker_with_a_dead_engine_is_restarted(tmp_path: Path) -> None:
    proc = ServeProcess(
        tmp_path,
        "--supervise",
        "--unhealthy-restart-s",
        "3",
        "--enable-fault-injection",
        "-E",
        "kv_cache_bytes=8388608",
        grpc=False,
    )
    with proc:
        first = _worker(proc)
        status, _ = http_json("POST", f"{proc.url}/admin/faults/worker_crash", {"mode": "thread"})
        assert status == 200
        status, answer = http_json(
            "POST",
            f"{proc.url}/v1/completions",
            {"model": "gpuobs-tiny-llama", "prompt": "x", "max_tokens": 2},
        )
        assert status == 500 and "the engine died" in answer["error"]["message"]
        second = _wait_new_worker(proc, first["pid"])  # the process lived on; its /health said 503
        assert second["restarts"] == 1
        logs = proc.json_logs()
        stopped = [r for r in logs if r.get("event") == "worker_unhealthy_restart"]
        assert [r["pid"] for r in stopped] == [first["pid"]]
        (crash,) = [r for r in logs if r.get("event") == "worker_crashed"]
        assert crash["exit"].startswith(
            "unhealthy: engine of gpuobs-tiny-llama is dead: the engine loop raised"
        )
        assert proc.stop(timeout=30) == 0


def test_supervise_stops_on_a_usage_error(tmp_path: Path) -> None:
    port = free_port()
    started = time.monotonic()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuobs",
            "serve",
            "--supervise",
            "--port",
            str(port),
            "-E",
            "no_such_option=1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert "-E no_such_option: no such engine option" in out.stderr
    assert "worker_crashed" not in out.stderr
    assert time.monotonic() - started < 60


@pytest.mark.parametrize(
    "flag",
    [
        ["--scheduler", "lifo"],
        ["--port", "0"],
        ["--model", "/nonexistent"],
        ["--device", "tpu"],
        ["--log-level", "loud"],
        ["--port", "8000", "--grpc-port", "8000"],
        ["-E", "novalue"],
    ],
)
def test_serve_flags_are_validated(flag: list[str]) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gpuobs", "serve", *flag], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2
    assert "error" in out.stderr and "Traceback" not in out.stderr


def test_worker_does_not_outlive_a_killed_supervisor(tmp_path: Path) -> None:
    sup = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys; from gpuobs.serving.supervisor import Supervisor; "
                "Supervisor([sys.executable, '-c', 'import time; time.sleep(120)']).run()"
            ),
        ]
    )
    try:
        deadline = time.monotonic() + 30
        children: list[int] = []
        while not children and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                children = [
                    int(p) for p in Path(f"/proc/{sup.pid}/task/{sup.pid}/children").read_text().split()
                ]
            time.sleep(0.1)
        assert children, "the supervisor started no worker"
        os.kill(sup.pid, signal.SIGKILL)
        sup.wait(10)
        deadline = time.monotonic() + 10
        while _pid_alive(children[0]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _pid_alive(children[0])
    finally:
        if sup.poll() is None:
            sup.kill()
            sup.wait()


def test_ready_is_false_until_the_model_is_loaded_and_warmed(tmp_path: Path) -> None:
    proc = ServeProcess(tmp_path, grpc=False)
    assert proc.log_path.parent.is_dir()
    log = proc.log_path.open("ab")
    proc.proc = subprocess.Popen(proc.argv, stdout=log, stderr=subprocess.STDOUT, env=proc.env)
    try:
        seen: list[tuple[int, int]] = []  # (/health status, /ready status) while starting
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                health = http_json("GET", f"{proc.url}/health", timeout=2)[0]
                ready, body = http_json("GET", f"{proc.url}/ready", timeout=2)
            except OSError:
                time.sleep(0.02)
                continue
            seen.append((health, ready))
            if ready == 200:
                break
            assert body["ready"] is False
            time.sleep(0.02)
        assert seen and seen[-1] == (200, 200)
        assert (200, 503) in seen  # alive but not ready while the model loads and warms up
        warmed = [r for r in proc.json_logs() if r.get("msg") == "model loaded and warmed"]
        assert len(warmed) == 1
    finally:
        proc.stop()


def test_supervisor_gives_up_on_a_crash_loop_with_the_reason(caplog: pytest.LogCaptureFixture) -> None:
    """Crashes in a row without a stable run end supervision (exit 1) instead of restarting forever."""
    sup = Supervisor(
        [sys.executable, "-c", "raise SystemExit(7)"],
        BackoffPolicy(initial_s=0.05, max_s=0.1, max_crash_loop=3),
    )
    with caplog.at_level("ERROR", logger="gpuobs.serving.supervisor"):
        assert sup.run() == 1
    assert sup.restarts == 3
    assert any("crash-looped" in r.getMessage() and "exit code 7" in r.getMessage() for r in caplog.records)


def test_supervised_worker_is_not_shadowed_by_a_gpuobs_folder_in_the_working_directory(
    tmp_path: Path,
) -> None:
    """A ./gpuobs folder (a checkout, a results folder) must not replace the package in the worker."""
    shadow = tmp_path / "gpuobs"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise SystemExit(7)\n")
    (shadow / "__main__.py").write_text("raise SystemExit(7)\n")
    proc = ServeProcess(tmp_path, "--supervise", "-E", "kv_cache_bytes=8388608", grpc=False)
    proc.argv.insert(1, "-P")  # the supervisor itself runs as the installed `gpuobs` command would
    with proc:
        assert http_json("GET", f"{proc.url}/ready")[0] == 200
        assert "worker_crashed" not in proc.logs()
        assert proc.stop(timeout=60) == 0


def test_supervise_with_the_port_in_use_ends_instead_of_restarting_forever(tmp_path: Path) -> None:
    """A port in use crashes every worker the same way: the crash-loop bound ends it (issue 10 item 12)."""
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "gpuobs",
                "serve",
                "--supervise",
                "--port",
                str(port),
                "-E",
                "kv_cache_bytes=8388608",
            ],
            capture_output=True,
            text=True,
            timeout=400,
            cwd=tmp_path,
        )
    assert out.returncode != 0
    assert "crash-looped" in out.stderr or out.returncode == 2, out.stderr[-2000:]


def test_a_sigterm_during_a_spawn_stops_the_new_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SIGTERM handler runs `stop` on the main thread, which holds the child lock around a spawn: a
    signal landing there must neither deadlock nor leave the new worker running (made here by calling the
    handler from inside the spawn, as the signal would)."""
    import threading

    sup = Supervisor([sys.executable, "-c", "import time; time.sleep(120)"], BackoffPolicy(initial_s=0.05))
    spawn = sup._spawn

    def spawn_then_signalled() -> subprocess.Popen[bytes]:
        child = spawn()
        sup._on_signal(signal.SIGTERM, None)  # the handler, on this thread, before `self.child` is set
        return child

    monkeypatch.setattr(sup, "_spawn", spawn_then_signalled)
    result: list[int] = []
    runner = threading.Thread(target=lambda: result.append(sup.run(grace_s=20.0)), daemon=True)
    runner.start()
    runner.join(15)  # the worker sleeps 120 s: only a SIGTERM it was sent ends this in time
    assert not runner.is_alive(), "run() hung after a SIGTERM during a spawn"
    assert result == [0] and sup.child is not None and sup.child.returncode == -signal.SIGTERM
