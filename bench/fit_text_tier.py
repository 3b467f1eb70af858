"""Fit the text tier's phrase weights on labelled corpora; write rca/catalog/_text_weights.toml.

Each signature lists general phrases of its failure with a prior weight (`[text.phrases]` in its catalog
file). This script reads every case of the given corpora (default: the tune split of the real-text corpus and
the hand-written corpus; never a held-out batch), finds where each signature's phrases occur the way the text
tier reads them (after the exact tier, outside tool output, not on lines whose fact the signature already
judged, not in a group a nearby sentence settles), and sets each phrase's weight to its smoothed precision:

    weight = (k + ALPHA * prior) / (n + ALPHA)

where n is the number of cases in which the phrase speaks for the signature and k how many of them are
labelled with it (`top` or `also`, or a signature the catalog states `top` causes: a phrase of the capacity
OOM in a model swap's text tells a failure that did happen; healthy cases count against every phrase). A
phrase never seen keeps
its prior; a supporting word (prior under TEXT_ANCHOR_MIN: "dkms", "nvswitch") is never fitted up to it,
since the corpora hold GPU incidents only and cannot show how often it appears in healthy text elsewhere;
the message tests' wordings (tools' own messages from their sources, bench/message_wordings.py) count as
cases labelled with the cause they must name, or healthy (start-up and status lines); their
UNSEEN_BY_FIT incidents are left out, to check that the tiers generalise.
Plain weighted phrases, reviewable in one file: a learned model was not needed (see
docs/BENCHMARKS.md, RCA accuracy).

    python bench/fit_text_tier.py [--corpus DIR ...] [--check]

`--check` prints the fitted weights and exits 1 when the file on disk differs (for CI).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

from message_wordings import message_wordings

from gpuobs.rca.catalog import TEXT_WEIGHTS_FILE, load_catalog, parse_signature
from gpuobs.rca.corpus import Case, load_cases
from gpuobs.rca.parsers.document import exact_tier, is_log_text
from gpuobs.rca.parsers.text import TEXT_ANCHOR_MIN, Phrasebook, read_groups, signature_hits
from gpuobs.rca.readers.files import read_input

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPORA = (ROOT / "tests" / "rca" / "real_corpus" / "tune", ROOT / "tests" / "rca" / "incidents")
ALPHA = 4.0
# A supporting word (prior under TEXT_ANCHOR_MIN) is fitted to at most this: it never anchors a match.
SUPPORTING_CAP = round(TEXT_ANCHOR_MIN - 0.001, 3)


def _priors() -> Phrasebook:
    """The phrasebook with the priors of the catalog files (not the fitted weights)."""
    import tomllib

    from gpuobs.rca.catalog import CATALOG_DIR

    signatures = []
    for path in sorted(CATALOG_DIR.glob("*.toml")):
        if path.name.startswith("_"):
            continue
        signatures.append(parse_signature(tomllib.loads(path.read_text(encoding="utf-8")), where=path.name))
    return Phrasebook.from_signatures(signatures)


def case_hits(case: Case, book: Phrasebook) -> dict[str, set[str]]:
    """{signature id: phrases that speak for it} over the case's log inputs, as the text tier reads them."""
    out: dict[str, set[str]] = defaultdict(set)
    args = case.cli_args()
    for flag, value in zip(args[::2], args[1::2], strict=False):
        if flag != "--logs":
            continue
        item = read_input(value)
        for sig, phrases in text_hits(item.name, item.text, book).items():
            out[sig].update(phrases)
    return out


def text_hits(name: str, text: str, book: Phrasebook) -> dict[str, set[str]]:
    """{signature id: phrases that speak for it} in one log text, as the text tier reads them."""
    out: dict[str, set[str]] = defaultdict(set)
    if not is_log_text(text):
        return out
    view = exact_tier(name, text)
    hits = signature_hits(view.lines, book, view.tool_lines, view.by_line, view.low)
    for sig, groups in read_groups(view.lines, hits).items():
        out[sig].update(phrase for group in groups for _, phrase, _ in group)
    return out


def wording_hits(book: Phrasebook | None = None) -> list[tuple[Case, dict[str, set[str]]]]:
    """The message tests' wordings (the tools' own messages, from their sources) as cases labelled with the
    cause they must name, or healthy. The corpora hold GPU incidents, so a word such as "dkms" or "nvswitch"
    is seen there only beside a failure: the healthy wordings are the text it also appears in. And a tool's
    own message ("misaligned address") may appear in one corpus thread beside another root cause: its
    source wording keeps the fit from reading that one thread as the phrase's precision. The wordings kept
    to check that the tiers generalise (UNSEEN_BY_FIT, labelled) are not fitted on."""
    book = _priors() if book is None else book
    return [
        (Case(name=where, path=Path(where), top=label), text_hits(where, text, book))
        for where, label, text in message_wordings()
        if label is None or "::UNSEEN_BY_FIT::" not in where
    ]


def labelled_hits(
    corpora: list[Path], book: Phrasebook | None = None
) -> list[tuple[Case, dict[str, set[str]]]]:
    """Every case of the corpora with its phrase hits (which do not depend on the weights)."""
    book = _priors() if book is None else book
    return [(case, case_hits(case, book)) for root in corpora for case in load_cases(root)]


def prior_weights(book: Phrasebook | None = None) -> dict[tuple[str, str], float]:
    """{(signature id, phrase): prior weight} from the catalog files."""
    book = _priors() if book is None else book
    return {
        (sig, phrase): w
        for phrase, owners in zip(book.phrases, book.owners, strict=True)
        for sig, w in owners
    }


def caused_by() -> dict[str, set[str]]:
    """Each signature's declared symptoms: the signatures the catalog states it causes."""
    signatures = load_catalog().signatures
    return {a.id: {b.id for b in signatures if a is not b and a.declares_explaining(b)} for a in signatures}


def fit_hits(
    cases: list[tuple[Case, dict[str, set[str]]]], priors: dict[tuple[str, str], float]
) -> tuple[dict[str, dict[str, float]], dict[tuple[str, str], tuple[int, int]]]:
    """Fitted weights {signature: {phrase: weight}} and the (n, k) counts behind each, from cases' hits."""
    seen: dict[tuple[str, str], int] = defaultdict(int)
    right: dict[tuple[str, str], int] = defaultdict(int)
    symptoms = caused_by()
    for case, hits in cases:
        labels = set() if case.healthy else {case.top, *case.also, *symptoms.get(str(case.top), ())}
        for sig, phrases in hits.items():
            for phrase in phrases:
                seen[(sig, phrase)] += 1
                right[(sig, phrase)] += sig in labels
    weights: dict[str, dict[str, float]] = defaultdict(dict)
    counts = {}
    for (sig, phrase), n in seen.items():
        k = right[(sig, phrase)]
        prior = priors[(sig, phrase)]
        weight = min(0.95, max(0.02, (k + ALPHA * prior) / (n + ALPHA)))
        if prior < TEXT_ANCHOR_MIN:
            # A supporting word (its author put it under the weight that can anchor a match: "dkms" is
            # every out-of-tree module's build, "nvswitch" every Fabric Manager start-up) stays one: the
            # corpora hold GPU incidents only, so its precision there overstates it, and two such words
            # raised by the fit would name a cause together. The fit moves it within its role.
            weight = min(weight, SUPPORTING_CAP)
        weights[sig][phrase] = round(weight, 3)
        counts[(sig, phrase)] = (n, k)
    return dict(weights), counts


def fit(corpora: list[Path]) -> tuple[dict[str, dict[str, float]], dict[tuple[str, str], tuple[int, int]]]:
    """Fitted weights {signature: {phrase: weight}} and the (n, k) counts behind each."""
    book = _priors()
    return fit_hits([*labelled_hits(corpora, book), *wording_hits(book)], prior_weights(book))


def render(
    weights: dict[str, dict[str, float]], counts: dict[tuple[str, str], tuple[int, int]], corpora: list[Path]
) -> str:
    names = ", ".join(str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p) for p in corpora)
    lines = [
        "# Text-tier phrase weights fitted by bench/fit_text_tier.py; do not edit by hand (edit the priors",
        "# in the signature files and re-run the script). weight = (k + 4 * prior) / (n + 4), where n is the",
        "# number of cases in which the phrase speaks for the signature and k how many are labelled with it.",
        f"# Corpora: {names}, and the message tests' wordings.",
        "# Phrases seen in no case keep their prior and are not listed.",
        "",
    ]
    for sig in sorted(weights):
        lines.append(f"[{sig}]")
        for phrase in sorted(weights[sig]):
            n, k = counts[(sig, phrase)]
            escaped = phrase.replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'"{escaped}" = {weights[sig][phrase]}  # {k} of {n} cases')
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, action="append", help="corpus folder (repeatable)")
    parser.add_argument("--check", action="store_true", help="exit 1 when the weights file is out of date")
    args = parser.parse_args(argv)
    corpora = args.corpus or list(DEFAULT_CORPORA)
    if any("heldout" in part for p in corpora for part in p.parts):
        parser.error("the held-out split is never fitted on")
    weights, counts = fit(corpora)
    text = render(weights, counts, corpora)
    if args.check:
        current = TEXT_WEIGHTS_FILE.read_text(encoding="utf-8") if TEXT_WEIGHTS_FILE.exists() else ""
        print(text)
        return 0 if current == text else 1
    TEXT_WEIGHTS_FILE.write_text(text, encoding="utf-8")
    load_catalog()  # the file must load
    fitted = sum(len(v) for v in weights.values())
    print(f"wrote {TEXT_WEIGHTS_FILE} ({fitted} phrases of {len(weights)} signatures)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
