"""Run chaostoolkit experiments against a stack and time each phase: fault, detection, diagnosis, recovery.

Each experiment runs through chaoslib (the same engine as `chaos run`) with rollbacks always played.
The extension's activities mark the phases in the incident record; a background load samples latency
and errors for the report's curves and counts accepted requests that were lost. All times are
measured from the fault: detect_s, diagnose_s and recover_s are times to detection, diagnosis and
recovery; mttr_s is the time until the incident is both diagnosed and recovered.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpuobs import json_input
from gpuobs.chaos.incident import current
from gpuobs.chaos.load import LoadGenerator, Sample
from gpuobs.errors import GpuobsError
from gpuobs.output_files import write_failure, write_texts

__all__ = [
    "EXPERIMENTS_DIR",
    "GamedayInterrupted",
    "Outcome",
    "expected_of",
    "find_experiments",
    "kubernetes_configured",
    "load_experiment",
    "needs_kubernetes",
    "run_one",
    "split_runnable",
]

logger = logging.getLogger(__name__)

EXPERIMENTS_DIR = Path(__file__).resolve().parent.parent / "experiments"
Listener = Callable[[str, str, float, Any], None]


class GamedayInterrupted(Exception):
    """Ctrl-C or SIGTERM arrived during an experiment: its rollbacks ran, the game-day stops."""


@dataclass
class Outcome:
    """What one experiment showed; `to_row()` is the `--json` object."""

    experiment: str
    title: str
    expected_signature: str | None
    diagnosed_signature: str | None = None
    detect_s: float | None = None
    diagnose_s: float | None = None
    recover_s: float | None = None
    mttr_s: float | None = None
    alert: str | None = None
    alert_s: float | None = None
    requests_lost: int = 0
    passed: bool = False
    failures: list[str] = field(default_factory=list)
    started: float = 0.0
    marks: dict[str, float] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    journal: str = ""
    journal_problem: str = ""  # why no journal was written (a full disk), when none was
    status: str = ""

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        row.pop("samples")
        row["requests"] = len(self.samples)
        return row


# The experiment files chaostoolkit runs: JSON, or YAML by these suffixes.
_YAML_SUFFIXES = (".yaml", ".yml")
_EXPERIMENT_SUFFIXES = (".json", *_YAML_SUFFIXES)


def find_experiments(names: Sequence[str]) -> list[Path]:
    """Experiment files by path, by folder (its .json, .yaml and .yml files) or by name in chaos/experiments/
    (all of them when `names` is empty)."""
    if not names:
        return sorted(EXPERIMENTS_DIR.glob("*.json"))
    out = []
    for name in names:
        path = Path(name)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix.lower() in _EXPERIMENT_SUFFIXES)
            if not found:
                forms = ", ".join(_EXPERIMENT_SUFFIXES)
                raise FileNotFoundError(f"no experiment file ({forms}) in folder {name}")
            out.extend(found)
            continue
        if not path.is_file():
            path = EXPERIMENTS_DIR / (name if name.endswith(".json") else f"{name}.json")
        if not path.is_file():
            known = ", ".join(p.stem for p in sorted(EXPERIMENTS_DIR.glob("*.json")))
            raise FileNotFoundError(f"no experiment {name!r}; known: {known}")
        out.append(path)
    return out


def needs_kubernetes(path: Path) -> bool:
    """Whether an experiment calls the Kubernetes activities (it then needs a reachable API server)."""
    return "gpuobs.chaos.k8s" in path.read_text()


def kubernetes_configured() -> bool:
    """In a pod (the service host variable) or with a kubeconfig file: the client has an API to call."""
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return True
    paths = os.environ.get("KUBECONFIG", "").split(os.pathsep) if os.environ.get("KUBECONFIG") else []
    return any(Path(p).expanduser().is_file() for p in [*paths, "~/.kube/config"])


def split_runnable(paths: Sequence[Path], named: bool) -> tuple[list[Path], list[Path]]:
    """(experiments to run, experiments left out): the default set leaves out the Kubernetes ones when no
    API is configured, since they could only fail; experiments named by the user always run."""
    if named or kubernetes_configured():
        return list(paths), []
    skipped = [p for p in paths if needs_kubernetes(p)]
    return [p for p in paths if p not in skipped], skipped


def load_experiment(path: Path) -> dict[str, Any]:
    """Read and validate one experiment (JSON, or YAML by its suffix, as `chaos run` reads them) with
    chaoslib; raises chaoslib's InvalidExperiment, naming the file, for a file that cannot be read, is not an
    object or is not a valid experiment."""
    import yaml
    from chaoslib.exceptions import InvalidExperiment
    from chaoslib.experiment import ensure_experiment_is_valid

    as_yaml = path.suffix.lower() in _YAML_SUFFIXES
    form = "YAML" if as_yaml else "JSON"
    try:
        text = path.read_text(encoding="utf-8")
        experiment = yaml.safe_load(text) if as_yaml else json_input.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as exc:
        reason = " ".join(str(exc).split())  # YAML's errors run over several lines
        raise InvalidExperiment(f"{path}: not a readable {form} experiment ({reason})") from None
    except RecursionError:  # PyYAML composes nested collections recursively
        raise InvalidExperiment(f"{path}: not a readable {form} experiment (nested too deeply)") from None
    if not isinstance(experiment, dict):
        kind = "nothing" if experiment is None else type(experiment).__name__
        raise InvalidExperiment(f"{path}: an experiment is a {form} object (a mapping), got {kind}")
    shape = _shape_problem(experiment)
    if shape:
        raise InvalidExperiment(f"{path}: {shape}")
    try:
        ensure_experiment_is_valid(experiment)
    except InvalidExperiment as exc:
        raise InvalidExperiment(f"{path}: {exc}") from None
    return experiment


def _shape_problem(experiment: dict[str, Any]) -> str | None:
    """What in an experiment is not of the shape chaoslib's validator assumes (it raises TypeError or
    AttributeError on `method: 5` or a number among the activities), or None."""
    hypothesis = experiment.get("steady-state-hypothesis")
    if hypothesis is not None and not isinstance(hypothesis, dict):
        return "steady-state-hypothesis must be an object with a title and probes"
    blocks = [("method", experiment.get("method")), ("rollbacks", experiment.get("rollbacks"))]
    if isinstance(hypothesis, dict):
        blocks.append(("steady-state-hypothesis probes", hypothesis.get("probes")))
    for name, activities in blocks:
        if activities is None:
            continue
        if not isinstance(activities, list):
            return f"{name} must be a list of activities, got {type(activities).__name__}"
        for n, activity in enumerate(activities, 1):
            if not isinstance(activity, dict):
                return f"{name}: activity {n} must be an object, got {type(activity).__name__}"
            provider = activity.get("provider")
            if provider is not None and not isinstance(provider, dict):
                return f"{name}: activity {n} ({activity.get('name', '?')}): provider must be an object"
    return None


def expected_of(experiment: dict[str, Any]) -> dict[str, Any]:
    """The experiment's gpuobs extension: expected_signature, recover_within_s, max_requests_lost."""
    for ext in experiment.get("extensions", []):
        if ext.get("name") == "gpuobs":
            return dict(ext)
    return {}


def _watch_alerts(prometheus_url: str, stop: threading.Event) -> None:
    """Mark the first alert that starts firing after the fault (Prometheus detection, beside the probes)."""
    from chaoslib.exceptions import ActivityFailed

    from gpuobs.chaos.prometheus.api import firing_alerts

    def firing() -> set[str]:
        try:
            return firing_alerts(prometheus_url, timeout=2)
        except ActivityFailed:  # Prometheus busy, gone or answering oddly: this watcher only adds a figure
            return set()

    before = firing()
    while not stop.wait(0.1):
        if current().since_fault() is None:
            before = firing()
            continue
        new = firing() - before
        if new:
            current().mark("alert", sorted(new)[0])
            return


_WRAPPED = "chaoslib.exceptions.ActivityFailed: "


def _last_line(exception: Any) -> str:
    """The exception's own line from a journal's traceback lines ("chaoslib...ActivityFailed: why")."""
    lines = exception if isinstance(exception, list) and exception else ["?"]
    text = str(lines[-1]).strip()
    while text.startswith(_WRAPPED):  # chaoslib wraps an activity's ActivityFailed in one more
        text = text.removeprefix(_WRAPPED)
    return text[:300]


def _journal_failures(journal: dict[str, Any], slo_violations: list[str] | None = None) -> list[str]:
    """What went wrong, from the journal; `slo_violations` (the steady-state probe's last reasons) say why
    a steady state did not hold, which the journal records only as False."""
    failures = []
    why = f" ({'; '.join(slo_violations)[:300]})" if slo_violations else ""
    if journal.get("status") != "completed":
        failures.append(f"experiment {journal.get('status')}")
    if journal.get("deviated"):
        failures.append(f"the steady state did not hold after the method{why}")
    before = (journal.get("steady_states") or {}).get("before") or {}
    if not before.get("steady_state_met"):
        failures.append(f"the steady state did not hold before the fault{why}")
    states = journal.get("steady_states") or {}
    probes = [run for phase in ("before", "after") for run in (states.get(phase) or {}).get("probes") or []]
    for run in [*probes, *journal.get("run", [])]:  # a probe that raised says why its state did not hold
        if run.get("status") != "succeeded":
            name = run.get("activity", {}).get("name")
            failures.append(f"{name}: {_last_line(run.get('exception'))}")
    for run in journal.get("rollbacks", []) or []:
        if run.get("status") != "succeeded":
            failures.append(f"rollback {run.get('activity', {}).get('name')} failed")
    return failures


def run_one(
    path: Path,
    configuration: dict[str, Any],
    out_dir: Path,
    listener: Listener | None = None,
    load: bool = True,
    quiet_s: float = 2.0,
) -> Outcome:
    """Run one experiment file against the stack described by `configuration`; writes its journal."""
    from chaoslib.experiment import run_experiment

    experiment = load_experiment(path)
    ext = expected_of(experiment)
    time.sleep(quiet_s)  # a quiet gap, so the window of one fault's diagnosis holds nothing of the last
    expected = ext.get("expected_signature") or None
    outcome = Outcome(
        experiment=path.stem, title=str(experiment.get("title", path.stem)), expected_signature=expected
    )
    incident = current()
    incident.reset()

    def relay(phase: str, at: float, detail: Any) -> None:
        if listener is not None:
            listener(outcome.experiment, phase, at, detail)

    remove = incident.listen(relay)
    gen = None
    if load and configuration.get("serving_url"):
        gen = LoadGenerator(
            configuration["serving_url"], concurrency=1, max_tokens=8, interval_s=0.1, timeout_s=20
        )
        gen.start()
    stop_watch = threading.Event()
    if configuration.get("prometheus_url"):
        watcher = threading.Thread(
            target=_watch_alerts, args=(configuration["prometheus_url"], stop_watch), daemon=True
        )
        watcher.start()
    outcome.started = time.time()
    relay("start", outcome.started, outcome.title)
    try:
        journal = run_experiment(
            experiment,
            settings={"runtime": {"rollbacks": {"strategy": "always"}}},
            experiment_vars=(dict(configuration), {}),
        )
    finally:
        if gen is not None:
            time.sleep(0.5)  # a little steady load after the rollback, for the curves
            outcome.samples = gen.stop(timeout_s=25)
        stop_watch.set()
        remove()
        leftover = incident.undo_all()
        if leftover:
            logger.warning("undid what %s left behind: %s", path.stem, leftover)
    journal_path = out_dir / f"{path.stem}.journal.json"
    try:  # a full disk loses this journal, not the game day's other experiments and its outcomes
        out_dir.mkdir(parents=True, exist_ok=True)
        write_texts([(journal_path, json.dumps(journal, indent=1, default=str))])
        outcome.journal = str(journal_path)
    except OSError as exc:  # the folder could not be made
        outcome.journal_problem = str(write_failure(str(journal_path), exc))
    except GpuobsError as exc:
        outcome.journal_problem = str(exc)
    outcome.status = str(journal.get("status"))
    outcome.marks = dict(incident.marks)
    outcome.failures = _journal_failures(journal, incident.details.get("slo_violations"))
    fault = incident.marks.get("fault")

    def since(phase: str) -> float | None:
        at = incident.marks.get(phase)
        return None if at is None or fault is None else round(max(0.0, at - fault), 3)

    outcome.alert_s = since("alert")
    outcome.alert = incident.details.get("alert")
    outcome.detect_s, outcome.diagnose_s, outcome.recover_s = (
        since("detected"),
        since("diagnosed"),
        since("recovered"),
    )
    outcome.diagnosed_signature = incident.details.get("diagnosed") or incident.details.get("diagnosed_other")
    if expected is None and "diagnosed" not in incident.details:
        outcome.diagnosed_signature = None
    known = [t for t in (outcome.diagnose_s, outcome.recover_s) if t is not None]
    outcome.mttr_s = max(known) if len(known) == 2 or (expected is None and known) else None
    outcome.requests_lost = sum(
        1 for s in outcome.samples if s.outcome == "lost" and s.start >= outcome.started
    )
    if fault is None:  # what a fault should have caused is not asked of a stack that got none
        outcome.failures.append("no fault was injected")
    if fault is not None and expected and outcome.diagnosed_signature != expected:
        outcome.failures.append(f"diagnosed {outcome.diagnosed_signature or 'nothing'}, expected {expected}")
    within = ext.get("recover_within_s")
    late = within is not None and (outcome.recover_s is None or outcome.recover_s > float(within))
    if fault is not None and late:
        outcome.failures.append(f"recovered in {outcome.recover_s} s, target {within} s")
    max_lost = ext.get("max_requests_lost")
    if max_lost is not None and outcome.requests_lost > int(max_lost):
        outcome.failures.append(f"{outcome.requests_lost} accepted requests lost (at most {max_lost})")
    outcome.passed = not outcome.failures
    relay("done", time.time(), outcome.passed)
    if outcome.status == "interrupted":
        raise GamedayInterrupted(f"{path.stem} was interrupted; its rollbacks ran")
    return outcome
