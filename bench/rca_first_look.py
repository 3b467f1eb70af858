"""A fresh held-out batch's first look: score it on the code of an earlier commit, aggregates only.

A batch gathered during a session must first be scored on the code that existed before the session changed
anything, or its first look measures code tuned beside it. Checking that commit out beside main is not enough:
the editable install maps `gpuobs.rca` and the other components to the main checkout, so a script run from an
old worktree with PYTHONPATH imports main's parsers and weights (the twenty-third session found a first look
measured that way). This script makes the old commit's code the code that runs:

    python bench/rca_first_look.py --at 7690a1d --batch heldout21            # the semantic tier on and off
    python bench/rca_first_look.py --at 7690a1d --batch heldout21 --semantic on --json

It adds a temporary git worktree at the commit, copies the batch into it (the batch is usually newer than the
commit), lays the commit's package out as installed (`tools/repo_layout.py link-tree`) and runs the commit's
own `bench/rca.py --real-heldout` against it, with the batch added to that script's held-out list. The child
checks that `gpuobs.rca` was imported from the commit's tree before it scores anything. Only aggregate rows
are printed (per-case results of a held-out batch are never shown), and the worktree is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REAL = Path("tests") / "rca" / "real_corpus"
sys.path.insert(0, str(ROOT / "tools"))
from repo_layout import link_tree  # noqa: E402  (a standard-library helper beside the package, not in it)

# The child process: refuses to score unless the package comes from the commit's tree, then runs that
# commit's bench/rca.py with the batch added to its held-out list. argv: tree, site, batch, bench args.
# bench/rca.py's exit status is its verdict on the synthetic corpus's target, not a failure to score: the
# child exits 0 once the figures are printed (a crash still exits 1 with its traceback).
_CHILD = """
import importlib.util, sys
from pathlib import Path
from typing import Any
tree, site, batch, *args = sys.argv[1:]
sys.path.append(str(Path(tree) / "bench"))  # its sibling modules (real_splits), last as load_bench_script
import gpuobs.rca
where = Path(gpuobs.rca.__file__)
if not where.is_relative_to(site):
    sys.exit(f"gpuobs.rca was imported from {where}, not from the commit's tree {site}: refusing to score")
spec = importlib.util.spec_from_file_location("bench_rca_at_commit", Path(tree) / "bench" / "rca.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
if batch not in bench.REAL_HELDOUT:
    bench.REAL_HELDOUT = (*bench.REAL_HELDOUT, batch)
bench.main(args)
"""
_BATCH_RE = re.compile(r"heldout\d+")


class LookError(Exception):
    """A bad argument or a failed step, told to the user in one line."""


def _git(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise LookError(f"git {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip()


def resolve_commit(ref: str) -> str:
    """The full hash of ref, or a LookError naming it."""
    try:
        return _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except LookError:
        raise LookError(f"--at {ref}: no such commit in {ROOT}") from None


def batch_folder(batch: str, root: Path = ROOT) -> Path:
    """The batch's folder in this checkout; only a held-out batch (heldoutN) is a first look's subject."""
    if not _BATCH_RE.fullmatch(batch):
        raise LookError(f"--batch {batch}: a first look scores a held-out batch, named heldoutN")
    folder = root / REAL / batch
    if not any(folder.glob("*/expected.json")):
        raise LookError(f"--batch {batch}: no cases under {folder}")
    return folder


def held_out_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the held-out batches and their pool: the only rows a first look reports."""
    wanted = ("real text: heldout", "real text: held-out pooled")
    return [r for r in rows if any(w in str(r["method"]) for w in wanted)]


def look(commit: str, batch: Path, semantic: str) -> list[dict[str, Any]]:
    """Score the held-out batches (the new one included) on commit's code; the aggregate rows."""
    with tempfile.TemporaryDirectory(prefix="gpuobs-first-look-") as tmp:
        tree, site = Path(tmp) / "tree", Path(tmp) / "site"
        _git("worktree", "add", "--detach", "--quiet", str(tree), commit)
        try:
            copy = tree / REAL / batch.name
            if not copy.exists():
                shutil.copytree(batch, copy)
            link_tree(site, root=tree)
            env = {**os.environ, "PYTHONPATH": str(site), "GPUOBS_SEMANTIC": semantic}
            cmd = [sys.executable, "-P", "-c", _CHILD, str(tree), str(site), batch.name]
            cmd += ["--real-heldout", "--json"]
            done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0 or not done.stdout.strip():
                told = (done.stderr or done.stdout).strip()[-800:]
                raise LookError(f"scoring at {commit[:10]} failed: {told}")
            try:
                rows = json.loads(done.stdout)["rows"]
            except (ValueError, KeyError) as exc:
                raise LookError(f"scoring at {commit[:10]} printed no figures: {exc}") from exc
        finally:
            _git("worktree", "remove", "--force", str(tree))
    return held_out_rows(rows)


def _table(results: dict[str, list[dict[str, Any]]]) -> str:
    lines = [f"{'semantic':<9} {'method':<36} {'cases':>5} {'incid.':>6} {'healthy':>7} {'top-1':>7} "
             f"{'top-3':>7} {'false-cause':>11}"]
    for semantic, rows in results.items():
        for r in rows:
            lines.append(
                f"{semantic:<9} {r['method']!s:<36} {r['cases']!s:>5} {r['incidents']!s:>6} "
                f"{r['healthy']!s:>7} {float(r['top1']):>7.1%} {float(r['top3']):>7.1%} "
                f"{float(r['false_cause_rate']):>11.1%}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at", required=True, help="the commit whose code is scored (before any change)")
    parser.add_argument("--batch", required=True, help="the fresh held-out batch (heldoutN) to add to it")
    parser.add_argument("--semantic", choices=("on", "off", "both"), default="both")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    try:
        commit = resolve_commit(args.at)
        folder = batch_folder(args.batch)
        modes = ("on", "off") if args.semantic == "both" else (args.semantic,)
        results = {mode: look(commit, folder, mode) for mode in modes}
    except LookError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"commit": commit, "batch": args.batch, "semantic": results}, indent=2))
    else:
        print(f"first look at {commit[:10]} with {args.batch} added (aggregates only)")
        print(_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
