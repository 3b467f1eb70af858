"""The server's incremental detokeniser against a one-shot decode of the same ids (byte-level tokenizer)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuobs.serving.http.generation import Detokenizer
from gpuobs.serving.model.tokenizer import HFTokenizer, byte_level_tokenizer_json


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> HFTokenizer:
    path = Path(tmp_path_factory.mktemp("tok")) / "tokenizer.json"
    path.write_text(byte_level_tokenizer_json())
    return HFTokenizer(path)


def stream(tok: HFTokenizer, ids: list[int], stops: list[str]) -> tuple[str, list[str], bool]:
    d = Detokenizer(tok, stops)
    pieces = []
    for i in ids:  # keeps feeding after a stop, as the engine does until it sees the abort
        d.add(i)
        pieces.append(d.delta())
    d.flush()
    pieces.append(d.delta(final=True))
    return "".join(pieces), pieces, d.stopped


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=60))
def test_incremental_text_equals_one_shot_decode(tokenizer: HFTokenizer, text: str) -> None:
    ids = list(text.encode("utf-8"))  # byte-level: id == byte
    full, pieces, _ = stream(tokenizer, ids, [])
    assert full == text == tokenizer.decode(ids)
    assert all("\ufffd" not in p for p in pieces)  # never half a character on the wire


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=40))
def test_invalid_bytes_match_one_shot_decode(tokenizer: HFTokenizer, data: bytes) -> None:
    full, _, _ = stream(tokenizer, list(data), [])
    assert full == tokenizer.decode(list(data))


def test_stop_string_across_tokens_and_characters(tokenizer: HFTokenizer) -> None:
    text = "héllo wörld, 你好 STOP here"
    full, _, stopped = stream(tokenizer, list(text.encode()), ["ld, 你"])
    assert stopped and full == "héllo wör"
    full, pieces, stopped = stream(tokenizer, list(text.encode()), ["STOP"])
    assert stopped and full == "héllo wörld, 你好 "
    assert not any("S" in p for p in pieces)  # the held-back prefix of the stop never leaked
