"""The semantic tier's second view of a text: the words it uses, weighed by how rare they are (TF-IDF).

A sentence encoder reads meaning but blurs the exact words a failure is told in ("NCCL", "shm",
"CrashLoopBackOff"), and it reads Chinese or Korean text as noise. The semantic tier's readers therefore see
a document's encoder vector beside this one: the counts of its words and word pairs (and of single CJK
characters and their pairs), over a vocabulary fitted on the tune split by `bench/fit_semantic_tier.py`.

It is scikit-learn's `TfidfVectorizer` (lower case, TOKEN_PATTERN, word n-grams up to NGRAMS, sublinear term
frequency, smooth idf, unit length) applied with its fitted vocabulary and idf: scikit-learn fits it, this
module only applies it, so a diagnosis needs no scikit-learn. `tests/rca/test_rca_terms.py` holds the two
to the same numbers.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["NGRAMS", "TOKEN_PATTERN", "TermWeights", "terms"]

# A word: a letter, then letters, digits or underscores; or one CJK character (kana, han, hangul), whose
# pairs the n-grams then give: those scripts do not separate words by spaces.
TOKEN_PATTERN = r"(?u)\b[A-Za-z][A-Za-z0-9_]+\b|[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]"
NGRAMS = 2
_TOKEN = re.compile(TOKEN_PATTERN)


def terms(text: str) -> list[str]:
    """The text's words and word pairs, as scikit-learn's word analyzer gives them."""
    tokens = _TOKEN.findall(text.lower())
    found = list(tokens)
    for n in range(2, NGRAMS + 1):
        found += [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return found


@dataclass(frozen=True)
class TermWeights:
    """A fitted vocabulary (term -> column) and each column's inverse document frequency."""

    vocabulary: Mapping[str, int]
    idf: np.ndarray  # (terms,)

    @property
    def size(self) -> int:
        return len(self.vocabulary)

    def features(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-length TF-IDF row per text (zeros for a text with no known term)."""
        import numpy as np

        out = np.zeros((len(texts), self.size), dtype=np.float64)
        for row, text in enumerate(texts):
            counts = Counter(t for t in terms(text) if t in self.vocabulary)
            for term, count in counts.items():
                column = self.vocabulary[term]
                out[row, column] = (1.0 + math.log(count)) * self.idf[column]
            norm = float(np.linalg.norm(out[row]))
            if norm > 0.0:
                out[row] /= norm
        return out

    def to_json(self) -> dict[str, object]:
        ordered = sorted(self.vocabulary, key=self.vocabulary.__getitem__)
        return {"terms": ordered, "idf": [round(float(v), 6) for v in self.idf]}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> TermWeights:
        import numpy as np

        try:
            ordered = [str(t) for t in data["terms"]]  # type: ignore[attr-defined]
            idf = np.asarray(data["idf"], dtype=np.float64)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"semantic weights: missing or malformed term field: {exc!r}") from exc
        if idf.shape != (len(ordered),) or len(set(ordered)) != len(ordered):
            raise ValueError("semantic weights: 'terms' must be distinct, one 'idf' value each")
        return cls({t: i for i, t in enumerate(ordered)}, idf)
