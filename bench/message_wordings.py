"""The message tests' wordings as (where, expected cause or None, text), for the two fit scripts.

tests/rca/test_rca_message_sources.py and test_rca_message_variants.py hold tool messages quoted from their
sources and their variants, each with the cause it must name (None: healthy). Both fits read them:
`fit_prose_tier` trains on them (an unseen healthy wording only sets its score limit) and `fit_text_tier`
counts the healthy ones as healthy cases. One loader, so the two fits read the same lists.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

__all__ = ["MESSAGE_LISTS", "message_wordings"]

ROOT = Path(__file__).resolve().parents[1]
# (file, names of its lists of (expected cause or None, text)).
MESSAGE_LISTS = (
    (ROOT / "tests" / "rca" / "test_rca_message_sources.py", ("SOURCE_WORDINGS", "UNSEEN_BY_FIT")),
    (ROOT / "tests" / "rca" / "test_rca_message_variants.py", ("VARIANTS", "MIXED")),
)


def message_wordings() -> list[tuple[str, str | None, str]]:
    """(where, expected cause or None, text) of the wording tests' lists, `where` naming file, list and
    index (imported with tests/ on the path for their helpers)."""
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    out: list[tuple[str, str | None, str]] = []
    for path, names in MESSAGE_LISTS:
        spec = importlib.util.spec_from_file_location(f"_wordings_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise SystemExit(f"cannot load the wording list {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for name in names:
            out += [
                (f"{path.name}::{name}::{i}", exp, text)
                for i, (exp, text) in enumerate(getattr(module, name))
            ]
    return out
