"""Where the semantic tier loses the texts the other tiers leave silent: the naming, or the incident gate.

Out of fold, with the folds of `bench/rca_crossval.py --groups 10` (repositories round-robin into ten groups):
the other tiers, refitted per fold, diagnose every tune case with the semantic tier off; the cases they leave
without a cause are the silent set. The semantic tier, fitted per fold (`bench/fit_semantic_tier.py` on the
cached vectors), then reads each silent case of its held-out fold. Printed: how often its likeliest signature
is right (and in its top 3) before any gate, what the fitted gate lets through (right, wrong, healthy texts
named), and, at a fixed number of healthy texts named (the budget), how many incidents each incident reading
names right:

- `incident reading`: the tier's incident reading (the mean of its two readers), which the runtime gated
  until the thirty-eighth session;
- `+ healthy class`: that reading averaged with one minus the class reader's probability of `none` (the
  naming reading, `rca.semantic.naming_reading`, which the runtime gates since);
- `+ neighbours`: that reading averaged with the share of the 10 nearest training texts (cosine over the same
  features) that are incidents.

A reading that names many more right at the same budget is worth a runtime change; one that does not says the
representation, not the gate, is the limit (docs/BENCHMARKS.md, seventeenth session). Then each gate of GATES
(the fitted one, and the thirteenth session's on the incident reading, which it replaced) over the
same readings: incidents named right first, with the right one in the top three, named wrong, and healthy
texts named; with `--sweep READING`, for each count of healthy texts named up to the most any gate of GATES
names, the gate of SWEEP_GRID weighing READING that names the most incidents right first; with `--sweep
READING` and several seeds, the steady gates instead: those of SWEEP_GRID that give no more healthy texts a
cause than the fitted gate on any fold assignment, the most named right on average first (`steady_gates`).
Tune split only; the held-out batches are never read.

`--seeds S [S ...]` repeats the whole measure with the repositories dealt into the ten folds in each seed's
order (`rca_crossval.fold_of`; seed 0 is the sorted order, the default) and prints the mean over the seeds,
with each count's lowest and highest beside it: a reading or gate is worth shipping when it gains more than
that spread.

`--fit-setting NAME=VALUE` (repeatable) fits the tier in every fold with one of FIT_SETTINGS changed (the
class reader's or the incident readers' regularisation, the terms' count or document floor): what another fit
would name, read the same way.

    python bench/semantic_gate.py [--budgets 5 10 20] [--seeds 0 1 2] [--sweep {incident,naming}] [--json]
                                  [--fit-setting MAX_TERMS=15000]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import fit_semantic_tier
import numpy as np
import rca_crossval

from gpuobs.rca.semantic import HEALTHY, SemanticModel, gate_passes, naming_reading

FOLDS = 10
# The constants of bench/fit_semantic_tier.py that `--fit-setting` may change, with their types.
FIT_SETTINGS = {"CLASS_C": float, "INCIDENT_C": float, "MAX_TERMS": int, "MIN_DF": int}
NEIGHBOURS = 10
# The readings a gate may weigh (keys of SCORES): the incident readers' mean, and its mean with the class
# reader's share outside healthy text (the naming reading, which the runtime's gate weighs).
INCIDENT, NAMING = "incident reading", "+ healthy class"
# The key in GATES (and in the summary's "gates") of the gate the runtime was fitted with.
FITTED = "as fitted"
# The gates weighed over the same readings, each with the reading it weighs and its settings in gate_passes's
# order (min_probability, min_incident, confident_probability, confident_min_incident): the one fitted (the
# thirty-eighth session's, on the naming reading the runtime weighs), and the one before it (the thirteenth
# session's, on the incident reading alone), so that each run shows what the change gained out of fold.
GATES: dict[str, tuple[str, tuple[float, float, float, float]]] = {
    FITTED: (
        NAMING,
        (
            fit_semantic_tier.MIN_PROBABILITY,
            fit_semantic_tier.MIN_INCIDENT,
            fit_semantic_tier.CONFIDENT_PROBABILITY,
            fit_semantic_tier.CONFIDENT_MIN_INCIDENT,
        ),
    ),
    "thirteenth session's, replaced": (INCIDENT, (0.2, 0.88, 0.80, 0.85)),
}
# How many gates `steady_gates` lists.
STEADY_ROWS = 10
# The settings `--sweep` tries, each axis in gate_passes's order.
SWEEP_GRID = (
    (0.2, 0.25, 0.3, 0.35),
    tuple(round(0.80 + 0.01 * i, 2) for i in range(16)),
    (0.6, 0.7, 0.8, 0.9),
    tuple(round(0.70 + 0.02 * i, 2) for i in range(11)),
)


@dataclass(frozen=True)
class Reading:
    """One silent case read out of fold: its label, the likeliest signatures, and its incident readings."""

    label: str
    ranked: tuple[str, ...]
    incident: float
    healthy_class: float
    neighbours_incident: float
    case: str = ""
    probability: float = 0.0  # the likeliest signature's


# What `silent_cases` reads, under the repository root: a change to any of it computes the set again.
SILENT_INPUTS = (
    "rca",
    "gpuobs",
    "tests/rca/incidents",
    "tests/rca/real_corpus/tune",
    "tests/rca/test_rca_message_sources.py",
    "tests/rca/test_rca_message_variants.py",
    "bench/message_wordings.py",
    "bench/rca_crossval.py",
    "bench/fit_text_tier.py",
    "bench/fit_prose_tier.py",
)


def silent_inputs_key() -> str:
    """The SHA-1 over the paths and contents of every file of SILENT_INPUTS."""
    root = fit_semantic_tier.ROOT
    digest = hashlib.sha1()
    for name in SILENT_INPUTS:
        top = root / name
        for path in sorted([top] if top.is_file() else (p for p in top.rglob("*") if p.is_file())):
            if "__pycache__" not in path.parts:
                digest.update(f"{path.relative_to(root)}\0".encode() + path.read_bytes())
    return digest.hexdigest()


def silent_cases(seed: int = 0) -> set[str]:
    """The tune cases the other tiers, fitted without their repository's fold (the folds of `seed`), give no
    cause. A cross-validation takes minutes, so the set is cached per seed in
    bench/.cache/silent_seed<N>.json, keyed by `silent_inputs_key`: a change to the engine, the corpora or the
    fit scripts computes it again."""
    cache = fit_semantic_tier.CACHE.parent / f"silent_seed{seed}.json"
    key = silent_inputs_key()
    if cache.is_file():
        stored = json.loads(cache.read_text(encoding="utf-8"))
        if stored.get("key") == key:
            return set(stored["silent"])
    results, _ = rca_crossval.crossval(groups=FOLDS, semantic=False, seed=seed)
    silent = {r.case.name for r in results if not r.causes}
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"key": key, "silent": sorted(silent)}), encoding="utf-8")
    return silent


@dataclass(frozen=True)
class Fold:
    """One fold of a seed's assignment: the tier fitted on the other folds, and the rows (indices into the
    tune docs) it was fitted on and reads: the fold's silent cases."""

    index: int
    model: SemanticModel
    train: np.ndarray
    test: np.ndarray
    train_features: np.ndarray
    test_features: np.ndarray


def fitted_folds(docs: Sequence[fit_semantic_tier.Doc], silent: set[str], seed: int = 0) -> Iterator[Fold]:
    """The semantic tier fitted per fold (the folds of `seed`, as `silent_cases` dealt them), each with the
    features of its training rows and of its fold's silent rows: what every out-of-fold reading starts
    from."""
    vectors = fit_semantic_tier.vectors(docs)
    texts = [d.read_text for d in docs]
    labels = [d.label for d in docs]
    fold_of = rca_crossval.fold_of({d.group for d in docs}, FOLDS, seed)
    fold = np.array([fold_of[d.group] for d in docs])
    is_silent = np.array([d.case in silent for d in docs])
    for k in range(FOLDS):
        train = np.where(fold != k)[0]
        test = np.where((fold == k) & is_silent)[0]
        train_texts = [texts[i] for i in train]
        model = fit_semantic_tier.fit(vectors[train], train_texts, [labels[i] for i in train])
        yield Fold(
            index=k,
            model=model,
            train=train,
            test=test,
            train_features=model.features(vectors[train], train_texts),
            test_features=model.features(vectors[test], [texts[i] for i in test]),
        )


def read_out_of_fold(silent: set[str], seed: int = 0) -> list[Reading]:
    """Each silent case read by a semantic tier fitted on the other folds (the folds of `seed`, as
    `silent_cases` dealt them)."""
    docs = fit_semantic_tier.tune_docs()
    labels = np.array([d.label for d in docs])
    readings: list[Reading] = []
    for fold in fitted_folds(docs, silent, seed):
        model, features = fold.model, fold.test_features
        train_features = _unit(fold.train_features)
        healthy = model.classes.index(HEALTHY)
        probabilities = model.probabilities(features)
        nearest = np.argsort(-(_unit(features) @ train_features.T), axis=1)[:, :NEIGHBOURS]
        for row, case in enumerate(fold.test):
            ranked = model.signatures(features[row])
            incident = model.incident(features[row])
            readings.append(
                Reading(
                    label=str(labels[case]),
                    ranked=tuple(name for name, _ in ranked[:3]),
                    incident=incident,
                    healthy_class=float(probabilities[row, healthy]),
                    neighbours_incident=float(np.mean(labels[fold.train][nearest[row]] != HEALTHY)),
                    case=docs[case].case,
                    probability=ranked[0][1],
                )
            )
    return readings


def _unit(matrix: np.ndarray) -> np.ndarray:
    return np.asarray(matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12))


SCORES: dict[str, Callable[[Reading], float]] = {
    INCIDENT: lambda r: r.incident,
    NAMING: lambda r: naming_reading(r.incident, r.healthy_class),
    "+ neighbours": lambda r: (r.incident + r.neighbours_incident) / 2.0,
}


def at_budget(readings: Sequence[Reading], score: Callable[[Reading], float], budget: int) -> tuple[int, int]:
    """Incidents named right and wrong when the threshold lets exactly `budget` healthy texts through."""
    healthy = sorted((score(r) for r in readings if r.label == HEALTHY), reverse=True)
    threshold = healthy[budget] + 1e-12 if budget < len(healthy) else float("-inf")
    named = [r for r in readings if r.label != HEALTHY and score(r) >= threshold]
    right = sum(1 for r in named if r.ranked[0] == r.label)
    return right, len(named) - right


def through_gate(
    readings: Sequence[Reading], gate: tuple[float, float, float, float], reading: str = INCIDENT
) -> dict[str, int]:
    """What `gate`, weighing `reading` (a key of SCORES), names of the readings: incidents right first, right
    in the top three, wrong first, and healthy texts."""
    score = SCORES[reading]
    named = [r for r in readings if gate_passes(score(r), r.probability, gate)]
    incidents = [r for r in named if r.label != HEALTHY]
    return {
        "right": sum(1 for r in incidents if r.ranked[0] == r.label),
        "top3": sum(1 for r in incidents if r.label in r.ranked),
        "wrong": sum(1 for r in incidents if r.ranked[0] != r.label),
        "healthy": len(named) - len(incidents),
    }


def sweep(readings: Sequence[Reading], most_healthy: int, reading: str = INCIDENT) -> list[dict[str, object]]:
    """For each count of healthy texts named up to `most_healthy`, the gate of SWEEP_GRID weighing `reading`
    (a key of SCORES) that names the most incidents right first (ties: the most in the top three), kept only
    where it names more right than every gate naming fewer healthy texts: the frontier a gate is chosen
    from."""
    best: dict[int, tuple[tuple[int, int], tuple[float, float, float, float], dict[str, int]]] = {}
    for gate in itertools.product(*SWEEP_GRID):
        counts = through_gate(readings, gate, reading)
        if counts["healthy"] > most_healthy:
            continue
        key = (counts["right"], counts["top3"])
        if counts["healthy"] not in best or key > best[counts["healthy"]][0]:
            best[counts["healthy"]] = (key, gate, counts)
    frontier: list[dict[str, object]] = []
    most_right = -1
    for healthy in sorted(best):
        _, gate, counts = best[healthy]
        if counts["right"] > most_right:
            frontier.append({"gate": list(gate), **counts})
            most_right = counts["right"]
    return frontier


def steady_gates(
    runs: Sequence[Sequence[Reading]], reading: str, most: int = STEADY_ROWS
) -> list[dict[str, object]]:
    """The gates of SWEEP_GRID weighing `reading` that, on every fold assignment of `runs`, give no more
    healthy texts a cause than the fitted gate gives on that one; the `most` that name the most incidents
    right first on average (ties: the most in the top three), best first. A gate to ship must beat the fitted
    one on every assignment, not on one: the spread between assignments is larger than most gains."""
    fitted_reading, fitted = GATES[FITTED]
    ceilings = [through_gate(readings, fitted, fitted_reading)["healthy"] for readings in runs]
    rows: list[tuple[tuple[float, float], dict[str, object]]] = []
    for gate in itertools.product(*SWEEP_GRID):
        per_seed = [through_gate(readings, gate, reading) for readings in runs]
        if any(counts["healthy"] > ceiling for counts, ceiling in zip(per_seed, ceilings, strict=True)):
            continue
        means = {key: round(float(np.mean([c[key] for c in per_seed])), 1) for key in per_seed[0]}
        row = {"gate": list(gate), **means, "per_seed": [[c["right"], c["healthy"]] for c in per_seed]}
        rows.append(((means["right"], means["top3"]), row))
    rows.sort(key=lambda item: item[0], reverse=True)
    return [row for _, row in rows[:most]]


# The summary's counts that `render` prints in its head.
SUMMARY_COUNTS = ("silent_incidents", "silent_healthy", "likeliest_right", "top3_right")


def summary(readings: Sequence[Reading], budgets: Sequence[int]) -> dict[str, object]:
    incidents = [r for r in readings if r.label != HEALTHY]
    gates = {name: through_gate(readings, gate, reading) for name, (reading, gate) in GATES.items()}
    return {
        "silent_incidents": len(incidents),
        "silent_healthy": len(readings) - len(incidents),
        "likeliest_right": sum(1 for r in incidents if r.ranked[0] == r.label),
        "top3_right": sum(1 for r in incidents if r.label in r.ranked),
        "at_budget": {
            name: {str(b): at_budget(readings, score, b) for b in budgets} for name, score in SCORES.items()
        },
        "gates": gates,
    }


def _per_count(values: Sequence[Any], combine: Callable[[Sequence[Any]], object]) -> object:
    """Summaries of the same shape walked together: each count replaced by `combine` of its values."""
    first = values[0]
    if isinstance(first, dict):
        return {key: _per_count([v[key] for v in values], combine) for key in first}
    if isinstance(first, (tuple, list)):
        return [_per_count([v[i] for v in values], combine) for i in range(len(first))]
    return combine(values)


def over_seeds(summaries: Sequence[dict[str, object]]) -> dict[str, object]:
    """The summaries of several fold assignments as one: each count their mean, with `spread` holding each
    count's lowest and highest in the same shape."""
    merged = _per_count(summaries, lambda counts: round(float(np.mean(counts)), 1))
    spread = _per_count(summaries, lambda counts: [min(counts), max(counts)])
    assert isinstance(merged, dict)
    return merged | {"seeds": len(summaries), "spread": spread}


def fitted_gate(figures: dict[str, object]) -> dict[str, int]:
    """What the fitted gate names in a summary's figures (its row of `gates`)."""
    gates = figures["gates"]
    assert isinstance(gates, dict)
    return dict(gates[FITTED])


def _count(value: object, low_high: object = None) -> str:
    """A count as printed: whole where it is (one fold assignment), else to one decimal (a mean), with its
    lowest and highest over the seeds where given."""
    assert isinstance(value, (int, float))
    text = f"{value:.1f}" if isinstance(value, float) and not value.is_integer() else f"{value:.0f}"
    if isinstance(low_high, list) and low_high[0] != low_high[1]:
        text += f" [{low_high[0]}-{low_high[1]}]"
    return text


def render(figures: dict[str, object], budgets: Sequence[int]) -> str:
    raw = figures.get("spread")
    spread: dict[str, Any] = raw if isinstance(raw, dict) else {}

    def at(path: Sequence[str | int]) -> object:
        """The spread of the count at `path` (None for one fold assignment)."""
        if not spread:
            return None
        node: Any = spread
        for key in path:
            node = node[key]
        return node

    fitted = fitted_gate(figures)
    head = {key: _count(figures[key], at([key])) for key in SUMMARY_COUNTS}
    seeds = figures.get("seeds")
    lines = [
        *([f"mean over {seeds} fold assignments (seeds), [lowest-highest]"] if seeds else []),
        f"silent out of fold: {head['silent_incidents']} incidents, {head['silent_healthy']} healthy",
        f"likeliest signature right: {head['likeliest_right']} (top 3: {head['top3_right']})",
        f"the fitted gate names {_count(fitted['right'])} right, {_count(fitted['wrong'])} wrong, "
        f"{_count(fitted['healthy'])} healthy",
        "",
        "| incident reading | " + " | ".join(f"{b} healthy named: right / wrong" for b in budgets) + " |",
        "|---|" + "---|" * len(budgets),
    ]
    table = figures["at_budget"]
    assert isinstance(table, dict)
    for name, cells in table.items():
        counts = " | ".join(
            f"{_count(cells[str(b)][0], at(['at_budget', name, str(b), 0]))} / "
            f"{_count(cells[str(b)][1], at(['at_budget', name, str(b), 1]))}"
            for b in budgets
        )
        lines.append(f"| {name} | {counts} |")
    gates = figures["gates"]
    assert isinstance(gates, dict)
    lines += [
        "",
        "| gate | right first | right in top 3 | wrong first | healthy named |",
        "|---|---|---|---|---|",
    ]
    for name, counts in gates.items():
        reading, gate = GATES[name]
        tally = " | ".join(
            _count(counts[key], at(["gates", name, key])) for key in ("right", "top3", "wrong", "healthy")
        )
        lines.append(f"| {name} {gate}, {reading} | {tally} |")
    frontier = figures.get("sweep")
    if isinstance(frontier, list):
        lines += ["", "| sweep: gate | right first | right in top 3 | wrong first | healthy named |"]
        lines.append("|---|---|---|---|---|")
        for row in frontier:
            counts = f"{row['right']} | {row['top3']} | {row['wrong']} | {row['healthy']}"
            lines.append(f"| {tuple(row['gate'])} | {counts} |")
    steady = figures.get("steady")
    if isinstance(steady, list):
        lines += [
            "",
            "| steady gate | right first | right in top 3 | wrong first | healthy named"
            " | per seed: right, healthy |",
            "|---|---|---|---|---|---|",
        ]
        for row in steady:
            counts = " | ".join(_count(row[key]) for key in ("right", "top3", "wrong", "healthy"))
            seeds = "; ".join(f"{right}, {healthy}" for right, healthy in row["per_seed"])
            lines.append(f"| {tuple(row['gate'])} | {counts} | {seeds} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[5, 10, 20], help="healthy texts named")
    parser.add_argument(
        "--sweep",
        choices=("incident", "naming"),
        help="print the frontier of gates weighing this reading (the steady gates, with several seeds)",
    )
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[0], help="fold assignments to average over (0: sorted order)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--fit-setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=f"fit the tier with this setting changed (one of {', '.join(FIT_SETTINGS)})",
    )
    args = parser.parse_args(argv)
    for setting in args.fit_setting:
        name, _, value = setting.partition("=")
        try:
            setattr(fit_semantic_tier, name, FIT_SETTINGS[name](value))
        except (KeyError, ValueError):
            names = ", ".join(FIT_SETTINGS)
            parser.error(f"--fit-setting {setting!r}: use NAME=VALUE with NAME one of {names}")
    if any(b < 0 for b in args.budgets):
        parser.error("--budgets must be zero or more")
    if any(s < 0 for s in args.seeds) or len(set(args.seeds)) != len(args.seeds):
        parser.error("--seeds must be distinct, zero or more")
    runs = [read_out_of_fold(silent_cases(seed), seed) for seed in args.seeds]
    readings = runs[0]
    figures = summary(readings, args.budgets) if len(runs) == 1 else over_seeds(
        [summary(r, args.budgets) for r in runs]
    )
    reading = INCIDENT if args.sweep == "incident" else NAMING
    if args.sweep and len(runs) == 1:
        gates = figures["gates"]
        assert isinstance(gates, dict)
        most = max(counts["healthy"] for counts in gates.values())
        figures["sweep"] = sweep(readings, most, reading)
    elif args.sweep:
        figures["steady"] = steady_gates(runs, reading)
    print(json.dumps(figures) if args.json else render(figures, args.budgets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
