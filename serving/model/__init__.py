"""The Llama decoder served by the reference stack, its loader and tokenizers."""

from __future__ import annotations

from gpuobs.serving.model.config import LlamaConfig
from gpuobs.serving.model.loader import (
    TINY_CONFIG,
    TINY_NAME,
    LoadedModel,
    default_cache_dir,
    ensure_tiny_model,
    load_model,
    write_random_model,
)
from gpuobs.serving.model.tokenizer import HFTokenizer, Tokenizer

__all__ = [
    "TINY_CONFIG",
    "TINY_NAME",
    "HFTokenizer",
    "LlamaConfig",
    "LoadedModel",
    "Tokenizer",
    "default_cache_dir",
    "ensure_tiny_model",
    "load_model",
    "write_random_model",
]
