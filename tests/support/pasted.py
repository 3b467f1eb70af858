"""Diagnose a pasted excerpt as a user would (`gpuobs diagnose --logs FILE`), for the wording tests."""

from __future__ import annotations

from pathlib import Path

from gpuobs.errors import InputError
from gpuobs.rca import DiagnoseInputs, diagnose


def pasted_causes(tmp_path: Path, text: str) -> list[str]:
    """Cause ids, best first, of `text` written to a log file; none when nothing in it can be read."""
    path = tmp_path / "pasted.log"
    path.write_text(text, encoding="utf-8")
    try:
        report = diagnose(DiagnoseInputs(logs=[str(path)]))
    except InputError:
        return []
    return [c.id for c in report.causes]
