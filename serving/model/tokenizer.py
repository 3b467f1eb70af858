"""Tokenizers for the engine: a `tokenizer.json` read through `tokenizers`, and the byte-level default."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from gpuobs.errors import InputError
from gpuobs.extras import require

__all__ = ["BYTE_SPECIALS", "HFTokenizer", "Tokenizer", "byte_level_tokenizer_json", "load_tokenizer"]

# Token ids of the embedded byte-level tokenizer: bytes 0..255 are ids 0..255, then these.
BYTE_SPECIALS = ("<s>", "</s>", "<pad>", "<unk>")


@runtime_checkable
class Tokenizer(Protocol):
    """What the server needs from a tokenizer."""

    eos_token_id: int | None
    bos_token_id: int | None
    vocab_size: int

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (what the ByteLevel pre-tokenizer uses)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(
        range(ord("®"), ord("ÿ") + 1)
    )
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars, strict=True)}


def byte_level_tokenizer_json() -> str:
    """A `tokenizer.json` with one token per byte (id = byte value) and four special tokens after them."""
    tokenizers = require("tokenizers", "serving")
    mapping = _bytes_to_unicode()
    vocab = {mapping[b]: b for b in range(256)}
    for i, special in enumerate(BYTE_SPECIALS):
        vocab[special] = 256 + i
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    tok.add_special_tokens(list(BYTE_SPECIALS))
    return str(tok.to_str())


class HFTokenizer:
    """A Hugging Face `tokenizer.json` loaded with the `tokenizers` library (no transformers)."""

    def __init__(self, path: Path, eos_token_id: int | None = None, bos_token_id: int | None = None) -> None:
        tokenizers = require("tokenizers", "serving")
        try:
            self._tok: Any = tokenizers.Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception on a broken file
            raise InputError(f"cannot load tokenizer {path}: {exc}") from exc
        self.vocab_size: int = int(self._tok.get_vocab_size(with_added_tokens=True))
        self.eos_token_id = eos_token_id if eos_token_id is not None else self._tok.token_to_id("</s>")
        self.bos_token_id = bos_token_id
        self.path = path

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=True).ids)

    def decode(self, ids: list[int]) -> str:
        return str(self._tok.decode(list(ids), skip_special_tokens=True))

    def token_to_id(self, token: str) -> int | None:
        value = self._tok.token_to_id(token)
        return None if value is None else int(value)


def load_tokenizer(model_dir: Path, eos_token_id: int | None, bos_token_id: int | None) -> HFTokenizer:
    path = model_dir / "tokenizer.json"
    if not path.is_file():
        raise InputError(f"{model_dir} has no tokenizer.json (convert the tokenizer with `tokenizers`)")
    return HFTokenizer(path, eos_token_id=eos_token_id, bos_token_id=bos_token_id)
