"""`gpuobs gameday --serving-url` against a stack that answers wrongly: a proxy's login page, a real serve
started without fault injection, a real serve with no supervisor. Each run ends in one line that says what
is wrong with the stack, waits out no timeout for a fault that never went in, and leaves the stack as it was.

Before: the login page passed the steady state (any 200 did) and the injection failed as "dictionary update
sequence element #0 has length 1"; a serve without --enable-fault-injection was reported as a fault that
went in and was never detected, after 65 s of waiting; the SIGKILL experiment killed an unsupervised serve,
which stayed down.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.serve import ServeProcess, http_json
from support.web import page_handler, serving

from gpuobs.chaos.rca.probes import _inputs
from gpuobs.cli.gameday import GamedayDisplay

pytestmark = pytest.mark.slow


@pytest.fixture
def login_page() -> Iterator[str]:
    """What a URL in front of an authenticating proxy answers to everything: 200 and an HTML page."""
    with serving(page_handler()) as url:
        yield url


def _gameday(experiment: str, serving_url: str, out: Path) -> tuple[int, dict[str, Any]]:
    """One experiment through the real verb against `serving_url`: (exit code, its JSON row)."""
    done = subprocess.run(
        [
            sys.executable, "-m", "gpuobs", "gameday", experiment, "--json", "--no-prometheus",
            "--out", str(out), "--serving-url", serving_url,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    (row,) = json.loads(done.stdout)
    return done.returncode, row


def test_a_login_page_is_no_steady_state(login_page: str, tmp_path: Path) -> None:
    code, row = _gameday("serving-slow-kernel", login_page, tmp_path / "out")
    assert code == 1 and not row["passed"]
    failures = row["failures"]
    assert failures[0].startswith("the steady state did not hold before the fault (completion answered 200 "
                                  f"without a completion (is {login_page} a gpuobs serve?)"), failures
    assert "Please log in" in failures[0]
    # nothing went in: what a fault should have caused is not asked, and no Python internals leak out
    assert "no fault was injected" in failures
    assert not any("diagnosed nothing" in f or "dictionary update" in f for f in failures), failures


def test_a_serve_without_fault_injection_is_said_so_and_no_timeout_is_waited_out(tmp_path: Path) -> None:
    with ServeProcess(tmp_path / "serve", grpc=False) as serve:
        code, row = _gameday("serving-slow-kernel", serve.url, tmp_path / "out")
        assert http_json("GET", f"{serve.url}/ready")[0] == 200
    assert code == 1 and not row["passed"]
    text = "; ".join(row["failures"])
    assert "inject-slow_kernel: " in text and "fault injection is off (start gpuobs serve with " \
        "--enable-fault-injection)" in text, text
    # the probes after it fail at once, naming the reason, instead of 20 s and 45 s of waiting
    assert "detect: " in text and "no SLO deviation within" not in text, text
    assert text.count("no fault went in (injecting slow_kernel: ") == 2, text
    assert "remediate" not in text, text  # nothing went in: nothing to clear, no second 404
    assert "no fault was injected" in row["failures"]
    assert row["marks"].get("fault") is None


def test_the_sigkill_experiment_leaves_an_unsupervised_serve_running(tmp_path: Path) -> None:
    with ServeProcess(tmp_path / "serve", grpc=False) as serve:
        status, health = http_json("GET", f"{serve.url}/health")
        assert status == 200 and health["supervised"] is False
        code, row = _gameday("serving-worker-sigkill", serve.url, tmp_path / "out")
        assert serve.proc is not None and serve.proc.poll() is None, "the game-day killed the user's serve"
        status, after = http_json("GET", f"{serve.url}/health")
        assert status == 200 and after["pid"] == health["pid"]
    assert code == 1
    text = "; ".join(row["failures"])
    refused = f"{serve.url} runs without --supervise: nothing would restart its worker after SIGKILL"
    assert refused in text, text
    assert "no fault was injected" in row["failures"]


def test_a_log_not_given_is_not_read_as_the_working_folder() -> None:
    """The game-day passes "" for a log left out (--serve-log): Path("") is ".", which the diagnosis read as
    a log and reported as ": no such file or folder"."""
    files, _, _ = _inputs(["", "  ", "/no/such/log"], None, None, None)
    assert files == []


def test_the_live_table_names_the_stack_it_was_given() -> None:
    """The title said "starting the local stack" while the faults went to the stack named by --serving-url."""
    assert "the stack at http://10.0.0.5:8000" in str(GamedayDisplay(["x"], "http://10.0.0.5:8000").render().title)
    assert "starting the local stack" in str(GamedayDisplay(["x"]).render().title)
