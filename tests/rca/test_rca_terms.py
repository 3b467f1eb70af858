"""The semantic tier's TF-IDF terms (`rca.terms`): the runtime's own transform gives scikit-learn's numbers.

scikit-learn fits the vocabulary and idf (`bench/fit_semantic_tier.py`); a diagnosis applies them without
it. If the two drifted apart (a token pattern, the n-grams, the tf or the norm), the fitted weights would
read other features than they were fitted on, silently.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.bench import load_bench_script

from gpuobs.rca.semantic import SEMANTIC_WEIGHTS_FILE
from gpuobs.rca.terms import TermWeights, terms

TUNE = Path(__file__).resolve().parent / "real_corpus" / "tune"


def test_the_terms_are_scikit_learns_own() -> None:
    """The fit script's own vectorizer (its settings, as fitted) against the runtime's transform."""
    fit = load_bench_script("fit_semantic_tier")
    texts = [p.read_text(encoding="utf-8") for p in sorted(TUNE.glob("*/excerpt.log"))[::7]]
    vectorizer = fit.term_vectorizer().fit(texts[:150])
    weights = fit.fit_terms(texts[:150])
    assert dict(weights.vocabulary) == {str(t): int(c) for t, c in vectorizer.vocabulary_.items()}
    unseen = [*texts[150:], "", "no known word here: zzzz qqqq", "显存不足 CUDA out of memory 메모리"]
    ours = weights.features(unseen)
    theirs = vectorizer.transform(unseen).toarray()
    assert ours.shape == theirs.shape
    assert np.allclose(ours, theirs, atol=1e-12)
    assert np.count_nonzero(ours) > 1000  # the comparison covers real overlap, not rows of zeros


def test_cjk_characters_and_their_pairs_are_terms() -> None:
    """Chinese and Korean are not split by spaces: single characters and their pairs carry the words."""
    found = terms("显存不足 ran out of a memory")
    assert {"显", "存", "显 存", "存 不", "out", "memory", "out of"} <= set(found)
    assert "a" not in found and "of memory" in found  # a one-letter word is no term (as scikit-learn's)


def test_the_shipped_weights_carry_their_vocabulary() -> None:
    data = json.loads(SEMANTIC_WEIGHTS_FILE.read_text(encoding="utf-8"))
    weights = TermWeights.from_json(data["terms"])
    assert 1000 <= weights.size <= 5000 and len(data["weights"][0]) == 384 + weights.size
    assert {"nccl", "oom", "xid"} <= set(weights.vocabulary)


@pytest.mark.parametrize(
    "broken",
    [{"terms": ["a", "a"], "idf": [1.0, 1.0]}, {"terms": ["a"], "idf": [1.0, 2.0]}, {"terms": ["a"]}],
)
def test_malformed_terms_are_refused(broken: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="semantic weights"):
        TermWeights.from_json(broken)
