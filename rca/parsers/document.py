"""One input's text -> Evidence, by what the text is: a Kubernetes dump, an `nvidia-smi -q` report, a
saved `/metrics`, an OTLP JSON trace file, a saved `/api/history` document, or else log lines.

Inputs are recognised by content, not by file name: people attach whatever they saved under
whatever name, and `--logs` takes them all.
"""

from __future__ import annotations

import json

from gpuobs.evidence import Evidence
from gpuobs.rca.parsers import exposition, history, k8s, nvsmi
from gpuobs.rca.parsers.lines import parse_lines
from gpuobs.rca.parsers.text import Phrasebook, match_text
from gpuobs.rca.parsers.traces import parse_otlp_text

__all__ = ["parse_document"]

_JSON_SNIFF_CHARS = 200_000


def parse_document(
    name: str, text: str, mtime: float | None = None, phrasebook: Phrasebook | None = None
) -> list[Evidence]:
    """Evidence from one input's text; a saved /metrics or nvidia-smi report is timed at `mtime`.

    Log text goes through both tiers: the exact parsers, and the text tier with `phrasebook` (default:
    the bundled catalog's phrases).
    """
    objects = k8s.maybe_k8s_json(text)
    if objects is not None:
        return k8s.evidence_from_objects(objects, source=name)
    if nvsmi.looks_like_nvsmi_query(text):
        return nvsmi.parse_nvsmi_query(text, source=name, when=mtime)
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
    lines = text.splitlines()
    return [*parse_lines(lines, source=name), *match_text(lines, phrasebook, source=name)]
