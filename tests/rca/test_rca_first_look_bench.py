"""`bench/rca_first_look.py`: a fresh batch scored on an earlier commit's code, with that code imported.

Real git worktrees and real child processes over the real corpus, with the semantic tier off (seconds); the
figures themselves are the benchmark's, not asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.bench import load_bench_script
from support.paths import REPO_ROOT

BATCH = "heldout57"
# The script works on git worktrees: it needs the repository's history, which a clone has and an unpacked
# source archive has not.
pytestmark = pytest.mark.skipif(not (REPO_ROOT / ".git").exists(), reason="not a git checkout")


def _worktrees() -> str:
    return subprocess.run(
        ["git", "worktree", "list"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout


def test_a_first_look_prints_only_aggregates_and_leaves_no_worktree(
    capsys: pytest.CaptureFixture[str],
) -> None:
    look = load_bench_script("rca_first_look")
    before = _worktrees()
    assert look.main(["--at", "HEAD", "--batch", BATCH, "--semantic", "off", "--json"]) == 0
    out = capsys.readouterr().out
    figures = json.loads(out)
    rows = {r["method"]: r for r in figures["semantic"]["off"]}
    folders = [p.parent.name for p in (REPO_ROOT / look.REAL / BATCH).glob("*/expected.json")]
    assert rows[f"engine, real text: {BATCH}"]["cases"] == len(folders) > 0
    assert "engine, real text: held-out pooled" in rows
    assert all("heldout" in m or "held-out" in m for m in rows)  # no tune or synthetic rows
    assert not any(name in out for name in folders)  # no held-out case is named
    assert _worktrees() == before


def test_the_child_refuses_to_score_code_from_outside_the_commits_tree(tmp_path: Path) -> None:
    """The guard that makes a first look honest: with the package imported from anywhere but the laid-out
    tree (here the editable install, as a plain run from an old worktree gets it), nothing is scored."""
    look = load_bench_script("rca_first_look")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-P", "-c", look._CHILD, str(REPO_ROOT), str(tmp_path), BATCH, "--real-heldout"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=120,
    )
    assert done.returncode == 1
    assert "refusing to score" in done.stderr and "real text" not in done.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--at", "no-such-commit-anywhere", "--batch", BATCH], "no such commit"),
        (["--at", "HEAD", "--batch", "tune"], "named heldoutN"),
        (["--at", "HEAD", "--batch", "heldout999"], "no cases under"),
    ],
)
def test_bad_arguments_exit_2_with_a_reason(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    look = load_bench_script("rca_first_look")
    assert look.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_the_childs_status_is_not_the_old_benchs_verdict_on_its_synthetic_target(tmp_path: Path) -> None:
    """bench/rca.py exits 1 when the synthetic corpus misses its target; a commit where it did must still
    give its held-out figures. A stand-in tree and package here (the real ones run in the first test): its
    bench prints figures and returns 1, as an old commit's would."""
    look = load_bench_script("rca_first_look")
    site, tree = tmp_path / "site", tmp_path / "tree"
    (site / "gpuobs" / "rca").mkdir(parents=True)
    (site / "gpuobs" / "__init__.py").write_text("")
    (site / "gpuobs" / "rca" / "__init__.py").write_text("")
    (tree / "bench").mkdir(parents=True)
    (tree / "bench" / "rca.py").write_text(
        "import json, sys\nREAL_HELDOUT = ('heldout2',)\n"
        "def main(argv):\n    print(json.dumps({'rows': [{'method': 'engine, real text: ' + h} "
        "for h in REAL_HELDOUT]}))\n    return 1\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-P", "-c", look._CHILD, str(tree), str(site), BATCH, "--real-heldout", "--json"],
        cwd=tree, env=env, capture_output=True, text=True, check=False, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    methods = [r["method"] for r in json.loads(done.stdout)["rows"]]
    assert methods == ["engine, real text: heldout2", f"engine, real text: {BATCH}"]
