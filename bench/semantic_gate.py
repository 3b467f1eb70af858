"""Where the semantic tier loses the texts the other tiers leave silent: the naming, or the incident gate.

Out of fold, with the folds of `bench/rca_crossval.py --groups 10` (repositories round-robin into ten groups):
the other tiers, refitted per fold, diagnose every tune case with the semantic tier off; the cases they leave
without a cause are the silent set. The semantic tier, fitted per fold (`bench/fit_semantic_tier.py` on the
cached vectors), then reads each silent case of its held-out fold. Printed: how often its likeliest signature
is right (and in its top 3) before any gate, what the fitted gate lets through (right, wrong, healthy texts
named), and, at a fixed number of healthy texts named (the budget), how many incidents each incident reading
names right:

- `gate as fitted`: the tier's own incident reading (the mean of its two readers), as the runtime gates;
- `+ healthy class`: that reading averaged with one minus the class reader's probability of `none`;
- `+ neighbours`: that reading averaged with the share of the 10 nearest training texts (cosine over the same
  features) that are incidents.

A reading that names many more right at the same budget is worth a runtime change; one that does not says the
representation, not the gate, is the limit (docs/BENCHMARKS.md, seventeenth session). Tune split only; the
held-out batches are never read.

    python bench/semantic_gate.py [--budgets 5 10 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import fit_semantic_tier
import numpy as np
import rca_crossval

from gpuobs.rca.semantic import HEALTHY

FOLDS = 10
NEIGHBOURS = 10


@dataclass(frozen=True)
class Reading:
    """One silent case read out of fold: its label, the likeliest signatures, and its incident readings."""

    label: str
    ranked: tuple[str, ...]
    passes: bool
    incident: float
    healthy_class: float
    neighbours_incident: float
    case: str = ""


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
                    passes=model.passes(incident, ranked[0][1]),
                    incident=incident,
                    healthy_class=float(probabilities[row, healthy]),
                    neighbours_incident=float(np.mean(labels[train][nearest[row]] != HEALTHY)),
                    case=docs[case].case,
                )
            )
    return readings


def _unit(matrix: np.ndarray) -> np.ndarray:
    return np.asarray(matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12))


SCORES: dict[str, Callable[[Reading], float]] = {
    "gate as fitted": lambda r: r.incident,
    "+ healthy class": lambda r: (r.incident + 1.0 - r.healthy_class) / 2.0,
    "+ neighbours": lambda r: (r.incident + r.neighbours_incident) / 2.0,
}


def at_budget(readings: Sequence[Reading], score: Callable[[Reading], float], budget: int) -> tuple[int, int]:
    """Incidents named right and wrong when the threshold lets exactly `budget` healthy texts through."""
    healthy = sorted((score(r) for r in readings if r.label == HEALTHY), reverse=True)
    threshold = healthy[budget] + 1e-12 if budget < len(healthy) else float("-inf")
    named = [r for r in readings if r.label != HEALTHY and score(r) >= threshold]
    right = sum(1 for r in named if r.ranked[0] == r.label)
    return right, len(named) - right


def summary(readings: Sequence[Reading], budgets: Sequence[int]) -> dict[str, object]:
    incidents = [r for r in readings if r.label != HEALTHY]
    gated = [r for r in readings if r.passes]
    return {
        "silent_incidents": len(incidents),
        "silent_healthy": len(readings) - len(incidents),
        "likeliest_right": sum(1 for r in incidents if r.ranked[0] == r.label),
        "top3_right": sum(1 for r in incidents if r.label in r.ranked),
        "gate_right": sum(1 for r in gated if r.label != HEALTHY and r.ranked[0] == r.label),
        "gate_wrong": sum(1 for r in gated if r.label != HEALTHY and r.ranked[0] != r.label),
        "gate_healthy": sum(1 for r in gated if r.label == HEALTHY),
        "at_budget": {
            name: {str(b): at_budget(readings, score, b) for b in budgets} for name, score in SCORES.items()
        },
    }


def render(figures: dict[str, object], budgets: Sequence[int]) -> str:
    lines = [
        f"silent out of fold: {figures['silent_incidents']} incidents, {figures['silent_healthy']} healthy",
        f"likeliest signature right: {figures['likeliest_right']} (top 3: {figures['top3_right']})",
        f"the fitted gate names {figures['gate_right']} right, {figures['gate_wrong']} wrong, "
        f"{figures['gate_healthy']} healthy",
        "",
        "| incident reading | " + " | ".join(f"{b} healthy named: right / wrong" for b in budgets) + " |",
        "|---|" + "---|" * len(budgets),
    ]
    table = figures["at_budget"]
    assert isinstance(table, dict)
    for name, cells in table.items():
        counts = " | ".join(f"{cells[str(b)][0]} / {cells[str(b)][1]}" for b in budgets)
        lines.append(f"| {name} | {counts} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[5, 10, 20], help="healthy texts named")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if any(b < 0 for b in args.budgets):
        parser.error("--budgets must be zero or more")
    figures = summary(read_out_of_fold(silent_cases()), args.budgets)
    print(json.dumps(figures) if args.json else render(figures, args.budgets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
