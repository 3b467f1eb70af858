"""The corpus's claim list (tools/corpus_claims.py): gatherers running at once never quote a thread twice."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from corpus_claims import CORPUS, build, claim, normalise, sources

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "corpus_claims.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_the_list_holds_every_source_of_every_part(tmp_path: Path) -> None:
    """Every part's sources, as the corpus check compares them (no thread repeats: bench/real_corpus_check.py
    says so, tests/rca/test_rca_real_corpus_integrity.py runs it)."""
    listed = tmp_path / "claims.txt"
    count = build(listed)
    cases = list(CORPUS.glob("*/*/expected.json"))
    quoted = {normalise(json.loads(p.read_text(encoding="utf-8"))["source"]) for p in cases}
    assert count == len(quoted) > 2500
    assert set(listed.read_text(encoding="utf-8").split()) == quoted
    assert any("/heldout57/" in str(p) for p in cases) and any("/tune/" in str(p) for p in cases)


def test_a_taken_thread_is_refused_in_any_spelling(tmp_path: Path) -> None:
    listed = tmp_path / "claims.txt"
    build(listed)
    taken = sources()[0]
    assert claim(listed, taken.upper() + "/") is False
    assert claim(listed, "https://example.org/forum/t/123") is True
    assert claim(listed, "https://EXAMPLE.org/forum/t/123/") is False


def test_parallel_claims_of_one_thread_give_it_to_exactly_one(tmp_path: Path) -> None:
    """Real processes racing on one file: the lock makes the check and the write one step. A taken thread
    exits 1, so a gatherer's `claim ... && write` cannot write its case (two heldout17 gatherers wrote one
    before reading the word when it exited 0)."""
    listed = tmp_path / "claims.txt"
    listed.write_text("", encoding="utf-8")
    url = "https://github.com/example/repo/issues/1"
    with ThreadPoolExecutor(max_workers=6) as pool:
        runs = list(pool.map(lambda _: _run("claim", str(listed), url), range(6)))
    assert sorted((r.stdout.strip(), r.returncode) for r in runs) == [("CLAIMED", 0)] + [("TAKEN", 1)] * 5
    assert not any(r.stderr for r in runs), [r.stderr for r in runs]
    assert listed.read_text(encoding="utf-8").splitlines() == [url]


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = _run("claim", str(tmp_path / "no" / "such" / "claims.txt"), "https://example.org/a")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.startswith("corpus_claims: ") and len(missing.stderr.strip().splitlines()) == 1
    empty = _run("claim", str(tmp_path / "claims.txt"), "  ")
    assert empty.returncode == 2 and "empty URL" in empty.stderr
    usage = _run("frobnicate")
    assert usage.returncode == 2 and "invalid choice" in usage.stderr
