"""The claim list of the real-text corpus: which source threads are taken, so that parallel gatherers never
quote one thread twice (tests/rca/real_corpus/GATHERING.md).

A claim is a source URL, lowercased, without a trailing slash. `build` writes every `source` of every case's
expected.json (all parts, tune and held-out); `claim` adds a URL unless it is there already, under an
exclusive lock, and says CLAIMED (yours now, exit 0) or TAKEN (skip it, exit 1, so that `claim ... && write`
never writes a taken thread's case). Standard library only, so a gatherer runs it without installing
anything:

    python3 tools/corpus_claims.py build /tmp/claims.txt
    python3 tools/corpus_claims.py claim /tmp/claims.txt https://github.com/owner/repo/issues/123
"""

from __future__ import annotations

import argparse
import fcntl
import json
import sys
from pathlib import Path

__all__ = ["ROOT", "build", "claim", "normalise", "sources"]

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "rca" / "real_corpus"


def normalise(url: str) -> str:
    """The claim key of a URL: stripped, lowercased, no trailing slash."""
    return url.strip().lower().rstrip("/")


def sources(corpus: Path = CORPUS) -> list[str]:
    """Every case's `source`, normalised and sorted; a case without one is an error (the corpus check says
    the same), never a silent gap in the list."""
    found: set[str] = set()
    for expected in sorted(corpus.glob("*/*/expected.json")):
        source = json.loads(expected.read_text(encoding="utf-8")).get("source")
        if not isinstance(source, str) or not source.strip():
            raise ValueError(f"{expected}: no source")
        found.add(normalise(source))
    return sorted(found)


def build(path: Path, corpus: Path = CORPUS) -> int:
    """Write the claim list from the corpus; returns how many sources it holds."""
    claimed = sources(corpus)
    path.write_text("".join(f"{url}\n" for url in claimed), encoding="utf-8")
    return len(claimed)


def claim(path: Path, url: str) -> bool:
    """Add `url` to the list unless it is taken; True when it is now the caller's. The lock makes the check
    and the write one step for gatherers running at once."""
    key = normalise(url)
    if not key:
        raise ValueError("an empty URL cannot be claimed")
    with path.open("a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        if key in {line.strip() for line in handle}:
            return False
        handle.write(f"{key}\n")
        return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build_cmd = sub.add_parser("build", help="write the list from every case's source")
    build_cmd.add_argument("path", type=Path)
    claim_cmd = sub.add_parser("claim", help="claim a source URL: prints CLAIMED (exit 0) or TAKEN (exit 1)")
    claim_cmd.add_argument("path", type=Path)
    claim_cmd.add_argument("url")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            print(f"{build(args.path)} sources in {args.path}")
            return 0
        won = claim(args.path, args.url)
    except (OSError, ValueError) as exc:
        print(f"corpus_claims: {exc}", file=sys.stderr)
        return 2
    print("CLAIMED" if won else "TAKEN")
    return 0 if won else 1


if __name__ == "__main__":
    sys.exit(main())
