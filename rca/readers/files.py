"""File inputs -> Evidence: files, folders, `-` for stdin, gzip files; binary or unreadable -> InputError.

`--logs` inputs are recognised by content (`parsers.document`: Kubernetes dumps, saved /metrics,
nvidia-smi reports, /api/history documents, else log lines); `--traces` inputs are OTLP JSON files.
"""

from __future__ import annotations

import gzip
import logging
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from gpuobs.errors import InputError
from gpuobs.evidence import Evidence

if TYPE_CHECKING:
    from gpuobs.rca.parsers.text import Phrasebook

__all__ = ["LogInput", "iter_log_inputs", "looks_binary", "read_input", "read_logs", "read_traces"]

logger = logging.getLogger(__name__)

_MAX_FILE_BYTES = 512 * 1024 * 1024
_SKIP_SUFFIXES = {
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".pdf",
    ".zip",
    ".so",
    ".pyc",
    ".o",
    ".whl",
    ".pt",
    ".safetensors",
    ".bin",
    ".onnx",
    ".engine",
    ".plan",
    ".xlsx",
    ".tar",
}


@dataclass(frozen=True)
class LogInput:
    """One log input: its display name and its decoded text."""

    name: str
    text: str


def looks_binary(data: bytes) -> bool:
    """True for data that is not text: NUL bytes or mostly non-printable bytes in the first 8 KiB."""
    head = data[:8192]
    if not head:
        return False
    if b"\x00" in head:
        return True
    printable = sum(1 for b in head if b >= 32 or b in (9, 10, 13, 27, 12, 8))
    return printable / len(head) < 0.85


def _decode(data: bytes, name: str) -> str:
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise InputError(f"{name}: corrupt gzip data ({exc})") from exc
    if looks_binary(data):
        raise InputError(f"{name}: binary file, not a log (give a text, .gz or JSON log)")
    return data.decode("utf-8", errors="replace")


def read_input(path: str, stdin: IO[bytes] | None = None) -> LogInput:
    """Read one file (or `-` for stdin) as text; raises InputError naming the input on failure."""
    if path == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        return LogInput("<stdin>", _decode(stream.read(), "<stdin>"))
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > _MAX_FILE_BYTES:
            raise InputError(
                f"{path}: {size} bytes is larger than the {_MAX_FILE_BYTES >> 20} MiB limit; "
                "cut the incident window out first"
            )
        with p.open("rb") as fh:
            data = fh.read()
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file or folder") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{path}: is a folder") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    return LogInput(str(p), _decode(data, str(p)))


def iter_log_inputs(paths: list[str], stdin: IO[bytes] | None = None) -> Iterator[LogInput]:
    """Every log input named by `paths`; folders are walked (hidden and binary-named files skipped)."""
    for path in paths:
        if path != "-" and os.path.isdir(path):
            files = sorted(
                f
                for f in Path(path).rglob("*")
                if f.is_file() and not any(part.startswith(".") for part in f.relative_to(path).parts)
            )
            if not files:
                logger.info("log folder %s holds no files", path)
            for f in files:
                if f.suffix.lower() in _SKIP_SUFFIXES:
                    logger.info("skipping %s (not a log by its name)", f)
                    continue
                yield read_input(str(f))
        else:
            yield read_input(path, stdin)


def read_logs(
    paths: list[str],
    stdin: IO[bytes] | None = None,
    keep: list[LogInput] | None = None,
    phrasebook: Phrasebook | None = None,
) -> list[Evidence]:
    """Evidence from log inputs, each parsed by what it is (a saved /metrics is timed at its mtime).

    With `keep`, every input read is also appended to it (bundles archive the texts; stdin reads once).
    `phrasebook` is the text tier's vocabulary (default: the bundled catalog's).
    """
    from gpuobs.rca.parsers.document import parse_document

    out: list[Evidence] = []
    for item in iter_log_inputs(paths, stdin):
        if keep is not None:
            keep.append(item)
        when = None
        if item.name != "<stdin>":
            try:
                when = Path(item.name).stat().st_mtime
            except OSError:
                when = None
        out.extend(parse_document(item.name, item.text, when, phrasebook))
    return out


def read_traces(paths: list[str], stdin: IO[bytes] | None = None) -> list[Evidence]:
    """Span evidence from OTLP JSON files (.gz accepted); InputError names a file that is not one."""
    from gpuobs.rca.parsers.traces import parse_otlp_text

    out: list[Evidence] = []
    for path in paths:
        item = read_input(path, stdin)
        out.extend(parse_otlp_text(item.text, source=item.name))
    return out
