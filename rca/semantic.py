"""The semantic tier: a reader of meaning for incident text that no other tier understood.

The prose tier counts words; a person's description of a failure rarely reuses the words of another
person's ("the box froze and the card vanished from nvidia-smi" against "GPU fell off the bus"). This tier
reads the text through a sentence encoder (all-MiniLM-L6-v2, `rca.embedding`, behind the `semantic` extra)
and, beside its 384-dimensional document vector, the words the text uses weighed by their rarity
(`rca.terms`: the encoder blurs exact names and cannot read CJK text). Logistic regressions fitted by
`bench/fit_semantic_tier.py` on the real-text corpus into `catalog/_semantic_weights.json` read them: one over
the signature ids and healthy text (`none`), and two that only tell an incident from healthy text, one over
both views and one over the words alone, whose mean is the incident reading (the pair names more incidents
than either alone at the same count of healthy texts named, out of fold).

It is the last resort. The engine asks it for a cause only when no signature held and the prose tier named
nothing (`engine.diagnose_evidence`'s fallback; `pipeline.diagnose` hands it the log texts), so it never
overrides a fact, a known wording or the prose tier. When the other tiers named fewer than three causes,
it is asked for alternatives (`semantic_runners_up`): the signatures it finds likeliest after them, listed
below them (on real text the loudest fact is often a consequence), unless its likeliest is one the catalog
declares the cause of the first cause named and it reads that one `confident`ly: that one goes first, the
fact it explains second (an OOM in a story of memory growing epoch after epoch: a leak; each record says
whether its reading is `confident`). It names a cause only when the document is likely an incident
(`min_incident`) and one signature is likely enough (`min_probability`), or when one signature is likely by
far (`confident_probability`) and the document reads as an incident less surely (`confident_min_incident`): a
reading that points at one failure needs less proof that something failed. It then lists up to ALTERNATIVES
more signatures as lower causes. Its confidence is the lowest of all tiers, and each record quotes the lines
that read most like the failure.
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from gpuobs.evidence import Evidence, EvidenceKind, EvidenceTier
from gpuobs.rca.embedding import (
    ENCODER_WIDTH,
    MODEL_SHA256,
    DocumentEmbedding,
    SemanticUnavailable,
    embed_document,
    embed_lines,
)
from gpuobs.rca.fitted import FittedSlot, read_weights
from gpuobs.rca.keys import SEMANTIC_MATCH
from gpuobs.rca.prose import HEALTHY
from gpuobs.rca.terms import TermWeights

__all__ = [
    "HEALTHY",
    "SEMANTIC_CONFIDENCE_HIGH",
    "SEMANTIC_CONFIDENCE_LOW",
    "SEMANTIC_ENV",
    "SEMANTIC_VARIANT",
    "SEMANTIC_WEIGHTS_FILE",
    "SemanticModel",
    "SemanticUnavailable",
    "default_semantic_model",
    "load_semantic_model",
    "semantic_records",
    "semantic_runners_up",
    "semantic_switch",
    "use_semantic_model",
]

SEMANTIC_WEIGHTS_FILE = Path(__file__).resolve().parent / "catalog" / "_semantic_weights.json"
SEMANTIC_VARIANT = "semantic"
# GPUOBS_SEMANTIC=off turns the tier off (as `gpuobs diagnose --no-semantic`); on asks for it, and an
# install without the extra is then an error rather than a silent skip; auto (or unset) uses it if installed.
SEMANTIC_ENV = "GPUOBS_SEMANTIC"
# Under the prose tier's range (0.2-0.3): a meaning read off a whole text is the weakest evidence.
SEMANTIC_CONFIDENCE_LOW = 0.1
SEMANTIC_CONFIDENCE_HIGH = 0.2
ALTERNATIVES = 2
ALTERNATIVE_MIN_PROBABILITY = 0.05
_QUOTED_LINES = 3
_SCORED_LINES = 40
_MAX_QUOTE_CHARS = 400


@dataclass(frozen=True)
class SemanticVerdict:
    """The signatures named (best first) with their probabilities, and the document's incident
    probability."""

    named: tuple[tuple[str, float], ...]
    incident: float


@dataclass(frozen=True)
class SemanticModel:
    """Per-class logistic weights over a document's features (its encoder vector, then its TF-IDF terms),
    and two incident-or-healthy logistic readers: one over the same features, one over the terms alone."""

    classes: tuple[str, ...]
    weights: np.ndarray  # (classes, features)
    bias: np.ndarray  # (classes,)
    incident_weights: np.ndarray  # (features,)
    incident_bias: float
    incident_term_weights: np.ndarray  # (terms,)
    incident_term_bias: float
    min_probability: float
    min_incident: float
    confident_probability: float
    confident_min_incident: float
    model_sha256: str
    terms: TermWeights

    def features(self, vectors: np.ndarray, texts: Sequence[str]) -> np.ndarray:
        """One row per text: its encoder vector (a row of `vectors`) beside its TF-IDF terms."""
        import numpy as np

        return np.hstack([np.asarray(vectors, dtype=np.float64), self.terms.features(texts)])

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """Class probabilities (softmax) for each row of `features`."""
        import numpy as np

        logits = features @ self.weights.T + self.bias
        logits -= logits.max(axis=-1, keepdims=True)
        odds = np.exp(logits)
        return np.asarray(odds / odds.sum(axis=-1, keepdims=True))

    def incident(self, features: np.ndarray) -> float:
        """The probability that the document (one row of features) tells of an incident, not healthy
        operation: the mean of the two readers'."""
        whole = float(features @ self.incident_weights + self.incident_bias)
        words = float(features[ENCODER_WIDTH:] @ self.incident_term_weights + self.incident_term_bias)
        return (_sigmoid(whole) + _sigmoid(words)) / 2.0

    def judge(self, features: np.ndarray) -> SemanticVerdict:
        """The signatures one document's features name: none unless its likeliest signature passes
        `min_probability` and it reads as an incident (`min_incident`, or `confident_min_incident` when that
        signature passes `confident_probability`); then that one and up to ALTERNATIVES runners-up."""
        incident = self.incident(features)
        ranked = self.signatures(features)
        if not ranked or not self.passes(incident, ranked[0][1]):
            return SemanticVerdict((), incident)
        alternatives = [r for r in ranked[1 : 1 + ALTERNATIVES] if r[1] >= ALTERNATIVE_MIN_PROBABILITY]
        return SemanticVerdict((ranked[0], *alternatives), incident)

    def signatures(self, features: np.ndarray, leave_out: Collection[str] = ()) -> list[tuple[str, float]]:
        """The signatures (not `none`, none of `leave_out`) with their probabilities for one document's
        features, likeliest first."""
        probs = self.probabilities(features[None, :])[0]
        return sorted(
            (
                (c, float(p))
                for c, p in zip(self.classes, probs, strict=True)
                if c != HEALTHY and c not in leave_out
            ),
            key=lambda it: (-it[1], it[0]),
        )

    def passes(self, incident: float, probability: float) -> bool:
        """Whether a document with this incident reading and likeliest-signature probability is named."""
        if probability < self.min_probability:
            return False
        if incident >= self.min_incident:
            return True
        return probability >= self.confident_probability and incident >= self.confident_min_incident

    def to_json(self) -> dict[str, object]:
        return {
            "encoder": {"model_sha256": self.model_sha256},
            "classes": list(self.classes),
            "min_probability": self.min_probability,
            "min_incident": self.min_incident,
            "confident_probability": self.confident_probability,
            "confident_min_incident": self.confident_min_incident,
            "terms": self.terms.to_json(),
            "bias": [round(float(b), 5) for b in self.bias],
            "weights": [[round(float(w), 5) for w in row] for row in self.weights],
            "incident_bias": round(self.incident_bias, 5),
            "incident_weights": [round(float(w), 5) for w in self.incident_weights],
            "incident_term_bias": round(self.incident_term_bias, 5),
            "incident_term_weights": [round(float(w), 5) for w in self.incident_term_weights],
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> SemanticModel:
        import numpy as np

        try:
            classes = tuple(str(c) for c in data["classes"])  # type: ignore[attr-defined]
            weights = np.asarray(data["weights"], dtype=np.float64)
            bias = np.asarray(data["bias"], dtype=np.float64)
            incident_weights = np.asarray(data["incident_weights"], dtype=np.float64)
            incident_bias = float(data["incident_bias"])  # type: ignore[arg-type]
            incident_term_weights = np.asarray(data["incident_term_weights"], dtype=np.float64)
            incident_term_bias = float(data["incident_term_bias"])  # type: ignore[arg-type]
            min_probability = float(data["min_probability"])  # type: ignore[arg-type]
            min_incident = float(data["min_incident"])  # type: ignore[arg-type]
            confident_probability = float(data["confident_probability"])  # type: ignore[arg-type]
            confident_min_incident = float(data["confident_min_incident"])  # type: ignore[arg-type]
            sha = str(data["encoder"]["model_sha256"])  # type: ignore[index]
            terms = TermWeights.from_json(data["terms"])  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"semantic weights: missing or malformed field: {exc!r}") from exc
        if weights.ndim != 2 or weights.shape[0] != len(classes) or bias.shape != (len(classes),):
            raise ValueError("semantic weights: 'weights' and 'bias' must have one row per class")
        if weights.shape[1] != ENCODER_WIDTH + terms.size:
            raise ValueError("semantic weights: each row of 'weights' must cover the vector and the terms")
        if incident_weights.shape != (weights.shape[1],):
            raise ValueError("semantic weights: 'incident_weights' must match the features' size")
        if incident_term_weights.shape != (terms.size,):
            raise ValueError("semantic weights: 'incident_term_weights' must match the terms' size")
        if HEALTHY not in classes:
            raise ValueError("semantic weights: the healthy class 'none' is missing")
        return cls(
            classes,
            weights,
            bias,
            incident_weights,
            incident_bias,
            incident_term_weights,
            incident_term_bias,
            min_probability,
            min_incident,
            confident_probability,
            confident_min_incident,
            sha,
            terms,
        )


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z > -500 else 0.0


def load_semantic_model(path: Path = SEMANTIC_WEIGHTS_FILE) -> SemanticModel | None:
    """The fitted model, or None when the file is absent (the tier is then off)."""
    return read_weights(path, SemanticModel.from_json)


_SLOT: FittedSlot[SemanticModel] = FittedSlot(load_semantic_model)


def default_semantic_model() -> SemanticModel | None:
    """The bundled model (loaded once), or the one `use_semantic_model` put in place."""
    return _SLOT.get()


def use_semantic_model(model: SemanticModel | None) -> AbstractContextManager[None]:
    """Diagnose with another model (a cross-validation fold's) or none (tier off) inside the block."""
    return _SLOT.use(model)


def semantic_switch(asked: bool | None = None) -> bool | None:
    """The tier's setting: True (asked for: a missing extra is an error), False (off), None (on when the
    extra is installed). `asked` is the CLI's flag; without one, GPUOBS_SEMANTIC decides."""
    if asked is not None:
        return asked
    value = os.environ.get(SEMANTIC_ENV, "").strip().lower()
    if value in ("0", "off", "false", "no"):
        return False
    if value in ("1", "on", "true", "yes"):
        return True
    if value not in ("", "auto"):
        raise SemanticUnavailable(f"{SEMANTIC_ENV}={value!r}: use on, off or auto")
    return None


def semantic_confidence(probability: float) -> float:
    """A cause's confidence from the semantic tier: the lowest range, rising with the probability."""
    share = min(1.0, max(0.0, probability))
    return round(SEMANTIC_CONFIDENCE_LOW + (SEMANTIC_CONFIDENCE_HIGH - SEMANTIC_CONFIDENCE_LOW) * share, 4)


def semantic_records(texts: Sequence[tuple[str, str]], model: SemanticModel | None = None) -> list[Evidence]:
    """`semantic_match` records (tier SEMANTIC) for the one document, of `texts` ((name, text) pairs), that
    the model reads most clearly as a known failure; [] when it reads none so. Raises SemanticUnavailable
    when the encoder cannot run."""
    model = _usable_model(model)
    if model is None or not texts:
        return []
    best = _clearest_document(texts, model)
    if best is None:
        return []
    name, verdict, doc = best
    return _records(name, verdict, doc, model)


def semantic_runners_up(
    texts: Sequence[tuple[str, str]], named: Collection[str], count: int, model: SemanticModel | None = None
) -> list[Evidence]:
    """`semantic_match` records for up to `count` signatures other than `named` that the model finds likeliest
    (each at least ALTERNATIVE_MIN_PROBABILITY) in the document of `texts` where one of them is likeliest.

    Asked only when the other tiers named a cause: the text already reads as an incident, so no incident gate
    applies; these are lower alternatives to what they named, never a first cause.
    Raises SemanticUnavailable when the encoder cannot run."""
    model = _usable_model(model)
    if model is None or not texts or count <= 0:
        return []
    best: tuple[str, SemanticVerdict, DocumentEmbedding] | None = None
    for name, text in texts:
        doc = embed_document(text.splitlines())
        if doc is None:
            continue
        features = model.features(doc.vector[None, :], [doc.text])[0]
        ranked = [r for r in model.signatures(features, named) if r[1] >= ALTERNATIVE_MIN_PROBABILITY][:count]
        if ranked and (best is None or ranked[0][1] > best[1].named[0][1]):
            best = (name, SemanticVerdict(tuple(ranked), model.incident(features)), doc)
    if best is None:
        return []
    return _records(*best, model)


def _usable_model(model: SemanticModel | None) -> SemanticModel | None:
    """The model to read with (the default when none is given); SemanticUnavailable when it was fitted on
    another encoder than the installed one."""
    model = default_semantic_model() if model is None else model
    if model is not None and model.model_sha256 != MODEL_SHA256:
        raise SemanticUnavailable("semantic weights were fitted on another encoder; refit them")
    return model


def _records(
    name: str, verdict: SemanticVerdict, doc: DocumentEmbedding, model: SemanticModel
) -> list[Evidence]:
    """One record per signature the verdict names, best first, quoting the document's lines that read most
    like it."""
    lines = [line for chunk in doc.chunks for line in chunk][:_SCORED_LINES]
    per_line = model.probabilities(model.features(_line_vectors(lines), [text for _, text in lines]))
    records = []
    for rank, (signature, probability) in enumerate(verdict.named, start=1):
        ci = model.classes.index(signature)
        order = sorted(range(len(lines)), key=lambda i: (-per_line[i, ci], i))[:_QUOTED_LINES]
        quoted = sorted(lines[i] for i in order)
        records.append(
            Evidence(
                kind=EvidenceKind.LOG,
                key=SEMANTIC_MATCH,
                value=signature,
                source=name,
                raw="\n".join(text[:_MAX_QUOTE_CHARS] for _, text in quoted),
                attrs={
                    "probability": round(probability, 4),
                    "incident": round(verdict.incident, 4),
                    "rank": rank,
                    "confidence": semantic_confidence(probability),
                    "confident": probability >= model.confident_probability,
                    "line": quoted[0][0] if quoted else 1,
                    "lines": [n for n, _ in quoted],
                },
                tier=EvidenceTier.SEMANTIC,
            )
        )
    return records


def _clearest_document(
    texts: Sequence[tuple[str, str]], model: SemanticModel
) -> tuple[str, SemanticVerdict, DocumentEmbedding] | None:
    """The (name, verdict, embedding) of the document whose first signature is likeliest, of those that
    name one."""
    best: tuple[str, SemanticVerdict, DocumentEmbedding] | None = None
    for name, text in texts:
        doc = embed_document(text.splitlines())
        if doc is None:
            continue
        verdict = model.judge(model.features(doc.vector[None, :], [doc.text])[0])
        if verdict.named and (best is None or verdict.named[0][1] > best[1].named[0][1]):
            best = (name, verdict, doc)
    return best


def _line_vectors(lines: Sequence[tuple[int, str]]) -> np.ndarray:
    """Each line's own vector: which lines, read alone, read most like the signature named is what the
    report quotes."""
    return embed_lines([text for _, text in lines])
