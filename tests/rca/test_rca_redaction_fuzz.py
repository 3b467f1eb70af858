"""Redaction stays linear: pathological lines and random rule fragments redact in well under a second.

A backtracking rule like `[\\w.-]*(pass|...)[\\w.-]*` restarts at every character of a long run, which
made `gpuobs bundle` take 42 s on one 40 KB line of dots. The margins here are wide (a second for
what takes milliseconds) so a loaded CI machine does not fail them; the figures are in
`python -m bench.redact`.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuobs.rca.bundle import make_bundle
from gpuobs.rca.inputs import DiagnoseInputs
from gpuobs.rca.redact import MASK, MAX_LINE_CHARS, Redactor

# Fragments that start a rule (a keyword, a separator, a URL scheme, a key header) repeated: each
# makes a backtracking pattern try, and fail, at every repetition.
FRAGMENTS = [
    ".",
    "a",
    "-",
    "password",
    "pass.",
    "--password ",
    "a=",
    "token: ",
    "://",
    "://@",
    "a:b@",
    "@",
    "=",
    '"a":',
    '"password": "',
    "\\n",
    "Bearer ",
    "Authorization: ",
    "Cookie: ",
    "curl -u ",
    "mysql -p",
    "eyJ",
    "eyJa.",
    "AKIA",
    "ghp_",
    "sk-",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n",
    "Q~",
    "0",
    " ",
    "x" * 39 + "_",
]

UNDER_CAP = MAX_LINE_CHARS - 2048  # the rules themselves must be linear on lines that are not cut
SECOND = 1.0  # generous: each of these takes a few milliseconds on an idle machine


def _line(fragment: str, size: int) -> str:
    return (fragment * (size // len(fragment) + 1))[:size]


@pytest.mark.parametrize("fragment", FRAGMENTS, ids=[repr(f)[:24] for f in FRAGMENTS])
def test_pathological_lines_redact_in_linear_time(fragment: str) -> None:
    for size in (UNDER_CAP, 40_000, 400_000):
        text = _line(fragment, size)
        started = time.perf_counter()
        out = Redactor().text(text)
        took = time.perf_counter() - started
        assert took < SECOND, f"{fragment!r} x {size} chars took {took:.2f} s"
        assert isinstance(out, str)


def test_random_fragment_soup_is_linear() -> None:
    rng = random.Random(7)
    for _ in range(20):
        parts = []
        while sum(map(len, parts)) < UNDER_CAP:
            parts.append(rng.choice(FRAGMENTS) * rng.randint(1, 40) + rng.choice(["", " ", "\n", "x1"]))
        text = "".join(parts)
        r = Redactor()
        started = time.perf_counter()
        once = r.text(text)
        took = time.perf_counter() - started
        assert took < SECOND, f"soup of {len(text)} chars took {took:.2f} s"
        # a second pass (as over an archived input) is as fast; it may mask a little more in such soup
        # (`mysql -pmysql -p...`: a command rule finds one `-p` per command word per pass)
        started = time.perf_counter()
        twice = r.text(once)
        assert time.perf_counter() - started < SECOND and len(twice) <= len(once) + len(MASK) * 64


def test_long_lines_are_cut_without_splitting_a_token() -> None:
    secret = "ghp_" + "Ab3" * 12
    line = "x " * (MAX_LINE_CHARS // 2 - 10) + secret + " tail " + "y" * 50_000
    r = Redactor()
    out = r.text(f"before\n{line}\nafter")
    assert out.startswith("before\n") and out.endswith("\nafter") and r.lines_cut == 1
    assert secret not in out and "ghp_" not in out  # cut at the space before the token, not inside it
    assert "characters of this line cut" in out
    assert MASK not in out


def test_bundle_and_diagnose_of_pathological_lines_stay_fast(tmp_path: Path) -> None:
    log = tmp_path / "patho.log"
    log.write_text(
        "\n".join(_line(f, 40_000) for f in FRAGMENTS)
        + "\nRuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    started = time.perf_counter()
    summary = make_bundle(str(tmp_path / "b.tar.gz"), DiagnoseInputs(logs=[str(log)]))
    took = time.perf_counter() - started
    assert took < 20, f"bundle of {log.stat().st_size} bytes took {took:.1f} s"  # was 42 s for one line
    assert summary.manifest["lines_cut"] == sum(
        len(line) > MAX_LINE_CHARS for line in log.read_text().splitlines()
    )
    started = time.perf_counter()
    diag = subprocess.run(
        [sys.executable, "-m", "gpuobs", "diagnose", "--logs", str(log), "--json"],
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    took = time.perf_counter() - started
    assert diag.returncode in (0, 1), diag.stderr.decode()[-2000:]
    assert took < 60, f"diagnose took {took:.1f} s"
