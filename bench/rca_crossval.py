"""Leave-one-repository-out cross-validation of the text tier on the tune split of the real-text corpus.

The tune split's cases come from many source repositories (`"repo"` in each expected.json). For each
repository, this refits what is fitted (the text tier's phrase weights, `bench/fit_text_tier.py`, and the
prose tier's model with its score limit, `bench/fit_prose_tier.py`) on the other repositories' tune cases plus
the hand-written corpus (tests/rca/incidents), diagnoses that repository's cases with the refitted
catalog and prose model, and pools the results: top-1 / top-3 over the incidents and the share
of healthy cases given a cause. A figure close to the plain tune score says the fit generalises across
thread styles and maintainers' vocabulary; a large gap says the weights memorise the tune text.

What this cannot refit: parsers, readers and phrase lists written by people who had read the tune split.
The held-out batches (bench/rca.py's REAL_HELDOUT, never read here) stay the honest measure
of those;
`--priors` scores with the catalog's prior weights alone (no fit at all) as a second reference.

`--no-prose` turns the prose tier off (the figure before it existed); `--no-agree` fits the prose tier
without its second reader's agreement. The semantic tier is off unless `--semantic` is given; then it is
fitted per fold too (`bench/fit_semantic_tier.py`, its CJK readers included, on the cached vectors of the
fold's training cases).
`--incident-sweep` (with `--semantic`) measures the bars under which causes named by words alone are withheld
(`rca.semantic.GUESS_MIN_INCIDENT` and `GUESS_MIN_SUPPORT`): it diagnoses with both bars at 0, records each
case's incident reading by its fold's semantic model where no cause rests on a fact, and the probability that
model gives each cause's signature, and prints, per incident bar, the incidents named right first and the
healthy texts named that the bar would withhold; then, with the incident bar as shipped, per support bar, the
healthy texts cleared and the incidents whose right cause leaves or enters the first place and the top three
when the causes under it are withheld (the semantic tier's alternatives that would fill a freed slot are not
counted: a lower bound of top-3 after); then the healthy texts named split by whether words alone named them;
then, per bar of the naming reading (what the semantic gate weighs), the same counts when that bar replaces
the incident bar and, beyond the shipped bar, when it is added to it.
`--groups N` leaves out N groups of repositories in turn (round-robin
over the sorted repositories) instead of one repository at a time: each fold still holds out whole
repositories, and the run takes N fits instead of one per repository (since the prose tier's second reader,
a fit costs ~10 s, and the tune split holds 500+ repositories). `--seed S` (S > 0) deals the repositories
into the groups in an order shuffled by S instead of sorted: which repositories share a fold moves the
out-of-fold figures by more than many changes gain, so a change is judged over several seeds.

    python bench/rca_crossval.py [--priors] [--no-prose] [--no-agree] [--semantic] [--groups N [--seed S]]
                                 [--json] [--failures] [--incident-sweep]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from dataclasses import replace
from unittest import mock

import fit_prose_tier
import fit_semantic_tier
from fit_prose_tier import corpus_docs, prior_docs
from fit_prose_tier import fit as fit_prose
from fit_text_tier import DEFAULT_CORPORA, ROOT, fit_hits, labelled_hits, prior_weights, wording_hits

from gpuobs.errors import InputError
from gpuobs.evidence import EvidenceTier
from gpuobs.rca import engine
from gpuobs.rca.catalog import CATALOG_DIR, Catalog, load_catalog
from gpuobs.rca.corpus import Case, CaseResult, score
from gpuobs.rca.pipeline import diagnose
from gpuobs.rca.prose import use_prose_model
from gpuobs.rca.readers.files import log_heads
from gpuobs.rca.semantic import GUESS_MIN_INCIDENT, semantic_readings, semantic_support, use_semantic_model

TUNE = ROOT / "tests" / "rca" / "real_corpus" / "tune"
SYNTHETIC = ROOT / "tests" / "rca" / "incidents"
# The bars `--incident-sweep` reports: the incident reading's, and the support's.
SWEEP = (0.2, 0.25, 0.3, 0.4, 0.5, 0.6)
SUPPORT_SWEEP = (0.005, 0.01, 0.02, 0.05)
# The bars of the naming reading (`rca.semantic.naming_reading`, what the semantic gate weighs) that
# `--incident-sweep` reports in place of, and beside, the incident bar.
NAMING_SWEEP = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)
# A case's causes (ids, best first), whether the engine would check them (named by words, with at most the
# semantic tier's alternatives after them), its incident and naming readings then (else None), and per cause
# the probability the semantic tier gives its signature when it rests on words (else None).
Reading = tuple[tuple[str, ...], bool, float | None, float | None, tuple[float | None, ...]]
_WORD_TIERS = (EvidenceTier.TEXT.value, EvidenceTier.PROSE.value)
_UNREAD: Reading = ((), False, None, None, ())


def fold_of(repos: set[str], groups: int, seed: int = 0) -> dict[str, int]:
    """Each repository's fold: one fold a repository when `groups` is 0, else round-robin into `groups`,
    over the sorted repositories (seed 0) or over an order shuffled by `seed`."""
    order = sorted(repos)
    if seed:
        random.Random(seed).shuffle(order)
    return {r: (i % groups if groups > 0 else i) for i, r in enumerate(order)}


def _repo(case: Case) -> str:
    data = json.loads((case.path / "expected.json").read_text(encoding="utf-8"))
    return str(data.get("repo") or case.name)


def _catalog(weights: dict[str, dict[str, float]] | None, drop: frozenset[str] = frozenset()) -> Catalog:
    """The catalog files with their phrase priors replaced by `weights` where given (None: priors only),
    without the phrases in `drop`."""
    base = load_catalog(sorted(CATALOG_DIR.glob("*.toml")))  # explicit paths: the fitted file is not read
    fitted = weights or {}
    sigs = tuple(
        replace(s, phrases=tuple((p, fitted.get(s.id, {}).get(p, w)) for p, w in s.phrases if p not in drop))
        if s.phrases
        else s
        for s in base.signatures
    )
    return Catalog(signatures=sigs, problems=base.problems)


def _run(case: Case, catalog: Catalog, readings: dict[str, Reading] | None = None) -> CaseResult:
    """The case diagnosed; with `readings`, with no cause withheld, its reading recorded there."""
    t0 = time.perf_counter()
    try:
        if readings is None:
            report = diagnose(case.inputs(), catalog=catalog)
        else:
            with mock.patch.multiple(engine, GUESS_MIN_INCIDENT=0.0, GUESS_MIN_SUPPORT=0.0):
                report = diagnose(case.inputs(), catalog=catalog)
    except InputError as exc:  # as `run_in_process`: nothing read is no cause (right only when healthy)
        return CaseResult(case, (), time.perf_counter() - t0, error=str(exc))
    ids = tuple(c.id for c in report.causes)
    if readings is not None:
        if any(note.startswith(engine.WITHHELD_NOTE) for note in report.notes):  # the measure would lie
            raise SystemExit(f"{case.name}: withheld with the bar lifted: the patch missed the engine")
        tiers = [c.tier for c in report.causes]
        words = any(t in _WORD_TIERS for t in tiers) and all(
            t in _WORD_TIERS or t == EvidenceTier.SEMANTIC.value for t in tiers
        )
        texts = log_heads(list(case.inputs().logs), None)
        both = semantic_readings(texts) if words else None
        reading, naming = (None, None) if both is None else both
        probabilities = semantic_support(texts, ids) if words else [None] * len(ids)
        supports = tuple(
            p if c.tier in _WORD_TIERS else None for c, p in zip(report.causes, probabilities, strict=True)
        )
        readings[case.name] = (ids, words, reading, naming, supports)
    return CaseResult(case, ids, time.perf_counter() - t0)


def sweep(results: list[CaseResult], readings: dict[str, Reading]) -> list[dict[str, float | int]]:
    """Per bar of SWEEP: the incidents named right first and the healthy texts named, all by words alone,
    whose reading is under the bar (what the bar withholds)."""
    rows = []
    for bar in SWEEP:
        lost = cleared = 0
        for r in results:
            ids, words, reading, _, _ = readings.get(r.case.name, _UNREAD)
            if not words or reading is None or reading >= bar:
                continue
            if r.case.healthy:
                cleared += 1
            elif ids[0] == r.case.top:
                lost += 1
        rows.append({"bar": bar, "incidents_lost": lost, "healthy_cleared": cleared})
    return rows


def support_sweep(results: list[CaseResult], readings: dict[str, Reading]) -> list[dict[str, float | int]]:
    """Per bar of SUPPORT_SWEEP, with the incident bar as shipped: the healthy texts cleared, and the
    incidents whose right cause leaves (lost) or enters (gained) the first place and the top three, when every
    cause resting on words whose signature's probability is under the bar is withheld."""
    rows = []
    for bar in SUPPORT_SWEEP:
        row = dict.fromkeys(("healthy_cleared", "top1_lost", "top1_gained", "top3_lost", "top3_gained"), 0)
        row["bar"] = bar
        for r in results:
            ids, words, reading, _, supports = readings.get(r.case.name, _UNREAD)
            if not words or (reading is not None and reading < GUESS_MIN_INCIDENT):
                continue
            kept = [i for i, s in zip(ids, supports, strict=True) if s is None or s >= bar]
            if r.case.healthy:
                row["healthy_cleared"] += bool(ids) and not kept
                continue
            for top, before, after in (("top1", ids[:1], kept[:1]), ("top3", ids[:3], kept[:3])):
                row[f"{top}_lost"] += r.case.top in before and r.case.top not in after
                row[f"{top}_gained"] += r.case.top in after and r.case.top not in before
        rows.append(row)
    return rows


def naming_sweep(results: list[CaseResult], readings: dict[str, Reading]) -> list[dict[str, float | int]]:
    """Per bar of NAMING_SWEEP, what withholding causes named by words alone would cost and clear when the
    check weighs the naming reading: `alone` in place of the incident bar, `also` beside it (withheld under
    either). Per kind: the incidents whose right cause leaves the first place and the top three, and the
    healthy texts cleared."""
    rows = []
    for bar in NAMING_SWEEP:
        row: dict[str, float | int] = {"bar": bar}
        for kind in ("alone", "also"):
            for count in ("top1_lost", "top3_lost", "healthy_cleared"):
                row[f"{kind}_{count}"] = 0
        for r in results:
            ids, words, reading, naming, _ = readings.get(r.case.name, _UNREAD)
            if not words or naming is None:
                continue
            shipped = reading is not None and reading < GUESS_MIN_INCIDENT
            for kind, withheld in (("alone", naming < bar), ("also", shipped or naming < bar)):
                if not withheld or (kind == "also" and shipped):  # `also` counts beyond the shipped bar
                    continue
                if r.case.healthy:
                    row[f"{kind}_healthy_cleared"] += 1
                else:
                    row[f"{kind}_top1_lost"] += ids[:1] == (r.case.top,)
                    row[f"{kind}_top3_lost"] += r.case.top in ids[:3]
        rows.append(row)
    return rows


def named_healthy(results: list[CaseResult], readings: dict[str, Reading]) -> dict[str, int]:
    """The healthy texts given a cause, split by whether the causes rest on words alone (what an incident or
    naming check can withhold) or on a fact or the semantic tier's own reading."""
    split = {"by_words": 0, "otherwise": 0}
    for r in results:
        if r.case.healthy and r.causes:
            split["by_words" if readings.get(r.case.name, _UNREAD)[1] else "otherwise"] += 1
    return split


def crossval(
    priors_only: bool = False,
    strict: bool = False,
    prose: bool = True,
    groups: int = 0,
    semantic: bool = False,
    readings: dict[str, Reading] | None = None,
    seed: int = 0,
) -> tuple[list[CaseResult], int]:
    """Every tune case diagnosed by a catalog and prose model fitted without its repository; and the
    number of folds. `prose=False` diagnoses with the prose tier off; `semantic=True` with the semantic
    tier fitted per fold (off otherwise); `groups` > 0 holds out that many groups of repositories in turn
    instead of one repository at a time, dealt into them in the order `seed` gives (`fold_of`).

    `readings` (with `semantic`): diagnose with no cause withheld and record each case's reading there.

    `strict` also drops, in each fold, the phrases found in the held-out repository's cases and in no
    other case of either corpus: a phrase only that thread uses was most likely written from it.
    """
    if any("heldout" in part for p in (TUNE, SYNTHETIC) for part in p.parts):
        raise SystemExit("the held-out split is never read here")
    hits = [*labelled_hits([TUNE, SYNTHETIC]), *wording_hits()]  # the wordings are always trained on
    priors = prior_weights()
    tune = [(c, h) for c, h in hits if c.path.parent == TUNE]
    synthetic = [(c, h) for c, h in hits if c.path.parent != TUNE]
    # the prose documents of a tune case carry its repository as their group (fit_prose_tier._repo)
    docs = [*corpus_docs([TUNE, SYNTHETIC]), *prior_docs()] if prose else []
    fold = fold_of({_repo(case) for case, _ in tune}, groups, seed)
    folds: dict[int, list[Case]] = defaultdict(list)
    for case, _ in tune:
        folds[fold[_repo(case)]].append(case)
    sem_docs = fit_semantic_tier.tune_docs(TUNE) if semantic else []
    sem_vectors = fit_semantic_tier.vectors(sem_docs) if semantic else None
    sem_multilingual = fit_semantic_tier.multilingual_vectors(sem_docs) if semantic else None
    sem_texts = [d.read_text for d in sem_docs]
    results: list[CaseResult] = []
    for k in sorted(folds):
        held_out = {_repo(c) for c in folds[k]}
        train = synthetic + [(c, h) for c, h in tune if _repo(c) not in held_out]
        drop: frozenset[str] = frozenset()
        if strict:
            held = {p for c, h in tune if _repo(c) in held_out for ps in h.values() for p in ps}
            elsewhere = {p for _, h in train for ps in h.values() for p in ps}
            drop = frozenset(held - elsewhere)
        catalog = _catalog(None if priors_only else fit_hits(train, priors)[0], drop)
        model = fit_prose([d for d in docs if d.group not in held_out]) if prose else None
        sem_model = None
        if sem_vectors is not None:
            rows = [i for i, d in enumerate(sem_docs) if d.group not in held_out]
            sem_model = fit_semantic_tier.fit(
                sem_vectors[rows],
                [sem_texts[i] for i in rows],
                [sem_docs[i].label for i in rows],
                None if sem_multilingual is None else sem_multilingual[rows],
            )
        with use_prose_model(model), use_semantic_model(sem_model):
            results += [_run(case, catalog, readings) for case in folds[k]]
    return results, len(folds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--priors", action="store_true", help="score with the prior weights only (no fit)")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="also drop, per fold, the phrases that only the held-out repository's cases contain",
    )
    parser.add_argument("--no-prose", action="store_true", help="diagnose with the prose tier off")
    parser.add_argument(
        "--no-agree", action="store_true", help="fit the prose tier without its second reader"
    )
    parser.add_argument(
        "--groups", type=int, default=0, help="hold out N groups of repositories (0: one each)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="with --groups: deal repositories in an order shuffled by S"
    )
    parser.add_argument("--semantic", action="store_true", help="fit and use the semantic tier per fold")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--failures", action="store_true", help="list the tune cases missed")
    parser.add_argument(
        "--incident-sweep",
        action="store_true",
        help="with --semantic: what each bar of the word causes' incident and support checks would withhold",
    )
    args = parser.parse_args(argv)
    if args.groups < 0:
        parser.error("--groups must be 0 (one repository per fold) or more")
    if args.seed < 0 or (args.seed and not args.groups):
        parser.error("--seed must be 0 or more, and needs --groups (one repository per fold has no order)")
    if args.incident_sweep and not args.semantic:
        parser.error("--incident-sweep needs --semantic (the incident reading is the semantic tier's)")
    assert DEFAULT_CORPORA[0] == TUNE
    fit_prose_tier.AGREE = not args.no_agree
    t0 = time.perf_counter()
    readings: dict[str, Reading] | None = {} if args.incident_sweep else None
    results, folds = crossval(
        priors_only=args.priors,
        strict=args.strict,
        prose=not args.no_prose,
        groups=args.groups,
        semantic=args.semantic,
        readings=readings,
        seed=args.seed,
    )
    s = score(results)
    row = {
        "method": (
            "priors only (no fit)"
            if args.priors
            else f"leave-repositories-out in {args.groups} groups"
            if args.groups
            else "leave-one-repository-out"
        )
        + (f", seed {args.seed}" if args.seed else "")
        + (", strict" if args.strict else "")
        + (", prose tier off" if args.no_prose else "")
        + (", no second prose reader" if args.no_agree else "")
        + (", semantic tier" if args.semantic else "")
        + (", no cause withheld" if args.incident_sweep else ""),
        "folds": folds,
        "cases": s.cases,
        "incidents": s.incident_cases,
        "healthy": s.healthy_cases,
        "top1": round(s.top1, 4),
        "top3": round(s.top3, 4),
        "healthy_false_cause": round(s.false_cause_rate, 4),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    swept = sweep(results, readings) if readings is not None else []
    supported = support_sweep(results, readings) if readings is not None else []
    named = naming_sweep(results, readings) if readings is not None else []
    healthy_split = named_healthy(results, readings) if readings is not None else {}
    if args.json:
        print(
            json.dumps(
                row
                | {
                    "incident_sweep": swept,
                    "support_sweep": supported,
                    "naming_sweep": named,
                    "healthy_named": healthy_split,
                    "failures": list(s.failures),
                },
                indent=2,
            )
        )
    else:
        print(
            f"{row['method']}: {folds} folds, {s.cases} cases ({s.incident_cases} incidents, "
            f"{s.healthy_cases} healthy): top-1 {s.top1:.1%}, top-3 {s.top3:.1%}, "
            f"healthy given a cause {s.false_cause_rate:.1%} ({row['seconds']} s)"
        )
        if args.failures:
            for failure in s.failures:
                print(f"  {failure}")
        for line in swept:
            print(
                f"  withheld under {line['bar']}: {line['incidents_lost']} incidents named right first, "
                f"{line['healthy_cleared']} healthy texts named"
            )
        for line in supported:
            print(
                f"  support under {line['bar']} withheld: {line['healthy_cleared']} healthy texts cleared; "
                f"right cause first: -{line['top1_lost']} +{line['top1_gained']}, "
                f"in the top three: -{line['top3_lost']} +{line['top3_gained']}"
            )
        if healthy_split:
            print(
                f"  healthy texts named: {healthy_split['by_words']} by words alone, "
                f"{healthy_split['otherwise']} otherwise"
            )
        for line in named:
            print(
                f"  naming reading under {line['bar']}, in place of the incident bar: "
                f"{line['alone_healthy_cleared']} healthy cleared, right first -{line['alone_top1_lost']}, "
                f"top three -{line['alone_top3_lost']}; beside it: {line['also_healthy_cleared']}, "
                f"-{line['also_top1_lost']}, -{line['also_top3_lost']}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
