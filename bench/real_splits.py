"""The parts of the real-text corpus (tests/rca/real_corpus): `tune/` and the one list of held-out batches.

bench/rca.py scores the held-out batches with aggregates only (`--real-heldout`; bench/rca_first_look.py adds
a fresh batch to its list at an old commit) and bench/real_corpus_check.py checks every part beside `tune/`. A
batch joins REAL_HELDOUT when it is wired in and leaves it when it is promoted into `tune/`.

heldout2, heldout4: held-out batches gathered after tuning began (11-30, 12-01): they are checked by thread
only (format, catalog labels, no thread shared with any other part) and scored with aggregates only. The first
split (tune/heldout, disjoint by repository) is merged into tune, and so are heldout3 (gathered 2026-12-01,
scored twice) and heldout5 (scored once), each promoted the same day, heldout6 and heldout7 (scored three
times each), promoted in the next session, and heldout8 (scored three times; 86 of its 87 cases after a label
review), promoted in the eighth session, and heldout10 (scored twice), promoted in the tenth session,
heldout11 (scored twice), promoted in the eleventh, and heldout12 (scored twice), promoted in the twelfth, and
heldout13 (scored three times), promoted in the thirteenth, and heldout14 (scored five times), promoted in the
fourteenth, and heldout15 (scored twice), promoted in the fifteenth, heldout16 (scored three times), promoted
in the sixteenth, heldout17 (scored three times), promoted in the seventeenth, heldout18 (scored eight times),
promoted in the twenty-first, and heldout19 (scored four times), promoted in the twenty-second, heldout20
(scored three times), promoted in the twenty-third, heldout21 (scored four times), promoted in the
twenty-fifth, and heldout22 (scored twice), promoted in the twenty-sixth, and heldout23 (scored four times),
promoted in the twenty-seventh, and heldout24 (scored six times), promoted in the twenty-eighth, and heldout25
(scored six times), promoted in the twenty-ninth, and heldout26 (scored seven times), promoted in the
thirtieth, and heldout27 (scored nine times) and heldout28 (scored eight times), promoted in the thirty-first,
and heldout29 (scored seven times), promoted in the thirty-second, and heldout31 (scored seven times),
promoted in the thirty-third, and heldout30 (scored fourteen times), promoted in the thirty-fourth, and
heldout32 (scored seventeen times), promoted in the thirty-fifth, and heldout34 (scored seventeen times),
promoted in the thirty-sixth, and heldout33 (scored twenty times), promoted in the thirty-seventh, and
heldout35 (scored nineteen times), promoted in the thirty-eighth, and heldout36 (scored twenty times),
promoted in the thirty-ninth, and heldout37 (scored twenty-one times), promoted in the fortieth, and heldout38
(scored eighteen times), promoted in the forty-first, and heldout39 (scored fifteen times), promoted in the
forty-second, and heldout40 (scored eighteen times), promoted in the forty-third, and heldout41 (scored
twenty-two times), promoted in the forty-fifth, and heldout42 (scored twenty times), promoted in the
forty-sixth, and heldout43 (scored twenty times), promoted in the forty-seventh, and heldout44 (scored
nineteen times), promoted in the forty-eighth, and heldout45 (scored nineteen times), promoted in the
forty-ninth, and heldout46 (scored seventeen times), promoted in the fiftieth, and heldout47 (scored fifteen
times), promoted in the fifty-first, and heldout48 (scored fifteen times), promoted in the fifty-second, and
heldout49 (scored fifteen times), promoted in the fifty-third, and heldout50 (scored fifteen times), promoted
in the fifty-fourth. heldout51 (gathered at the start of the forty-eighth session) and heldout52 (at the start
of the forty-ninth) and heldout53 (at the start of the fiftieth) and heldout54 (at the start of the
fifty-first) and heldout55 (at the start of the fifty-second) and heldout56 (at the start of the fifty-third)
and heldout57 (at the start of the fifty-fourth) are held out.
"""

from __future__ import annotations

__all__ = ["REAL_HELDOUT", "TUNE"]

TUNE = "tune"
# The held-out batches, scored with aggregates only; the corpus README tells each one's gathering and looks.
REAL_HELDOUT = (
    "heldout2",
    "heldout4",
    "heldout9",
    "heldout51",
    "heldout52",
    "heldout53",
    "heldout54",
    "heldout55",
    "heldout56",
    "heldout57",
)
