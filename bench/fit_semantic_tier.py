"""Fit the semantic tier's readers on the tune split; write rca/catalog/_semantic_weights.json.

Training documents: every case of the real-text corpus's tune split (never a held-out batch), its whole
excerpt read as the runtime reads a log (`rca.embedding.embed_document`: chunks of lines through
all-MiniLM-L6-v2, mean of the chunk vectors), labelled with its root cause or `none` when healthy. Beside
the 384-dimensional vector, each document's lines give TF-IDF terms (`rca.terms`: words, word pairs, CJK
characters and their pairs; the MAX_TERMS most frequent found in at least MIN_DF documents; scikit-learn's
TfidfVectorizer fits the vocabulary and idf). Three logistic regressions (scikit-learn, fit time only) read
them:

- one over the classes (the signatures and `none`), C = CLASS_C;
- two that tell an incident from healthy text, classes balanced, C = INCIDENT_C: one over both views, one over
  the terms alone; the runtime's incident reading is their mean.

The class reader is fitted again, on the same documents, with each document's multilingual vector
(`rca.multilingual`, 512 wide, the mean over the same chunks) after its MiniLM vector: it names the signatures
of text written in Chinese, Japanese or Korean (the model's `cjk`), whose incident reading stays the MiniLM
readers'. Fitted on every text, not on CJK text alone: the multilingual vector places a Chinese post near an
English one of the same failure, and that is what it is for (out of fold, it named 7 more of 49 silent CJK
incidents first; docs/BENCHMARKS.md, eighteenth and nineteenth sessions).

A cause is named when the likeliest signature is at least MIN_PROBABILITY and the naming reading (the
incident reading averaged with one minus the class reader's probability of `none`, `naming_reading`) at
least MIN_INCIDENT, or, when that signature is at least CONFIDENT_PROBABILITY, at least CONFIDENT_MIN_INCIDENT
(a reading sure of one failure needs less proof that something failed). These settings were chosen out of
fold (`bench/semantic_gate.py --seeds 0 1 2 --sweep naming`: the texts the other tiers, fitted per fold of
10-group cross-validation over the tune split's repositories, leave silent, read by this tier fitted on the
other folds, over three assignments of repositories to folds): of the gates that give fewer healthy texts a
cause than the gate before them on every assignment, the one that names the most incidents right first on
average (docs/BENCHMARKS.md, thirty-eighth session). On the 3932, over seeds 0, 1 and 2, of the 899 silent
incidents and 774 silent healthy texts (means), the gate >= 0.92 or (>= 0.60 and >= 0.84) on the naming
reading names 405.3 right first (397 / 411 / 408) and 23.7 healthy (20 / 22 / 29); the gate before it,
>= 0.88 or (>= 0.80 and >= 0.85) on the incident reading alone (ninth to thirteenth sessions), named 373.3
(363 / 380 / 377) and 25.7 (21 / 26 / 30).

Embedding the ~2700 documents takes ~5 to 10 minutes on 2 cores for each encoder; the vectors are cached by
the SHA-1 of the lines the encoders read in bench/.cache/semantic_vectors.npz and multilingual_vectors.npz
(not committed), so a refit or a cross-validation reuses them.

    python bench/fit_semantic_tier.py [--check]

`--check` refits and exits 1 when the file on disk differs by more than CHECK_TOLERANCE in any weight.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from gpuobs.rca.embedding import ENCODER_WIDTH, MODEL_SHA256, chunk_lines, chunks_text, embed_document
from gpuobs.rca.multilingual import MULTILINGUAL_SHA256, MULTILINGUAL_WIDTH, embed_multilingual
from gpuobs.rca.semantic import HEALTHY, SEMANTIC_WEIGHTS_FILE, ClassReader, SemanticModel
from gpuobs.rca.terms import NGRAMS, TOKEN_PATTERN, TermWeights

ROOT = Path(__file__).resolve().parents[1]
TUNE = ROOT / "tests" / "rca" / "real_corpus" / "tune"
CACHE = ROOT / "bench" / ".cache" / "semantic_vectors.npz"
MULTILINGUAL_CACHE = CACHE.parent / "multilingual_vectors.npz"
CLASS_C = 30.0
INCIDENT_C = 10.0
MAX_TERMS = 5000
MIN_DF = 2
MIN_PROBABILITY = 0.2
MIN_INCIDENT = 0.92
CONFIDENT_PROBABILITY = 0.60
CONFIDENT_MIN_INCIDENT = 0.84
CHECK_TOLERANCE = 1e-3


@dataclass(frozen=True)
class Doc:
    """One training document: its case, source repository, label and text."""

    case: str
    group: str
    label: str
    text: str

    @property
    def key(self) -> str:
        """The cache key of its vector: the SHA-1 of the lines the encoder reads (`read_text`), so that a
        change in how the runtime picks a document's lines embeds the text again."""
        return hashlib.sha1(self.read_text.encode("utf-8")).hexdigest()

    @cached_property
    def read_text(self) -> str:
        """The lines the runtime reads of this text (its chunks'), one per line: what the terms see."""
        return chunks_text(chunk_lines(self.text.splitlines()))


def tune_docs(root: Path = TUNE) -> list[Doc]:
    """The tune split's cases as documents (never a held-out batch)."""
    if "heldout" in root.name:
        raise SystemExit("the held-out split is never trained on")
    docs = []
    for folder in sorted(p for p in root.iterdir() if (p / "expected.json").is_file()):
        expected = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
        text = (folder / "excerpt.log").read_text(encoding="utf-8", errors="replace")
        label = expected.get("top") or HEALTHY
        docs.append(Doc(folder.name, str(expected.get("repo") or folder.name), str(label), text))
    return docs


def vectors(docs: Sequence[Doc], cache: Path = CACHE) -> np.ndarray:
    """Each document's MiniLM vector (one row per document), embedded once and cached by its text's SHA-1."""
    return cached_vectors(docs, cache, ENCODER_WIDTH, _minilm_vector)


def multilingual_vectors(docs: Sequence[Doc], cache: Path = MULTILINGUAL_CACHE) -> np.ndarray:
    """Each document's multilingual vector (the mean over its chunks), embedded once and cached alike."""
    return cached_vectors(docs, cache, MULTILINGUAL_WIDTH, _multilingual_vector)


def _minilm_vector(doc: Doc) -> np.ndarray | None:
    embedded = embed_document(doc.text.splitlines())
    return None if embedded is None else embedded.vector


def _multilingual_vector(doc: Doc) -> np.ndarray | None:
    chunks = chunk_lines(doc.text.splitlines())
    if not chunks:
        return None
    return embed_multilingual(["\n".join(text for _, text in chunk) for chunk in chunks]).mean(axis=0)


def cached_vectors(docs: Sequence[Doc], cache: Path, width: int, embed: Any) -> np.ndarray:
    """Each document's vector from `embed` (a text with no words: a zero vector, as the runtime reads nothing
    in it), embedded once and cached in `cache` by the document's key."""
    known: dict[str, np.ndarray] = {}
    if cache.is_file():
        with np.load(cache) as stored:
            known = dict(zip(stored["keys"].tolist(), stored["vectors"], strict=True))
    missing = [d for d in docs if d.key not in known]
    for n, doc in enumerate(missing, start=1):
        vector = embed(doc)
        known[doc.key] = np.zeros(width, dtype=np.float32) if vector is None else vector
        if n % 100 == 0:
            print(f"  {cache.stem}: embedded {n}/{len(missing)}", file=sys.stderr)
    if missing:
        cache.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(known)
        np.savez(cache, keys=np.array(keys), vectors=np.stack([known[k] for k in keys]))
    return np.stack([known[d.key] for d in docs]).astype(np.float64)


def term_vectorizer() -> Any:
    """scikit-learn's TfidfVectorizer with the settings `rca.terms` applies at run time (its test fits this
    very one, so a setting changed here that the runtime does not follow fails there)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(
        token_pattern=TOKEN_PATTERN,
        ngram_range=(1, NGRAMS),
        sublinear_tf=True,
        min_df=MIN_DF,
        max_features=MAX_TERMS,
    )


def fit_terms(texts: Sequence[str]) -> TermWeights:
    """The term vocabulary and idf, fitted by scikit-learn on the training texts."""
    fitted = term_vectorizer().fit(texts)
    vocabulary = {str(term): int(column) for term, column in fitted.vocabulary_.items()}
    return TermWeights(vocabulary, np.asarray(fitted.idf_, dtype=np.float64))


def fit(
    matrix: np.ndarray,
    texts: Sequence[str],
    labels: Sequence[str],
    multilingual: np.ndarray | None = None,
) -> SemanticModel:
    """The readers fitted on the rows of `matrix` (encoder vectors) beside the terms of `texts` (the lines
    each document was read from), with their labels; given the documents' `multilingual` vectors too, the
    model's `cjk` class reader is fitted on both vectors side by side."""
    from sklearn.linear_model import LogisticRegression

    terms = fit_terms(texts)
    term_features = terms.features(texts)
    features = np.hstack([matrix, term_features])
    y = np.array(labels)
    classes_fit = LogisticRegression(C=CLASS_C, max_iter=5000).fit(features, y)
    incident_fit = LogisticRegression(C=INCIDENT_C, max_iter=5000, class_weight="balanced").fit(
        features, y != HEALTHY
    )
    term_fit = LogisticRegression(C=INCIDENT_C, max_iter=5000, class_weight="balanced").fit(
        term_features, y != HEALTHY
    )
    cjk = None
    if multilingual is not None:
        both = np.hstack([matrix, multilingual, term_features])
        cjk_fit = LogisticRegression(C=CLASS_C, max_iter=5000).fit(both, y)
        cjk = ClassReader(
            classes=tuple(str(c) for c in cjk_fit.classes_),
            weights=cjk_fit.coef_.copy(),
            bias=cjk_fit.intercept_.copy(),
            model_sha256=MODEL_SHA256,
            terms=terms,
            multilingual_sha256=MULTILINGUAL_SHA256,
        )
    return SemanticModel(
        classes=tuple(str(c) for c in classes_fit.classes_),
        weights=classes_fit.coef_.copy(),
        bias=classes_fit.intercept_.copy(),
        incident_weights=incident_fit.coef_[0].copy(),
        incident_bias=float(incident_fit.intercept_[0]),
        incident_term_weights=term_fit.coef_[0].copy(),
        incident_term_bias=float(term_fit.intercept_[0]),
        min_probability=MIN_PROBABILITY,
        min_incident=MIN_INCIDENT,
        confident_probability=CONFIDENT_PROBABILITY,
        confident_min_incident=CONFIDENT_MIN_INCIDENT,
        model_sha256=MODEL_SHA256,
        terms=terms,
        cjk=cjk,
    )


def render(model: SemanticModel, docs: Sequence[Doc]) -> str:
    data = {
        "_about": (
            "Fitted by bench/fit_semantic_tier.py on the tune split's "
            f"{len(docs)} cases ({sum(d.label != HEALTHY for d in docs)} incidents); do not edit."
        ),
        **model.to_json(),
    }
    return json.dumps(data, indent=None, separators=(",", ":")) + "\n"


def same_fit(current: SemanticModel, fitted: SemanticModel) -> bool:
    """Whether two fits (their CJK class readers included) agree within CHECK_TOLERANCE (a refit on another
    machine differs in the last digits of its solver)."""
    if (current.cjk is None) != (fitted.cjk is None):
        return False
    if current.cjk is not None and fitted.cjk is not None and not same_reader(current.cjk, fitted.cjk):
        return False
    return (
        same_reader(current, fitted)
        and current.gate == fitted.gate
        and bool(np.allclose(current.incident_weights, fitted.incident_weights, atol=CHECK_TOLERANCE))
        and abs(current.incident_bias - fitted.incident_bias) <= CHECK_TOLERANCE
        and bool(
            np.allclose(current.incident_term_weights, fitted.incident_term_weights, atol=CHECK_TOLERANCE)
        )
        and abs(current.incident_term_bias - fitted.incident_term_bias) <= CHECK_TOLERANCE
    )


def same_reader(current: ClassReader, fitted: ClassReader) -> bool:
    """Whether two class readers read the same encoders and terms and agree within CHECK_TOLERANCE."""
    return (
        current.classes == fitted.classes
        and current.model_sha256 == fitted.model_sha256
        and current.multilingual_sha256 == fitted.multilingual_sha256
        and dict(current.terms.vocabulary) == dict(fitted.terms.vocabulary)
        and bool(np.allclose(current.terms.idf, fitted.terms.idf, atol=CHECK_TOLERANCE))
        and current.weights.shape == fitted.weights.shape
        and bool(np.allclose(current.weights, fitted.weights, atol=CHECK_TOLERANCE))
        and bool(np.allclose(current.bias, fitted.bias, atol=CHECK_TOLERANCE))
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file on disk is not current")
    args = parser.parse_args(argv)
    docs = tune_docs()
    texts, labels = [d.read_text for d in docs], [d.label for d in docs]
    model = fit(vectors(docs), texts, labels, multilingual_vectors(docs))
    if args.check:
        if not SEMANTIC_WEIGHTS_FILE.is_file():
            print(f"{SEMANTIC_WEIGHTS_FILE}: missing", file=sys.stderr)
            return 1
        current = SemanticModel.from_json(json.loads(SEMANTIC_WEIGHTS_FILE.read_text(encoding="utf-8")))
        if not same_fit(current, model):
            print(f"{SEMANTIC_WEIGHTS_FILE} is not current: run bench/fit_semantic_tier.py", file=sys.stderr)
            return 1
        print(f"{SEMANTIC_WEIGHTS_FILE.name}: current ({len(docs)} documents)")
        return 0
    SEMANTIC_WEIGHTS_FILE.write_text(render(model, docs), encoding="utf-8")
    print(f"wrote {SEMANTIC_WEIGHTS_FILE} ({len(docs)} documents, {len(model.classes)} classes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
