"""Would the semantic tier read the silent texts better with its lines' vectors pooled beside the chunk mean?

The runtime reads a document as the mean of its chunks' MiniLM vectors beside its TF-IDF terms
(`rca.embedding.embed_document`): one failure line in a long healthy-looking text, or one question in a long
report, is blurred by the mean. This probe embeds each tune text's scored lines one by one (the first 40 lines
of its chunks, the lines the report quotes from) and takes their elementwise maximum;
`bench/semantic_gate.py`'s out-of-fold reading of the silent set (the texts the other tiers, refitted per
fold, leave without a cause) then runs three times: the runtime's view, the chunk mean beside the line
maximum, and the line maximum alone, each beside the terms. Printed per view, as
`bench/semantic_encoder_probe.py` prints them: the likeliest signature right (and in the top 3) before any
gate, what the fitted gate lets through, and the incidents named right and wrong when exactly 5, 10 or 20
healthy texts are named (the naming reading's count in brackets).

Measured in the forty-second session and not adopted (docs/BENCHMARKS.md). The line vectors are cached in
`bench/.cache/line_vectors.npz` by the document's key (embedding the tune texts' lines, 4,236 then,
took ~12 min on one core). Tune split only; the held-out batches are never read.

    python bench/semantic_line_probe.py [--seeds 0 1] [--budgets 5 10 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import fit_semantic_tier
import numpy as np
import semantic_encoder_probe
import semantic_gate

from gpuobs.rca.embedding import ENCODER_WIDTH, chunk_lines, embed_lines
from gpuobs.rca.semantic import SCORED_LINES

LINE_CACHE = fit_semantic_tier.CACHE.parent / "line_vectors.npz"
RUNTIME_VECTORS = fit_semantic_tier.vectors


def scored_lines(doc: fit_semantic_tier.Doc) -> list[str]:
    """The lines of the document's chunks the runtime scores for its quotes."""
    return [text for chunk in chunk_lines(doc.text.splitlines()) for _, text in chunk][:SCORED_LINES]


def _line_max_vector(doc: fit_semantic_tier.Doc) -> np.ndarray | None:
    """The elementwise maximum over the document's scored lines' vectors; None when it has no line."""
    lines = scored_lines(doc)
    return embed_lines(lines).max(axis=0) if lines else None


def line_max(docs: Sequence[fit_semantic_tier.Doc]) -> np.ndarray:
    """Each document's line maximum (a zero row when it has no line), embedded once and cached by the
    document's key as the fit caches its vectors."""
    return fit_semantic_tier.cached_vectors(docs, LINE_CACHE, ENCODER_WIDTH, _line_max_vector)


def mean_and_line_max(docs: Sequence[fit_semantic_tier.Doc]) -> np.ndarray:
    """The runtime's chunk mean, then the line maximum."""
    return np.hstack([RUNTIME_VECTORS(docs), line_max(docs)])


VIEWS: dict[str, semantic_encoder_probe.Vectors] = {
    "runtime (chunk mean)": RUNTIME_VECTORS,
    "chunk mean + line max": mean_and_line_max,
    "line max alone": line_max,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="fold assignments (crossval's)")
    parser.add_argument("--budgets", type=int, nargs="+", default=[5, 10, 20], help="healthy texts named")
    args = parser.parse_args(argv)
    if any(b < 0 for b in args.budgets) or any(s < 0 for s in args.seeds):
        parser.error("--seeds and --budgets must be zero or more")
    start = time.monotonic()
    line_max(fit_semantic_tier.tune_docs())
    for seed in args.seeds:
        silent = semantic_gate.silent_cases(seed)
        results: dict[str, dict[str, object]] = {}
        for view, vectors in VIEWS.items():
            with semantic_encoder_probe.encoder_view(vectors):
                readings = semantic_gate.read_out_of_fold(silent, seed)
            results[f"{view}, seed {seed}"] = semantic_gate.summary(readings, args.budgets)
        print(semantic_encoder_probe.render(results, args.budgets))
    print(f"{time.monotonic() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
