"""One input's text -> Evidence, by what the text is: a Kubernetes dump, an `nvidia-smi -q` report, a
saved `/metrics`, an OTLP JSON trace file, a saved `/api/history` document, or else log lines.

Inputs are recognised by content, not by file name: people attach whatever they saved under
whatever name, and `--logs` takes them all. Log text is what people paste: lines are first freed of the
layers tools wrap around them (`wrappers`: compose prefixes, box borders, numbered pastes, redrawn
progress bars); tool outputs inside it are read by their own readers (nvidia-smi tables and `-q`
sections, `lspci -vvv`, `kubectl describe` / `get pods`, pprint'ed allocator dumps, container set-up);
every line goes through the exact line parsers; a memory series that only grows becomes a trend record;
and the text tier reads what is left for the wording of known failures. No line needs a timestamp or
a known prefix: records keep their line number, which orders them when there is no time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gpuobs import json_input
from gpuobs.errors import InputError
from gpuobs.evidence import Evidence
from gpuobs.rca import keys
from gpuobs.rca.parsers import exposition, history, k8s, nvsmi
from gpuobs.rca.parsers.containers import (
    CONTAINER_SETUP_CUES,
    looks_like_container_setup,
    parse_container_setup,
)
from gpuobs.rca.parsers.describe import KUBECTL_CUES, looks_like_kubectl, parse_kubectl_text
from gpuobs.rca.parsers.lines import index_by_line, parse_lines
from gpuobs.rca.parsers.lowered import LowerText, lower_text
from gpuobs.rca.parsers.lspci import LSPCI_CUES, looks_like_lspci, parse_lspci
from gpuobs.rca.parsers.nvsmi_text import NVSMI_TEXT_CUES, looks_like_nvsmi_text, parse_nvsmi_text
from gpuobs.rca.parsers.pyrepr import PYREPR_CUES, looks_like_pyrepr, parse_pyrepr
from gpuobs.rca.parsers.scan import MultiScanner
from gpuobs.rca.parsers.text import Phrasebook, match_text
from gpuobs.rca.parsers.told import oom_told_records, told_records, told_under_limits
from gpuobs.rca.parsers.traces import parse_otlp_text
from gpuobs.rca.parsers.trend import memory_trend
from gpuobs.rca.parsers.wrappers import unwrap
from gpuobs.rca.prose import prose_record

__all__ = [
    "TOOL_READERS",
    "ExactView",
    "exact_tier",
    "is_log_text",
    "parse_document",
    "parse_log_text",
    "prose_lines",
    "reads_tool_output",
]

_JSON_SNIFF_CHARS = 200_000

ToolReader = Callable[[Sequence[str], str], tuple[list[Evidence], set[int]]]
# (cues, cheap check on the whole text, reader): the check is asked only when one of the reader's cue
# substrings occurs (all cues are found in one pass; five readers' checks would scan a 100,000-line log
# a dozen times). A reader returns its records and the lines it read as tool output, which the text tier
# then leaves alone (a table cell is not prose).
TOOL_READERS: tuple[tuple[tuple[str, ...], Callable[[str], bool], ToolReader], ...] = (
    (NVSMI_TEXT_CUES, looks_like_nvsmi_text, parse_nvsmi_text),
    (LSPCI_CUES, looks_like_lspci, parse_lspci),
    (KUBECTL_CUES, looks_like_kubectl, parse_kubectl_text),
    (PYREPR_CUES, looks_like_pyrepr, parse_pyrepr),
    (CONTAINER_SETUP_CUES, looks_like_container_setup, parse_container_setup),
)
_TOOL_CUES = MultiScanner(sorted({cue for cues, _, _ in TOOL_READERS for cue in cues}))


def parse_document(
    name: str, text: str, mtime: float | None = None, phrasebook: Phrasebook | None = None
) -> list[Evidence]:
    """Evidence from one input's text; a saved /metrics or nvidia-smi report is timed at `mtime`.

    Log text goes through both tiers: the exact parsers and readers, and the text tier with
    `phrasebook` (default: the bundled catalog's phrases).
    """
    if not is_log_text(text):
        return _structured(name, text, mtime)
    return parse_log_text(name, text, phrasebook)


def is_log_text(text: str) -> bool:
    """False for the documents read whole (Kubernetes JSON, nvidia-smi -q, /metrics, OTLP, /api/history)."""
    if k8s.maybe_k8s_json(text) is not None or nvsmi.looks_like_nvsmi_query(text):
        return False
    if exposition.looks_like_exposition(text):
        return False
    head = text.lstrip()[:1]
    if head == "{" and '"resourceSpans"' in text[:4096]:
        return False
    return not (head == "{" and _history(text) is not None)


def _history(text: str) -> dict[str, object] | None:
    if '"samples"' not in text[:_JSON_SNIFF_CHARS] or '"gpus"' not in text[:_JSON_SNIFF_CHARS]:
        return None
    try:
        doc = json_input.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("samples"), list) else None


def _structured(name: str, text: str, mtime: float | None) -> list[Evidence]:
    objects = k8s.maybe_k8s_json(text)
    if objects is not None:
        return k8s.evidence_from_objects(objects, source=name)
    if nvsmi.looks_like_nvsmi_query(text):
        return [
            *nvsmi.parse_nvsmi_query(text, source=name, when=mtime),
            *parse_nvsmi_text(text.splitlines(), name, pages=False)[0],
        ]
    if exposition.looks_like_exposition(text):
        return _exposition(name, text, mtime)
    if text.lstrip()[:1] == "{" and '"resourceSpans"' in text[:4096]:
        return parse_otlp_text(text, source=name)
    doc = _history(text)
    return history.evidence_from_history(doc, source=name) if doc is not None else []


def _exposition(name: str, text: str, mtime: float | None) -> list[Evidence]:
    """A `/metrics` text. One that does not parse as a whole, pasted with other lines around it (a shell
    prompt, a note, a log), gives the metrics of its exposition lines and is read as log text too; a text that
    claims to be exposition from its first line and gives no metric that way is refused (InputError)."""
    try:
        return exposition.parse_exposition(text, source=name, when=mtime)
    except InputError as refused:
        whole = text.lstrip().startswith(("# HELP ", "# TYPE "))
        try:
            metrics = exposition.parse_exposition(exposition.exposition_lines(text), source=name, when=mtime)
        except InputError:
            metrics = []
        if whole and not metrics:
            raise refused
    return [*metrics, *parse_log_text(name, text)]


@dataclass
class ExactView:
    """Log text after the exact tier: the unwrapped lines, the lines read as tool output, the records."""

    lines: list[str]
    low: LowerText
    tool_lines: set[int] = field(default_factory=set)
    records: list[Evidence] = field(default_factory=list)
    by_line: dict[int, list[Evidence]] = field(default_factory=dict)


def exact_tier(name: str, text: str) -> ExactView:
    """The exact tier over log text: unwrap, tool readers, line parsers and the memory trend."""
    lines = unwrap(text.splitlines()).lines
    view = ExactView(lines=lines, low=lower_text(lines))
    for records, used in _tool_reads(name, text, lines):
        view.records.extend(records)
        view.tool_lines |= used
    index_by_line(view.records, view.by_line)
    view.records.extend(parse_lines(view.lines, source=name, by_line=view.by_line, low=view.low))
    view.records.extend(memory_trend(view.lines, source=name, view=view.low))
    return view


def _tool_reads(name: str, text: str, lines: Sequence[str]) -> list[tuple[list[Evidence], set[int]]]:
    """Each tool reader's records and the lines it read as tool output, for the readers whose output the
    text holds (cheap substring checks on the raw text: the wrappers peeled off do not matter to them)."""
    present = {_TOOL_CUES.patterns[ci] for ci, _, _ in _TOOL_CUES.find_all(text)}
    return [
        reader(lines, name)
        for cues, looks_like, reader in TOOL_READERS
        if not present.isdisjoint(cues) and looks_like(text)
    ]


def reads_tool_output(text: str) -> bool:
    """Whether a tool reader recognised lines of the text (a node's resources, a pod list, an nvidia-smi
    table) even where they held no failure: such an input was read, and is healthy, not unreadable."""
    lines = unwrap(text.splitlines()).lines
    return any(used for _, used in _tool_reads("<check>", text, lines))


def prose_lines(view: ExactView, worded: Sequence[Evidence] = ()) -> set[int] | None:
    """The lines the prose tier leaves alone (those the exact tier read: a record or tool output), or
    None when it reads none: the exact tier extracted a fact from the text (anything but the fallback
    record of an error-level line) or the text tier recognised a failure's wording (`worded`), so the text
    is not a description nobody could read. A fact cut away by `--start`/`--end` must not leave its
    traceback's sentences to speak for it."""
    if worded or any(ev.key != keys.LOG_LINE for ev in view.records):
        return None
    return view.tool_lines | view.by_line.keys()


def parse_log_text(name: str, text: str, phrasebook: Phrasebook | None = None) -> list[Evidence]:
    """The tiers over log text: the exact tier, the text tier over what it left, and the prose tier's
    call on the lines no parser read (the engine hears it only when nothing else found a cause)."""
    view = exact_tier(name, text)
    worded = match_text(
        view.lines, phrasebook, source=name, skip=view.tool_lines, judged=view.by_line, low=view.low
    )
    skip = prose_lines(view, worded)
    if skip is not None and (told := told_records(view.lines, name, skip)):
        return [*view.records, *told]  # figures told in words: wordings, the bag of words not needed
    prose = prose_record(view.lines, name, skip) if skip is not None else None
    if prose is not None and skip is not None and prose.value in told_under_limits(view.lines, skip):
        prose = None  # the text tells that signature's own figure, under its limit: the figure decides
    story = oom_told_records(view.lines, name) if _out_of_memory(view.records, worded) else []
    return [*view.records, *worded, *story, *([prose] if prose is not None else [])]


_OOM_SIGS = frozenset({"cuda_oom_capacity", "cuda_oom_fragmentation"})


def _out_of_memory(records: Sequence[Evidence], worded: Sequence[Evidence]) -> bool:
    """Whether the exact tier read a CUDA out-of-memory, or the text tier its wording (what a run length
    or a model swap told beside it can explain)."""
    return any(ev.key == keys.CUDA_OOM for ev in records) or any(ev.value in _OOM_SIGS for ev in worded)
