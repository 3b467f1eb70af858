"""Log text -> Evidence: the one pass that runs every line parser behind a cheap substring prefilter.

`parse_text` is pure (text in, evidence out). A line reaches a parser's regular expressions only
when one of the parser's trigger substrings occurs in it, so 100,000 lines of unrelated noise cost
a few substring checks each. Lines that match nothing are skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from gpuobs.evidence import Evidence
from gpuobs.rca import keys
from gpuobs.rca.sources import apps, cuda, kernel, nccl
from gpuobs.rca.sources.base import LineParser, ParseContext, Trigger
from gpuobs.rca.sources.text import split_prefix, strip_decorations

__all__ = ["parse_lines", "parse_text"]

logger = logging.getLogger(__name__)

_TRIGGERS: list[Trigger] = [*kernel.PARSERS, *cuda.PARSERS, *nccl.PARSERS, *apps.PARSERS]
# Flattened (needle, parser index) so each line is scanned once per distinct needle.
_NEEDLES: list[tuple[str, int]] = [(needle, i) for i, (needles, _) in enumerate(_TRIGGERS) for needle in needles]
_FALLBACK_NEEDLES, _FALLBACK = apps.FALLBACK
# Keys that applications print many times for one failure (every rank, every request, the
# traceback and the log line): repeats within a short window collapse into one record with a count.
_COLLAPSE = {keys.CUDA_OOM, keys.CUDA_ERROR, keys.PYTHON_EXCEPTION, keys.VLLM_ENGINE_DEAD, keys.NCCL_TIMEOUT,
             keys.NCCL_ERROR, keys.DRIVER_ERROR, keys.NVML_ERROR, keys.KV_CACHE_INSUFFICIENT, keys.LOG_LINE,
             keys.TENSORRT_PARSE_ERROR, keys.TENSORRT_ENGINE_INCOMPATIBLE, keys.EXPORTER_ERROR,
             keys.TOKENIZER_MISMATCH, keys.GRPC_STATUS}
_COLLAPSE_WINDOW_LINES = 200
_MAX_LINE = 20000


def parse_text(text: str, source: str = "text", year: int | None = None, host: str | None = None) -> list[Evidence]:
    """Every piece of evidence found in a log text (any mix of kernel, application and JSON lines)."""
    return parse_lines(text.splitlines(), source=source, year=year, host=host)


def parse_lines(lines: Iterable[str], source: str = "text", year: int | None = None,
                host: str | None = None) -> list[Evidence]:
    """Like `parse_text` for an iterable of lines (no trailing newlines needed)."""
    all_lines = lines if isinstance(lines, list) else list(lines)
    ctx = ParseContext(source=source, lines=all_lines, year=year, host=host)
    needles = _NEEDLES
    triggers = _TRIGGERS
    for index, raw in enumerate(all_lines):
        if not raw:
            continue
        hit: list[int] = []
        for needle, pi in needles:
            if needle in raw and pi not in hit:
                hit.append(pi)
        fallback = not hit and any(n in raw for n in _FALLBACK_NEEDLES)
        if not hit and not fallback:
            continue
        if len(raw) > _MAX_LINE:
            raw = raw[:_MAX_LINE]
        ctx.index = index
        clean = strip_decorations(raw)
        prefix = split_prefix(clean, year)
        if prefix.host is None and ctx.host is None and prefix.fields.get("hostname"):
            prefix.host = str(prefix.fields["hostname"])
        message = prefix.message
        before = len(ctx.out)
        parser: LineParser
        for pi in sorted(hit):
            parser = triggers[pi][1]
            try:
                parser(message, prefix, ctx)
            except (ValueError, IndexError, KeyError, TypeError, OverflowError) as exc:
                # A parser bug must not cost the other evidence: count it, name it in the log.
                ctx.state["parser_errors"] = ctx.state.get("parser_errors", 0) + 1
                logger.warning("parser %s failed on %s line %d: %s", parser.__name__, source, index + 1, exc)
        if len(ctx.out) == before and (fallback or hit):
            _FALLBACK(message, prefix, ctx)
        if prefix.time is not None:
            ctx.last_time = prefix.time
            ctx.last_time_index = index
    kernel.finish(ctx)
    return _collapse(ctx.out)


def _signature(ev: Evidence) -> tuple[object, ...]:
    ignored = {"line", "time_inferred", "level", "rank", "elapsed_ms"}
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
        if prev is not None and int(ev.attrs.get("line", 0)) - int(kept[prev].attrs.get("line", 0)) \
                <= _COLLAPSE_WINDOW_LINES:
            kept[prev].attrs["repeats"] = int(kept[prev].attrs.get("repeats", 1)) + 1
            kept[prev].attrs["line"] = ev.attrs.get("line")
            ranks = kept[prev].attrs.get("ranks")
            if "rank" in ev.attrs:
                ranks = sorted({*(ranks or [kept[prev].attrs.get("rank")]), ev.attrs["rank"]} - {None})
                kept[prev].attrs["ranks"] = ranks
            continue
        seen[sig] = len(kept)
        kept.append(ev)
    return kept
