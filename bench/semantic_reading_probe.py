"""Would another incident-or-healthy reading tell the texts the word tiers leave silent apart better?

The forty-fourth session found the semantic tier's limit out of fold: its likeliest signature is right for
three in four silent incidents, but its gate lets fewer than half of them through, because the naming reading
(`rca.semantic.naming_reading`) cannot tell the rest from silent healthy text. This probe reads the same
silent set as `bench/semantic_gate.py` (the tune cases the other tiers, fitted per fold of 10-group
cross-validation over the tune split's repositories, give no cause) with the semantic tier fitted on the other
folds, and scores candidate readings at fixed counts of healthy texts named (the budgets): the incidents named
right and wrong first when exactly that many silent healthy texts pass. Readings (higher means incident):

- `naming (runtime)`: the runtime's naming reading;
- `not healthy (class)`: one minus the class reader's probability of `none`, alone;
- `silent-fitted`: the naming reading with its two incident readers fitted only on the training folds' silent
  texts (the only texts the runtime asks the tier to name);
- `silent xW`: the two incident readers fitted on every training text, silent ones weighing SILENT_WEIGHT;
- `C=...`: the two incident readers with another regularisation (the runtime's is
  `fit_semantic_tier.INCIDENT_C`);
- `stacked`, `stacked + shape`: a logistic regression over the readings' parts (the two incident readers'
  and the healthy class's log-odds, the two likeliest signatures' log-probabilities), and those beside the
  text's shape (lines, question marks, log-prefixed lines, error words, first-person lines); fitted on the
  silent cases of the even folds and scored on the odd ones, then the other way round, so that no case is
  scored by a stack fitted on it.

The silent sets are `semantic_gate.silent_cases`, cached per seed (computing one takes ~6 min). The
silent-fitted readers choose
their training texts by a silent set computed with the word tiers fitted on every other fold, the test fold
included: a second-order leak that can only flatter them. Tune split only; the held-out batches are never
read.

    python bench/semantic_reading_probe.py [--seeds 0 1] [--budgets 5 10 20 32]
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import fit_semantic_tier
import numpy as np
import semantic_gate

from gpuobs.rca.semantic import HEALTHY, SemanticModel, naming_reading

SILENT_WEIGHT = 3.0
OTHER_C = (1.0, 3.0, 30.0)
RUNTIME = "naming (runtime)"
# The parts of the readings the stack weighs (keys of Case.parts).
PARTS = ("incident whole", "incident words", "healthy", "top", "second")
_LOG_PREFIX = re.compile(
    r"^\s*(\[?\d{4}-\d\d-\d\d|\[?\d\d:\d\d:\d\d|\w{3} +\d+ \d\d:\d\d|[IWE]\d{4}|\[\s*\d+\.\d+\])"
)
_ERROR_WORD = re.compile(
    r"error|fail|exception|traceback|fatal|killed|abort|crash|panic|timeout|timed out", re.I
)
_FIRST_PERSON = re.compile(r"\b(I|we|my|our|me)\b")


@dataclass(frozen=True)
class Case:
    """One silent test case: its fold, label, likeliest signature, text, readings and their parts."""

    fold: int
    label: str
    likeliest: str
    text: str
    readings: dict[str, float]
    parts: dict[str, float]

    @property
    def ranked(self) -> tuple[str]:
        """The likeliest signature, as `semantic_gate.Reading.ranked` holds it first."""
        return (self.likeliest,)


def _incident_reading(
    train: np.ndarray, y: np.ndarray, test: np.ndarray, terms_from: int, c: float, weight: np.ndarray | None
) -> np.ndarray:
    """The mean of two balanced incident readers (over every feature; over the terms alone) fitted on
    `train`."""
    from sklearn.linear_model import LogisticRegression

    def reader(columns: slice) -> np.ndarray:
        fitted = LogisticRegression(C=c, max_iter=5000, class_weight="balanced")
        fitted.fit(train[:, columns], y, sample_weight=weight)
        return np.asarray(fitted.predict_proba(test[:, columns])[:, 1])

    return (reader(slice(None)) + reader(slice(terms_from, None))) / 2.0


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-z)))


def read_fold(
    model: SemanticModel,
    train: np.ndarray,
    train_labels: np.ndarray,
    train_silent: np.ndarray,
    test: np.ndarray,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The candidate readings of the test rows, and their parts, the readers fitted on the training rows."""
    terms_from = model.vector_width
    probabilities = model.probabilities(test)
    healthy = probabilities[:, model.classes.index(HEALTHY)]
    signatures = np.sort(np.delete(probabilities, model.classes.index(HEALTHY), axis=1), axis=1)
    parts = {
        "incident whole": _sigmoid(test @ model.incident_weights + model.incident_bias),
        "incident words": _sigmoid(
            test[:, terms_from:] @ model.incident_term_weights + model.incident_term_bias
        ),
        "healthy": healthy,
        "top": signatures[:, -1],
        "second": signatures[:, -2],
    }
    runtime = (parts["incident whole"] + parts["incident words"]) / 2.0
    y = train_labels != HEALTHY
    silent = np.where(train_silent)[0]
    c = fit_semantic_tier.INCIDENT_C
    incident = {
        "silent-fitted": _incident_reading(train[silent], y[silent], test, terms_from, c, None),
        f"silent x{SILENT_WEIGHT:g}": _incident_reading(
            train, y, test, terms_from, c, np.where(train_silent, SILENT_WEIGHT, 1.0)
        ),
        **{f"C={other:g}": _incident_reading(train, y, test, terms_from, other, None) for other in OTHER_C},
    }
    readings = {
        RUNTIME: np.array([naming_reading(i, h) for i, h in zip(runtime, healthy, strict=True)]),
        "not healthy (class)": 1.0 - healthy,
        **{name: (reading + 1.0 - healthy) / 2.0 for name, reading in incident.items()},
    }
    return readings, parts


def read_seed(seed: int) -> list[Case]:
    """Every silent case of the folds of `seed`, read by the tier fitted on the other folds."""
    docs = fit_semantic_tier.tune_docs()
    silent = semantic_gate.silent_cases(seed)
    labels = np.array([d.label for d in docs])
    is_silent = np.array([d.case in silent for d in docs])
    cases: list[Case] = []
    for fold in semantic_gate.fitted_folds(docs, silent, seed):
        readings, parts = read_fold(
            fold.model, fold.train_features, labels[fold.train], is_silent[fold.train], fold.test_features
        )
        for row, case in enumerate(fold.test):
            cases.append(
                Case(
                    fold=fold.index,
                    label=str(labels[case]),
                    likeliest=fold.model.signatures(fold.test_features[row])[0][0],
                    text=docs[case].text,
                    readings={name: float(values[row]) for name, values in readings.items()},
                    parts={name: float(values[row]) for name, values in parts.items()},
                )
            )
        print(f"  seed {seed}: fold {fold.index + 1}/{semantic_gate.FOLDS}", file=sys.stderr)
    return cases


def shape(text: str) -> list[float]:
    """What a text looks like, not what it says: its length in lines, its question marks, its share of
    log-prefixed lines, of lines with an error word and of first-person lines, its mean line length."""
    lines = [line for line in text.splitlines() if line.strip()]
    n = max(len(lines), 1)
    return [
        math.log1p(len(lines)),
        sum(line.rstrip().endswith("?") for line in lines) / n,
        math.log1p(text.count("?")),
        sum(bool(_LOG_PREFIX.match(line)) for line in lines) / n,
        sum(bool(_ERROR_WORD.search(line)) for line in lines) / n,
        math.log1p(len(_ERROR_WORD.findall(text))),
        float("Traceback" in text),
        sum(len(line) for line in lines) / n / 100.0,
        sum(bool(_FIRST_PERSON.search(line)) for line in lines) / n,
    ]


def _stack_features(case: Case, with_shape: bool) -> list[float]:
    clipped = {name: min(max(case.parts[name], 1e-6), 1 - 1e-6) for name in PARTS}
    odds = [
        math.log(clipped[name] / (1 - clipped[name]))
        for name in ("incident whole", "incident words", "healthy")
    ]
    chances = [math.log(clipped[name]) for name in ("top", "second")]
    return odds + chances + (shape(case.text) if with_shape else [])


def add_stacked(cases: list[Case]) -> None:
    """Put the stacked readings into each case's readings: a stack fitted on the even folds' silent cases
    scores the odd folds', and the other way round."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    y = np.array([c.label != HEALTHY for c in cases])
    half = np.array([c.fold % 2 for c in cases])
    for name, with_shape in (("stacked", False), ("stacked + shape", True)):
        features = np.array([_stack_features(c, with_shape) for c in cases])
        scores = np.zeros(len(cases))
        for scored in (0, 1):
            stack = make_pipeline(
                StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=2000)
            )
            stack.fit(features[half != scored], y[half != scored])
            scores[half == scored] = stack.predict_proba(features[half == scored])[:, 1]
        for case, score in zip(cases, scores, strict=True):
            case.readings[name] = float(score)


def at_budget(cases: Sequence[Case], reading: str, budget: int) -> tuple[int, int]:
    """Incidents named right and wrong first when exactly `budget` healthy texts pass `reading`'s threshold
    (`semantic_gate.at_budget`, the count the gate was chosen by)."""
    return semantic_gate.at_budget(cases, lambda c: c.readings[reading], budget)


def render(per_seed: dict[int, list[Case]], budgets: Sequence[int]) -> str:
    lines = []
    for seed, cases in per_seed.items():
        incidents = [c for c in cases if c.label != HEALTHY]
        right = sum(c.likeliest == c.label for c in incidents)
        lines.append(
            f"seed {seed}: {len(incidents)} silent incidents ({right} with the right likeliest signature), "
            f"{len(cases) - len(incidents)} silent healthy texts"
        )
    lines += [
        "",
        "| reading | "
        + " | ".join(f"{b} healthy named: right / wrong, per seed (mean right)" for b in budgets)
        + " |",
        "|---|" + "---|" * len(budgets),
    ]
    for reading in next(iter(per_seed.values()))[0].readings:
        cells = []
        for b in budgets:
            pairs = [at_budget(cases, reading, b) for cases in per_seed.values()]
            mean = sum(r for r, _ in pairs) / len(pairs)
            cells.append(", ".join(f"{r} / {w}" for r, w in pairs) + f" ({mean:.1f})")
        lines.append(f"| {reading} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="fold assignments (0: sorted)")
    parser.add_argument("--budgets", type=int, nargs="+", default=[5, 10, 20, 32], help="healthy texts named")
    args = parser.parse_args(argv)
    if any(b < 0 for b in args.budgets) or any(s < 0 for s in args.seeds):
        parser.error("--seeds and --budgets must be zero or more")
    per_seed = {}
    for seed in args.seeds:
        cases = read_seed(seed)
        add_stacked(cases)
        per_seed[seed] = cases
    print(render(per_seed, args.budgets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
