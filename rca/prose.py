"""The prose tier: a learned last resort for incident text in which no line was recognised.

Half the misses on fresh incident text are the user's own description ("all requests sit in the
queue", "memory grows every step until it runs out", "the weights take 15 minutes to load"): no
machine-written line for a parser, no catalog phrase for the text tier. This tier reads such text as a
bag of words and word pairs with a naive Bayes model over the signature ids against a background model
of all text (healthy text included), fitted by `bench/fit_prose_tier.py` on the labelled corpora into
`catalog/_prose_weights.json`.

It is pure Python (a dict look-up per token). `parse_log_text` calls it only for a document in which
the exact tier extracted no fact and the text tier recognised nothing (`document.prose_lines`); it then
reads the prose lines (`is_prose`: no timestamp, log level or subsystem tag, not a table row, mostly plain
words) that no parser read, in a bounded window (the first and last `WINDOW_LINES` lines). It emits at
most one `prose_match` record of tier PROSE per document, only when the words are clearly likelier under
one signature than under ordinary text and than under any other class, `none` included (fitted limits).
The engine turns such a record into a cause only when no signature holds (`engine.prose_candidates`), with
a confidence under the text tier's, quoting the lines whose words weighed most.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Container, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from gpuobs.evidence import Evidence, EvidenceKind, EvidenceTier
from gpuobs.rca.fitted import FittedSlot, read_weights
from gpuobs.rca.keys import PROSE_MATCH
from gpuobs.rca.parsers.prefix import split_prefix, strip_decorations
from gpuobs.rca.parsers.text import unadvised

__all__ = [
    "HEALTHY",
    "PROSE_CONFIDENCE_HIGH",
    "PROSE_CONFIDENCE_LOW",
    "PROSE_VARIANT",
    "PROSE_WEIGHTS_FILE",
    "WINDOW_LINES",
    "ProseModel",
    "ProseVerdict",
    "default_prose_model",
    "doc_tokens",
    "is_prose",
    "line_tokens",
    "load_prose_model",
    "log_headed",
    "prose_confidence",
    "prose_record",
    "prose_window",
    "stem",
    "use_prose_model",
    "window_lines",
]

PROSE_WEIGHTS_FILE = Path(__file__).resolve().parent / "catalog" / "_prose_weights.json"
# The class of healthy text: a verdict for it is no verdict.
HEALTHY = "none"
# The variant name of a cause that rests on the prose tier (the report's tier says "prose").
PROSE_VARIANT = "prose"
# Each document is read on its first and last this many lines (an incident's description and its
# last words); a 100k-line log costs the same as an 800-line one.
WINDOW_LINES = 400
_MAX_LINE_CHARS = 400
_QUOTED_LINES = 3
# Under the text tier's range (0.35-0.55): a structured fact or a known phrase outranks a bag of words.
PROSE_CONFIDENCE_LOW = 0.2
PROSE_CONFIDENCE_HIGH = 0.3

# A prose line has at least this many words, this share of them plain words (letters, an apostrophe,
# trailing punctuation, a bracket or quote or markdown emphasis around).
_MIN_WORDS = 4
_PLAIN_SHARE = 0.7
# A log level word in capitals anywhere on the line ("NCCL INFO", "[W ProcessGroupNCCL.cpp] WARNING").
_LEVEL_RE = re.compile(r"\b(?:INFO|DEBUG|TRACE|WARN|WARNING|NOTICE)\b")
# A program's subsystem tag ending in a colon near the start ("EXT4-fs (nvme0n1p2):", "nvidia_uvm:",
# "pci 0000:3b:00.0:"): a kernel or daemon message, whatever its words.
# A table row (kubectl events, ps, a metrics dump): words in columns, several gaps of 2+ spaces.
_COLUMN_GAP_RE = re.compile(r"\S {2,}(?=\S)")
_TABLE_GAPS = 3
_TAG_RE = re.compile(r"\S*[\d()_./-]\S*:")
_PLAIN_RE = re.compile(r"[\"'(*_`\[]*[A-Za-z][a-z'-]*[\"')*_`\].,;:!?]*")
_WORD_RE = re.compile(r"[a-z][a-z0-9_]*(?:'[a-z]+)?")
_SUFFIXES = ("ing", "ed", "es", "s", "ly")
# Words that carry no failure: articles, pronouns, auxiliaries. Kept short: "not", "no", "after", "until"
# and "every" are telling in failure prose ("memory grows every step until").
_STOP = frozenset(
    {
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "i",
        "we",
        "you",
        "he",
        "she",
        "they",
        "my",
        "our",
        "your",
        "me",
        "us",
        "as",
        "from",
    }
)


def stem(word: str) -> str:
    """A crude suffix strip ("loading", "loaded", "loads" -> "load"): a paraphrase seldom keeps the
    original's word forms, and the corpora are too small to learn each form."""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def line_tokens(line: str) -> list[str]:
    """The stemmed words of a line (lower case, letters first, stop words out) and adjacent word pairs.

    A tool's stock advice or notice (the text tier's `unadvised`) is not read: it names a remedy or a
    setting with every report of its kind, not this incident's failure."""
    low = unadvised(line[:_MAX_LINE_CHARS].lower())
    words = [stem(w) for w in _WORD_RE.findall(low) if len(w) > 1 and w not in _STOP]
    return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]


def is_prose(line: str) -> bool:
    """Whether a line reads as a person's sentence rather than a program's: no timestamp, log level,
    kernel time or subsystem tag in front, not a table row, at least MIN_WORDS words, most of them plain
    words (not numbers, paths, hex)."""
    words = line[:_MAX_LINE_CHARS].split()
    if len(words) < _MIN_WORDS:
        return False
    if sum(1 for w in words if _PLAIN_RE.fullmatch(w)) < _PLAIN_SHARE * len(words):
        return False
    if log_headed(line):
        return False
    return len(_COLUMN_GAP_RE.findall(line[:_MAX_LINE_CHARS].strip())) < _TABLE_GAPS


def log_headed(line: str) -> bool:
    """Whether a line opens as a program's log line: a log level, a subsystem tag among its first words, or
    a timestamp, level or kernel time in front. What a person writes has none of them, in any script."""
    head = line[:_MAX_LINE_CHARS]
    if _LEVEL_RE.search(head) or any(_TAG_RE.fullmatch(w) for w in head.split()[:3]):
        return True
    prefix = split_prefix(strip_decorations(head))
    return prefix.time is not None or prefix.level is not None or prefix.boot_seconds is not None


def window_lines(lines: Sequence[str], skip: Container[int] = ()) -> list[tuple[int, str]]:
    """The (0-based number, line) pairs among the first and last WINDOW_LINES lines, less `skip`."""
    if len(lines) <= 2 * WINDOW_LINES:
        numbered: Iterable[tuple[int, str]] = enumerate(lines)
    else:
        tail = len(lines) - WINDOW_LINES
        numbered = [*enumerate(lines[:WINDOW_LINES]), *((tail + i, s) for i, s in enumerate(lines[tail:]))]
    return [(n, s) for n, s in numbered if n not in skip]


def prose_window(lines: Sequence[str], skip: Container[int] = ()) -> list[tuple[int, str]]:
    """The (0-based number, line) pairs read: prose lines among the first and last WINDOW_LINES lines,
    less `skip`."""
    return [(n, s) for n, s in window_lines(lines, skip) if is_prose(s)]


def doc_tokens(lines: Sequence[str], skip: Container[int] = ()) -> set[str]:
    """The distinct tokens of a document's window, as the model reads it (each counts once).

    `skip` are 0-based lines the exact tier recognised (a record or tool output): the prose tier reads
    only what no parser understood, so a healthy line that the exact tier has judged stays judged.
    """
    out: set[str] = set()
    for _, line in prose_window(lines, skip):
        out.update(line_tokens(line))
    return out


@dataclass(frozen=True)
class ProseVerdict:
    """The model's call on one document: the signature, its score (log-likelihood ratio against
    ordinary text), its lead over the runner-up signature, and the 1-based lines whose tokens weighed
    most for it."""

    signature: str
    score: float
    lead: float
    lines: tuple[int, ...]


@dataclass(frozen=True)
class ProseModel:
    """Naive Bayes over binary token features against a background model of all text, stored sparsely.

    For a document's tokens in the vocabulary, score(c) = sum over them of log P(t | c) - log P(t | any
    text): how much likelier the words are under signature c than under the corpora's text at large
    (healthy text included), with Laplace smoothing; healthy text is also a class of its own
    (`none`). `weights[t]` holds log((n + alpha) / alpha) for a
    class that saw t n times, `unseen[c]` = log(alpha / (N_c + alpha * V)) and `background[t]` =
    -log P(t | any text), so only non-zero counts are stored. A verdict needs the top score to reach its
    signature's limit (`limit`: `class_min_score` where healthy text came near that signature, else
    `min_score`; chosen by the fit so that no healthy case of the corpora, scored out of fold, gets a
    cause) and to lead the runner-up (`none` included) by `min_lead`. A limit per signature, because one
    healthy sentence close to one signature ("Persistence mode for GPU 0 is disabled." to a reset) says
    nothing of how close healthy text comes to the others. A top signature under its limit still holds
    when it leads the runner-up by `lead_limit` (above any lead healthy text reached, also chosen by the
    fit): a short description scores low, but when its words point at one signature only, the runner-up
    is far behind. It also holds at `agree_min_score` when a second reader of the same
    words, a logistic regression (`logit_bias`, `logit_weights`: per-class intercepts and token weights,
    small ones pruned), puts the same signature first: the two models err on different texts, so their
    agreement is rarer on healthy text than either's score alone. That limit is per signature too
    (`class_agree_min_score` where healthy text on which both agreed came near it).
    """

    classes: tuple[str, ...]
    unseen: tuple[float, ...]
    background: dict[str, float]
    weights: dict[str, dict[int, float]]
    min_score: float
    min_lead: float
    class_min_score: dict[str, float] = field(default_factory=dict)
    lead_limit: float = math.inf
    logit_bias: tuple[float, ...] = ()
    logit_weights: dict[str, dict[int, float]] = field(default_factory=dict)
    agree_min_score: float = math.inf
    class_agree_min_score: dict[str, float] = field(default_factory=dict)

    def holds(self, top: str, score: float, lead: float, agreed: bool = False) -> bool:
        """Whether a verdict for `top` with this score and lead is given; `agreed`: the logistic reader
        put `top` first too."""
        if top == HEALTHY or lead < self.min_lead or score <= 0:
            return False
        return (
            score >= self.limit(top) or lead >= self.lead_limit or (agreed and score >= self.agree_limit(top))
        )

    def agree_limit(self, signature: str) -> float:
        """The score a verdict for `signature` needs when the logistic reader agrees."""
        return self.class_agree_min_score.get(signature, self.agree_min_score)

    def logit_top(self, tokens: Iterable[str]) -> str | None:
        """The logistic reader's top class for these tokens, or None when the model has no such reader."""
        if not self.logit_bias:
            return None
        out = list(self.logit_bias)
        for token in set(tokens):
            for ci, w in self.logit_weights.get(token, {}).items():
                out[ci] += w
        return self.classes[min(range(len(out)), key=lambda i: (-out[i], self.classes[i]))]

    def judge(self, tokens: Iterable[str]) -> tuple[str, float, float, bool]:
        """The top class, its score, its lead and whether a verdict is given (`best` and `holds`, asking the
        logistic reader only when its agreement could decide)."""
        tokens = set(tokens)
        top, score, lead = self.best(tokens)
        if self.holds(top, score, lead):
            return top, score, lead, True
        could_agree = top != HEALTHY and score >= self.agree_limit(top)
        agreed = could_agree and self.logit_top(tokens) == top
        return top, score, lead, self.holds(top, score, lead, agreed)

    def limit(self, signature: str) -> float:
        """The score a verdict for `signature` needs."""
        return self.class_min_score.get(signature, self.min_score)

    def _gain(self, token: str, ci: int) -> float:
        row = self.weights.get(token)
        return (row.get(ci, 0.0) if row else 0.0) + self.unseen[ci] + self.background[token]

    def scores(self, tokens: Iterable[str]) -> list[float]:
        known = [t for t in set(tokens) if t in self.background]
        base = sum(self.background[t] for t in known)
        out = [base + u * len(known) for u in self.unseen]
        for token in known:
            for ci, w in self.weights.get(token, {}).items():
                out[ci] += w
        return out

    def best(self, tokens: Iterable[str]) -> tuple[str, float, float]:
        """The top class, its score and its lead over the runner-up (0.0 with nothing known)."""
        scores = self.scores(tokens)
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], self.classes[i]))
        if not any(t in self.background for t in tokens):
            return self.classes[order[0]], 0.0, 0.0
        lead = scores[order[0]] - scores[order[1]] if len(order) > 1 else math.inf
        return self.classes[order[0]], scores[order[0]], lead

    def classify(self, lines: Sequence[str], skip: Container[int] = ()) -> ProseVerdict | None:
        """A verdict on the prose lines of the document's window less `skip`, or None (abstain)."""
        per_line = [(n, set(line_tokens(s))) for n, s in prose_window(lines, skip)]
        tokens = {t for _, ts in per_line for t in ts}
        top, score, lead, named = self.judge(tokens)
        if not named:
            return None
        ci = self.classes.index(top)
        weighed: list[tuple[float, int]] = []
        for n, ts in per_line:
            gain = sum(self._gain(t, ci) for t in ts if t in self.background)
            if gain > 0:
                weighed.append((gain, n))
        weighed.sort(key=lambda it: (-it[0], it[1]))
        chosen = tuple(sorted(n + 1 for _, n in weighed[:_QUOTED_LINES]))
        return ProseVerdict(top, score, lead, chosen)

    def to_json(self) -> dict[str, object]:
        """The model as JSON: per token [background, {signature: weight}]."""
        return {
            "classes": list(self.classes),
            "unseen": [round(u, 4) for u in self.unseen],
            "min_score": round(self.min_score, 4),
            "min_lead": round(self.min_lead, 4),
            "class_min_score": {c: round(v, 4) for c, v in sorted(self.class_min_score.items())},
            "lead_limit": None if math.isinf(self.lead_limit) else round(self.lead_limit, 4),
            "agree_min_score": None if math.isinf(self.agree_min_score) else round(self.agree_min_score, 4),
            "class_agree_min_score": {c: round(v, 4) for c, v in sorted(self.class_agree_min_score.items())},
            "logit": {
                "bias": {c: round(b, 4) for c, b in zip(self.classes, self.logit_bias, strict=True)}
                if self.logit_bias
                else {},
                "tokens": {
                    t: {self.classes[ci]: round(w, 4) for ci, w in sorted(row.items())}
                    for t, row in sorted(self.logit_weights.items())
                },
            },
            "tokens": {
                t: [
                    round(bg, 4),
                    {self.classes[ci]: round(w, 4) for ci, w in sorted(self.weights.get(t, {}).items())},
                ]
                for t, bg in sorted(self.background.items())
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ProseModel:
        classes = tuple(str(c) for c in _list(data, "classes"))
        index = {c: i for i, c in enumerate(classes)}
        unseen = tuple(float(str(u)) for u in _list(data, "unseen"))
        if len(unseen) != len(classes):
            raise ValueError("prose weights: classes and unseen differ in length")
        raw = data.get("tokens")
        if not isinstance(raw, dict):
            raise ValueError("prose weights: 'tokens' must be a table")
        background: dict[str, float] = {}
        weights: dict[str, dict[int, float]] = {}
        for token, (bg, row) in raw.items():
            background[str(token)] = float(bg)
            if row:
                weights[str(token)] = {index[str(c)]: float(w) for c, w in row.items()}
        limits = [data.get("min_score"), data.get("min_lead")]
        if not all(isinstance(v, int | float) for v in limits):
            raise ValueError("prose weights: 'min_score' and 'min_lead' must be numbers")
        per_class = data.get("class_min_score", {})
        if not isinstance(per_class, dict) or not all(
            c in index and isinstance(v, int | float) for c, v in per_class.items()
        ):
            raise ValueError("prose weights: 'class_min_score' must map known classes to numbers")
        lead_limit, agree_min_score = data.get("lead_limit"), data.get("agree_min_score")
        if lead_limit is not None and not isinstance(lead_limit, int | float):
            raise ValueError("prose weights: 'lead_limit' must be a number or null")
        if agree_min_score is not None and not isinstance(agree_min_score, int | float):
            raise ValueError("prose weights: 'agree_min_score' must be a number or null")
        logit_bias, logit_weights = _logit(data.get("logit", {}), index)
        per_class_agree = data.get("class_agree_min_score", {})
        if not isinstance(per_class_agree, dict) or not all(
            c in index and isinstance(v, int | float) for c, v in per_class_agree.items()
        ):
            raise ValueError("prose weights: 'class_agree_min_score' must map known classes to numbers")
        return cls(
            classes,
            unseen,
            background,
            weights,
            float(str(limits[0])),
            float(str(limits[1])),
            {str(c): float(v) for c, v in per_class.items()},
            math.inf if lead_limit is None else float(lead_limit),
            logit_bias,
            logit_weights,
            math.inf if agree_min_score is None else float(agree_min_score),
            {str(c): float(v) for c, v in per_class_agree.items()},
        )


def _logit(data: object, index: dict[str, int]) -> tuple[tuple[float, ...], dict[str, dict[int, float]]]:
    """The logistic reader's intercepts (in class order) and token weights from the weights file's `logit`
    table ({} or no biases: no such reader)."""
    if not isinstance(data, dict):
        raise ValueError("prose weights: 'logit' must be a table")
    bias, rows = data.get("bias") or {}, data.get("tokens") or {}
    if not isinstance(bias, dict) or not isinstance(rows, dict):
        raise ValueError("prose weights: 'logit' needs 'bias' and 'tokens' tables")
    if not bias:
        return (), {}
    if set(bias) != set(index) or not all(isinstance(v, int | float) for v in bias.values()):
        raise ValueError("prose weights: 'logit.bias' must give a number for every class")
    try:  # one pass, no per-weight checks: the file is read on every diagnosis that reaches this tier
        weights = {str(t): {index[c]: float(w) for c, w in row.items()} for t, row in rows.items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"prose weights: 'logit.tokens' must map known classes to numbers: {exc!r}") from exc
    return tuple(float(bias[c]) for c in sorted(index, key=index.__getitem__)), weights


def _list(data: dict[str, object], key: str) -> list[object]:
    value = data.get(key)
    if not isinstance(value, list):
        raise ValueError(f"prose weights: {key!r} must be a list")
    return value


def load_prose_model(path: Path = PROSE_WEIGHTS_FILE) -> ProseModel | None:
    """The fitted model, or None when the file is absent (the tier is then off)."""
    return read_weights(path, ProseModel.from_json)


_SLOT: FittedSlot[ProseModel] = FittedSlot(load_prose_model)


def default_prose_model() -> ProseModel | None:
    """The bundled model (loaded once), or the one `use_prose_model` put in place."""
    return _SLOT.get()


def use_prose_model(model: ProseModel | None) -> AbstractContextManager[None]:
    """Diagnose with another model (a cross-validation fold's) or none (tier off) inside the block."""
    return _SLOT.use(model)


def prose_confidence(score: float, threshold: float) -> float:
    """The confidence of a cause resting on the prose tier alone: low, rising a little with the score."""
    share = min(1.0, max(0.0, (score - threshold) / max(1.0, abs(threshold))))
    return round(PROSE_CONFIDENCE_LOW + (PROSE_CONFIDENCE_HIGH - PROSE_CONFIDENCE_LOW) * share, 4)


def prose_record(
    lines: Sequence[str], source: str, skip: Container[int] = (), model: ProseModel | None = None
) -> Evidence | None:
    """One `prose_match` record (tier PROSE) for the document's lines outside `skip` (0-based lines the
    exact tier read), or None when the model abstains. `model` defaults to `default_prose_model()`."""
    model = default_prose_model() if model is None else model
    if model is None or not lines:
        return None
    verdict = model.classify(lines, skip)
    if verdict is None:
        return None
    quoted = [" ".join(lines[n - 1][:_MAX_LINE_CHARS].split()) for n in verdict.lines]
    return Evidence(
        kind=EvidenceKind.LOG,
        key=PROSE_MATCH,
        value=verdict.signature,
        source=source,
        raw="\n".join(quoted),
        attrs={
            "score": round(verdict.score, 3),
            "lead": round(verdict.lead, 3),
            "confidence": prose_confidence(verdict.score, model.limit(verdict.signature)),
            "line": verdict.lines[0] if verdict.lines else 1,
            "lines": list(verdict.lines),
        },
        tier=EvidenceTier.PROSE,
    )
