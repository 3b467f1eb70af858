"""`bench/semantic_gate.py`'s counting: what a healthy budget lets through, and the summary's tallies.

The out-of-fold reading itself is a ~10 min run over the tune split (docs/BENCHMARKS.md, seventeenth
session); here hand-made readings check the arithmetic its figures rest on.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest
from support.bench import load_bench_script
from support.pasted import FEATURE_REQUEST


def _bench() -> ModuleType:
    return load_bench_script("semantic_gate")


def _reading(
    bench: ModuleType, label: str, top: str, incident: float, probability: float = 0.0
) -> object:
    """A silent text read: `top` its likeliest signature (at `probability`); the class reader's share outside
    healthy text and the neighbours' equal the incident reading, so every reading a gate may weigh agrees."""
    return bench.Reading(
        label=label,
        ranked=(top, "other_a", "other_b"),
        incident=incident,
        healthy_class=1.0 - incident,
        neighbours_incident=incident,
        probability=probability,
    )


def test_a_budget_lets_exactly_that_many_healthy_texts_through() -> None:
    bench = _bench()
    readings = [
        _reading(bench, "none", "xid_79_fallen_off_bus", 0.9),
        _reading(bench, "none", "nccl_timeout", 0.5),
        _reading(bench, "nccl_timeout", "nccl_timeout", 0.95),  # right, above every healthy text
        _reading(bench, "nccl_timeout", "cuda_oom_capacity", 0.92),  # wrong, above every healthy text
        _reading(bench, "gpu_not_visible", "gpu_not_visible", 0.7),  # right, between the two healthy texts
        _reading(bench, "gpu_not_visible", "gpu_not_visible", 0.1),  # right, below both
    ]
    score = bench.SCORES["incident reading"]
    assert bench.at_budget(readings, score, 0) == (1, 1)
    assert bench.at_budget(readings, score, 1) == (2, 1)
    assert bench.at_budget(readings, score, 2) == (3, 1)  # every text through
    assert bench.at_budget(readings, score, 5) == (3, 1)


def test_the_summary_counts_the_fitted_gate_and_the_top_three(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fitted gate's tally is what that gate of GATES names (here one passing every reading of at least
    0.5 whose likeliest signature is at least 0.2 likely)."""
    bench = _bench()
    monkeypatch.setitem(bench.GATES, bench.FITTED, ("incident reading", (0.2, 0.5, 1.0, 1.0)))
    readings = [
        _reading(bench, "none", "nccl_timeout", 0.9, probability=0.5),
        _reading(bench, "nccl_timeout", "nccl_timeout", 0.95, probability=0.5),
        _reading(bench, "nccl_timeout", "cuda_oom_capacity", 0.6, probability=0.5),
        # its label second in the ranking, under the gate's bar
        _reading(bench, "other_a", "gpu_not_visible", 0.3, probability=0.5),
    ]
    figures = bench.summary(readings, [0])
    assert (figures["silent_incidents"], figures["silent_healthy"]) == (3, 1)
    assert (figures["likeliest_right"], figures["top3_right"]) == (1, 2)
    fitted = bench.fitted_gate(figures)
    assert (fitted["right"], fitted["wrong"], fitted["healthy"]) == (1, 1, 1)
    assert "| incident reading | 1 / 0 |" in bench.render(figures, [0])


def test_each_gate_counts_what_it_names_over_the_same_readings() -> None:
    """A gate names a reading whose likeliest signature passes min_probability and whose incident reading
    passes min_incident, or confident_min_incident when that signature passes confident_probability; right
    first, right in the top three, wrong and healthy are counted apart."""
    bench = _bench()
    readings = [
        _reading(bench, "nccl_timeout", "nccl_timeout", 0.9, probability=0.5),  # through on its reading
        # through, wrong first, right second
        _reading(bench, "other_a", "cuda_oom_capacity", 0.9, probability=0.5),
        # through only on the confident path
        _reading(bench, "gpu_not_visible", "gpu_not_visible", 0.82, probability=0.75),
        # its likeliest under min_probability
        _reading(bench, "gpu_not_visible", "gpu_not_visible", 0.95, probability=0.25),
        _reading(bench, "none", "nccl_timeout", 0.86, probability=0.4),  # healthy, through
        _reading(bench, "none", "nccl_timeout", 0.5, probability=0.99),  # healthy, under both bars
    ]
    gate = (0.3, 0.85, 0.7, 0.8)
    assert bench.through_gate(readings, gate) == {"right": 2, "top3": 3, "wrong": 1, "healthy": 1}
    stricter = (0.3, 0.85, 0.8, 0.8)  # the confident path needs 0.8 now
    assert bench.through_gate(readings, stricter) == {"right": 1, "top3": 2, "wrong": 1, "healthy": 1}
    assert set(bench.GATES) == {"as fitted", "thirteenth session's, replaced"}
    assert bench.GATES["as fitted"][0] == "+ healthy class"  # the runtime gates the naming reading


def test_the_sweep_keeps_the_gates_that_name_more_right_for_each_healthy_text() -> None:
    """The sweep's frontier: a healthy text read as surely as an incident is named only by gates that name
    that incident too; a row is kept only where it names more right than every row naming fewer healthy."""
    bench = _bench()
    readings = [
        # through every gate of the grid
        _reading(bench, "nccl_timeout", "nccl_timeout", 0.99, probability=0.9),
        # through only on a confident path
        _reading(bench, "gpu_not_visible", "gpu_not_visible", 0.82, probability=0.75),
        # healthy: through only under a min_incident of 0.83 or less
        _reading(bench, "none", "nccl_timeout", 0.83, probability=0.5),
        # under every gate's bars
        _reading(bench, "cuda_oom_capacity", "cuda_oom_capacity", 0.6, probability=0.95),
    ]
    frontier = bench.sweep(readings, most_healthy=1)
    assert [(row["right"], row["healthy"]) for row in frontier] == [(2, 0)]
    gate = tuple(frontier[0]["gate"])
    assert bench.through_gate(readings, gate) == {"right": 2, "top3": 2, "wrong": 0, "healthy": 0}
    assert bench.sweep(readings, most_healthy=0) == frontier
    # weighing the mean with the class reader's share outside healthy (here 1 - incident: the same reading)
    assert bench.sweep(readings, most_healthy=1, reading="+ healthy class") == frontier


def test_a_steady_gate_names_no_more_healthy_texts_than_the_fitted_one_on_any_assignment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over several fold assignments, a gate that names more incidents on one but more healthy texts than the
    fitted gate on another is left out; the rest are listed by their mean count named right, with each
    assignment's count beside it."""
    bench = _bench()
    monkeypatch.setitem(bench.GATES, bench.FITTED, (bench.INCIDENT, (0.2, 0.9, 0.8, 0.9)))
    monkeypatch.setattr(bench, "SWEEP_GRID", ((0.2,), (0.85, 0.9, 0.95), (0.8,), (0.9,)))
    sure = _reading(bench, "nccl_timeout", "nccl_timeout", 0.99, probability=0.5)  # through every gate
    doubtful = _reading(bench, "gpu_not_visible", "gpu_not_visible", 0.92, probability=0.5)  # under 0.95
    borderline = _reading(bench, "cuda_oom_capacity", "cuda_oom_capacity", 0.87, probability=0.5)  # 0.85 only
    healthy = _reading(bench, "none", "nccl_timeout", 0.86, probability=0.5)  # through 0.85 only
    first, second = [sure, doubtful, borderline], [sure, doubtful, borderline, healthy]
    steady = bench.steady_gates([first, second], bench.INCIDENT)
    assert [tuple(row["gate"]) for row in steady] == [(0.2, 0.9, 0.8, 0.9), (0.2, 0.95, 0.8, 0.9)]
    assert steady[0]["right"] == 2.0 and steady[0]["healthy"] == 0.0
    assert steady[0]["per_seed"] == [[2, 0], [2, 0]]
    assert steady[1]["per_seed"] == [[1, 0], [1, 0]]
    assert bench.steady_gates([first], bench.INCIDENT)[0]["gate"] == [0.2, 0.85, 0.8, 0.9]  # one assignment
    assert len(bench.steady_gates([first, second], bench.INCIDENT, most=1)) == 1
    figures = bench.over_seeds([bench.summary(first, [0]), bench.summary(second, [0])]) | {"steady": steady}
    assert "| (0.2, 0.9, 0.8, 0.9) | 2 | 2 | 0 | 0 | 2, 0; 2, 0 |" in bench.render(figures, [0])


def test_a_negative_budget_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _bench().main(["--budgets", "-1"])
    assert exit_info.value.code == 2
    assert "--budgets must be zero or more" in capsys.readouterr().err


def test_a_fit_setting_outside_the_list_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    for setting in ("C=3", "MAX_TERMS=many", "MAX_TERMS"):
        with pytest.raises(SystemExit) as exit_info:
            _bench().main(["--fit-setting", setting])
        assert exit_info.value.code == 2
        assert f"--fit-setting {setting!r}: use NAME=VALUE" in capsys.readouterr().err


def test_a_fit_setting_is_in_place_while_the_folds_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The folds' fits read the changed constant: it is set before the silent set is read out of fold."""
    bench = _bench()
    fit = bench.fit_semantic_tier
    monkeypatch.setattr(fit, "MAX_TERMS", fit.MAX_TERMS)  # restored after the test
    monkeypatch.setattr(fit, "CLASS_C", fit.CLASS_C)
    seen: list[tuple[int, float]] = []

    def read(silent: set[str], seed: int = 0) -> list[object]:
        seen.append((fit.MAX_TERMS, fit.CLASS_C))
        return [_reading(bench, "none", "a", 0.1), _reading(bench, "a", "a", 0.99, 0.9)]

    monkeypatch.setattr(bench, "silent_cases", lambda seed=0: set())
    monkeypatch.setattr(bench, "read_out_of_fold", read)
    assert bench.main(["--fit-setting", "MAX_TERMS=123", "--fit-setting", "CLASS_C=7.5", "--json"]) == 0
    assert seen == [(123, 7.5)]


def test_the_incident_sweep_counts_what_each_bar_withholds() -> None:
    """`bench/rca_crossval.py --incident-sweep`'s counting (the run itself is ~15 min over the tune split,
    docs/BENCHMARKS.md, twenty-second session): only causes named by words alone count, an incident only when
    named right first, a healthy text whenever named; a reading at the bar is kept."""
    from pathlib import Path

    from gpuobs.rca.corpus import Case, CaseResult

    bench = load_bench_script("rca_crossval")

    def result(name: str, top: str | None) -> CaseResult:
        return CaseResult(Case(name, Path(name), top), (), 0.0)

    results = [result(n, t) for n, t in (("right", "a"), ("wrong", "a"), ("fact", "a"), ("calm", None))]
    readings = {
        "right": (("a",), True, 0.22, 0.5, (0.5,)),  # named right by words, read under 0.25
        "wrong": (("b", "a"), True, 0.1, 0.5, (0.5, 0.5)),  # named wrong first: nothing lost
        "fact": (("a",), False, None, None, (None,)),  # a fact: never read, never withheld
        "calm": (("a",), True, 0.25, 0.5, (0.5,)),  # healthy, read at 0.25: kept there, withheld above
    }
    rows = {row["bar"]: row for row in bench.sweep(results, readings)}
    assert rows[0.2] == {"bar": 0.2, "incidents_lost": 0, "healthy_cleared": 0}
    assert rows[0.25] == {"bar": 0.25, "incidents_lost": 1, "healthy_cleared": 0}
    assert rows[0.3] == {"bar": 0.3, "incidents_lost": 1, "healthy_cleared": 1}


def test_the_support_sweep_counts_what_each_bar_withholds() -> None:
    """`--incident-sweep`'s support rows: with the incident bar as shipped, the word causes under a support
    bar are withheld one by one; a healthy text is cleared only when none is left, an incident counts where
    its right cause leaves or enters the first place or the top three; facts and texts the incident bar
    already withholds are not counted; a probability at the bar is kept."""
    from pathlib import Path

    from gpuobs.rca.corpus import Case, CaseResult

    bench = load_bench_script("rca_crossval")

    def result(name: str, top: str | None) -> CaseResult:
        return CaseResult(Case(name, Path(name), top), (), 0.0)

    cases = (("promoted", "a"), ("lost", "a"), ("fact", "a"), ("quiet", "a"), ("calm", None), ("half", None))
    results = [result(n, t) for n, t in cases]
    readings = {
        "promoted": (("b", "a"), True, 0.9, 0.9, (0.004, 0.5)),  # the wrong first under 0.005: right first
        "lost": (("a", "b", "c", "d"), True, 0.9, 0.9, (0.01, 0.5, 0.5, 0.5)),  # right first at 0.01
        "fact": (("b",), False, None, None, (None,)),  # a fact: never checked
        "quiet": (("b", "a"), True, 0.1, 0.5, (0.0, 0.5)),  # withheld by the incident bar already
        "calm": (("a",), True, 0.9, 0.9, (0.015,)),  # healthy, cleared above 0.015
        "half": (("a", "b"), True, 0.9, 0.9, (0.001, 0.5)),  # healthy, one cause left: still named
    }
    rows = {row["bar"]: row for row in bench.support_sweep(results, readings)}
    assert rows[0.005] == {
        "bar": 0.005,
        "healthy_cleared": 0,
        "top1_lost": 0,
        "top1_gained": 1,
        "top3_lost": 0,
        "top3_gained": 0,
    }
    assert rows[0.01] == rows[0.005] | {"bar": 0.01}
    assert rows[0.02] == {
        "bar": 0.02,
        "healthy_cleared": 1,
        "top1_lost": 1,
        "top1_gained": 1,
        "top3_lost": 1,
        "top3_gained": 0,
    }


def test_the_naming_sweep_counts_what_each_bar_withholds() -> None:
    """`--incident-sweep`'s naming rows: a naming bar in place of the incident bar counts every word-named
    text under it; beside it, only those the shipped incident bar keeps. An incident counts where its right
    cause was first or in the top three; facts are never counted; a reading at the bar is kept. The healthy
    texts named are split by whether words alone named them."""
    from pathlib import Path

    from gpuobs.rca.corpus import Case, CaseResult

    bench = load_bench_script("rca_crossval")

    def result(name: str, top: str | None, causes: tuple[str, ...]) -> CaseResult:
        return CaseResult(Case(name, Path(name), top), causes, 0.0)

    cases = (
        ("first", "a", ("a",)),
        ("second", "a", ("b", "a")),
        ("quiet", "a", ("a",)),
        ("fact", "a", ("a",)),
        ("calm", None, ("a",)),
        ("told", None, ("a",)),
    )
    results = [result(*c) for c in cases]
    readings = {
        "first": (("a",), True, 0.9, 0.42, (0.5,)),  # right first, naming 0.42
        "second": (("b", "a"), True, 0.9, 0.5, (0.5, 0.5)),  # right second, naming exactly 0.5
        "quiet": (("a",), True, 0.1, 0.33, (0.5,)),  # the shipped incident bar withholds it already
        "fact": (("a",), False, None, None, (None,)),  # a fact: never checked
        "calm": (("a",), True, 0.9, 0.38, (0.5,)),  # healthy, named by words
        "told": (("a",), False, None, None, (None,)),  # healthy, named by a fact
    }
    rows = {row["bar"]: row for row in bench.naming_sweep(results, readings)}
    zero = dict.fromkeys(
        (f"{k}_{c}" for k in ("alone", "also") for c in ("top1_lost", "top3_lost", "healthy_cleared")), 0
    )
    assert rows[0.3] == {"bar": 0.3, **zero}
    assert rows[0.35] == {"bar": 0.35, **zero, "alone_top1_lost": 1, "alone_top3_lost": 1}
    assert rows[0.4] == rows[0.35] | {"bar": 0.4, "alone_healthy_cleared": 1, "also_healthy_cleared": 1}
    assert rows[0.5] == {
        "bar": 0.5,
        "alone_top1_lost": 2,
        "alone_top3_lost": 2,
        "alone_healthy_cleared": 1,
        "also_top1_lost": 1,
        "also_top3_lost": 1,
        "also_healthy_cleared": 1,
    }
    assert rows[0.55]["alone_top3_lost"] == 3 and rows[0.55]["also_top3_lost"] == 2
    assert bench.named_healthy(results, readings) == {"by_words": 1, "otherwise": 1}


def test_the_incident_sweep_diagnoses_with_the_bar_lifted(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep's `_run` with the real engine, encoder and weights: a feature request in a failure's words,
    which the engine withholds with the bar in place, keeps its word cause there and is recorded with its
    (low) incident reading; so the sweep measures causes the bar would withhold, not an empty list."""
    from pathlib import Path

    from gpuobs.rca.catalog import load_catalog
    from gpuobs.rca.corpus import Case
    from gpuobs.rca.semantic import GUESS_MIN_INCIDENT, SEMANTIC_ENV

    monkeypatch.setenv(SEMANTIC_ENV, "on")
    bench = load_bench_script("rca_crossval")
    case_dir = Path(str(tmp_path)) / "request"
    case_dir.mkdir()
    (case_dir / "excerpt.log").write_text(FEATURE_REQUEST, encoding="utf-8")
    case = Case("request", case_dir, None, args=("--logs", "excerpt.log"))
    readings: dict[str, object] = {}
    result = bench._run(case, load_catalog(), readings)
    ids, words, reading, naming, supports = readings["request"]
    assert result.causes == ids == ("host_oom_killer",) and words
    assert reading is not None and reading < GUESS_MIN_INCIDENT
    assert naming is not None and 0.0 <= naming <= 1.0 and naming != reading  # p(none) weighed in
    (probability,) = supports  # the fold's probability of the word cause's signature, recorded beside it
    assert probability is not None and 0.0 <= probability <= 1.0


def test_a_seed_deals_the_same_repositories_into_other_folds() -> None:
    """`rca_crossval.fold_of`: seed 0 is round-robin over the sorted repositories (the folds every earlier
    figure used); another seed keeps every fold's size and whole repositories but moves them; one fold per
    repository when there are no groups."""
    crossval = load_bench_script("rca_crossval")
    repos = {f"owner/repo{i:02d}" for i in range(23)}
    sorted_folds = crossval.fold_of(repos, 10)
    assert sorted_folds == {r: i % 10 for i, r in enumerate(sorted(repos))}
    shuffled = crossval.fold_of(repos, 10, seed=1)
    assert set(shuffled) == repos
    assert sorted(shuffled.values()) == sorted(sorted_folds.values())  # the same fold sizes
    assert shuffled != sorted_folds
    assert crossval.fold_of(repos, 10, seed=1) == shuffled  # a seed is repeatable
    assert sorted(crossval.fold_of(repos, 0).values()) == list(range(23))


def test_several_seeds_print_their_mean_with_the_lowest_and_highest(monkeypatch: pytest.MonkeyPatch) -> None:
    """`over_seeds`: every count of the summaries becomes its mean, and `render` prints the lowest and highest
    beside a count the seeds disagree on (and nothing beside one they agree on)."""
    bench = _bench()
    monkeypatch.setitem(bench.GATES, bench.FITTED, ("incident reading", (0.2, 0.5, 1.0, 1.0)))
    one = [
        _reading(bench, "none", "nccl_timeout", 0.1, probability=0.5),
        _reading(bench, "nccl_timeout", "nccl_timeout", 0.95, probability=0.5),
    ]
    two = [*one, _reading(bench, "gpu_not_visible", "gpu_not_visible", 0.9, probability=0.5)]
    merged = bench.over_seeds([bench.summary(one, [0]), bench.summary(two, [0])])
    assert merged["seeds"] == 2
    assert merged["silent_incidents"] == 1.5
    assert merged["silent_healthy"] == 1.0
    assert merged["spread"]["silent_incidents"] == [1, 2]
    assert merged["at_budget"]["incident reading"]["0"] == [1.5, 0.0]
    assert bench.fitted_gate(merged)["right"] == 1.5
    text = bench.render(merged, [0])
    assert "mean over 2 fold assignments" in text
    assert "silent out of fold: 1.5 [1-2] incidents, 1 healthy" in text
    assert "| incident reading | 1.5 [1-2] / 0 |" in text


def test_seeds_must_be_distinct(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in (
        (["--seeds", "1", "1"], "--seeds must be distinct"),
        (["--seeds", "-2"], "--seeds must be distinct, zero or more"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            _bench().main(argv)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err


def test_a_crossval_seed_needs_groups(capsys: pytest.CaptureFixture[str]) -> None:
    """One repository per fold has no order to shuffle: `--seed` without `--groups` is a usage error."""
    with pytest.raises(SystemExit) as exit_info:
        load_bench_script("rca_crossval").main(["--seed", "3"])
    assert exit_info.value.code == 2
    assert "--seed must be 0 or more, and needs --groups" in capsys.readouterr().err


def test_the_silent_set_is_cached_until_what_it_reads_changes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A cross-validation runs once per seed and input state: the second ask reads the cache, a changed
    input (the key) or another seed computes it again."""
    bench = _bench()
    monkeypatch.setattr(bench.fit_semantic_tier, "CACHE", tmp_path / "semantic_vectors.npz")
    key = ["engine at A"]
    monkeypatch.setattr(bench, "silent_inputs_key", lambda: key[0])
    runs: list[int] = []

    def crossval(groups: int, semantic: bool, seed: int) -> tuple[list[SimpleNamespace], None]:
        assert (groups, semantic) == (bench.FOLDS, False)
        runs.append(seed)
        silent = SimpleNamespace(case=SimpleNamespace(name=f"quiet_{len(runs)}"), causes=[])
        named = SimpleNamespace(case=SimpleNamespace(name="loud"), causes=["xid_79_fallen_off_bus"])
        return [silent, named], None

    monkeypatch.setattr(bench.rca_crossval, "crossval", crossval)
    assert bench.silent_cases(0) == {"quiet_1"}
    assert bench.silent_cases(0) == {"quiet_1"} and runs == [0]
    assert bench.silent_cases(1) == {"quiet_2"} and runs == [0, 1]
    key[0] = "engine at B"
    assert bench.silent_cases(0) == {"quiet_3"} and runs == [0, 1, 0]
    assert (tmp_path / "silent_seed0.json").is_file()


def test_the_inputs_key_follows_the_engine_code() -> None:
    """The key covers the engine's code: it is the same twice, and names every input it hashes."""
    bench = _bench()
    assert bench.silent_inputs_key() == bench.silent_inputs_key()
    assert {"rca", "tests/rca/real_corpus/tune", "bench/rca_crossval.py"} <= set(bench.SILENT_INPUTS)


def test_each_fold_reads_only_its_silent_cases_with_a_tier_fitted_on_the_other_folds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every silent case is read once, by the fold of its repository, whose tier never saw that repository;
    loud cases are fitted on but never read."""
    bench = _bench()
    fit = bench.fit_semantic_tier
    docs = [
        fit.Doc(case=f"case_{g}_{i}", group=f"repo_{g}", label="none" if i else "a", text=f"line {g} {i}")
        for g in range(12)
        for i in range(2)
    ]
    silent = {d.case for d in docs if d.case.endswith("_1") or d.group in {"repo_3", "repo_7"}}
    monkeypatch.setattr(fit, "vectors", lambda ds: np.arange(len(ds), dtype=float).reshape(-1, 1))

    class Fitted:
        def __init__(self, rows: np.ndarray, texts: list[str], labels: list[str]) -> None:
            self.texts = texts

        def features(self, rows: np.ndarray, texts: list[str]) -> np.ndarray:
            return rows

    monkeypatch.setattr(fit, "fit", Fitted)
    read: list[str] = []
    for fold in bench.fitted_folds(docs, silent, seed=1):
        fitted_groups = {docs[i].group for i in fold.train}
        tested = [docs[i] for i in fold.test]
        assert all(d.case in silent and d.group not in fitted_groups for d in tested)
        assert fold.model.texts == [docs[i].read_text for i in fold.train]
        assert list(fold.test_features[:, 0]) == [float(i) for i in fold.test]
        read.extend(d.case for d in tested)
    assert sorted(read) == sorted(silent)
