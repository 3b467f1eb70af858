"""`gpuobs serve --supervise`: run the serving worker as a child process and restart it when it crashes
or when its `/health` has answered 503 (engine dead or stalled) for longer than a threshold.

Restarts back off exponentially (reset after the worker has run for a while) and stop after
`max_crash_loop` crashes in a row (exit 1 with the reason), are counted, logged as
JSON, and exposed by the worker itself as `gpuobs_serving_worker_restarts_total`: each new worker
gets the count in `GPUOBS_WORKER_RESTARTS`. A usage error (2) is not a crash and ends supervision; a
clean exit (0) the supervisor did not ask for is restarted like a crash. SIGTERM/SIGINT sent to the
supervisor are forwarded to the worker, which drains and exits. The health watch does for a bare
process what the kubelet's livenessProbe does for a pod (deploy/serving).
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from types import FrameType

from gpuobs.serving.stat_loggers import RESTARTS_ENV

__all__ = ["BackoffPolicy", "HealthWatch", "Supervisor", "describe_exit", "health_url"]

logger = logging.getLogger(__name__)

# A usage error (2) cannot heal by restarting. A clean exit (0) that the supervisor did not ask for is a
# worker stopped behind its back (SIGTERM'd alone, which now drains and exits 0): the service must come back.
NO_RESTART_CODES = (2,)


@dataclass(frozen=True)
class BackoffPolicy:
    """Delay before restart n (0-based): initial_s * factor**n, at most max_s; reset after a stable run."""

    initial_s: float = 0.5
    factor: float = 2.0
    max_s: float = 30.0
    reset_after_s: float = 60.0
    max_restarts: int | None = None
    # a crash loop (a shadowed package, a port in use, a broken model) ends instead of restarting forever:
    # after this many crashes in a row, each before `reset_after_s` of running, the supervisor gives up
    max_crash_loop: int = 5

    def delay(self, consecutive: int) -> float:
        return float(min(self.max_s, self.initial_s * self.factor ** max(0, consecutive)))


@dataclass(frozen=True)
class HealthWatch:
    """Restart the worker once `url` (its /health) has answered 503, or not answered in `timeout_s`, for
    `unhealthy_after_s` in a row; polled every `period_s`. A refused connection (not listening yet) does
    not count: a worker that is starting or gone is the exit status's business."""

    url: str
    unhealthy_after_s: float = 30.0
    period_s: float = 2.0
    timeout_s: float = 5.0
    stop_grace_s: float = 10.0


def health_url(address: str, port: int) -> str:
    """The worker's /health as the supervisor on the same host reaches it (a wildcard address -> loopback)."""
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(address, address)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/health"


def _probe(url: str, timeout_s: float) -> str | None:
    """None when healthy or not listening; else why the worker is unhealthy."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            resp.read()
            return None
    except urllib.error.HTTPError as exc:
        if exc.code != 503:
            return None
        try:
            problems = json.loads(exc.read() or b"{}").get("problems") or []
        except (ValueError, OSError, http.client.HTTPException):  # a body cut short still answered 503
            problems = []
        return "; ".join(str(p) for p in problems) or "/health answered 503"
    except TimeoutError:
        return f"/health did not answer in {timeout_s:g} s"
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            return f"/health did not answer in {timeout_s:g} s"
        return None  # refused or unreachable: not listening (yet)
    except (OSError, http.client.HTTPException):
        # reset, or an answer cut short (a worker killed mid-reply): going away is the exit status's business
        return None


class _HealthTracker:
    """How long the worker has been unhealthy without a break."""

    def __init__(self, watch: HealthWatch) -> None:
        self.watch = watch
        self.next_at = time.monotonic() + watch.period_s
        self.bad_since: float | None = None

    def verdict(self) -> str | None:
        """Poll when due; the reason once the worker has been unhealthy past the threshold, else None."""
        now = time.monotonic()
        if now < self.next_at:
            return None
        self.next_at = now + self.watch.period_s
        reason = _probe(self.watch.url, self.watch.timeout_s)
        if reason is None:
            self.bad_since = None
            return None
        if self.bad_since is None:
            self.bad_since = now
            logger.warning("worker unhealthy: %s", reason, extra={"event": "worker_unhealthy"})
        if now - self.bad_since >= self.watch.unhealthy_after_s:
            return reason
        return None


def describe_exit(returncode: int) -> str:
    """'exit code 1' or 'signal SIGKILL' for a Popen return code."""
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM if the supervisor dies, so no worker is orphaned (Linux)."""
    if sys.platform != "linux":
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return


class Supervisor:
    """Runs `argv` as the worker and restarts it on crashes until stopped."""

    def __init__(
        self,
        argv: Sequence[str],
        policy: BackoffPolicy | None = None,
        env: dict[str, str] | None = None,
        health: HealthWatch | None = None,
    ) -> None:
        self.argv = list(argv)
        self.policy = policy or BackoffPolicy()
        self.health = health
        self.env = dict(os.environ if env is None else env)
        self.restarts = 0
        self.child: subprocess.Popen[bytes] | None = None
        self._stop = threading.Event()
        # Reentrant: the SIGTERM handler runs `stop` on the main thread, which may hold it around a spawn.
        self._lock = threading.RLock()

    def _spawn(self) -> subprocess.Popen[bytes]:
        env = dict(self.env)
        env[RESTARTS_ENV] = str(self.restarts)
        child = subprocess.Popen(self.argv, env=env, preexec_fn=_die_with_parent)
        logger.info(
            "worker started", extra={"event": "worker_started", "pid": child.pid, "restarts": self.restarts}
        )
        return child

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop supervising and pass `sig` to the worker."""
        self._stop.set()
        with self._lock:
            child = self.child
        if child is not None and child.poll() is None:
            child.send_signal(sig)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        logger.info("supervisor got %s: stopping the worker", signal.Signals(signum).name)
        self.stop(signal.SIGTERM)

    def install_signal_handlers(self) -> None:
        """SIGTERM, SIGINT and SIGHUP (a closed terminal, a process manager's reload) all stop the worker
        with its drain; SIGHUP's default ends the supervisor at once and the worker with it, undrained."""
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)

    def run(self, grace_s: float = 20.0) -> int:
        """Supervise until stopped or the worker exits cleanly; returns the last exit status (>= 0)."""
        consecutive = 0
        while True:
            with self._lock:
                self.child = self._spawn()
                child = self.child
            if self._stop.is_set() and child.poll() is None:
                child.send_signal(signal.SIGTERM)  # a stop that landed during the spawn saw no child yet
            started = time.monotonic()
            tracker = _HealthTracker(self.health) if self.health is not None else None
            unhealthy: str | None = None
            while child.poll() is None:
                if self._stop.wait(0.2):
                    break
                unhealthy = tracker.verdict() if tracker is not None else None
                if unhealthy is not None:
                    self._stop_unhealthy(child, unhealthy)
                    break
            if self._stop.is_set():
                try:
                    code = child.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    child.kill()
                    code = child.wait()
                logger.info("worker stopped (%s)", describe_exit(code), extra={"event": "worker_stopped"})
                return 0 if code in (0, -signal.SIGTERM, -signal.SIGINT) else abs(code)
            code = child.returncode
            if code in NO_RESTART_CODES and unhealthy is None:
                logger.info(
                    "worker exited with %s; not restarting",
                    describe_exit(code),
                    extra={"event": "worker_exited"},
                )
                return code
            if time.monotonic() - started >= self.policy.reset_after_s:
                consecutive = 0
            if consecutive >= self.policy.max_crash_loop:
                logger.error(
                    "worker crash-looped: %d restarts in a row ended within %.0f s (last: %s); giving up",
                    consecutive,
                    self.policy.reset_after_s,
                    describe_exit(code) if unhealthy is None else f"unhealthy: {unhealthy}",
                    extra={"event": "worker_gave_up", "restarts": self.restarts},
                )
                return 1
            if self.policy.max_restarts is not None and self.restarts >= self.policy.max_restarts:
                logger.error(
                    "worker crashed (%s); giving up after %d restarts",
                    describe_exit(code),
                    self.restarts,
                    extra={"event": "worker_gave_up"},
                )
                return 1
            delay = self.policy.delay(consecutive)
            consecutive += 1
            self.restarts += 1
            why = describe_exit(code) if unhealthy is None else f"unhealthy: {unhealthy}"
            logger.error(
                "worker %s (%s); restart %d in %.1f s",
                "crashed" if unhealthy is None else "stopped",
                why,
                self.restarts,
                delay,
                extra={"event": "worker_crashed", "restarts": self.restarts, "exit": why},
            )
            if self._stop.wait(delay):
                return 0

    def _stop_unhealthy(self, child: subprocess.Popen[bytes], reason: str) -> None:
        """SIGTERM a worker that stayed unhealthy (it drains what it can), SIGKILL after the grace time."""
        assert self.health is not None
        logger.error(
            "worker unhealthy for %.0f s (%s); stopping it",
            self.health.unhealthy_after_s,
            reason,
            extra={"event": "worker_unhealthy_restart", "pid": child.pid},
        )
        child.terminate()
        try:
            child.wait(timeout=self.health.stop_grace_s)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
