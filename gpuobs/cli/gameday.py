"""`gpuobs gameday`: break the stack on purpose, watch detection, diagnosis and recovery, measure MTTR."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import typer
from rich.live import Live
from rich.table import Table

from gpuobs.cli.render import console, emit_json, note
from gpuobs.errors import InputError

__all__ = ["GamedayDisplay", "register", "run_with_display"]

_HELP = "\n\n".join(
    [
        "Run chaostoolkit experiments (chaos/experiments/, or files you name) against the embedded local "
        "stack (gpuobs serve --supervise, gpuobs export on a simulated node, a Prometheus on loopback when "
        "installed) or against a stack you name with --serving-url and friends. Each experiment checks its "
        "steady state, injects its fault, waits for detection, asks gpuobs diagnose for the expected "
        "signature, and waits for recovery; rollbacks always run. Writes each chaostoolkit journal, "
        "gameday.md and a self-contained gameday.html to --out.",
        "Examples:  gpuobs gameday serving-worker-sigkill serving-cuda-oom  |  gpuobs gameday --list  |  "
        "gpuobs gameday --dry-run  |  gpuobs gameday --serving-url http://127.0.0.1:8000 --serve-log "
        "serve.log serving-worker-sigkill",
        "Targets must be on the allowlist (loopback by default; --allow-host adds one). "
        "Exit codes: 0 every experiment passed, 1 one failed, 2 bad input, 74 the reports could not be "
        "written (a full disk: the outcomes are printed), 130 interrupted.",
    ]
)

_PHASES = ("fault", "detected", "diagnosed", "recovered")


class GamedayDisplay:
    """A live table: one row per experiment, the seconds from the fault to each phase as they happen."""

    def __init__(self, names: list[str], named_stack: str | None = None) -> None:
        self.rows: dict[str, dict[str, str]] = {n: {"state": "waiting"} for n in names}
        self.faults: dict[str, float] = {}
        # a stack named with --serving-url is not started: the title says which one the faults go to
        self.stack = f"the stack at {named_stack}" if named_stack else "starting the local stack"
        self._lock = threading.Lock()

    def on_event(self, experiment: str, phase: str, at: float, detail: Any) -> None:
        with self._lock:
            if experiment == "stack":
                self.stack = "local stack ready" if phase == "ready" else "starting the local stack"
                return
            row = self.rows.setdefault(experiment, {})
            if phase == "start":
                row["state"] = "steady state?"
            elif phase == "fault":
                self.faults[experiment] = at
                row["state"] = "fault injected"
                row["fault"] = "0.00"
            elif phase in _PHASES:
                row[phase] = f"{at - self.faults.get(experiment, at):.2f}"
                row["state"] = phase
                if phase == "diagnosed" and detail:
                    row["signature"] = str(detail)
            elif phase == "done":
                row["state"] = "[green]passed[/]" if detail else "[red]FAILED[/]"

    def render(self) -> Table:
        table = Table(title=f"gpuobs game-day ({self.stack}); seconds from the fault", header_style="bold")
        for col in ("experiment", "state", *_PHASES, "signature"):
            table.add_column(col)
        with self._lock:
            for name, row in self.rows.items():
                table.add_row(
                    name, row.get("state", ""), *(row.get(p, "") for p in _PHASES), row.get("signature", "")
                )
        return table


class _LogFile(logging.FileHandler):
    """chaostoolkit's log file: a write that fails (a full disk) is kept as one reason, said at the end, not a
    "--- Logging error ---" traceback on the console for every line after it."""

    failed: str = ""

    def handleError(self, record: logging.LogRecord) -> None:
        self._keep(sys.exc_info()[1])

    def close(self) -> None:
        try:
            super().close()  # flushes what is buffered: the last write that can fail
        except OSError as exc:
            self._keep(exc)

    def _keep(self, error: BaseException | None) -> None:
        if not self.failed:
            self.failed = getattr(error, "strerror", None) or str(error) or "a write failed"


def _log_chaostoolkit_to(path: Path) -> _LogFile:
    """chaostoolkit's own log lines go to a file in the output folder, not between the live table's lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = _LogFile(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    chaos_log = logging.getLogger("chaostoolkit")
    chaos_log.handlers = [handler]
    chaos_log.setLevel(logging.INFO)
    chaos_log.propagate = False
    return handler


def run_with_display(experiments: list[Path], out: Path, quiet: bool, **kwargs: Any) -> Any:
    """Run the game-day, with the live table unless `quiet`; returns the GamedayResult."""
    from gpuobs.chaos.gameday.session import run_gameday

    target = kwargs.get("target")
    display = GamedayDisplay([p.stem for p in experiments], target.serving_url if target else None)
    # Before any stack starts: a folder that cannot be made or written is the user's to fix.
    _check_out_folder(out)
    try:
        log_file = _log_chaostoolkit_to(out / "chaostoolkit.log")
    except OSError as exc:
        reason = exc.strerror or exc
        raise InputError(f"--out {out}: cannot write the game-day's files there: {reason}") from None
    if quiet:
        result = run_gameday(experiments, out, listener=display.on_event, **kwargs)
    else:
        with Live(display.render(), console=console, refresh_per_second=4) as live:

            def on_event(experiment: str, phase: str, at: float, detail: Any) -> None:
                display.on_event(experiment, phase, at, detail)
                live.update(display.render())

            result = run_gameday(experiments, out, listener=on_event, **kwargs)
    log_file.close()
    if log_file.failed:
        result.log_problem = f"{log_file.baseFilename}: lines lost: {log_file.failed}"
    return result


# The flag of each setting of a named stack (StackTarget's configuration keys): the one table the checks below
# read, for what was given without --serving-url and for which flag a bad target came from.
_STACK_FLAGS = {
    "serving_url": "--serving-url",
    "exporter_url": "--exporter-url",
    "prometheus_url": "--prometheus-url",
    "serve_log": "--serve-log",
    "kernel_log": "--kernel-log",
    "exporter_log": "--exporter-log",
    "grpc_target": "--grpc-target",
}


def _check_target(config: dict[str, Any]) -> None:
    """The named stack's URLs and gRPC target, checked as its actions will check them, before a folder is made
    or the live table opens: a typo or a host off the allowlist is one line naming the flag."""
    from gpuobs.chaos.safety import SafetyError, check_grpc_target, check_url

    if not config.get("serving_url"):
        given = [flag for key, flag in _STACK_FLAGS.items() if config.get(key)]
        if given:
            verb = "describe" if len(given) > 1 else "describes"
            raise InputError(
                f"{', '.join(given)} {verb} a stack named with --serving-url; without it the game-day runs "
                "its own local stack"
            )
        return
    for key in ("serving_url", "exporter_url", "prometheus_url", "grpc_target"):
        value = config.get(key)
        if not value:
            continue
        check = check_grpc_target if key == "grpc_target" else check_url
        try:
            check(str(value), config)
        except SafetyError as exc:
            raise InputError(f"{_STACK_FLAGS[key]}: {exc}") from None


def _check_prometheus(prometheus_url: str) -> None:
    """A named stack's --prometheus-url, asked before any fault: a server that is not a Prometheus is one line
    naming the flag (its alerts would never mark a detection, silently); a Prometheus without gpuobs's
    alerting rules is a warning, since the game day still measures recovery without them."""
    from chaoslib.exceptions import ActivityFailed

    from gpuobs.chaos.prometheus.api import check_prometheus
    from gpuobs.dashboards.options import Options
    from gpuobs.dashboards.rules.alerts import alert_rules

    try:
        warning = check_prometheus(prometheus_url.rstrip("/"), {r.name for r in alert_rules(Options())})
    except ActivityFailed as exc:
        raise InputError(f"--prometheus-url: {exc}") from None
    if warning:
        note(warning)


def _check_out_folder(out: Path) -> None:
    """What a run refuses about --out before any stack starts, and a dry run says without making anything: a
    file where the folder should be, or a folder (or the nearest one above it) this user cannot write in."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: a file, not a folder for the game-day's journals and reports")
    folder = out.absolute()
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise InputError(f"--out {out}: {folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"--out {out}: cannot write the game-day's files there: {folder} is not writable")


def _activity_label(activity: dict[str, Any]) -> str:
    """`target.func` for gpuobs's own activities (`gpuobs.chaos.serving.actions` -> `serving`), the module
    as given for anyone else's (`os.system`), the activity's name for a process or HTTP provider."""
    provider = activity.get("provider") or {}
    module, func = str(provider.get("module") or ""), str(provider.get("func") or "")
    if not (module and func):
        return str(activity.get("name") or provider.get("type") or "?")
    parts = module.split(".")
    return f"{parts[-2] if module.startswith('gpuobs.chaos.') and len(parts) > 2 else module}.{func}"


def _dry_run(experiments: list[Path]) -> list[dict[str, Any]]:
    from gpuobs.chaos.gameday.runner import expected_of, load_experiment

    plan = []
    for path in experiments:
        exp = load_experiment(path)
        actions = [_activity_label(a) for a in exp.get("method", []) if a.get("type") == "action"]
        plan.append(
            {
                "experiment": path.stem,
                "expected_signature": expected_of(exp).get("expected_signature"),
                "actions": actions,
                "dry_run": True,
            }
        )
    return plan


def gameday(
    experiments: list[str] = typer.Argument(
        None,
        help="Experiment names, files (.json, .yaml or .yml, as `chaos run` reads them) or folders of them "
        "(default: all; k8s-* only with a Kubernetes API configured).",
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Folder for journals and reports [default: ./gameday-TIME]."
    ),
    serving_url: str | None = typer.Option(
        None, "--serving-url", help="Target this gpuobs serve, not a local stack."
    ),
    exporter_url: str = typer.Option("", "--exporter-url", help="Its exporter (with --serving-url)."),
    prometheus_url: str = typer.Option("", "--prometheus-url", help="Its Prometheus (with --serving-url)."),
    serve_log: str = typer.Option("", "--serve-log", help="Its JSON log file, for the diagnosis."),
    kernel_log: str = typer.Option("", "--kernel-log", help="The kernel-log file node faults write."),
    exporter_log: str = typer.Option(
        "", "--exporter-log", help="The exporter's log file, for the diagnosis."
    ),
    grpc_target: str = typer.Option(
        "", "--grpc-target", help="Its gRPC Predict as host:port (serve --grpc-port), for gRPC faults."
    ),
    allow_host: list[str] = typer.Option([], "--allow-host", help="Add a host to the target allowlist."),
    no_prometheus: bool = typer.Option(False, "--no-prometheus", help="Do not start Prometheus locally."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and print the plan; touch nothing."),
    list_only: bool = typer.Option(False, "--list", help="List the experiments and exit."),
    json_out: bool = typer.Option(False, "--json", help="Print the outcomes as a JSON list."),
) -> None:
    from chaoslib.exceptions import ChaosException

    from gpuobs.chaos.gameday.runner import expected_of, find_experiments, load_experiment, split_runnable
    from gpuobs.chaos.gameday.stack import StackTarget
    from gpuobs.chaos.safety import DEFAULT_ALLOWED_HOSTS

    try:
        paths = find_experiments(experiments or [])
    except FileNotFoundError as exc:
        raise InputError(str(exc)) from None
    if list_only:
        rows = []
        for p in paths:
            try:
                exp = load_experiment(p)
            except ChaosException as exc:
                raise InputError(str(exc)) from None
            rows.append(
                {
                    "experiment": p.stem,
                    "expected_signature": expected_of(exp).get("expected_signature"),
                    "title": exp.get("title"),
                }
            )
        if json_out:
            emit_json(rows)
        else:
            for r in rows:
                console.print(f"[bold]{r['experiment']}[/]  {r['expected_signature'] or '-'}  {r['title']}")
        return
    hosts = [*DEFAULT_ALLOWED_HOSTS, *allow_host]
    stack = StackTarget(
        serving_url or "", exporter_url, prometheus_url, serve_log, kernel_log, exporter_log, grpc_target
    )
    _check_target(stack.configuration() | {"gpuobs_allowed_hosts": ",".join(hosts)})
    target = stack if serving_url else None
    paths, skipped = split_runnable(paths, named=bool(experiments))
    if skipped:
        note(
            f"left out {', '.join(p.stem for p in skipped)}: no Kubernetes API is configured (no kubeconfig, "
            "not in a pod); name an experiment to run it anyway"
        )
    if dry_run:
        if out is not None:
            _check_out_folder(out)
        try:
            plan = _dry_run(paths)
        except ChaosException as exc:
            raise InputError(str(exc)) from None
        if json_out:
            emit_json(plan)
        else:
            for row in plan:
                console.print(
                    f"would run [bold]{row['experiment']}[/]: {', '.join(row['actions'])} "
                    f"-> expect {row['expected_signature'] or '-'}"
                )
        return
    if target is not None and prometheus_url:
        _check_prometheus(prometheus_url)
    out = out or Path(f"gameday-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        for p in paths:  # a bad file is said before the live table opens (run_gameday checks them too)
            load_experiment(p)
        result = run_with_display(
            paths, out, json_out, target=target, prometheus=not no_prometheus, allowed_hosts=hosts
        )
    except ChaosException as exc:
        raise InputError(str(exc)) from None
    except RuntimeError as exc:
        raise InputError(f"the local stack did not start: {exc}") from None
    if result.interrupted:
        console.print(f"[yellow]stopped:[/] {result.interrupted}; reports cover the experiments that ran")
    if json_out:
        emit_json([o.to_row() for o in result.outcomes])
    else:
        if result.markdown is not None:
            console.print(f"reports: {result.markdown} {result.html}; journals in {out}")
        for o in result.outcomes:
            if not o.passed:
                console.print(f"[red]{o.experiment} failed:[/] {'; '.join(o.failures)}")
    problems = [o.journal_problem for o in result.outcomes if o.journal_problem]
    for problem in [*problems, result.log_problem]:
        if problem:
            note(f"not written: {problem}")
    if result.write_error is not None:  # the outcomes above are all there is: the reports did not fit
        raise result.write_error
    if result.interrupted:
        raise typer.Exit(130)
    if not all(o.passed for o in result.outcomes):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("gameday", help=_HELP)(gameday)
