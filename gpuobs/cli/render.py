"""One renderer: the same rows as a rich table for people or JSON for machines."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = ["console", "emit_json", "emit_table", "fail", "note"]

# Piped output (make demo, CI logs, `| less`) has no terminal width: rich would cut tables at 80 columns.
console = Console(width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160)
_err = Console(stderr=True)


def emit_json(data: Any) -> None:
    """Print data as JSON on stdout (no rich markup, so pipes get clean JSON)."""
    typer.echo(json.dumps(data, indent=2, default=str, sort_keys=False))


def emit_table(title: str, columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """Print rows as a rich table with the given columns."""
    table = Table(title=title, header_style="bold")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if row.get(c) is None else str(row.get(c)) for c in columns))
    console.print(table)


def note(message: str) -> None:
    """Print a one-line notice on stderr (stdout stays data: `--json` output is never mixed with it)."""
    _err.print(f"[yellow]note:[/] {escape(message)}", highlight=False, soft_wrap=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print a one-line error on stderr and return the Exit to raise (`raise fail(...)`).

    Never wrapped (a piped stderr is one line per error) and never read as markup (`gpuobs[serving]`)."""
    _err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)
