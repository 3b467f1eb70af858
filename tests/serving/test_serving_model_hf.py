"""Our Llama decoder against Hugging Face transformers' LlamaForCausalLM on the same local checkpoint."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import torch
import transformers  # dev dependency (pyproject [dev]): the independent implementation we compare with
from safetensors.torch import load_file, save_file

from gpuobs.serving.model import TINY_CONFIG, load_model, write_random_model


def _hf_logits(model_dir: Path, ids: list[int]) -> torch.Tensor:
    hf = transformers.LlamaForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    with torch.no_grad():
        return hf(torch.tensor([ids])).logits[0].float()


def test_tiny_default_matches_transformers(tmp_path: Path) -> None:
    model_dir = write_random_model(tmp_path / "tiny", TINY_CONFIG)
    loaded = load_model(model_dir, device="cpu")
    ids = loaded.tokenizer.encode("the quick brown fox jumps over the lazy dog")
    ours = loaded.model.forward_dense(ids)
    torch.testing.assert_close(ours, _hf_logits(model_dir, ids), rtol=1e-4, atol=1e-4)


def test_llama3_rope_tied_embeddings_sharded_bf16_checkpoint_matches_transformers(tmp_path: Path) -> None:
    cfg = replace(
        TINY_CONFIG, num_hidden_layers=3, rope_theta=500000.0, tie_word_embeddings=True,
        eos_token_ids=(257, 258), torch_dtype="bfloat16", max_position_embeddings=512,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 64},
    )
    model_dir = write_random_model(tmp_path / "l3", cfg, seed=7)
    weights = load_file(str(model_dir / "model.safetensors"))
    del weights["lm_head.weight"]  # tied: the output layer is the embedding
    (model_dir / "model.safetensors").unlink()
    names = sorted(weights)
    shards = {"model-00001-of-00002.safetensors": names[: len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    index = {"metadata": {}, "weight_map": {}}
    for fname, keys in shards.items():
        save_file({k: weights[k] for k in keys}, str(model_dir / fname), metadata={"format": "pt"})
        index["weight_map"].update(dict.fromkeys(keys, fname))
    (model_dir / "model.safetensors.index.json").write_text(json.dumps(index))

    loaded = load_model(model_dir, device="cpu", dtype="float32")
    model = loaded.model
    assert model.lm_head is model.embed
    assert model.config.eos_token_ids == (257, 258)
    ids = list(range(40, 140))  # long enough that the scaled low frequencies matter
    torch.testing.assert_close(model.forward_dense(ids), _hf_logits(model_dir, ids), rtol=2e-4, atol=2e-4)
