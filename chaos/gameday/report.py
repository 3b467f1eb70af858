"""Game-day reports: a Markdown MTTR table and a self-contained HTML page with one timeline per experiment.

The page fetches nothing: plots are inline SVG (P99 latency and error rate over time, with the
fault, detection, diagnosis and recovery marked), and a few lines of inline script tag every plot
that the browser laid out with `data-rendered="true"` so a headless browser can check the page.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Sequence

from gpuobs.chaos.gameday.runner import Outcome
from gpuobs.chaos.load import Sample, percentile

__all__ = ["html_report", "markdown_report", "series"]

_COLUMNS = (
    "experiment",
    "expected_signature",
    "diagnosed_signature",
    "detect_s",
    "alert_s",
    "diagnose_s",
    "recover_s",
    "mttr_s",
    "requests_lost",
    "passed",
)
_PHASE_COLOURS = {
    "fault": "#d62728",
    "detected": "#ff7f0e",
    "alert": "#8c564b",
    "diagnosed": "#9467bd",
    "recovered": "#2ca02c",
}


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def markdown_report(outcomes: Sequence[Outcome], title: str = "gpuobs game-day") -> str:
    """The MTTR table (times in seconds from the fault) and each failure's reasons."""
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"# {title}",
        "",
        f"Run {when}; times in seconds from the fault.",
        "",
        "| " + " | ".join(_COLUMNS) + " |",
        "|" + "---|" * len(_COLUMNS),
    ]
    for o in outcomes:
        row = o.to_row()
        lines.append("| " + " | ".join(_cell(row[c]) for c in _COLUMNS) + " |")
    failed = [o for o in outcomes if not o.passed]
    if failed:
        lines += ["", "## Failures", ""]
        for o in failed:
            lines += [f"- **{o.experiment}**: " + "; ".join(o.failures)]
    return "\n".join(lines) + "\n"


def series(
    samples: Sequence[Sample], start: float, bucket_s: float = 1.0
) -> list[tuple[float, float, float]]:
    """(seconds since start, P99 latency s, error ratio) per bucket; lost and errors count as errors."""
    if not samples:
        return []
    buckets: dict[int, list[Sample]] = {}
    for s in samples:
        if s.start >= start:  # the load starts a moment before the experiment's clock
            buckets.setdefault(int((s.start - start) // bucket_s), []).append(s)
    out = []
    for key in sorted(buckets):
        group = buckets[key]
        bad = sum(1 for s in group if s.outcome in ("error", "lost", "refused"))
        out.append((key * bucket_s, percentile([s.latency_s for s in group], 99), bad / len(group)))
    return out


def _svg(o: Outcome, width: int = 720, height: int = 220) -> str:
    pad_l, pad_r, pad_t, pad_b = 50, 50, 20, 30
    points = series(o.samples, o.started)
    end = max([p[0] + 1 for p in points] + [m - o.started for m in o.marks.values()] + [1.0])
    top = max([p[1] for p in points] + [0.1]) * 1.15
    w, h = width - pad_l - pad_r, height - pad_t - pad_b

    def x(t: float) -> float:
        return pad_l + w * t / end

    def y_lat(v: float) -> float:
        return pad_t + h * (1 - v / top)

    def y_err(v: float) -> float:
        return pad_t + h * (1 - v)

    parts = [
        f'<svg class="timeline" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="timeline of {html.escape(o.experiment)}">',
        f'<rect x="{pad_l}" y="{pad_t}" width="{w}" height="{h}" fill="#fafafa" stroke="#ccc"/>',
        f'<text x="{pad_l - 6}" y="{pad_t + 10}" font-size="10" text-anchor="end">{top:.2f}s</text>',
        f'<text x="{pad_l - 6}" y="{pad_t + h}" font-size="10" text-anchor="end">0</text>',
        f'<text x="{width - pad_r + 6}" y="{pad_t + 10}" font-size="10">100%</text>',
        f'<text x="{pad_l + w}" y="{height - 8}" font-size="10" text-anchor="end">{end:.0f} s</text>',
        f'<text x="{pad_l}" y="{height - 8}" font-size="10">0 s</text>',
    ]
    if points:
        lat = " ".join(f"{x(t):.1f},{y_lat(v):.1f}" for t, v, _ in points)
        err = " ".join(f"{x(t):.1f},{y_err(e):.1f}" for t, _, e in points)
        parts.append(f'<polyline class="p99" points="{lat}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
        parts.append(
            f'<polyline class="errors" points="{err}" fill="none" stroke="#d62728" stroke-width="1.5" '
            'stroke-dasharray="4 3"/>'
        )
    for phase, colour in _PHASE_COLOURS.items():
        at = o.marks.get(phase)
        if at is None:
            continue
        px = x(at - o.started)
        parts.append(
            f'<line class="mark {phase}" x1="{px:.1f}" x2="{px:.1f}" y1="{pad_t}" y2="{pad_t + h}" '
            f'stroke="{colour}" stroke-width="1.5"/>'
        )
        parts.append(
            f'<text x="{px + 3:.1f}" y="{pad_t + 12 + 12 * list(_PHASE_COLOURS).index(phase)}" '
            f'font-size="10" fill="{colour}">{phase}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


_SCRIPT = """
document.querySelectorAll('svg.timeline').forEach(function (svg) {
  var box = svg.getBBox();
  var lines = svg.querySelectorAll('polyline').length;
  svg.setAttribute('data-rendered', (box.width > 0 && box.height > 0 && lines > 0) ? 'true' : 'false');
});
document.body.setAttribute('data-plots', String(document.querySelectorAll('svg.timeline').length));
"""


def html_report(outcomes: Sequence[Outcome], title: str = "gpuobs game-day") -> str:
    """One self-contained page: the MTTR table and a timeline plot per experiment."""
    rows = []
    for o in outcomes:
        row = o.to_row()
        cells = "".join(f"<td>{html.escape(_cell(row[c]))}</td>" for c in _COLUMNS)
        rows.append(f'<tr class="{"pass" if o.passed else "fail"}">{cells}</tr>')
    sections = []
    for o in outcomes:
        why = "" if o.passed else f"<p class='why'>{html.escape('; '.join(o.failures))}</p>"
        sections.append(
            f"<section><h2>{html.escape(o.experiment)}</h2><p>{html.escape(o.title)}</p>{why}{_svg(o)}"
            "<p class='legend'>blue: P99 latency per second; red dashed: error ratio (errors, refused and "
            "lost requests); vertical lines: fault, detected, diagnosed, recovered</p></section>"
        )
    head = "".join(f"<th>{c}</th>" for c in _COLUMNS)
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>"
        "body{font-family:sans-serif;margin:2em;max-width:960px}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px}tr.fail{background:#fee}"
        ".why{color:#a00}.legend{font-size:11px;color:#555}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>Times in seconds from the fault.</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"{''.join(sections)}<script>{_SCRIPT}</script></body></html>"
    )
