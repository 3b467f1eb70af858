"""Diagnose a pasted excerpt as a user would (`gpuobs diagnose --logs FILE`), for the wording tests."""

from __future__ import annotations

from pathlib import Path

from gpuobs.errors import InputError
from gpuobs.rca import DiagnoseInputs, diagnose

# A feature request in a failure's words (written here, not from the corpus): the text tier names the host's
# OOM killer from them; the semantic tier's incident reading says nothing failed, so the engine withholds it.
FEATURE_REQUEST = (
    "# [Feature] Export the number of processes killed by the OOM killer as a metric\n"
    "Is there a way to count how many processes the OOM killer has killed? It would be nice to expose this "
    "as a metric for monitoring purposes, so we can alert on it. Happy to open a PR if this sounds useful.\n"
)


def pasted_causes(tmp_path: Path, text: str) -> list[str]:
    """Cause ids, best first, of `text` written to a log file; none when nothing in it can be read."""
    path = tmp_path / "pasted.log"
    path.write_text(text, encoding="utf-8")
    try:
        report = diagnose(DiagnoseInputs(logs=[str(path)]))
    except InputError:
        return []
    return [c.id for c in report.causes]
