"""`gpuobs serve --supervise`: run the serving worker as a child process and restart it when it crashes.

Restarts back off exponentially (reset after the worker has run for a while), are counted, logged as
JSON, and exposed by the worker itself as `gpuobs_serving_worker_restarts_total`: each new worker
gets the count in `GPUOBS_WORKER_RESTARTS`. A clean exit (0) or a usage error (2) is not a crash and
ends supervision; SIGTERM/SIGINT are forwarded to the worker, which drains and exits.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import FrameType

from gpuobs.serving.stat_loggers import RESTARTS_ENV

__all__ = ["BackoffPolicy", "Supervisor", "describe_exit"]

logger = logging.getLogger(__name__)

NO_RESTART_CODES = (0, 2)


@dataclass(frozen=True)
class BackoffPolicy:
    """Delay before restart n (0-based): initial_s * factor**n, at most max_s; reset after a stable run."""

    initial_s: float = 0.5
    factor: float = 2.0
    max_s: float = 30.0
    reset_after_s: float = 60.0
    max_restarts: int | None = None

    def delay(self, consecutive: int) -> float:
        return float(min(self.max_s, self.initial_s * self.factor ** max(0, consecutive)))


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
        self, argv: Sequence[str], policy: BackoffPolicy | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.argv = list(argv)
        self.policy = policy or BackoffPolicy()
        self.env = dict(os.environ if env is None else env)
        self.restarts = 0
        self.child: subprocess.Popen[bytes] | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

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
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    def run(self, grace_s: float = 20.0) -> int:
        """Supervise until stopped or the worker exits cleanly; returns the last exit status (>= 0)."""
        consecutive = 0
        while True:
            with self._lock:
                self.child = self._spawn()
                child = self.child
            started = time.monotonic()
            while child.poll() is None:
                if self._stop.wait(0.2):
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
            if code in NO_RESTART_CODES:
                logger.info(
                    "worker exited with %s; not restarting",
                    describe_exit(code),
                    extra={"event": "worker_exited"},
                )
                return code
            if time.monotonic() - started >= self.policy.reset_after_s:
                consecutive = 0
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
            logger.error(
                "worker crashed (%s); restart %d in %.1f s",
                describe_exit(code),
                self.restarts,
                delay,
                extra={"event": "worker_crashed", "restarts": self.restarts, "exit": describe_exit(code)},
            )
            if self._stop.wait(delay):
                return 0
