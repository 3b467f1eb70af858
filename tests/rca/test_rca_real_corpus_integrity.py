"""Integrity of the real-text corpus (tests/rca/real_corpus): format, labels, no reused thread.

Runs `bench/real_corpus_check.py`, which reads only each case's expected.json and checks the excerpt files are
non-empty text; it never runs the engine, so the held-out batches (`heldout2/`, `heldout4/`, `heldout9/`,
`heldout51/`, `heldout52/`, `heldout53/`, `heldout54/`, `heldout55/`, `heldout56/`, `heldout57/`) are not
scored here and nothing can be tuned to them. (The first held-out split, `heldout/`, and the third batch,
`heldout3/`, were promoted into `tune/` on 2026-12-01 after each had been scored twice; the fifth,
`heldout5/`, the same day after its one look; the sixth and seventh, `heldout6/` and `heldout7/`, in the next
session after three looks each; the eighth, `heldout8/`, in the eighth session after three looks and a label
review that dropped one of its 87 cases; the tenth, eleventh and twelfth, `heldout10/`, `heldout11/` and
`heldout12/`, in the tenth, eleventh and twelfth sessions after two looks each; the thirteenth, `heldout13/`,
in the thirteenth session after three; the fourteenth, `heldout14/`, in the fourteenth after five; the
fifteenth, `heldout15/`, in the fifteenth after two; the sixteenth, `heldout16/`, in the sixteenth after
three; the seventeenth, `heldout17/`, in the seventeenth after three; the eighteenth, `heldout18/`, in the
twenty-first after eight; the nineteenth, `heldout19/`, in the twenty-second after four; the twentieth,
`heldout20/`, in the twenty-third after three; the twenty-first, `heldout21/`, in the twenty-fifth after four;
the twenty-sixth, `heldout26/`, in the thirtieth after seven; the twenty-seventh, `heldout27/`, in the
thirty-first after nine; the twenty-eighth, `heldout28/`, in the thirty-first after eight; the twenty-ninth,
`heldout29/`, in the thirty-second after seven; the thirty-first, `heldout31/`, in the thirty-third after
seven; the thirtieth, `heldout30/`, in the thirty-fourth after fourteen; the thirty-second, `heldout32/`, in
the thirty-fifth after seventeen; the thirty-fourth, `heldout34/`, in the thirty-sixth after seventeen; the
thirty-third, `heldout33/`, in the thirty-seventh after twenty; the thirty-fifth, `heldout35/`, in the
thirty-eighth after nineteen; the thirty-sixth, `heldout36/`, in the thirty-ninth after twenty; the
thirty-seventh, `heldout37/`, in the fortieth after twenty-one; the thirty-eighth, `heldout38/`, in the
forty-first after eighteen; the thirty-ninth, `heldout39/`, in the forty-second after fifteen; the fortieth,
`heldout40/`, in the forty-third after eighteen; the forty-first, `heldout41/`, in the forty-fifth after
twenty-two; the forty-second, `heldout42/`, in the forty-sixth after twenty; the forty-third, `heldout43/`, in
the forty-seventh after twenty; the forty-fourth, `heldout44/`, in the forty-eighth after nineteen; the
forty-fifth, `heldout45/`, in the forty-ninth after nineteen; the forty-sixth, `heldout46/`, in the fiftieth
after seventeen; the forty-seventh, `heldout47/`, in the fifty-first after fifteen; the forty-eighth,
`heldout48/`, in the fifty-second after fifteen; the forty-ninth, `heldout49/`, in the fifty-third after
fifteen; the fiftieth, `heldout50/`, in the fifty-fourth after fifteen.)"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from types import ModuleType

import pytest
from support.bench import load_bench_script
from support.tune_split import TUNE_CASES, TUNE_HEALTHY

REAL = Path(__file__).resolve().parent / "real_corpus"
# The batches promoted into tune/ (by number): none keeps a folder or a column of its own. The one list the
# tests below read, extended at each promotion.
PROMOTED_NUMBERS = (3, 5, 6, 7, 8, *range(10, 51))
PROMOTED = tuple(f"heldout{n}" for n in PROMOTED_NUMBERS)


def _check_script() -> ModuleType:
    return load_bench_script("real_corpus_check")


def test_every_part_is_well_formed_and_no_thread_is_reused(capsys: pytest.CaptureFixture[str]) -> None:
    assert _check_script().main(["--root", str(REAL)]) == 0, capsys.readouterr().err
    table = capsys.readouterr().out
    header = (
        "| signature | tune | heldout2 | heldout4 | heldout9 "
        "| heldout51 | heldout52 | heldout53 | heldout54 | heldout55 | heldout56 | heldout57 |"
    )
    assert header in table
    cases = next(line for line in table.splitlines() if line.startswith("| **cases**"))
    counts = [int(n) for n in cases.strip("| ").split("|")[1:]]
    assert counts == [TUNE_CASES, 105, 90, 87, 32, 31, 32, 31, 29, 34, 38]
    healthy = next(line for line in table.splitlines() if line.startswith("| (healthy)"))
    assert int(healthy.split("|")[3]) >= 12  # heldout2, the column this check was written for


def test_promoted_batches_are_counted_in_tune(capsys: pytest.CaptureFixture[str]) -> None:
    """heldout3 (90 cases, 9 healthy) and heldout5 (94 cases, 10 healthy) were promoted into tune/ on
    2026-12-01, heldout6 and heldout7 (90 cases, 10 healthy each) in the next session, heldout8 (86 of its 87
    cases, 10 healthy) in the eighth, heldout10 (88 cases, 11 healthy) in the tenth, heldout11 (94 cases, 12
    healthy) in the eleventh, heldout12 (99 cases, 16 healthy) in the twelfth, heldout13 (99 cases, 16
    healthy) in the thirteenth, heldout14 (99 cases, 18 healthy) in the fourteenth, heldout15 (101 cases, 20
    healthy) in the fifteenth, heldout16 (82 cases, 18 healthy) in the sixteenth, heldout17 (97 cases, 21
    healthy) in the seventeenth, heldout18 (69 cases, 19 healthy) in the twenty-first, heldout19 (81 cases, 19
    healthy) in the twenty-second, heldout20 (77 cases, 17 healthy) in the twenty-third, heldout21 (73 cases,
    17 healthy) in the twenty-fifth, heldout22 (76 cases, 17 healthy) in the twenty-sixth, heldout23 (40
    cases, 11 healthy) in the twenty-seventh, heldout24 (40 cases, 8 healthy) in the twenty-eighth, heldout25
    (43 cases, 10 healthy) in the twenty-ninth, heldout26 (40 cases, 8 healthy) in the thirtieth, heldout27
    (40 cases, 8 healthy) and heldout28 (36 cases, 7 healthy) in the thirty-first, heldout29 (30 cases, 6
    healthy) in the thirty-second, heldout31 (42 cases, 13 healthy) in the thirty-third, heldout30 (38 cases,
    9 healthy) in the thirty-fourth, heldout32 (39 cases, 10 healthy) in the thirty-fifth, heldout34 (40
    cases, 12 healthy) in the thirty-sixth, heldout33 (39 cases, 11 healthy) in the thirty-seventh, heldout35
    (42 cases, 12 healthy) in the thirty-eighth, heldout36 (42 cases, 13 healthy) in the thirty-ninth,
    heldout37 (40 cases, 10 healthy) in the fortieth, heldout38 (43 cases, 11 healthy) in the forty-first,
    heldout39 (41 cases, 11 healthy) in the forty-second, heldout40 (35 cases, 9 healthy) in the forty-third,
    heldout41 (40 cases, 11 healthy) in the forty-fifth, heldout42 (40 cases, 12 healthy) in the forty-sixth,
    heldout43 (40 cases, 11 healthy) in the forty-seventh, heldout44 (40 cases, 11 healthy) in the
    forty-eighth, heldout45 (40 cases, 12 healthy) in the forty-ninth, heldout46 (40 cases, 11 healthy) in the
    fiftieth, heldout47 (40 cases, 10 healthy) in the fifty-first, heldout48 (38 cases, 11 healthy) in the
    fifty-second, heldout49 (38 cases, 11 healthy) in the fifty-third, heldout50 (35 cases, 11 healthy) in the
    fifty-fourth: none has a column of its own (PROMOTED) and tune holds 179 + 90 + 94 + 90 + 90 + 86 + 88 +
    94 + 99 + 99 + 99 + 101 + 82 + 97 + 69 + 81 + 77 + 73 + 76 + 40 + 40 + 43 + 40 + 40 + 36 + 30 + 42 + 38 +
    39 + 40 + 39 + 42 + 42 + 40 + 43 + 41 + 35 + 40 + 40 + 40 + 40 + 40 + 40 + 40 + 38 + 38 + 35 cases, at
    least 18 + 9 + 10 + 10 + 10 + 10 + 11 + 12 + 16 + 16 + 18 + 20 + 18 + 21 + 19 + 19 + 17 + 17 + 17 + 11 + 8
    + 10 + 8 + 8 + 7 + 6 + 13 + 9 + 10 + 12 + 11 + 12 + 13 + 10 + 11 + 11 + 9 + 11 + 12 + 11 + 11 + 12 + 11 +
    10 + 11 + 11 + 11 healthy, plus the 120 + 113 + 100 + 101 + 107 + 99 + 101 + 100 cases (12 + 12 + 12 + 16
    + 10 + 14 + 10 + 11 healthy) gathered straight into tune/ (TUNE7_README.md, TUNE8_README.md, TUNE9A/9B,
    TUNE10A/10B and TUNE11A/11B_README.md), plus the 60 + 59 healthy texts of TUNE12A/12B_README.md, plus the
    49 + 58 cases (15 + 21 healthy) of TUNE13A/13B_README.md, plus the 50 + 50 cases (11 + 11 healthy) of
    TUNE14A/14B_README.md, plus the 50 + 50 cases (11 + 10 healthy) of TUNE15A/15B_README.md, plus the 20 + 16
    cases (8 + 7 healthy) of TUNE16A/16B_README.md, plus the 25 + 28 cases (5 + 11 healthy) of
    TUNE17A/17B_README.md, plus the 26 + 23 + 22 + 23 cases (7 + 6 + 6 + 6 healthy) of
    TUNE18A/18B/18C/18D_README.md, plus the 21 + 13 + 22 + 22 cases (6 + 5 + 7 + 8 healthy) of
    TUNE19A/19B/19C/19D_README.md (part A's 22nd case dropped: a twin of a held-out source), plus the 23 + 22
    + 22 + 22 cases (6 + 6 + 6 + 16 healthy) of TUNE20A/20B/20C/20D_README.md, plus the 22 + 22 + 18 + 22
    cases (6 + 6 + 6 + 7 healthy) of TUNE21A/21B/21C/21D_README.md, plus the 14 + 14 + 14 + 14 cases (10 + 10
    + 10 + 10 healthy) of TUNE22A/22B/22C/22D_README.md, plus the 10 + 10 + 10 + 10 cases (8 + 8 + 8 + 8
    healthy) of TUNE23A/23B/23C/23D_README.md, plus the 10 + 10 + 9 + 10 cases (4 + 4 + 3 + 4 healthy) of
    TUNE24A/24B/24C/24D_README.md (part C's tenth case dropped: a twin of a held-out healthy text), plus the
    10 + 10 + 10 + 10 cases (3 + 3 + 3 + 4 healthy) of TUNE25A/25B/25C/25D_README.md, plus the 10 + 10 + 10 +
    10 cases (4 + 4 + 4 + 4 healthy) of TUNE26A/26B/26C/26D_README.md."""
    assert _check_script().main(["--root", str(REAL)]) == 0, capsys.readouterr().err
    rows = capsys.readouterr().out.splitlines()
    header = [c.strip() for c in rows[0].split("|")]
    assert not set(PROMOTED) & set(header)
    column = header.index("tune")

    def cell(label: str) -> int:
        return int(next(r for r in rows if r.startswith(f"| {label}")).split("|")[column])

    assert (cell("**cases**"), cell("(healthy)")) == (TUNE_CASES, TUNE_HEALTHY)


def _column(rows: list[str], part: str) -> dict[str, int]:
    """The count cells of one part's column of the check's table, by row label."""
    header = [c.strip() for c in rows[0].split("|")]
    column = header.index(part)
    labels = ("**cases**", "(healthy)", "**distinct signatures**")
    return {
        label: int(next(r for r in rows if r.startswith(f"| {label}")).split("|")[column]) for label in labels
    }


def test_heldout10_to_heldout50_were_promoted_whole(capsys: pytest.CaptureFixture[str]) -> None:
    """heldout10 (tenth batch, 88 cases), heldout11 (eleventh, 94 cases) and heldout12 (twelfth, 99 cases)
    were promoted into tune/ in the tenth, eleventh and twelfth sessions after two looks each, heldout13
    (thirteenth, 99 cases) in the thirteenth after three, heldout14 (fourteenth, 99 cases) in the fourteenth
    after five, heldout15 (fifteenth, 101 cases) in the fifteenth after two, heldout16 (sixteenth, 82 cases,
    four parts) in the sixteenth after three, heldout17 (seventeenth, 97 cases, four parts) in the seventeenth
    after three, heldout18 (eighteenth, 69 cases, four parts) in the twenty-first after eight, heldout19
    (nineteenth, 81 cases, four parts) in the twenty-second after four, heldout20 (twentieth, 77 cases, four
    parts) in the twenty-third after three, heldout21 (twenty-first, 73 cases, four parts) in the twenty-fifth
    after four, heldout22 (twenty-second, 76 cases, four parts) in the twenty-sixth after two, heldout23
    (twenty-third, 40 cases, four parts) in the twenty-seventh after four, heldout24 (twenty-fourth, 40 cases,
    four parts) in the twenty-eighth after six, heldout25 (twenty-fifth, 43 cases, four parts) in the
    twenty-ninth after six, heldout26 (twenty-sixth, 40 cases, four parts) in the thirtieth after seven,
    heldout27 (twenty-seventh, 40 cases, four parts) in the thirty-first after nine, heldout28 (twenty-eighth,
    36 cases, four parts) in the thirty-first after eight, heldout29 (twenty-ninth, 30 cases, four parts) in
    the thirty-second after seven, heldout31 (thirty-first, 42 cases, four parts) in the thirty-third after
    seven, heldout30 (thirtieth, 38 cases, four parts) in the thirty-fourth after fourteen, heldout32
    (thirty-second, 39 cases, four parts) in the thirty-fifth after seventeen, heldout34 (thirty-fourth, 40
    cases, four parts) in the thirty-sixth after seventeen, heldout33 (thirty-third, 39 cases, four parts) in
    the thirty-seventh after twenty, heldout35 (thirty-fifth, 42 cases, four parts) in the thirty-eighth after
    nineteen, heldout36 (thirty-sixth, 42 cases, four parts) in the thirty-ninth after twenty, heldout37
    (thirty-seventh, 40 cases, four parts) in the fortieth after twenty-one, heldout38 (thirty-eighth, 43
    cases, four parts) in the forty-first after eighteen, heldout39 (thirty-ninth, 41 cases, four parts) in
    the forty-second after fifteen, heldout40 (fortieth, 35 cases, four parts) in the forty-third after
    eighteen, heldout41 (forty-first, 40 cases, four parts) in the forty-fifth after twenty-two, heldout42
    (forty-second, 40 cases, four parts) in the forty-sixth after twenty, heldout43 (forty-third, 40 cases,
    four parts) in the forty-seventh after twenty, heldout44 (forty-fourth, 40 cases, four parts) in the
    forty-eighth after nineteen, heldout45 (forty-fifth, 40 cases, four parts) in the forty-ninth after
    nineteen, heldout46 (forty-sixth, 40 cases, four parts) in the fiftieth after seventeen, heldout47
    (forty-seventh, 40 cases, four parts) in the fifty-first after fifteen, heldout48 (forty-eighth, 38 cases,
    four parts) in the fifty-second after fifteen, heldout49 (forty-ninth, 38 cases, four parts) in the
    fifty-third after fifteen, heldout50 (fiftieth, 35 cases, four parts) in the fifty-fourth after fifteen:
    no folder or column of their own is left, and their READMEs moved to tune/."""
    assert _check_script().main(["--root", str(REAL)]) == 0, capsys.readouterr().err
    header = [c.strip() for c in capsys.readouterr().out.splitlines()[0].split("|")]
    for n in (n for n in PROMOTED_NUMBERS if n >= 10):
        batch = f"heldout{n}"
        assert batch not in header
        assert not (REAL / batch).exists()
        for part in "ABCD" if n >= 16 else "AB":  # four parts each from heldout16 on
            assert (REAL / "tune" / f"HELDOUT{batch[7:]}{part}_README.md").is_file()


# The held-out batches: (folder, cases, healthy, at least this many signatures, the READMEs it keeps).
# heldout4 and heldout9 were gathered 2026-12-01 (heldout9 in the eighth session); heldout51 at the start of
# the forty-eighth (32 cases: eight dropped before any look) and heldout52 at the start of the forty-ninth (31
# cases: nine dropped before any look) and heldout53 at the start of the fiftieth (32 cases: six dropped
# before any look) and heldout54 at the start of the fifty-first (31 cases: seven dropped before any look) and
# heldout55 at the start of the fifty-second (29 cases: four dropped before any look), by helpers that never
# ran the engine, four parts each (most threads claimed by then: the thinnest batches yet), and heldout56 at
# the start of the fifty-third (34 cases: three dropped before any look; five parts, a second gatherer on the
# documentation area), and heldout57 at the start of the fifty-fourth (38 cases: thirteen dropped before any
# look; seven parts, second gatherers on the platform and serving areas).
# heldout2 is counted by the first test.
HELDOUT_COUNTS = [
    ("heldout4", 90, 10, 35, ("README.md",)),
    ("heldout9", 87, 10, 40, ("README.md",)),
    ("heldout51", 32, 11, 13, tuple(f"README_{part}.md" for part in "ABCD")),
    ("heldout52", 31, 12, 10, tuple(f"README_{part}.md" for part in "ABCD")),
    ("heldout53", 32, 13, 11, tuple(f"README_{part}.md" for part in "ABCD")),
    ("heldout54", 31, 11, 11, tuple(f"README_{part}.md" for part in "ABCD")),
    ("heldout55", 29, 11, 10, tuple(f"README_{part}.md" for part in "ABCD")),
    ("heldout56", 34, 12, 11, tuple(f"README_{part}.md" for part in "ABCDE")),
    ("heldout57", 38, 19, 10, tuple(f"README_{part}.md" for part in "ABCDEFG")),
]


@pytest.mark.parametrize(("batch", "cases", "healthy", "signatures", "readmes"), HELDOUT_COUNTS)
def test_each_heldout_batch_is_checked_with_its_counts(
    capsys: pytest.CaptureFixture[str],
    batch: str,
    cases: int,
    healthy: int,
    signatures: int,
    readmes: tuple[str, ...],
) -> None:
    """Each held-out batch keeps its counts and READMEs; its threads are checked against every other part by
    the first test."""
    assert _check_script().main(["--root", str(REAL)]) == 0, capsys.readouterr().err
    cells = _column(capsys.readouterr().out.splitlines(), batch)
    assert (cells["**cases**"], cells["(healthy)"]) == (cases, healthy)
    assert cells["**distinct signatures**"] >= signatures
    assert all((REAL / batch / name).is_file() for name in readmes)


def test_heldout8_was_promoted_whole_but_for_its_dropped_case(capsys: pytest.CaptureFixture[str]) -> None:
    """heldout8 (eighth batch) was promoted into tune/ in the eighth session: no folder or column of its own
    is left, its README moved to tune/, and its case whose thread reached no
    cause (`tfserving_1795_...`) was dropped in the label review, not moved."""
    assert _check_script().main(["--root", str(REAL)]) == 0, capsys.readouterr().err
    rows = capsys.readouterr().out.splitlines()
    header = [c.strip() for c in rows[0].split("|")]
    assert "heldout8" not in header
    assert not (REAL / "heldout8").exists()
    assert (REAL / "tune" / "HELDOUT8_README.md").is_file()
    assert (REAL / "tune" / "osm_300_errol_edac_mce_faulty_ram" / "expected.json").is_file()
    assert not list(REAL.glob("*/tfserving_1795_*"))


def _write_case(root: Path, part: str, name: str, source: str) -> None:
    """A healthy fake case citing source, under root/part/name."""
    case = root / part / name
    case.mkdir(parents=True)
    (case / "excerpt.log").write_text("NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n")
    expected = {"top": None, "source": source, "repo": "owner/x", "diagnosis": "x"}
    (case / "expected.json").write_text(json.dumps(expected))


def test_a_thread_reused_by_the_newest_batch_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A heldout4 case citing a heldout2 thread (same URL but a trailing slash) and another citing a tune
    thread whose case differs each fail the check; heldout4's other, unused thread is not reported."""
    reused = {"heldout4": "https://github.com/owner/heldout2/issues/1/"}
    for part in ("tune", "heldout2", "heldout4"):
        _write_case(
            tmp_path, part, f"{part}_case", reused.get(part, f"https://github.com/owner/{part}/issues/1")
        )
    _write_case(tmp_path, "heldout4", "heldout4_tune_thread", "https://github.com/Owner/Tune/issues/1")
    _write_case(tmp_path, "heldout4", "heldout4_fresh_case", "https://github.com/owner/fresh/issues/9")
    assert _check_script().main(["--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "is used in both heldout2 and heldout4" in err
    assert "is used in both tune and heldout4" in err
    assert "owner/fresh" not in err


def test_a_reused_thread_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for part in ("tune", "heldout2", "heldout4"):
        case = tmp_path / part / f"{part}_case"
        case.mkdir(parents=True)
        (case / "excerpt.log").write_text("NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n")
        repo = "owner/same-thread" if part in ("tune", "heldout2") else f"owner/{part}"
        expected = {
            "top": "xid_79_fallen_off_bus",
            "source": f"https://github.com/{repo}/issues/1",
            "repo": repo,
            "diagnosis": "x",
        }
        (case / "expected.json").write_text(json.dumps(expected))
    assert _check_script().main(["--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "is used in both tune and heldout2" in err


def test_a_thread_quoted_twice_in_one_part_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Within one part too, in another spelling of the same URL; the one documented old pair is allowed."""
    sources = {
        "tune": [
            "https://github.com/Owner/Repo/issues/7",
            "https://github.com/owner/repo/issues/7/",
            "https://github.com/vllm-project/vllm/issues/5901",
            "https://github.com/vllm-project/vllm/issues/5901",
        ],
        "heldout2": ["https://github.com/other/repo/issues/1"],
        "heldout4": ["https://github.com/third/repo/issues/1"],
    }
    for part, urls in sources.items():
        for n, url in enumerate(urls):
            case = tmp_path / part / f"{part}_case_{n}"
            case.mkdir(parents=True)
            (case / "excerpt.log").write_text("NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n")
            expected = {"top": "xid_79_fallen_off_bus", "source": url, "repo": "r/r", "diagnosis": "x"}
            (case / "expected.json").write_text(json.dumps(expected))
    check = _check_script()
    assert check.KNOWN_REPEATS == {"https://github.com/vllm-project/vllm/issues/5901": 2}
    assert check.main(["--root", str(tmp_path)]) == 1
    problems = [line for line in capsys.readouterr().err.splitlines() if line.startswith("problem: source")]
    assert problems == ["problem: source https://github.com/owner/repo/issues/7 is quoted 2 times in tune"]


def test_real_heldout_flag_scores_each_batch_without_case_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bench/rca.py --real-heldout` (alias `--real-heldout2`) scores every batch of REAL_HELDOUT
    (bench/real_splits.py, the list whose names the corpus table's header test pins), each on its own row and
    pooled, and never prints a held-out case's name (a fake corpus here: ROOT points at tmp_path, so no real
    held-out file is read). The tune part is scored, its misses printed, only with --real."""
    bench = load_bench_script("rca")
    real = tmp_path / "tests" / "rca" / "real_corpus"
    xid79 = "NVRM: Xid (PCI:0000:01:00): 79, pid=1, name=python, GPU has fallen off the bus.\n"
    # in tune/ now: such a folder is not scored
    held_out = bench.REAL_HELDOUT
    assert len(held_out) == 10 and not set(held_out) & set(PROMOTED)
    for part in ("tune", *held_out, *PROMOTED):
        case = real / part / f"secret_{part}_case"
        case.mkdir(parents=True)
        (case / "excerpt.log").write_text(xid79)
        (case / "expected.json").write_text(json.dumps({"top": "nccl_timeout"}))  # a miss on purpose
    synthetic = tmp_path / "synthetic"
    shutil.copytree(real / "tune", synthetic)
    monkeypatch.setattr(bench, "ROOT", tmp_path)
    for flags in (["--real", "--real-heldout"], ["--real", "--real-heldout2"], ["--real-heldout"]):
        bench.main(["--corpus", str(synthetic), "--heldout", str(tmp_path / "none"), *flags])
        out = capsys.readouterr().out
        for part in (*held_out, "held-out pooled"):
            assert f"engine, real text: {part}" in out
        assert "secret_tune_case" in out  # the --corpus copy's misses are printed
        # the tune split itself is scored (its misses printed) only with --real
        assert ("engine, real text: tune" in out) == ("--real" in flags)
        assert ("[engine, real text: tune] secret_tune_case" in out) == ("--real" in flags)
        assert not re.search(r"secret_heldout\d+_case", out)  # no held-out or promoted case line
        label = "engine, real text: held-out pooled"
        pooled = next(line for line in out.splitlines() if line.startswith(label))
        assert pooled[len(label) :].split()[0] == str(len(held_out))  # cases: one fake case from each batch
        # a whole word: "heldout3" is the start of "heldout33", a batch held out now
        assert not any(re.search(rf"real text: {batch}\b", out) for batch in PROMOTED)
