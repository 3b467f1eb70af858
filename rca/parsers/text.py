"""The robust text tier: a known failure recognised by its wording where no exact parser applies.

Real incident text is often a paraphrase ("the training freezes with 4 GPUs and works with
NCCL_P2P_DISABLE=1"), a log format no parser knows, or a terminal paste whose one structured line is
missing. Each catalog signature lists general phrases of its failure with weights (`[text] phrases` in
its TOML file, weights fitted on the labelled corpora in `catalog/_text_weights.toml`). This pass finds
every phrase in one Aho-Corasick scan of the lower-cased text, groups the hits of each signature that
sit within a few lines of each other (a wrapped message, a traceback and its cause, a paragraph), and
scores each group as a noisy-OR of its distinct phrases' weights. A group that scores at least
`TEXT_MIN_SCORE` becomes one `text_match` record of tier TEXT, quoting the lines it relied on; the engine
gives a signature that holds on such records alone a lower confidence than an exact match.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections import defaultdict
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gpuobs.evidence import Entity, Evidence, EvidenceKind, EvidenceTier
from gpuobs.rca import keys
from gpuobs.rca.parsers.lowered import LowerText, lower_text, plain
from gpuobs.rca.parsers.prefix import split_prefix, strip_decorations
from gpuobs.rca.parsers.scan import MultiScanner
from gpuobs.rca.signature import TEXT_MIN_SCORE, Matcher, Signature

__all__ = [
    "CLUSTER_GAP_LINES",
    "TEXT_ANCHOR_MIN",
    "PhraseHit",
    "Phrasebook",
    "default_phrasebook",
    "match_text",
    "noisy_or",
    "phrase_hits",
    "read_groups",
    "signature_hits",
    "unadvised",
]

logger = logging.getLogger(__name__)

# Hits of one signature at most this many lines apart belong to one group (a wrapped message, a
# traceback and the error above it, a short paragraph of prose).
CLUSTER_GAP_LINES = 6
# A group needs one phrase at least this telling: several vague words together ("hang", "stuck",
# "deadlock") describe a symptom many failures share, not this one.
TEXT_ANCHOR_MIN = 0.4
_MAX_QUOTED_LINES = 8
_MAX_QUOTED_CHARS = 400
_MAX_LINE_NUMBERS = 40
# A line saying a condition is off ("SW Power Cap : Not Active") names the failure without reporting it;
# INFO and DEBUG lines are status talk (NCCL's channel set-up, vLLM's KV cache usage), not failure reports.
# Whole words: "if users do not actively cancel their requests" states no condition.
_NEGATIONS_RE = re.compile(r"\bnot active\b")
# A `Key : value` reading of zero, none or off, as nvidia-smi -q, dcgmi and sysfs dumps print them;
# nvidia-smi prints "N/A", "[N/A]", "Not Supported" / "[Not Supported]" and, for fields newer drivers
# dropped, "Requested functionality has been deprecated": a field with no reading says nothing.
_NOTHING_RE = re.compile(
    r"\s[:=]\s*(?:0+(?:\.0+)?|no|none|n/a|\[n/a\]|disabled|false|off|\[?not supported\]?"
    r"|requested functionality has been deprecated)\s*$"
)
# A kernel subsystem announcing itself at boot ("mce: CPU0: Thermal monitoring enabled (TM1)", "EDAC MC:
# Ver: 3.0.0", "EDAC MC0: Giving out device to module skx_edac", "pcieport ...: AER: enabled with IRQ 26"):
# the machine-check and AER machinery is present, nothing has been reported through it. (A bare
# "... enabled" is left alone: "Watchdog: Enabled" is a setting that can be the failure's cause.)
# Advice a tool prints with every report of its kind is not the writer's diagnosis: PyTorch's allocator
# ends each CUDA OOM with "If reserved but unallocated memory is large try setting
# PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation." (before 2.1: "If reserved memory
# is >> allocated memory try setting max_split_size_mb to avoid fragmentation."), capacity OOMs included.
# The sentence is blanked (same length) before the scan; the exact tier reads it with the OOM's figures.
# Its allocator config also warns, once per process, when the option is set where the build cannot use it
# (c10/cuda/CUDAAllocatorConfig.h: "expandable_segments not supported on this platform"): a setting
# ignored, not memory fragmented. vLLM and SGLang warn at start-up when they cannot raise the fd limit, naming
# the error that might follow as an example ("This can cause fd limit errors like `OSError: [Errno 24] Too
# many open files`."): a limit that may be low, not files exhausted.
_BOILERPLATE_RE = re.compile(
    r"if reserved (?:but unallocated )?memory is (?:large|>> allocated memory) try setting \S+ "
    r"to avoid fragmentation\.?|"
    r"expandable_segments not supported on this platform|"
    r"this can cause fd limit errors like ?`?oserror: \[errno 24\] too many open files`?\.?"
)
# Substrings one of which each stock sentence above holds (the regex runs only where one occurs).
_BOILERPLATE_CUES = ("to avoid fragmentation", "not supported on this platform", "fd limit errors like")


def unadvised(low: str) -> str:
    """The lowered text with tools' stock advice blanked out, positions unchanged."""
    if not any(cue in low for cue in _BOILERPLATE_CUES):
        return low
    return _BOILERPLATE_RE.sub(lambda m: " " * len(m.group(0)), low)


# A change told as its description, in a pull request's title or bullets ("Adds an ECC error counter to the
# header", "- Exclude SW Power Cap as a reason to warn about throttling", "Fix X (Introduce a retry on Xid
# 79)"): the failure's words name what the code now shows or handles, not something that broke. The bare
# imperative counts only where a title or a bullet starts (advice in a sentence, "add --shm-size=8g and
# the bus error goes away", is read); the third person ("adds", "excludes") anywhere a line starts.
_CHANGE_RE = re.compile(
    r"^\s*(?:(?:#+|[-*+]|\d+\.)\s+|#+\s.*\()"
    r"(?:add|introduce|implement|expose|exclude|surface)s?\b(?! to\b)"
    r"|^\s*(?:adds|introduces|implements|exposes|excludes|surfaces)\b"
)
# A phrase of plain lower-case words separated by single spaces (it has a hyphenated spelling).
_WORDS_RE = re.compile(r"[a-z]+(?: [a-z]+)+")
_BOOT_RE = re.compile(r"\benabled (?:with irq \d+|\(\w+\))\s*$|\bver: [\d.]+\s*$|giving out device to module")
# kubectl's own notice when `logs`/`exec` picks a pod's container for the user (`Defaulted container "%s"
# out of: %s`): it names the pod's containers, whatever their state, and reports nothing about them.
_KUBECTL_NOTICE_RE = re.compile(r'^\s*defaulted container "[^"]*" out of: ')


@dataclass(frozen=True)
class PhraseHit:
    """One phrase found: the line (0-based), the phrase and its (signature id, weight) owners."""

    line: int
    phrase: str
    owners: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class Phrasebook:
    """Every signature's phrases, indexed for one scan: phrase -> ((signature id, weight), ...).

    `facts` holds each signature's support matchers and its require matchers (but those of a one-record
    clause in a rule of several clauses): a line on which the exact tier found a record that one of them
    selects is a fact the signature has already judged (an Xid 31 on a desktop, one corrected AER,
    PyTorch's expandable_segments hint on an OOM), so the text tier does not read
    that line again for that signature.
    """

    phrases: tuple[str, ...]
    owners: tuple[tuple[tuple[str, float], ...], ...]
    facts: dict[str, tuple[Matcher, ...]] = field(default_factory=dict, compare=False, hash=False)
    # a scanned spelling -> the catalog phrase it stands for (a phrase of words written with hyphens)
    spelled: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    _scanners: list[MultiScanner] = field(default_factory=list, compare=False, hash=False, repr=False)

    @classmethod
    def from_signatures(cls, signatures: Iterable[Signature]) -> Phrasebook:
        table: dict[str, list[tuple[str, float]]] = defaultdict(list)
        facts: dict[str, tuple[Matcher, ...]] = {}
        for sig in signatures:
            for phrase, weight in sig.phrases:
                table[phrase].append((sig.id, weight))
            if sig.phrases:
                # a record that is one single part of a longer rule (the OOM of a leak, whose growth the
                # wording may tell on the same line) leaves the line to the text tier; a counted one (the
                # preemptions of a storm) or a whole rule's one record is judged
                required = [
                    m
                    for v in sig.variants
                    for c in v.require
                    if len(v.require) == 1 or c.count > 1 or c.distinct
                    for m in c.matchers
                ]
                facts[sig.id] = (*required, *sig.support)
        # Writers join the words of a state into one compound ("a reset-required GPU", "an out-of-memory
        # error"): a phrase of plain words is also found spelled with hyphens, and counts as itself.
        spelled = {
            p.replace(" ", "-"): p
            for p in table
            if " " in p and _WORDS_RE.fullmatch(p) and p.replace(" ", "-") not in table
        }
        for variant, phrase in spelled.items():
            table[variant] = table[phrase]
        ordered = sorted(table)
        return cls(
            phrases=tuple(ordered),
            owners=tuple(tuple(table[p]) for p in ordered),
            facts=facts,
            spelled=spelled,
        )

    def phrase(self, index: int) -> str:
        """The catalog phrase that the scanned phrase `index` stands for."""
        scanned = self.phrases[index]
        return self.spelled.get(scanned, scanned)

    def __bool__(self) -> bool:
        return bool(self.phrases)

    def scanner(self) -> MultiScanner:
        """The one-pass scanner over the phrases (built once)."""
        if not self._scanners:
            self._scanners.append(MultiScanner(self.phrases))
        return self._scanners[0]


_DEFAULT: list[Phrasebook] = []


def default_phrasebook() -> Phrasebook:
    """The phrasebook of the bundled catalog (fitted weights), loaded once."""
    if not _DEFAULT:
        from gpuobs.rca.catalog import load_catalog

        _DEFAULT.append(Phrasebook.from_signatures(load_catalog().signatures))
    return _DEFAULT[0]


def noisy_or(weights: Iterable[float]) -> float:
    """The chance that at least one of independent hints is right: 1 - prod(1 - w)."""
    miss = 1.0
    for w in weights:
        miss *= 1.0 - min(0.999, max(0.0, w))
    return 1.0 - miss


def _bounded(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] stands on word boundaries (where the phrase itself starts/ends a word).

    Chinese, Japanese and Korean text puts no space between words, so a character of one of those scripts
    ends a word by itself: "显存不足" inside "出现显存不足了", "out of memory" in "会显示out of memory"."""
    if start > 0 and _joined(text[start - 1], text[start]):
        return False
    return not (end < len(text) and _joined(text[end], text[end - 1]))


def _joined(outside: str, edge: str) -> bool:
    """Whether the phrase's edge character and its neighbour outside it run on as one word: the edge a
    letter or digit, the neighbour one too (or "_"), neither of a script written without spaces."""
    return (
        edge.isalnum()
        and (outside.isalnum() or outside == "_")
        and not (_unspaced(edge) or _unspaced(outside))
    )


def _unspaced(char: str) -> bool:
    """Whether a character belongs to a script written without spaces between words (CJK ideographs,
    kana, hangul)."""
    return any(low <= ord(char) <= high for low, high in _UNSPACED_RANGES)


# Kana, CJK ideographs (with extension A), hangul syllables, CJK compatibility ideographs.
_UNSPACED_RANGES = ((0x3040, 0x30FF), (0x3400, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF))


def phrase_hits(
    lines: Sequence[str],
    book: Phrasebook,
    skip: Container[int] = (),
    judged: Mapping[int, Sequence[Evidence]] | None = None,
    low: LowerText | None = None,
) -> list[PhraseHit]:
    """Every phrase of the book found in the lines, on word boundaries, outside the `skip` line numbers.

    A phrase inside a longer phrase of the same signature on the same line is dropped (the longer one
    says it); lines that state a condition is off ("Not Active") and INFO/DEBUG lines are not read.
    `judged` maps 0-based lines to the exact tier's records of them: a signature does not read again,
    by its wording, a line holding a record of the kind its rule looks for (its matchers without their
    exclusions): the exact tier has judged that fact already, and a healthy one stays healthy.
    """
    if not book or not lines:
        return []
    view = low if low is not None else lower_text(lines)
    text, starts = unadvised(view.text), view.starts
    if not view.aligned:  # lower() changed lengths (rare Unicode): find each phrase per line
        return _hits_per_line(lines, book, skip, judged)
    found = book.scanner().find_all(text)
    spans: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    denied: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for pi, start, end in found:
        if not _bounded(text, start, end):
            continue
        line = bisect.bisect_right(starts, start) - 1
        if line in skip:
            continue
        if _denied(text, starts[line], start, end, book.phrases[pi]):
            denied[line].append((start, end, pi))
            continue
        spans[line].append((start, end, pi))
    for line in denied:
        spans[line] = _undenied(spans[line], denied[line])
    for line in list(spans):
        supposed = _supposed(text[starts[line] : starts[line + 1] - 1])
        if supposed:
            spans[line] = _outside(spans[line], supposed, starts[line])
    for line, unmarked in _marked_lines(text, starts, skip):
        # a line written in Markdown is read again without its emphasis and code marks, its phrases found
        # there (positions of the unmarked line: only their order and nesting on the line matter below)
        found_here = _scan(unmarked, book)
        denied_here = [span for span in found_here if _denied(unmarked, 0, *span[:2], book.phrases[span[2]])]
        spans[line] = _undenied([span for span in found_here if span not in denied_here], denied_here)
        if supposed := _supposed(unmarked):
            spans[line] = _outside(spans[line], supposed, 0)
    for line in [line for line, kept in spans.items() if not kept]:
        del spans[line]
    out: list[PhraseHit] = []
    for line in sorted(spans):
        hits = _line_hits(line, spans[line], book, judged.get(line) if judged else None)
        if not hits:
            continue
        lowered = text[starts[line] : starts[line + 1] - 1]
        if _NEGATIONS_RE.search(lowered) or _chatter(lines[line], lowered) or _CHANGE_RE.search(lowered):
            continue
        out.extend(hits)
    return out


# A field read off where the phrase is its key: one reading of a record that prints several on a line
# ("(idle = true, sw_power_cap = false, hw_slowdown = false)", "sw_thermal_slowdown: 0"). `_NOTHING_RE` reads
# a whole line's one `Key : value`; this reads each key. A reading of some other value is left to the phrase.
_OFF_READING_RE = re.compile(
    r"\s*[:=]\s*(?:false|no|none|off|disabled|inactive|not active|0+(?:\.0+)?)(?![\w.])"
)


def _denied(text: str, line_start: int, start: int, end: int, phrase: str) -> bool:
    """Whether the phrase at text[start:end] (on a line beginning at `line_start`) is denied or supposed by
    the words before it on its line, or is a key read off right after it."""
    return negated(text[max(line_start, start - _NEGATION_REACH) : start], phrase) or _read_off(text, end)


def _read_off(text: str, end: int) -> bool:
    """Whether the phrase ending at `end` is a key whose value right after it reads off or zero."""
    return text[end : end + 1] in (" ", ":", "=") and _OFF_READING_RE.match(text, end, end + 24) is not None


# Sentences that tell no event: a question about what a design should do ("Should requests just be
# rejected with a 'server overloaded' error?", "What should happen if the queue is full?"; not the
# writer's own "Should I ...?"), and what the writer took from the documentation ("According to the docs,
# requests are queued by the scheduler", "As far as I understood from the architecture guide, ...").
_SUPPOSED_RE = re.compile(
    r"(?:^|(?<=[.!?])\s+)(?:so |and |but |then )?(?:what |how )?(?:should|shall|would) (?!i\b|we\b|you\b)"
    r"[^.!?]*\?"
    r"|(?:^|(?<=[.!?])\s+)[^.!?]*\b(?:according to|as (?:far as )?i (?:understand|understood) (?:it )?from"
    r"|i (?:read|learned) (?:in|from)) the (?:[\w`'-]+ ){0,3}?`?(?:docs?|documentation|readme|architecture"
    r"|faq|guide|manual|spec|specification)\b[^.!?]*[.!?]?"
)
_SUPPOSED_CUES = ("should", "shall", "would", "according to", "understand", "i read", "i learned")


def _supposed(line: str) -> list[tuple[int, int]]:
    """The (start, end) of each sentence of a lowered line that tells no event (see _SUPPOSED_RE)."""
    if not any(cue in line for cue in _SUPPOSED_CUES):
        return []
    return [m.span() for m in _SUPPOSED_RE.finditer(line)]


def _outside(
    spans: list[tuple[int, int, int]], ranges: list[tuple[int, int]], offset: int
) -> list[tuple[int, int, int]]:
    """The spans (at `offset` + a line position) that lie in none of the line's ranges."""
    return [
        (s, e, pi) for s, e, pi in spans if not any(a <= s - offset and e - offset <= b for a, b in ranges)
    ]


def _undenied(
    spans: list[tuple[int, int, int]], denied: list[tuple[int, int, int]]
) -> list[tuple[int, int, int]]:
    """The spans not inside a denied longer phrase: "if the server is overloaded" supposes its "overloaded"
    too, "no GPU memory leak" denies its "memory leak"."""
    if not denied:
        return spans
    return [(s, e, pi) for s, e, pi in spans if not any(ds <= s and e <= de for ds, de, _ in denied)]


# Markdown's emphasis and code marks inside a sentence ("loads it **on top of** the resident model", "the
# `nvidia-fabricmanage`r service"): GitHub renders them away, so a phrase read across them is the writer's.
_MARKS = ("`", "**")
_MARK_RE = re.compile(r"`|\*\*")
# At most this many marked lines are re-read: issue text has a few, a 100k-line log rarely any.
_MAX_MARKED_LINES = 2000


def _marked_lines(text: str, starts: Sequence[int], skip: Container[int]) -> list[tuple[int, str]]:
    """The lines of `text` holding Markdown marks, each with the marks removed (one `str.find` pass per mark
    over the text, so an unmarked log costs two scans)."""
    lines: set[int] = set()
    for mark in _MARKS:
        i = text.find(mark)
        while i != -1 and len(lines) < _MAX_MARKED_LINES:
            line = bisect.bisect_right(starts, i) - 1
            lines.add(line)
            i = text.find(mark, starts[line + 1])
    out = []
    for line in sorted(lines):
        if line in skip:
            continue
        out.append((line, _MARK_RE.sub("", text[starts[line] : starts[line + 1] - 1])))
    return out


def _scan(line: str, book: Phrasebook) -> list[tuple[int, int, int]]:
    """The (start, end, phrase index) of every phrase on one lowered line, on word boundaries."""
    found = book.scanner().find_all(line)
    return [(start, end, pi) for pi, start, end in found if _bounded(line, start, end)]


# A phrase denied by the words just before it, in the same clause ("there is no memory leak", "we do not
# see any performance regression"), reports nothing: people write what they checked and ruled out beside
# what broke. Three words back, not past a clause mark. A flag or a setting ("--runtime=nvidia",
# "--shm-size") is the other way round: started without it, or not with it, is the failure.
# "Zero uncorrectable ECC errors" is a count read and found empty, a check's clean result. A phrase that is
# the condition of a clause ("latency will increase if the server is overloaded", "unless the queue is
# full", "whether an ECC error occurred") is supposed, not told: the sentence says what would follow. (The
# failure told in the clause after it, "if I use 4 GPUs, NCCL hangs", is read: a comma ends the clause.)
_NEGATORS = frozenset(
    {"no", "not", "never", "nor", "isn't", "wasn't", "aren't", "weren't", "don't", "doesn't", "didn't",
     "hasn't", "haven't", "won't", "zero", "if", "unless", "whether"}
)
# Every negator holds one of these (a test checks it; `negated` spells them out, for speed).
_NEGATOR_CUES = ("no", "ne", "n't", "zero", "if", "unless", "whether")
_NEGATION_REACH = 48
_CLAUSE_RE = re.compile(r"[.;:!?,()\[\]\"]|\bbut\b|\bthen\b")


def asks(sentence: str) -> bool:
    """Whether a sentence or line is a question ("does loading slow down with safetensors?", "is there a way
    to clear xid errors in the dcgm-exporter?"): it tells nothing that happened. The readers of told figures
    and the exporter reader (for lines with no log level) leave it alone."""
    return sentence.rstrip().endswith("?")


# "to avoid your system being overloaded", "prevents the node from running out of memory": the clause wants
# what follows not to happen, however far into it the phrase comes.
_AVERTERS = ("avoid", "prevent")


def negated(before: str, phrase: str = "") -> bool:
    """Whether the lowered text just before a phrase denies or only supposes it (a negator or an "if" among
    its last three words, or "avoid"/"prevent" anywhere in its clause)."""
    if phrase.startswith("-") or "=" in phrase:
        return False
    if ("avoid" in before or "prevent" in before) and any(
        word.startswith(_AVERTERS) for word in _CLAUSE_RE.split(before)[-1].split()
    ):
        return True
    if (
        "no" not in before
        and "ne" not in before
        and "n't" not in before
        and "zero" not in before
        and "if" not in before
        and "unless" not in before
        and "whether" not in before
    ):
        return False  # no negator can be there (each holds one of _NEGATOR_CUES): no clause split needed
    clause = _CLAUSE_RE.split(before)[-1]
    return any(word in _NEGATORS for word in clause.split()[-3:])


def _chatter(line: str, low: str) -> bool:
    """An INFO or DEBUG line (NCCL INFO, a logger's level field), a counter or state that reads zero
    or off (`Double Bit ECC : 0`, `Pending : No`) or kubectl's container notice: status talk, not a
    failure report."""
    if _NOTHING_RE.search(low) or _BOOT_RE.search(low) or _KUBECTL_NOTICE_RE.search(low):
        return True
    if "info" not in low and "debug" not in low:
        return False
    if "nccl info" in low:
        return True
    return split_prefix(strip_decorations(line[:400])).level in ("info", "debug")


def _hits_per_line(
    lines: Sequence[str],
    book: Phrasebook,
    skip: Container[int],
    judged: Mapping[int, Sequence[Evidence]] | None,
) -> list[PhraseHit]:
    out: list[PhraseHit] = []
    for line, raw in enumerate(lines):
        if line in skip:
            continue
        low = unadvised(plain(raw.lower()))
        if any(mark in low for mark in _MARKS):
            low = _MARK_RE.sub("", low)
        if _NEGATIONS_RE.search(low) or _chatter(raw, low) or _CHANGE_RE.search(low):
            continue
        spans = [
            (i, i + len(p), pi)
            for pi, p in enumerate(book.phrases)
            if (i := low.find(p)) != -1 and _bounded(low, i, i + len(p))
        ]
        if spans:
            out.extend(_line_hits(line, spans, book, judged.get(line) if judged else None))
    return out


def _line_hits(
    line: int, spans: list[tuple[int, int, int]], book: Phrasebook, records: Sequence[Evidence] | None
) -> list[PhraseHit]:
    """The hits of one line, each phrase once, for the signatures that have not judged this line's facts,
    without phrases inside a longer matched phrase: the longer wording is the more specific one, whichever
    signature owns it ("stuck" inside PyTorch's "watchdog got stuck" is the watchdog's word, not a hang's)."""
    verdict: dict[str, bool] = {}

    def reads(sig: str) -> bool:
        if not records:
            return True
        if sig not in verdict:
            verdict[sig] = not any(
                m.matches(ev, negatives=False) for ev in records for m in book.facts.get(sig, ())
            )
        return verdict[sig]

    out = []
    seen: set[str] = set()
    for start, end, pi in spans:
        phrase = book.phrase(pi)
        if phrase in seen:
            continue
        seen.add(phrase)
        if len(spans) > 1 and any(
            s2 <= start and end <= e2 and (e2 - s2) > (end - start) for s2, e2, _ in spans
        ):
            continue
        owners = tuple((sig, w) for sig, w in book.owners[pi] if reads(sig))
        if owners:
            out.append(PhraseHit(line=line, phrase=phrase, owners=owners))
    return out


def _groups(hits: Sequence[tuple[int, str, float]]) -> list[list[tuple[int, str, float]]]:
    """Hits (line, phrase, weight) of one signature, sorted by line, cut where lines are far apart."""
    groups: list[list[tuple[int, str, float]]] = []
    for hit in hits:
        if groups and hit[0] - groups[-1][-1][0] <= CLUSTER_GAP_LINES:
            groups[-1].append(hit)
        else:
            groups.append([hit])
    return groups


def signature_hits(
    lines: Sequence[str],
    book: Phrasebook,
    skip: Container[int] = (),
    judged: Mapping[int, Sequence[Evidence]] | None = None,
    low: LowerText | None = None,
) -> dict[str, list[tuple[int, str, float]]]:
    """Each signature's (line, phrase, weight) hits (see `phrase_hits` for what is not read)."""
    by_sig: dict[str, list[tuple[int, str, float]]] = defaultdict(list)
    for hit in phrase_hits(lines, book, skip, judged, low):
        for sig, weight in hit.owners:
            by_sig[sig].append((hit.line, hit.phrase, weight))
    return by_sig


def match_text(
    lines: Sequence[str],
    book: Phrasebook | None = None,
    source: str = "text",
    skip: Container[int] = (),
    year: int | None = None,
    judged: Mapping[int, Sequence[Evidence]] | None = None,
    low: LowerText | None = None,
) -> list[Evidence]:
    """The text tier over log lines: one `text_match` record per signature and group that scores enough.

    `skip` are lines read as tool output; `judged` the exact tier's records by line (`phrase_hits`).
    """
    book = default_phrasebook() if book is None else book
    out: list[Evidence] = []
    for sig, groups in read_groups(lines, signature_hits(lines, book, skip, judged, low)).items():
        for group in groups:
            weights: dict[str, float] = {}
            for _, phrase, weight in group:
                weights[phrase] = max(weight, weights.get(phrase, 0.0))
            score = noisy_or(weights.values())
            if score < TEXT_MIN_SCORE or max(weights.values()) < TEXT_ANCHOR_MIN:
                continue
            out.append(_record(sig, group, weights, score, lines, source, year))
    out.sort(key=lambda ev: int(ev.attrs["line"]))
    return out


def read_groups(
    lines: Sequence[str], by_sig: Mapping[str, Sequence[tuple[int, str, float]]]
) -> dict[str, list[list[tuple[int, str, float]]]]:
    """Each signature's groups of nearby hits that no sentence within reach settles: what the tier scores,
    and what `bench/fit_text_tier.py` counts (a phrase in a dismissed group speaks for nothing)."""
    return {
        sig: kept
        for sig in sorted(by_sig)
        if (kept := [g for g in _groups(sorted(by_sig[sig])) if not _dismissed(g, lines)])
    }


# A reply that settles what the text around it describes: the maintainer's dismissal ("You can ignore this
# warning", "this warning can safely be ignored", "this is the usual behavior of PyTorch", "working as
# intended", "a false alarm", "TensorRT spuriously detects ...", "well within spec", "nothing to worry
# about") or a check's clean verdict ("ECC verified clean", "its GPU is now healthy", a build's "Successfully
# built": an image built without GPUs, as `docker build` runs, prints that it found no CUDA). The wording near
# it describes something that was looked at and found to be no failure. Not a question ("Is this expected
# behavior?"), not denied ("this is not a false alarm", "should not be ignored"), and not the bug
# template's "Expected behavior" heading (the verdict needs its verb: "is the expected behavior").
_SETTLED_RE = re.compile(
    r"\b(?:can|could|may|should)(?: safely| just)? (?:(?:safely |just )?be (?:safely )?ignored|ignore)\b"
    r"|\b(?:is|are|was|it's|that's) (?:the |an? |all |just |simply )?(?:expected|usual|normal|intended) "
    r"behaviou?rs?\b"
    r"|\b(?:works|working|behaves|behaving) as (?:intended|designed|expected)\b"
    r"|\bfalse (?:alarm|positive)s?\b"
    r"|\bspuriously\b|\b(?:is|are|was|were) spurious\b|\bspurious (?:warning|error|message|alarm|report)s?\b"
    r"|\b(?:verified|tested|checked|confirmed|came back) (?:as )?clean\b|\b(?:is|are) now healthy\b"
    r"|\bwithin (?:the |its )?(?:specs?|specifications?)\b"
    r"|\bnothing to worry about\b"
    r"|\bsuccessfully built\b"
    r"|\b(?:shouldn't|should not|don't|do not|needn't|need not) (?:need to )?worry\b"
)
# Substrings one of which each settling wording above holds (the regex runs only on a line holding one).
_SETTLED_CUES = (
    "ignore", "behavio", " as ", "false ", "spurious", "clean", "healthy", "within", "worry", "built"
)
# What a dismissal of a warning dismisses: a group that quotes a warning.
_WARNING_WORDS_RE = re.compile(r"warn|\bmessages?\b")
# A failure reported as an error ("RuntimeError: ...", "error: ...", a traceback) is never settled by a
# reply nearby: threads dismiss one warning beside a failure that is real.
_REPORTED_RE = re.compile(r"\b[a-z]*(?:error|exception)\b\s*:|\btraceback\b|\bfatal\b")
_QUESTION_WORDS = frozenset({"if", "whether", "wonder", "why", "how"})
# Hardware the writer says the machines do not have ("on non-NvLink systems", "on any GPU system without
# NvLink", "nodes with no InfiniBand"): a report that it failed is the tool's false alarm, not the part's.
# Only a kind of machine is said to lack it ("works without NVLink" is a workaround told beside a real
# NVLink failure, and is read).
_ABSENT_RE = re.compile(
    r"\bnon-([a-z][a-z0-9]+) (?:systems?|machines?|nodes?|hosts?|servers?|platforms?|boards?|setups?)\b"
    r"|\b(?:systems?|machines?|nodes?|hosts?|servers?|platforms?|boards?|setups?) "
    r"(?:without|with no|lacking) (?:an? |any )?([a-z][a-z0-9]+)\b"
)
_ABSENT_CUES = ("non-", "without", "with no", "lacking")


def _settling(line: str) -> str | None:
    """The sentence of a lowered line that settles what is near it (see _SETTLED_RE), or None."""
    if not any(cue in line for cue in _SETTLED_CUES):
        return None
    for m in _SETTLED_RE.finditer(line):
        start = max(line.rfind(mark, 0, m.start()) for mark in ".!?") + 1
        ends = [i for mark in ".!?" if (i := line.find(mark, m.end())) != -1]
        end = min(ends) if ends else len(line)
        if end < len(line) and line[end] == "?":
            continue  # "Is this expected behavior?"
        before = line[start : m.start()]
        if negated(before) or _QUESTION_WORDS.intersection(before.split()):
            continue  # "this is not a false alarm", "I wonder whether it is expected behavior"
        return line[start:end]
    return None


def _dismissed(group: Sequence[tuple[int, str, float]], lines: Sequence[str]) -> bool:
    """Whether a sentence within a group's reach settles it (the group quotes no reported error; a dismissal
    of a warning settles only a group that quotes a warning) or says the part its phrases name is absent."""
    numbers = sorted({line for line, _, _ in group})
    quoted = [lines[n].lower() for n in numbers]
    if any(_REPORTED_RE.search(q) for q in quoted):
        return False
    first, last = max(0, numbers[0] - CLUSTER_GAP_LINES), min(len(lines), numbers[-1] + CLUSTER_GAP_LINES + 1)
    words = {w for _, phrase, _ in group for w in re.findall(r"[a-z][a-z0-9]+", phrase)}
    for n in range(first, last):
        low = lines[n].lower()
        if any(cue in low for cue in _ABSENT_CUES) and any(
            (m.group(1) or m.group(2)) in words for m in _ABSENT_RE.finditer(low)
        ):
            return True  # the part the group names is not there
        sentence = _settling(low)
        if sentence is None:
            continue
        if _WARNING_WORDS_RE.search(sentence) and not any(_WARNING_WORDS_RE.search(q) for q in quoted):
            continue
        return True
    return False


def _record(
    sig: str,
    group: list[tuple[int, str, float]],
    weights: dict[str, float],
    score: float,
    lines: Sequence[str],
    source: str,
    year: int | None,
) -> Evidence:
    numbers = sorted({line for line, _, _ in group})
    quoted = []
    for line in numbers[:_MAX_QUOTED_LINES]:
        text = " ".join(strip_decorations(lines[line]).split())
        quoted.append(text[:_MAX_QUOTED_CHARS])
    first = split_prefix(strip_decorations(lines[numbers[0]][:300]), year)
    entity = Entity(host=first.host) if first.host else Entity()
    return Evidence(
        kind=EvidenceKind.LOG,
        key=keys.TEXT_MATCH,
        value=sig,
        source=source,
        time=first.time,
        entity=entity,
        raw="\n".join(quoted),
        attrs={
            "score": round(score, 4),
            "phrases": sorted(weights),
            "line": numbers[0] + 1,
            "lines": [n + 1 for n in numbers[:_MAX_LINE_NUMBERS]],
        },
        tier=EvidenceTier.TEXT,
    )
