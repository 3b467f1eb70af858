"""Where the semantic tier loses the texts the other tiers leave silent: the naming, or the incident gate.

Out of fold, with the folds of `bench/rca_crossval.py --groups 10` (repositories round-robin into ten groups):
the other tiers, refitted per fold, diagnose every tune case with the semantic tier off; the cases they leave
without a cause are the silent set. The semantic tier, fitted per fold (`bench/fit_semantic_tier.py` on the
cached vectors), then reads each silent case of its held-out fold. Printed: how often its likeliest signature
is right (and in its top 3) before any gate, what the fitted gate lets through (right, wrong, healthy texts
named), and, at a fixed number of healthy texts named (the budget), how many incidents each incident reading
names right:

- `incident reading`: the tier's incident reading (the mean of its two readers), as the runtime gates;
- `+ healthy class`: that reading averaged with one minus the class reader's probability of `none`;
- `+ neighbours`: that reading averaged with the share of the 10 nearest training texts (cosine over the same
  features) that are incidents.

A reading that names many more right at the same budget is worth a runtime change; one that does not says the
representation, not the gate, is the limit (docs/BENCHMARKS.md, seventeenth session). Then each gate of GATES
(the fitted one, and the one the thirty-fifth session chose on `+ healthy class` and did not ship) over the
same readings: incidents named right first, with the right one in the top three, named wrong, and healthy
texts named; with `--sweep READING`, for each count of healthy texts named up to the most any gate of GATES
names, the gate of SWEEP_GRID weighing READING that names the most incidents right first.
Tune split only; the held-out batches are never read.

    python bench/semantic_gate.py [--budgets 5 10 20] [--sweep {incident,naming}] [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import fit_semantic_tier
import numpy as np
import rca_crossval

from gpuobs.rca.semantic import HEALTHY, gate_passes

FOLDS = 10
NEIGHBOURS = 10
# The readings a gate may weigh (keys of SCORES): the runtime's, and its mean with the class reader's.
INCIDENT, NAMING = "incident reading", "+ healthy class"
# The key in GATES (and in the summary's "gates") of the gate the runtime was fitted with.
FITTED = "as fitted"
# The gates weighed over the same readings, each with the reading it weighs and its settings in gate_passes's
# order (min_probability, min_incident, confident_probability, confident_min_incident): the one fitted (the
# thirteenth session's), and the one the thirty-fifth chose on `+ healthy class` by the same rule (the most
# named right, no more healthy named) and did not ship: on the held-out batches it named 5 more of 427
# incidents first and 3 more of 101 healthy texts (docs/BENCHMARKS.md).
GATES: dict[str, tuple[str, tuple[float, float, float, float]]] = {
    FITTED: (
        INCIDENT,
        (
            fit_semantic_tier.MIN_PROBABILITY,
            fit_semantic_tier.MIN_INCIDENT,
            fit_semantic_tier.CONFIDENT_PROBABILITY,
            fit_semantic_tier.CONFIDENT_MIN_INCIDENT,
        ),
    ),
    "thirty-fifth session, not shipped": (NAMING, (0.2, 0.94, 0.60, 0.80)),
}
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


def silent_cases() -> set[str]:
    """The tune cases the other tiers, fitted without their repository's fold, give no cause."""
    results, _ = rca_crossval.crossval(groups=FOLDS, semantic=False)
    return {r.case.name for r in results if not r.causes}


def read_out_of_fold(silent: set[str]) -> list[Reading]:
    """Each silent case read by a semantic tier fitted on the other folds."""
    docs = fit_semantic_tier.tune_docs()
    vectors = fit_semantic_tier.vectors(docs)
    texts = [d.read_text for d in docs]
    labels = np.array([d.label for d in docs])
    repos = sorted({d.group for d in docs})
    fold_of = {r: i % FOLDS for i, r in enumerate(repos)}
    fold = np.array([fold_of[d.group] for d in docs])
    is_silent = np.array([d.case in silent for d in docs])
    readings: list[Reading] = []
    for k in range(FOLDS):
        train = np.where(fold != k)[0]
        test = np.where((fold == k) & is_silent)[0]
        model = fit_semantic_tier.fit(vectors[train], [texts[i] for i in train], list(labels[train]))
        train_features = _unit(model.features(vectors[train], [texts[i] for i in train]))
        features = model.features(vectors[test], [texts[i] for i in test])
        healthy = model.classes.index(HEALTHY)
        probabilities = model.probabilities(features)
        nearest = np.argsort(-(_unit(features) @ train_features.T), axis=1)[:, :NEIGHBOURS]
        for row, case in enumerate(test):
            ranked = model.signatures(features[row])
            incident = model.incident(features[row])
            readings.append(
                Reading(
                    label=str(labels[case]),
                    ranked=tuple(name for name, _ in ranked[:3]),
                    incident=incident,
                    healthy_class=float(probabilities[row, healthy]),
                    neighbours_incident=float(np.mean(labels[train][nearest[row]] != HEALTHY)),
                    case=docs[case].case,
                    probability=ranked[0][1],
                )
            )
    return readings


def _unit(matrix: np.ndarray) -> np.ndarray:
    return np.asarray(matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12))


SCORES: dict[str, Callable[[Reading], float]] = {
    INCIDENT: lambda r: r.incident,
    NAMING: lambda r: (r.incident + 1.0 - r.healthy_class) / 2.0,
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


def fitted_gate(figures: dict[str, object]) -> dict[str, int]:
    """What the fitted gate names in a summary's figures (its row of `gates`)."""
    gates = figures["gates"]
    assert isinstance(gates, dict)
    return dict(gates[FITTED])


def render(figures: dict[str, object], budgets: Sequence[int]) -> str:
    fitted = fitted_gate(figures)
    lines = [
        f"silent out of fold: {figures['silent_incidents']} incidents, {figures['silent_healthy']} healthy",
        f"likeliest signature right: {figures['likeliest_right']} (top 3: {figures['top3_right']})",
        f"the fitted gate names {fitted['right']} right, {fitted['wrong']} wrong, "
        f"{fitted['healthy']} healthy",
        "",
        "| incident reading | " + " | ".join(f"{b} healthy named: right / wrong" for b in budgets) + " |",
        "|---|" + "---|" * len(budgets),
    ]
    table = figures["at_budget"]
    assert isinstance(table, dict)
    for name, cells in table.items():
        counts = " | ".join(f"{cells[str(b)][0]} / {cells[str(b)][1]}" for b in budgets)
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
        tally = f"{counts['right']} | {counts['top3']} | {counts['wrong']} | {counts['healthy']}"
        lines.append(f"| {name} {gate}, {reading} | {tally} |")
    frontier = figures.get("sweep")
    if isinstance(frontier, list):
        lines += ["", "| sweep: gate | right first | right in top 3 | wrong first | healthy named |"]
        lines.append("|---|---|---|---|---|")
        for row in frontier:
            counts = f"{row['right']} | {row['top3']} | {row['wrong']} | {row['healthy']}"
            lines.append(f"| {tuple(row['gate'])} | {counts} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[5, 10, 20], help="healthy texts named")
    parser.add_argument(
        "--sweep", choices=("incident", "naming"), help="print the frontier of gates weighing this reading"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if any(b < 0 for b in args.budgets):
        parser.error("--budgets must be zero or more")
    readings = read_out_of_fold(silent_cases())
    figures = summary(readings, args.budgets)
    if args.sweep:
        gates = figures["gates"]
        assert isinstance(gates, dict)
        most = max(counts["healthy"] for counts in gates.values())
        figures["sweep"] = sweep(readings, most, INCIDENT if args.sweep == "incident" else NAMING)
    print(json.dumps(figures) if args.json else render(figures, args.budgets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
