"""Log inputs are read as a stream with caps (issue 10 items 5 and 11): a .gz bomb is cut at the inflated
size cap, evidence is capped per input, and what was cut is said in a note; streaming in blocks finds the
same evidence as parsing the whole text."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import pytest

from gpuobs.rca import DiagnoseInputs, keys
from gpuobs.rca.collect import collect
from gpuobs.rca.parsers.document import parse_document
from gpuobs.rca.readers import files

XID = (
    "2026-11-30T10:00:{s:02d}Z node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=311, "
    "GPU has fallen off the bus.\n"
)
NORMAL = "2026-11-30T10:00:00Z node-7 vllm[311]: INFO step batch=32 tokens=4096\n"


def _gzip_bomb(path: Path, expanded_bytes: int) -> None:
    """An Xid line, then `expanded_bytes` of ordinary lines: a few hundred KiB on disk."""
    comp = zlib.compressobj(1, zlib.DEFLATED, 31)  # gzip framing
    block = (NORMAL * (1 << 20 // len(NORMAL))).encode()
    with path.open("wb") as fh:
        fh.write(comp.compress(XID.format(s=1).encode()))
        for _ in range(expanded_bytes // len(block)):
            fh.write(comp.compress(block))
        fh.write(comp.flush())


def test_gzip_bomb_is_cut_at_the_cap_with_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = tmp_path / "kern.log.gz"
    _gzip_bomb(bomb, 200 << 20)
    assert bomb.stat().st_size < 4 << 20
    monkeypatch.setattr(files, "MAX_EXPANDED_BYTES", 10 << 20)
    result = collect(DiagnoseInputs(logs=[str(bomb)]))
    assert keys.XID in {e.key for e in result.evidence}
    assert any("more than 10 MiB; the rest was not read" in n for n in result.notes), result.notes


def test_evidence_is_capped_per_input_with_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "kern.log"
    log.write_text("".join(XID.format(s=i % 60) for i in range(500)))
    monkeypatch.setattr(files, "MAX_EVIDENCE_PER_INPUT", 100)
    notes: list[str] = []
    found = files.read_logs([str(log)], notes=notes)
    assert len(found) == 100
    assert any("more than 100 evidence records" in n for n in notes)


def test_streamed_blocks_find_what_the_whole_text_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "".join((XID.format(s=i % 60) if i % 97 == 0 else NORMAL) for i in range(5000))
    plain, packed = tmp_path / "kern.log", tmp_path / "kern2.log.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    monkeypatch.setattr(files, "_BLOCK_BYTES", 4096)  # many block boundaries
    whole = parse_document(str(plain), text)
    streamed = files.read_logs([str(plain)])
    assert len(whole) > 40
    assert [(e.key, e.time, e.value) for e in streamed] == [(e.key, e.time, e.value) for e in whole]
    assert len(files.read_logs([str(packed)])) == len(whole)
