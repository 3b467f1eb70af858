"""Load a local Hugging Face Llama directory, or create the embedded tiny default on first use."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuobs.errors import InputError
from gpuobs.extras import require
from gpuobs.serving.model.config import LlamaConfig
from gpuobs.serving.model.tokenizer import (
    BYTE_SPECIALS,
    HFTokenizer,
    byte_level_tokenizer_json,
    load_tokenizer,
)

__all__ = [
    "DEVICE_CHOICES",
    "DTYPES",
    "KERNEL_BACKENDS",
    "SERVED_NAME_MAX_CHARS",
    "TINY_CONFIG",
    "TINY_NAME",
    "LoadedModel",
    "default_cache_dir",
    "ensure_tiny_model",
    "is_device_name",
    "load_model",
    "resolve_device",
    "served_name_problem",
    "write_random_model",
]

logger = logging.getLogger(__name__)

# Every spelling of a weight dtype the loader takes -> torch's name for it.
DTYPES = {
    "float32": "float32", "float": "float32", "fp32": "float32",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float16": "float16", "half": "float16", "fp16": "float16",
}
# `kernels` of load_model: gpuobs.kernels dispatch, the PyTorch references, or kernels on CUDA only.
KERNEL_BACKENDS = ("kernels", "reference", "auto")
# `device` of load_model (and of `serve --device`, EngineConfig): one spelling of the rule for all three.
DEVICE_CHOICES = "cpu, cuda, cuda:N or auto"
_DEVICE_NAME = re.compile(r"cpu|auto|cuda(:\d+)?")


def is_device_name(device: str) -> bool:
    """Whether `device` is one of DEVICE_CHOICES (whether such a GPU is there is resolve_device's part)."""
    return _DEVICE_NAME.fullmatch(device) is not None

TINY_NAME = "gpuobs-tiny-llama"
# A served model name is a label on every metric and a field of every log line: one line, and short.
SERVED_NAME_MAX_CHARS = 256


def served_name_problem(name: str) -> str | None:
    """What is wrong with `name` as a served model name (None: nothing), for `--served-model-name` and a
    hot-swap's `name` alike: blank, a control character (a newline split log lines and the model label),
    or longer than SERVED_NAME_MAX_CHARS (each scrape and log line carried it)."""
    if not name.strip():
        return "is empty"
    if not name.isprintable():
        return "holds a control character (a newline, a tab...)"
    if len(name) > SERVED_NAME_MAX_CHARS:
        return f"is {len(name)} characters long (at most {SERVED_NAME_MAX_CHARS})"
    return None
# Small enough for fast CPU tests, shaped like a real Llama (GQA 4:2; head dim 32, which vLLM's CPU
# backend accepts).
TINY_CONFIG = LlamaConfig(
    vocab_size=256 + len(BYTE_SPECIALS),
    hidden_size=128,
    intermediate_size=256,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=2048,
    rms_norm_eps=1e-5,
    rope_theta=10000.0,
    bos_token_id=256,
    eos_token_ids=(257,),
    torch_dtype="float32",
)
_TINY_VERSION = "v1"
_TINY_SEED = 1234


@dataclass
class LoadedModel:
    """The model, its tokenizer and the name it is served under."""

    model: Any  # LlamaModel
    tokenizer: HFTokenizer
    name: str
    path: Path


def default_cache_dir() -> Path:
    """`$GPUOBS_CACHE_DIR`, else `$XDG_CACHE_HOME/gpuobs`, else `~/.cache/gpuobs`."""
    explicit = os.environ.get("GPUOBS_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "gpuobs"


def write_random_model(path: Path, config: LlamaConfig, seed: int = _TINY_SEED) -> Path:
    """Write a Hugging Face layout directory with seeded random weights and the byte-level tokenizer."""
    torch = require("torch", "serving")
    st = require("safetensors.torch", "serving")
    if config.vocab_size < 256 + len(BYTE_SPECIALS):
        raise InputError(f"vocab_size {config.vocab_size} is smaller than the byte-level tokenizer")
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape: int, std: float) -> Any:
        return torch.randn(*shape, generator=gen) * std

    c = config
    h, d = c.hidden_size, c.head_dim
    tensors: dict[str, Any] = {"model.embed_tokens.weight": randn(c.vocab_size, h, std=1.0)}
    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        std = h**-0.5
        tensors[p + "input_layernorm.weight"] = 1.0 + randn(h, std=0.1)
        tensors[p + "post_attention_layernorm.weight"] = 1.0 + randn(h, std=0.1)
        tensors[p + "self_attn.q_proj.weight"] = randn(c.num_attention_heads * d, h, std=std)
        tensors[p + "self_attn.k_proj.weight"] = randn(c.num_key_value_heads * d, h, std=std)
        tensors[p + "self_attn.v_proj.weight"] = randn(c.num_key_value_heads * d, h, std=std)
        tensors[p + "self_attn.o_proj.weight"] = randn(h, c.num_attention_heads * d, std=std)
        tensors[p + "mlp.gate_proj.weight"] = randn(c.intermediate_size, h, std=std)
        tensors[p + "mlp.up_proj.weight"] = randn(c.intermediate_size, h, std=std)
        tensors[p + "mlp.down_proj.weight"] = randn(h, c.intermediate_size, std=c.intermediate_size**-0.5)
    tensors["model.norm.weight"] = 1.0 + randn(h, std=0.1)
    # A peaked output layer keeps greedy decoding away from near-ties (random weights, fp32/bf16 kernels).
    tensors["lm_head.weight"] = randn(c.vocab_size, h, std=4.0 * h**-0.5)
    dtype = getattr(torch, c.torch_dtype)
    path.mkdir(parents=True, exist_ok=True)
    st.save_file({k: v.to(dtype).contiguous() for k, v in tensors.items()}, str(path / "model.safetensors"),
                 metadata={"format": "pt"})
    (path / "config.json").write_text(json.dumps(c.to_hf_dict(), indent=2), encoding="utf-8")
    (path / "tokenizer.json").write_text(byte_level_tokenizer_json(), encoding="utf-8")
    return path


def ensure_tiny_model(cache_dir: Path | None = None) -> Path:
    """The embedded default's directory, created (atomically) on first use: no download."""
    root = (cache_dir or default_cache_dir()) / "models"
    target = root / f"{TINY_NAME}-{_TINY_VERSION}"
    if (target / "model.safetensors").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-", dir=root))
    try:
        write_random_model(tmp, TINY_CONFIG)
        with contextlib.suppress(OSError):  # another process created it first
            tmp.rename(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    logger.info("created the embedded tiny model at %s", target)
    return target


def resolve_device(device: str) -> str:
    """`auto` is CUDA when a GPU is visible, else CPU; asking for CUDA without one is an input error."""
    if not is_device_name(device):
        raise InputError(f"device must be {DEVICE_CHOICES}, got {device!r}")
    torch = require("torch", "serving")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError(f"device {device!r} asked for but no CUDA GPU is visible to torch")
    return device


def _load_weights(model_dir: Path) -> dict[str, Any]:
    st = require("safetensors.torch", "serving")
    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        raise InputError(f"{model_dir} has no *.safetensors weights")
    weights: dict[str, Any] = {}
    for f in files:
        try:
            weights.update(st.load_file(str(f)))
        except Exception as exc:  # safetensors raises SafetensorError (not exported uniformly)
            raise InputError(f"cannot read weights {f}: {exc}") from exc
    return weights


def load_model(
    model_dir: str | Path | None,
    device: str = "auto",
    dtype: str | None = None,
    kernels: str = "auto",
    name: str | None = None,
) -> LoadedModel:
    """Load `model_dir` (Hugging Face Llama layout) or, when None, the embedded tiny default.

    `kernels`: "kernels" (gpuobs.kernels dispatch: Triton on CUDA), "reference" (PyTorch references),
    "auto" (kernels on CUDA, references on CPU).
    """
    torch = require("torch", "serving")
    from gpuobs.serving.model.llama import LlamaModel
    from gpuobs.serving.model.ops import get_ops

    path = ensure_tiny_model() if model_dir is None else Path(model_dir)
    if not path.is_dir():
        raise InputError(f"model directory {path} does not exist")
    config = LlamaConfig.from_dir(path)
    dev = resolve_device(device)
    dtype_name = dtype or ("float32" if dev == "cpu" else config.torch_dtype)
    if dtype_name not in DTYPES:
        raise InputError(f"unsupported dtype {dtype_name!r} (float32|bfloat16|float16)")
    tdtype = getattr(torch, DTYPES[dtype_name])
    backend = kernels if kernels != "auto" else ("kernels" if dev.startswith("cuda") else "reference")
    model = LlamaModel(config, _load_weights(path), torch.device(dev), tdtype, get_ops(backend))
    eos = config.eos_token_ids[0] if config.eos_token_ids else None
    tokenizer = load_tokenizer(path, eos_token_id=eos, bos_token_id=config.bos_token_id)
    served = name or (TINY_NAME if model_dir is None else path.name)
    logger.info("loaded model %s from %s on %s (%s, kernels=%s)", served, path, dev, dtype_name, backend)
    return LoadedModel(model=model, tokenizer=tokenizer, name=served, path=path)
