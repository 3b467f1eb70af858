"""`gpuobs gameday` on a disk that fills: the outcomes still printed, what was not written named, exit 74.

A real limit stands in for a full disk (the game day runs as a real subprocess under RLIMIT_FSIZE, so each
write past it fails with EFBIG inside the kernel, as a full disk fails with ENOSPC), against a real HTTP
server answering a proxy's login page (the experiment fails its steady state at once: no stack is started).

Before, the journal's write raised out of the game day (the experiments after it never ran), the reports'
write lost every outcome, chaostoolkit's log file printed a traceback for each line it could not take, and
the run ended in "error: a write failed: File too large" with no file named.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from support.web import page_handler, serving

pytestmark = pytest.mark.slow

LIMIT = 1000  # bytes: gameday.md fits, the HTML report, the journal and the whole chaostoolkit.log do not


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def _gameday(out: Path, url: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *(sys.executable, "-m", "gpuobs", "gameday", "serving-slow-kernel", "--no-prometheus"),
            *("--out", str(out), "--serving-url", url, *flags),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_limit,
        env={**os.environ, "TERM": "dumb", "COLUMNS": "200", "GPUOBS_CONFIG": os.devnull},
    )


def test_a_full_disk_loses_no_outcome_and_names_what_was_not_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with serving(page_handler()) as url:
        done = _gameday(out, url)
    stderr = " ".join(done.stderr.split())
    assert done.returncode == 74, done.stdout[-2000:] + done.stderr[-2000:]
    assert "serving-slow-kernel failed: the steady state did not hold" in " ".join(done.stdout.split())
    journal = out / "serving-slow-kernel.journal.json"
    assert f"note: not written: {journal}: cannot write: File too large; nothing there was changed" in stderr
    assert f"note: not written: {out / 'chaostoolkit.log'}: lines lost: File too large" in stderr
    html = out / "gameday.html"
    assert stderr.endswith(f"error: {html}: cannot write: File too large; nothing there was changed")
    assert "Traceback" not in done.stderr and "Logging error" not in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["chaostoolkit.log"]  # no half file, no temporary


def test_the_json_rows_come_out_before_the_error(tmp_path: Path) -> None:
    with serving(page_handler()) as url:
        done = _gameday(tmp_path / "out", url, "--json")
    assert done.returncode == 74, done.stderr[-2000:]
    (row,) = json.loads(done.stdout)
    assert row["experiment"] == "serving-slow-kernel" and not row["passed"]
    assert row["journal"] == "" and "File too large" in row["journal_problem"]
