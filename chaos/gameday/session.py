"""One game-day: start (or point at) a stack, run the experiments in turn, write journal and reports."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpuobs.chaos.gameday.report import html_report, markdown_report
from gpuobs.chaos.gameday.runner import GamedayInterrupted, Listener, Outcome, load_experiment, run_one
from gpuobs.chaos.gameday.stack import LocalStack, StackTarget
from gpuobs.chaos.incident import current
from gpuobs.chaos.safety import check_grpc_target, check_url
from gpuobs.errors import GpuobsError
from gpuobs.output_files import write_texts

__all__ = ["GamedayResult", "run_gameday"]

logger = logging.getLogger(__name__)


@dataclass
class GamedayResult:
    """The outcomes and where the reports were written."""

    outcomes: list[Outcome] = field(default_factory=list)
    markdown: Path | None = None
    html: Path | None = None
    stack_s: float = 0.0
    interrupted: str = ""
    # The reports could not be written (a full disk at the end of a long game day): the outcomes are still
    # here for the CLI to print, and this is the error it ends with.
    write_error: GpuobsError | None = None
    log_problem: str = ""  # chaostoolkit's log file stopped taking lines (set by the CLI)


def _sigterm_as_interrupt(signum: int, frame: object) -> None:
    raise GamedayInterrupted("SIGTERM between experiments")


def run_gameday(
    experiments: Sequence[Path],
    out_dir: Path,
    target: StackTarget | None = None,
    listener: Listener | None = None,
    prometheus: bool = True,
    allowed_hosts: Sequence[str] = (),
    title: str = "gpuobs game-day",
) -> GamedayResult:
    """Run `experiments` against `target` (default: a fresh embedded local stack in out_dir/stack)."""
    import time

    for path in experiments:  # every file valid before a stack starts or a fault is injected
        load_experiment(path)
    result = GamedayResult()
    stack = None
    t0 = time.monotonic()
    if target is None:
        if listener is not None:
            listener("stack", "starting", time.time(), None)
        stack = LocalStack(out_dir / "stack", prometheus=prometheus)
        target = stack.start()
        if listener is not None:
            listener("stack", "ready", time.time(), target.configuration())
    result.stack_s = time.monotonic() - t0
    config = target.configuration()
    if allowed_hosts:
        config["gpuobs_allowed_hosts"] = ",".join(allowed_hosts)
    for key in ("serving_url", "exporter_url", "prometheus_url"):
        if config.get(key):
            check_url(str(config[key]), config)
    if config.get("grpc_target"):
        check_grpc_target(str(config["grpc_target"]), config)
    previous = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _sigterm_as_interrupt)  # chaoslib takes it over inside each experiment
    try:
        for path in experiments:
            result.outcomes.append(run_one(path, config, out_dir, listener))
    except GamedayInterrupted as exc:
        result.interrupted = str(exc)
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)
        current().undo_all()
        if stack is not None:
            stack.stop()
    markdown, html = out_dir / "gameday.md", out_dir / "gameday.html"
    try:
        write_texts(
            [(markdown, markdown_report(result.outcomes, title)), (html, html_report(result.outcomes, title))]
        )
    except GpuobsError as exc:
        result.write_error = exc
    else:
        result.markdown, result.html = markdown, html
    return result
