"""Plain-text tables for the benchmarks' terminal reports (the JSON output carries the figures)."""

from __future__ import annotations

from typing import Any

__all__ = ["cell", "table"]


def cell(v: Any, *, below: float, small: str, large: str) -> str:
    """A table cell: `-` for None, yes/NO for a flag, a float as `small` under `below` else `large`."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return format(v, small) if v < below else format(v, large)
    return str(v)


def table(title: str, rows: list[dict[str, Any]], cols: list[str], fmt: Any) -> str:
    """`title`, then one left-aligned row of `cols` per row, each value through `fmt`."""
    cells = [[fmt(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    lines = [title, "  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)
