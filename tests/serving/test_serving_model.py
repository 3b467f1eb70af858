"""The Llama decoder: embedded tiny default, HF-layout loading, tokenizer, serving path == dense path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from support.serving_model import tiny_model_dir

from gpuobs.errors import InputError
from gpuobs.serving.kv_cache import BlockManager, KVCache
from gpuobs.serving.model import TINY_CONFIG, LlamaConfig, load_model, write_random_model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model_dir(tmp_path_factory.mktemp("cache"))


def test_tiny_default_is_created_once_in_hf_layout(tiny: Path) -> None:
    assert {p.name for p in tiny.iterdir()} >= {"config.json", "model.safetensors", "tokenizer.json"}
    mtime = (tiny / "model.safetensors").stat().st_mtime_ns
    assert tiny_model_dir(tiny.parent.parent) == tiny
    assert (tiny / "model.safetensors").stat().st_mtime_ns == mtime
    cfg = LlamaConfig.from_dir(tiny)
    assert cfg == TINY_CONFIG
    raw = json.loads((tiny / "config.json").read_text())
    assert raw["architectures"] == ["LlamaForCausalLM"] and raw["eos_token_id"] == 257


def test_default_model_dir_comes_from_the_cache_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUOBS_CACHE_DIR", str(tmp_path))
    loaded = load_model(None, device="cpu")
    assert loaded.name == "gpuobs-tiny-llama"
    assert loaded.path.parent == tmp_path / "models"


def test_seeded_weights_are_reproducible(tmp_path: Path, tiny: Path) -> None:
    again = write_random_model(tmp_path / "again", TINY_CONFIG)
    assert (again / "model.safetensors").read_bytes() == (tiny / "model.safetensors").read_bytes()


def test_byte_tokenizer_round_trips_utf8_and_replaces_invalid_bytes(tiny: Path) -> None:
    tok = load_model(tiny, device="cpu").tokenizer
    text = "héllo, wörld — 日本 🚀"
    ids = tok.encode(text)
    assert ids == list(text.encode("utf-8"))
    assert tok.decode(ids) == text
    assert tok.decode([0xE6, 0x97]) == "\ufffd"  # a cut multi-byte character does not raise
    assert tok.vocab_size == 260 and tok.eos_token_id == 257
    assert tok.decode([104, 257, 105]) == "hi"  # special tokens are skipped


def test_serving_path_matches_the_dense_forward(tiny: Path) -> None:
    loaded = load_model(tiny, device="cpu", kernels="reference")
    model = loaded.model
    cfg = model.config
    seqs = [loaded.tokenizer.encode(t) for t in ("a", "hello there", "paged attention over blocks!")]
    bm = BlockManager(32, 4)
    kv = KVCache(cfg.num_hidden_layers, 32, 4, cfg.num_key_value_heads, cfg.head_dim, torch.float32, "cpu")
    slots = [s for i, seq in enumerate(seqs) for s in bm.allocate(str(i), len(seq))]
    logits = model.prefill(seqs, kv, torch.tensor(slots))
    for i, seq in enumerate(seqs):
        torch.testing.assert_close(logits[i], model.forward_dense(seq)[-1], rtol=1e-4, atol=1e-4)
    # two decode steps for all three sequences through the paged cache
    for _ in range(2):
        nxt = [int(x) for x in logits.argmax(-1)]
        new_slots = [bm.append_slot(str(i))[0] for i in range(len(seqs))]
        tables = [bm.block_table(str(i)) for i in range(len(seqs))]
        width = max(map(len, tables))
        bt = torch.tensor([t + [0] * (width - len(t)) for t in tables], dtype=torch.int32)
        positions = [len(s) for s in seqs]
        ctx = torch.tensor([p + 1 for p in positions], dtype=torch.int32)
        logits = model.decode(nxt, positions, kv, torch.tensor(new_slots), bt, ctx)
        seqs = [[*s, t] for s, t in zip(seqs, nxt, strict=True)]
        for i, seq in enumerate(seqs):
            torch.testing.assert_close(logits[i], model.forward_dense(seq)[-1], rtol=1e-4, atol=1e-4)


def test_triton_kernels_in_the_interpreter_match_the_dense_forward(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    loaded = load_model(tiny, device="cpu", kernels="kernels")
    assert loaded.model.ops.name == "kernels"
    model = loaded.model
    cfg = model.config
    seqs = [[5, 6, 7], [40, 41, 42, 43, 44]]
    bm = BlockManager(8, 4)
    kv = KVCache(cfg.num_hidden_layers, 8, 4, cfg.num_key_value_heads, cfg.head_dim, torch.float32, "cpu")
    slots = [s for i, seq in enumerate(seqs) for s in bm.allocate(str(i), len(seq))]
    logits = model.prefill(seqs, kv, torch.tensor(slots))
    nxt = [int(x) for x in logits.argmax(-1)]
    new_slots = [bm.append_slot(str(i))[0] for i in range(2)]
    bt = torch.tensor([[*bm.block_table("0"), 0], bm.block_table("1")], dtype=torch.int32)
    ctx = torch.tensor([4, 6], dtype=torch.int32)
    logits2 = model.decode(nxt, [3, 5], kv, torch.tensor(new_slots), bt, ctx)
    for i, seq in enumerate(seqs):
        torch.testing.assert_close(logits[i], model.forward_dense(seq)[-1], rtol=1e-3, atol=1e-3)
        torch.testing.assert_close(logits2[i], model.forward_dense([*seq, nxt[i]])[-1], rtol=1e-3, atol=1e-3)


def test_bad_model_directories_are_input_errors(tmp_path: Path, tiny: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        load_model(tmp_path / "nope", device="cpu")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    with pytest.raises(InputError, match="cannot read"):
        load_model(broken, device="cpu")
    gpt = tmp_path / "gpt"
    gpt.mkdir()
    (gpt / "config.json").write_text(json.dumps({"architectures": ["GPT2LMHeadModel"]}))
    with pytest.raises(InputError, match="Llama only"):
        load_model(gpt, device="cpu")
    noweights = tmp_path / "noweights"
    noweights.mkdir()
    (noweights / "config.json").write_text((tiny / "config.json").read_text())
    with pytest.raises(InputError, match="safetensors"):
        load_model(noweights, device="cpu")
    for wrong in ("tpu", "cudax", "cuda:"):  # "cudax" passed a startswith("cuda") check before
        with pytest.raises(InputError, match="device must be cpu, cuda, cuda:N or auto"):
            load_model(tiny, device=wrong)
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="no CUDA GPU"):
            load_model(tiny, device="cuda")
    assert os.environ.get("GPUOBS_CACHE_DIR") != str(tmp_path)


def test_batched_cpu_decode_attention_equals_the_per_sequence_reference() -> None:
    from gpuobs.kernels import reference
    from gpuobs.serving.model.ops import batched_paged_attention_decode

    gen = torch.Generator().manual_seed(0)
    kc = torch.randn(10, 4, 2, 8, generator=gen)
    vc = torch.randn(10, 4, 2, 8, generator=gen)
    q = torch.randn(3, 6, 8, generator=gen)  # 3 query heads per KV head
    tables = torch.tensor([[3, 1, 7], [2, 0, 0], [9, 8, 5]], dtype=torch.int32)
    lens = torch.tensor([11, 2, 12], dtype=torch.int32)
    ours = batched_paged_attention_decode(q, kc, vc, tables, lens, 0.3)
    ref = reference.paged_attention_decode(q, kc, vc, tables, lens, 0.3)
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-5)


def test_forked_sequences_diverge_correctly_through_copy_on_write(tiny: Path) -> None:
    model = load_model(tiny, device="cpu").model
    cfg = model.config
    bm = BlockManager(16, 4)
    kv = KVCache(cfg.num_hidden_layers, 16, 4, cfg.num_key_value_heads, cfg.head_dim, torch.float32, "cpu")
    prompt = [72, 101, 108, 108, 111, 33]  # 6 tokens: one full block and a half-full shared one
    logits = model.prefill([prompt], kv, torch.tensor(bm.allocate("parent", len(prompt))))
    bm.fork("parent", "child")
    first, second = (int(t) for t in logits[0].topk(2).indices)
    slot_p, copy_p = bm.append_slot("parent")
    slot_c, copy_c = bm.append_slot("child")
    assert copy_p is not None and copy_c is None  # the first writer copies, the last owner writes in place
    kv.copy_blocks([copy_p])
    tables = [bm.block_table("parent"), bm.block_table("child")]
    assert tables[0][0] == tables[1][0] and tables[0][1] != tables[1][1]
    out = model.decode([first, second], [6, 6], kv, torch.tensor([slot_p, slot_c]),
                       torch.tensor(tables, dtype=torch.int32), torch.tensor([7, 7], dtype=torch.int32))
    torch.testing.assert_close(out[0], model.forward_dense([*prompt, first])[-1], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(out[1], model.forward_dense([*prompt, second])[-1], rtol=1e-4, atol=1e-4)
    bm.free("parent")
    bm.free("child")
    bm.check()
    assert bm.num_used == 0


def test_generation_config_adds_eos_and_biased_variants_are_refused(tmp_path: Path, tiny: Path) -> None:
    import shutil

    model_dir = tmp_path / "instruct"
    shutil.copytree(tiny, model_dir)
    (model_dir / "generation_config.json").write_text(json.dumps({"eos_token_id": [257, 258]}))
    assert LlamaConfig.from_dir(model_dir).eos_token_ids == (257, 258)
    raw = json.loads((tiny / "config.json").read_text())
    raw["attention_bias"] = True
    (model_dir / "config.json").write_text(json.dumps(raw))
    with pytest.raises(InputError, match="biases"):
        LlamaConfig.from_dir(model_dir)
