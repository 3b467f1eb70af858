"""Check the real-text incident corpus (tests/rca/real_corpus) and print its counts; never runs the engine.

The corpus has a `tune/` part and held-out batches (`SPLITS`), gathered later from threads that no other
part uses (the first held-out split, `heldout/`, was scored twice and then promoted into `tune/` on
2026-12-01; `heldout3/` likewise, later the same day, `heldout5/` after its one look, `heldout6/` and
`heldout7/` after three looks each, and `heldout8/` after three looks and a label review).
This script checks what the README promises:
every case has an expected.json with `top` (a catalog signature id or null), `source`, `repo` and
`diagnosis`; every other file in a case is non-empty text under 100 KB; no source thread is quoted twice,
in one part or in two (a held-out batch may reuse a repository of `tune/`, never a thread; the one pair of
`KNOWN_REPEATS` is older than this rule). Sources compare as the claim list compares them
(`tools/corpus_claims.py`). It prints the
per-signature counts per part as a Markdown table, so the README figures can be refreshed. It does not
diagnose anything: scoring the tune part is
`python bench/rca.py --corpus tests/rca/real_corpus/tune --heldout /nonexistent`.

    python bench/real_corpus_check.py [--root tests/rca/real_corpus]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from gpuobs.rca.catalog import load_catalog

# tools/ is not a package: the claim list's one rule for comparing sources comes from there
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from corpus_claims import normalise
from real_splits import REAL_HELDOUT, TUNE

ROOT = Path(__file__).resolve().parents[1]
# The parts checked: tune/ and the held-out batches (bench/real_splits.py: the list bench/rca.py scores).
SPLITS = (TUNE, *REAL_HELDOUT)
MAX_BYTES = 100_000
REQUIRED = ("top", "source", "repo", "diagnosis")
# Two excerpts of one tracking thread from the first gathering, both in tune/ (an Xid 13 found in dmesg, and
# the engine's death with no cause in its log), listed in the README's attribution table.
KNOWN_REPEATS = {"https://github.com/vllm-project/vllm/issues/5901": 2}


def _check_case(case: Path, known: set[str]) -> tuple[dict[str, str | None], list[str]]:
    """The expected.json of one case and the problems found in it."""
    problems: list[str] = []
    try:
        expected = json.loads((case / "expected.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return {}, [f"{case}: unreadable expected.json ({exc})"]
    problems += [f"{case}: expected.json lacks '{key}'" for key in REQUIRED if key not in expected]
    top = expected.get("top")
    if top is not None and top not in known:
        problems.append(f"{case}: unknown signature id {top!r}")
    excerpts = [p for p in case.iterdir() if p.is_file() and p.name != "expected.json"]
    if not excerpts:
        problems.append(f"{case}: no excerpt file")
    for path in excerpts:
        data = path.read_bytes()
        if not data.strip():
            problems.append(f"{path}: empty")
        if len(data) > MAX_BYTES:
            problems.append(f"{path}: {len(data)} bytes (limit {MAX_BYTES})")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            problems.append(f"{path}: not UTF-8 text")
    return expected, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT / "tests" / "rca" / "real_corpus")
    args = parser.parse_args(argv)
    known = {sig.id for sig in load_catalog().signatures}
    problems: list[str] = []
    counts: dict[str, Counter[str]] = {split: Counter() for split in SPLITS}
    repos: dict[str, set[str]] = {split: set() for split in SPLITS}
    quoted: dict[str, list[str]] = {}  # normalised source -> the parts quoting it, once per case
    for split in SPLITS:
        folder = args.root / split
        if not folder.is_dir():
            problems.append(f"{folder}: missing")
            continue
        for case in sorted(p for p in folder.iterdir() if p.is_dir()):
            expected, found = _check_case(case, known)
            problems += found
            counts[split][str(expected.get("top") or "(healthy)")] += 1
            repos[split].add(str(expected.get("repo", "")))
            # GitHub owner and repository names are case-insensitive: Owner/Repo/issues/1 is owner/repo's
            quoted.setdefault(normalise(str(expected.get("source", ""))), []).append(split)
    for src, parts in sorted(quoted.items()):
        if src and len(parts) > 1 and KNOWN_REPEATS.get(src) != len(parts):  # a missing source: said above
            where = [split for split in SPLITS if split in parts]
            problems.append(
                f"source {src} is used in both {where[0]} and {where[1]}"
                if len(where) > 1
                else f"source {src} is quoted {len(parts)} times in {where[0]}"
            )
    print("| signature | " + " | ".join(SPLITS) + " |")
    print("| --- |" + " ---: |" * len(SPLITS))
    for sig in sorted(set().union(*(counts[s] for s in SPLITS))):
        print(f"| {sig} | " + " | ".join(str(counts[s][sig]) for s in SPLITS) + " |")
    print("| **cases** | " + " | ".join(str(sum(counts[s].values())) for s in SPLITS) + " |")
    distinct = [len([sig for sig in counts[s] if sig != "(healthy)"]) for s in SPLITS]
    print("| **distinct signatures** | " + " | ".join(str(d) for d in distinct) + " |")
    print("| **repositories** | " + " | ".join(str(len(repos[s])) for s in SPLITS) + " |")
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
