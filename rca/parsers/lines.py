"""Log text -> Evidence: the one pass that runs every line parser behind a cheap substring prefilter.

`parse_text` is pure (text in, evidence out). A line reaches a parser's regular expressions only
when one of the parser's trigger substrings occurs in it, so 100,000 lines of unrelated noise cost
a few substring checks each. Lines that match nothing are skipped. A message that a terminal wrapped,
or that continues on indented lines or after a `Last error:`, is read again whole (`blocks`) when its
lines one by one gave no fact.
"""

from __future__ import annotations

import bisect
import itertools
import logging
from collections.abc import Iterable

from gpuobs.evidence import Entity, Evidence
from gpuobs.rca import keys
from gpuobs.rca.parsers import apps, cuda, host_kernel, nccl, nvrm
from gpuobs.rca.parsers.blocks import block_around, joined
from gpuobs.rca.parsers.context import LineParser, ParseContext, Trigger
from gpuobs.rca.parsers.lowered import LowerText, lower_text
from gpuobs.rca.parsers.prefix import LinePrefix, split_prefix, strip_decorations
from gpuobs.rca.parsers.scan import MultiScanner

__all__ = ["index_by_line", "parse_lines", "parse_text"]

logger = logging.getLogger(__name__)

_TRIGGERS: list[Trigger] = [*nvrm.PARSERS, *host_kernel.PARSERS, *cuda.PARSERS, *nccl.PARSERS, *apps.PARSERS]
# Flattened (needle, parser index) so each line is scanned once per distinct needle.
_NEEDLES: list[tuple[str, int]] = [
    (needle, i) for i, (needles, _) in enumerate(_TRIGGERS) for needle in needles
]
_FALLBACK_NEEDLES, _FALLBACK = apps.FALLBACK
_LINE_COMPLETE = frozenset(i for i, (_, parser) in enumerate(_TRIGGERS) if parser in apps.LINE_COMPLETE)
# parser index -> the check that a line only it was triggered by gives no record (skipped unpeeled)
_QUIET = {
    i: apps.QUIET_LINES[parser] for i, (_, parser) in enumerate(_TRIGGERS) if parser in apps.QUIET_LINES
}
# Keys that applications print many times for one failure (every rank, every request, the
# traceback and the log line): repeats within a short window collapse into one record with a count.
_COLLAPSE = {
    keys.CUDA_OOM,
    keys.CUDA_ERROR,
    keys.PYTHON_EXCEPTION,
    keys.VLLM_ENGINE_DEAD,
    keys.NCCL_TIMEOUT,
    keys.NCCL_ERROR,
    keys.DRIVER_ERROR,
    keys.NVML_ERROR,
    keys.KV_CACHE_INSUFFICIENT,
    keys.LOG_LINE,
    keys.TENSORRT_PARSE_ERROR,
    keys.TENSORRT_ENGINE_INCOMPATIBLE,
    keys.EXPORTER_ERROR,
    keys.TOKENIZER_MISMATCH,
    keys.GRPC_STATUS,
}
_COLLAPSE_WINDOW_LINES = 200
_MAX_LINE = 20000


def parse_text(
    text: str, source: str = "text", year: int | None = None, host: str | None = None, strict: bool = False
) -> list[Evidence]:
    """Every piece of evidence found in a log text (any mix of kernel, application and JSON lines)."""
    return parse_lines(text.splitlines(), source=source, year=year, host=host, strict=strict)


def parse_lines(
    lines: Iterable[str],
    source: str = "text",
    year: int | None = None,
    host: str | None = None,
    strict: bool = False,
    by_line: dict[int, list[Evidence]] | None = None,
    low: LowerText | None = None,
) -> list[Evidence]:
    """Like `parse_text` for an iterable of lines (no trailing newlines needed).

    A parser that raises on a line is logged and skipped (the other evidence survives); with
    `strict` the exception propagates (fuzzing and tests). `by_line`, when given, receives every record
    by the 0-based lines it covers, before repeats collapse into one record (the text tier's view of
    which lines the exact tier understood). `low` is the lines' shared lower-cased view, when the caller
    has one.
    """
    all_lines = lines if isinstance(lines, list) else list(lines)
    ctx = ParseContext(source=source, lines=all_lines, year=year, host=host)
    triggers = _TRIGGERS
    candidates = _candidate_lines(all_lines, low=low)
    quiet = _QUIET
    for index, pis in candidates:
        raw = all_lines[index]
        if len(raw) > _MAX_LINE:
            raw = raw[:_MAX_LINE]
        clean = strip_decorations(raw)
        ctx.index = index  # even for a line skipped: records amended after the pass read where it ended
        if len(pis) == 1 and (check := quiet.get(pis[0])) is not None and check(clean):
            continue
        hit = [pi for pi in pis if pi >= 0]
        prefix = split_prefix(clean, year)
        if prefix.host is None and ctx.host is None and prefix.fields.get("hostname"):
            prefix.host = str(prefix.fields["hostname"])
        message = prefix.message
        before = len(ctx.out)
        parser: LineParser
        for pi in hit:
            parser = triggers[pi][1]
            try:
                parser(message, prefix, ctx)
            except (ValueError, IndexError, KeyError, TypeError, OverflowError) as exc:
                if strict:
                    raise
                # A parser bug must not cost the other evidence: count it, name it in the log.
                ctx.state["parser_errors"] = ctx.state.get("parser_errors", 0) + 1
                logger.warning("parser %s failed on %s line %d: %s", parser.__name__, source, index + 1, exc)
        if len(ctx.out) == before:
            _FALLBACK(message, prefix, ctx)
        if prefix.fields:
            _parse_embedded(prefix, ctx, year, host, strict)
    _parse_blocks(candidates, ctx, year, strict)
    nvrm.finish(ctx)
    ctx.out.sort(key=lambda ev: int(ev.attrs.get("line", 0)))
    if by_line is not None:
        index_by_line(ctx.out, by_line)
    return _collapse(ctx.out)


def index_by_line(records: Iterable[Evidence], into: dict[int, list[Evidence]]) -> None:
    """Add each record under the 0-based line numbers it covers (`line` .. `end_line`, or `joined_lines`)."""
    for ev in records:
        line = ev.attrs.get("line")
        if not isinstance(line, int) or line < 1:
            continue
        end = ev.attrs.get("end_line")
        joined = ev.attrs.get("joined_lines")
        last = line
        if isinstance(end, int) and line <= end <= line + 64:
            last = end
        elif isinstance(joined, int) and 1 <= joined <= 64:
            last = line + joined - 1
        for covered in range(line - 1, last):
            into.setdefault(covered, []).append(ev)


def _run_parsers(message: str, prefix: LinePrefix, ctx: ParseContext, hit: list[int], strict: bool) -> None:
    for pi in hit:
        parser = _TRIGGERS[pi][1]
        try:
            parser(message, prefix, ctx)
        except (ValueError, IndexError, KeyError, TypeError, OverflowError) as exc:
            if strict:
                raise
            ctx.state["parser_errors"] = ctx.state.get("parser_errors", 0) + 1
            logger.warning(
                "parser %s failed on %s line %d: %s", parser.__name__, ctx.source, ctx.index + 1, exc
            )


def _parse_blocks(
    candidates: list[tuple[int, list[int]]], ctx: ParseContext, year: int | None, strict: bool
) -> None:
    """Read again, whole, each multi-line message whose lines one by one gave no fact (only log lines).

    The records are stamped with the message's first line (time, entity, line number).
    """
    lines = ctx.lines
    facts = {ev.attrs.get("line") for ev in ctx.out if ev.key != keys.LOG_LINE}
    done: set[int] = set()
    for index, hit_by in candidates:
        if index + 1 in facts or (hit_by and _LINE_COMPLETE.issuperset(hit_by)):
            continue
        first, last = block_around(lines, index)
        if last == first or first in done:
            continue
        done.add(first)
        if any(i + 1 in facts for i in range(first, last + 1)):
            continue
        prefixes = [
            split_prefix(strip_decorations(lines[i][:_MAX_LINE]), year) for i in range(first, last + 1)
        ]
        message = joined([p.message for p in prefixes], lines[first : last + 1])
        hit = sorted({pi for needle, pi in _NEEDLES if needle in message})
        if not hit:
            continue
        head = prefixes[0]
        ctx.index = first
        before = len(ctx.out)
        _run_parsers(message, head, ctx, hit, strict)
        for i in range(before, len(ctx.out)):
            ctx.out[i].attrs["joined_lines"] = last - first + 1
        facts.update(range(first + 1, last + 2))


# JSON log fields that hold a traceback or an error text beside `msg` (Python's logging `exc_info` as
# gpuobs.jsonlog writes it, structlog / python-json-logger / Go zap names).
_EMBEDDED_FIELDS = ("exc", "exc_info", "exception", "traceback", "stack_trace", "stacktrace")
_MAX_EMBEDDED_LINES = 400


def _parse_embedded(
    prefix: LinePrefix, ctx: ParseContext, year: int | None, host: str | None, strict: bool
) -> None:
    """Evidence from a JSON line's traceback field, stamped with the line's time, entity and number.

    The serving stack logs a failed hot swap as `msg: "hot-swap failed"` with the CUDA OOM only in the
    `exc` traceback: the traceback is parsed like any log text, and each record it yields is attributed
    to the JSON line (time, model_id, device_id, cuda_error_code), unless the message already gave
    a record of that key on this line.
    """
    for name in _EMBEDDED_FIELDS:
        text = prefix.fields.get(name)
        if not isinstance(text, str) or not text.strip():
            continue
        lines = text.splitlines()[:_MAX_EMBEDDED_LINES]
        inner = parse_lines(lines, source=ctx.source, year=year, host=host, strict=strict)
        line = ctx.index + 1
        entity = ctx.entity(prefix)
        code = prefix.fields.get("cuda_error_code")
        for ev in inner:
            if ev.key == keys.LOG_LINE:
                continue
            same = ctx.emitted_index(ev.key)
            if same is not None:
                # the message (or its structured fields) already gave this record: add what the
                # traceback knows besides (OOM figures, exception type), keep the rest
                have = ctx.out[same].attrs
                extra = {k: v for k, v in ev.attrs.items() if k not in have and k not in _LOCAL_ATTRS}
                if extra:
                    ctx.amend(same, {**extra, "embedded_in": name})
                continue
            attrs = dict(ev.attrs)
            attrs.pop("time_inferred", None)
            attrs.pop("last_line", None)  # a line of the embedded text, not of this one
            attrs["embedded_line"] = attrs.pop("line", None)
            attrs["line"] = line
            attrs["embedded_in"] = name
            if isinstance(code, int) and not isinstance(code, bool) and "code" not in attrs:
                attrs["cuda_error_code"] = code
            if prefix.level and "level" not in attrs:
                attrs["level"] = prefix.level
            merged = {**ev.entity.to_dict(), **{k: v for k, v in entity.to_dict().items() if v is not None}}
            when = ev.time if ev.time is not None else prefix.time
            if when is None:
                when = ctx.inherited_time()
                if when is not None:
                    attrs["time_inferred"] = True
            ctx.out.append(
                Evidence(
                    kind=ev.kind,
                    key=ev.key,
                    value=ev.value,
                    source=ev.source,
                    time=when,
                    entity=Entity(**merged),
                    raw=ev.raw,
                    attrs=attrs,
                )
            )


_LOCAL_ATTRS = {"line", "last_line", "time_inferred", "boot_seconds", "level"}


def _build_anchors() -> dict[str, list[tuple[str, int]]]:
    """Group the needles under lower-case anchors each of them contains (-1 marks the fallback)."""
    groups: dict[str, list[tuple[str, int]]] = {}
    pairs = [*_NEEDLES, *((n, -1) for n in _FALLBACK_NEEDLES)]
    for needle, pi in pairs:
        low = needle.lower()
        anchor = next((a for a in _ANCHORS if a in low), low)
        groups.setdefault(anchor, []).append((needle, pi))
    return groups


# Lower-case substrings that many needles contain and ordinary log text rarely does (chosen greedily:
# most needles covered per anchor, penalised by frequency in a noise corpus). The lower-cased text is
# scanned once per anchor; needles without an anchor are their own.
_ANCHORS = (
    "rror",
    "cuda",
    "nccl",
    "nvrm",
    "nvidia",
    "engine",
    " memor",
    "cache",
    "fatal",
    "exporte",
    "watch",
    "insuff",
    "instal",
    "assert",
    "timed o",
    "preempt",
    "link",
    "onnx",
    "loading",
    "warn",
    "status",
    " down",
    "lock",
    "device",
    "critical",
    "token",
    "ocab",
    "xid",
    "nvml",
    "dcgm",
    "oom",
    "except",
    "timeout",
    "fault",
    "killed",
    "tensorrt",
    "panic",
    "[e",
    ":err ",
)


def _candidate_lines(
    lines: list[str], automaton: bool = True, low: LowerText | None = None
) -> list[tuple[int, list[int]]]:
    """(line index, parser indices hit) for every line holding a trigger substring, in order.

    The needles are found in the lines joined in one Aho-Corasick pass (`MultiScanner`). So lines of pure
    noise cost no Python work and the cost grows with the number of hits, not of lines. Parser index -1
    means the fallback. `automaton=False` is the reference scan the tests compare with: one `str.find`
    pass per anchor over the lower-cased text, then the anchor's needles checked on each line found.
    """
    if not lines:
        return []
    if automaton:
        return _needle_lines(lines, low.starts if low is not None else None)
    view = low if low is not None else lower_text(lines)
    text, starts = view.text, view.starts
    if not view.aligned:  # lower() changed lengths (rare Unicode): scan line by line instead
        return [
            (i, sorted({pi for n, pi in (*_NEEDLES, *((f, -1) for f in _FALLBACK_NEEDLES)) if n in line}))
            for i, line in enumerate(lines)
            if any(n in line for n, _ in _NEEDLES) or any(f in line for f in _FALLBACK_NEEDLES)
        ]
    hits: dict[int, set[int]] = {}
    bisect_right = bisect.bisect_right
    find = text.find
    for anchor, group in _ANCHOR_LIST:
        i = find(anchor)
        while i != -1:
            index = bisect_right(starts, i) - 1
            line = lines[index]
            for needle, pi in group:
                if needle in line:
                    hits.setdefault(index, set()).add(pi)
            i = find(anchor, starts[index + 1])
    return [(index, sorted(pis)) for index, pis in sorted(hits.items())]


def _needle_lines(lines: list[str], starts: list[int] | None) -> list[tuple[int, list[int]]]:
    """`_candidate_lines` in one pass over the lines as they are (needles are case-sensitive)."""
    if starts is None:
        starts = [0, *itertools.accumulate(len(line) + 1 for line in lines)]
    bisect_right = bisect.bisect_right
    owners = _NEEDLE_OWNERS
    hits: dict[int, set[int]] = {}
    for ni, start, _ in _SCANNER.find_all("\n".join(lines)):
        index = bisect_right(starts, start) - 1
        found = hits.get(index)
        if found is None:
            hits[index] = set(owners[ni])
        else:
            found |= owners[ni]
    return [(index, sorted(pis)) for index, pis in sorted(hits.items())]


_ANCHOR_GROUPS = _build_anchors()
_ANCHOR_LIST = list(_ANCHOR_GROUPS.items())


def _needle_parsers() -> dict[str, frozenset[int]]:
    """Every needle once, with the parsers (-1: the fallback) that it triggers."""
    table: dict[str, set[int]] = {}
    for needle, pi in [*_NEEDLES, *((n, -1) for n in _FALLBACK_NEEDLES)]:
        table.setdefault(needle, set()).add(pi)
    return {needle: frozenset(parsers) for needle, parsers in table.items()}


_NEEDLE_PARSERS = _needle_parsers()
_SCANNER = MultiScanner(sorted(_NEEDLE_PARSERS))
_NEEDLE_OWNERS = [_NEEDLE_PARSERS[needle] for needle in _SCANNER.patterns]


def _signature(ev: Evidence) -> tuple[object, ...]:
    ignored = {"line", "last_line", "time_inferred", "level", "rank", "elapsed_ms", "boot_seconds"}
    if ev.key not in (keys.LOG_LINE, keys.PYTHON_EXCEPTION):
        ignored.add("message")
    attrs = tuple(sorted((k, repr(v)) for k, v in ev.attrs.items() if k not in ignored))
    return (ev.key, ev.value, ev.entity, attrs)


def _collapse(out: list[Evidence]) -> list[Evidence]:
    kept: list[Evidence] = []
    seen: dict[tuple[object, ...], int] = {}
    for ev in out:
        if ev.key not in _COLLAPSE:
            kept.append(ev)
            continue
        sig = _signature(ev)
        prev = seen.get(sig)
        line = int(ev.attrs.get("line", 0))
        if prev is not None and line - _last_line(kept[prev]) <= _COLLAPSE_WINDOW_LINES:
            before = int(kept[prev].attrs.get("repeats", 1))
            kept[prev].attrs["repeats"] = before + int(ev.attrs.get("repeats", 1))
            kept[prev].attrs["last_line"] = ev.attrs.get("line")
            ranks = kept[prev].attrs.get("ranks")
            if "rank" in ev.attrs:
                ranks = sorted({*(ranks or [kept[prev].attrs.get("rank")]), ev.attrs["rank"]} - {None})
                kept[prev].attrs["ranks"] = ranks
            continue
        seen[sig] = len(kept)
        kept.append(ev)
    return kept


def _last_line(ev: Evidence) -> int:
    """The line of a collapsed record's latest repeat (its `line` stays the first: where it began)."""
    return int(ev.attrs.get("last_line") or ev.attrs.get("line") or 0)
