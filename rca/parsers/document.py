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

import json
from collections.abc import Callable, Sequence

from gpuobs.evidence import Evidence
from gpuobs.rca.parsers import exposition, history, k8s, nvsmi
from gpuobs.rca.parsers.containers import looks_like_container_setup, parse_container_setup
from gpuobs.rca.parsers.describe import looks_like_kubectl, parse_kubectl_text
from gpuobs.rca.parsers.lines import parse_lines
from gpuobs.rca.parsers.lspci import looks_like_lspci, parse_lspci
from gpuobs.rca.parsers.nvsmi_text import looks_like_nvsmi_text, parse_nvsmi_text
from gpuobs.rca.parsers.pyrepr import looks_like_pyrepr, parse_pyrepr
from gpuobs.rca.parsers.text import Phrasebook, match_text
from gpuobs.rca.parsers.traces import parse_otlp_text
from gpuobs.rca.parsers.trend import memory_trend
from gpuobs.rca.parsers.wrappers import unwrap

__all__ = ["TOOL_READERS", "parse_document", "parse_log_text"]

_JSON_SNIFF_CHARS = 200_000

ToolReader = Callable[[Sequence[str], str], tuple[list[Evidence], set[int]]]
# (cheap check on the whole text, reader): a reader returns its records and the lines it read as tool
# output, which the text tier then leaves alone (a table cell is not prose).
TOOL_READERS: tuple[tuple[Callable[[str], bool], ToolReader], ...] = (
    (looks_like_nvsmi_text, parse_nvsmi_text),
    (looks_like_lspci, parse_lspci),
    (looks_like_kubectl, parse_kubectl_text),
    (looks_like_pyrepr, parse_pyrepr),
    (looks_like_container_setup, parse_container_setup),
)


def parse_document(
    name: str, text: str, mtime: float | None = None, phrasebook: Phrasebook | None = None
) -> list[Evidence]:
    """Evidence from one input's text; a saved /metrics or nvidia-smi report is timed at `mtime`.

    Log text goes through both tiers: the exact parsers and readers, and the text tier with
    `phrasebook` (default: the bundled catalog's phrases).
    """
    objects = k8s.maybe_k8s_json(text)
    if objects is not None:
        return k8s.evidence_from_objects(objects, source=name)
    if nvsmi.looks_like_nvsmi_query(text):
        return [
            *nvsmi.parse_nvsmi_query(text, source=name, when=mtime),
            *parse_nvsmi_text(text.splitlines(), name)[0],
        ]
    if exposition.looks_like_exposition(text):
        return exposition.parse_exposition(text, source=name, when=mtime)
    head = text.lstrip()[:1]
    if head == "{" and '"resourceSpans"' in text[:4096]:
        return parse_otlp_text(text, source=name)
    if head == "{" and '"samples"' in text[:_JSON_SNIFF_CHARS] and '"gpus"' in text[:_JSON_SNIFF_CHARS]:
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("samples"), list):
            return history.evidence_from_history(doc, source=name)
    return parse_log_text(name, text, phrasebook)


def parse_log_text(name: str, text: str, phrasebook: Phrasebook | None = None) -> list[Evidence]:
    """Both tiers over log text: unwrap, tool readers, line parsers, memory trend, then the text tier."""
    lines = unwrap(text.splitlines()).lines
    clean = "\n".join(lines)
    out: list[Evidence] = []
    tool_lines: set[int] = set()
    for looks_like, reader in TOOL_READERS:
        if looks_like(clean):
            records, used = reader(lines, name)
            out.extend(records)
            tool_lines |= used
    out.extend(parse_lines(lines, source=name))
    out.extend(memory_trend(lines, source=name))
    out.extend(match_text(lines, phrasebook, source=name, skip=tool_lines))
    return out
