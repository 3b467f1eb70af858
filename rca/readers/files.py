"""File inputs -> Evidence: files, folders, `-` for stdin, gzip, bzip2 and xz files; binary or unreadable ->
InputError.

`--logs` inputs are recognised by content (`parsers.document`: Kubernetes dumps, saved /metrics,
nvidia-smi reports, /api/history documents, else log lines); `--traces` inputs are OTLP JSON files.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import logging
import lzma
import os
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, cast

from gpuobs import json_input
from gpuobs.errors import InputError
from gpuobs.evidence import Evidence

if TYPE_CHECKING:
    from gpuobs.rca.parsers.text import Phrasebook

__all__ = [
    "MAX_EVIDENCE_PER_INPUT",
    "MAX_EXPANDED_BYTES",
    "LogInput",
    "iter_log_inputs",
    "log_heads",
    "looks_binary",
    "machine_written",
    "read_input",
    "read_logs",
    "read_traces",
]

logger = logging.getLogger(__name__)

_MAX_FILE_BYTES = 512 * 1024 * 1024
MAX_EXPANDED_BYTES = 1 << 30
"""Most bytes read from one input once inflated (a .gz bomb stops here; the rest is cut, with a note)."""
MAX_EVIDENCE_PER_INPUT = 200_000
"""Most evidence records kept from one log input (the rest is cut, with a note)."""
_BLOCK_BYTES = 4 << 20  # plain logs are parsed in blocks of whole lines this large: memory stays bounded
_HEAD_BYTES = 1 << 20
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


# Compressed logs by their first bytes: gzip (logrotate's default, `journalctl | gzip`), bzip2 and xz
# (logrotate's `compresscmd` choices, sosreport and nvidia-bug-report archives). zstd needs a package the
# reader does not carry: it is named, with the command that decompresses it.
_COMPRESSED: tuple[tuple[bytes, str, Any], ...] = (
    (b"\x1f\x8b", "gzip", gzip.GzipFile),
    (b"BZh", "bzip2", bz2.BZ2File),
    (b"\xfd7zXZ\x00", "xz", lzma.LZMAFile),
)
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_DECOMPRESS_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError)
_WHAT_IS_READ = "give a text log (plain, .gz, .bz2 or .xz) or a JSON document"
_MAGIC_BYTES = 6


def _compression(head: bytes, name: str) -> tuple[str, Any] | None:
    """(format name, opener) when `head`, an input's first bytes, names a compression read here; None for
    plain data; InputError for zstd."""
    for magic, kind, opener in _COMPRESSED:
        if head.startswith(magic):
            return kind, opener
    if head.startswith(_ZSTD_MAGIC):
        raise InputError(f"{name}: zstd-compressed; decompress it first (zstd -d), or {_WHAT_IS_READ}")
    return None


def _decompressing(raw: BinaryIO, head: bytes, name: str) -> tuple[BinaryIO, str | None]:
    """`raw` read through its decompressor when `head` (its first bytes) names one, and that format's name."""
    found = _compression(head, name)
    if found is None:
        return raw, None
    kind, opener = found
    # GzipFile's first parameter is a file name; the others take a file object there
    stream = opener(fileobj=raw) if opener is gzip.GzipFile else opener(raw)
    return cast(BinaryIO, stream), kind


def _inflate(data: bytes, name: str, notes: list[str] | None) -> bytes:
    """Compressed data inflated as a stream up to MAX_EXPANDED_BYTES (a bomb is cut there, never read
    whole)."""
    cap = MAX_EXPANDED_BYTES
    stream, kind = _decompressing(io.BytesIO(data), data[:_MAGIC_BYTES], name)
    try:
        with stream:
            out = stream.read(cap + 1)
    except _DECOMPRESS_ERRORS as exc:
        raise InputError(f"{name}: corrupt {kind} data ({exc})") from exc
    if len(out) > cap:
        _note(notes, f"{name}: inflates past {cap >> 20} MiB; only the first {cap >> 20} MiB were read")
        out = out[:cap]
    return out


def _note(notes: list[str] | None, message: str) -> None:
    logger.warning("%s", message)
    if notes is not None:
        notes.append(message)


def _too_much_evidence(name: str, notes: list[str] | None) -> None:
    _note(notes, f"{name}: more than {MAX_EVIDENCE_PER_INPUT} evidence records; the rest was not read")


# Byte-order marks of UTF-16 text: what Windows PowerShell's `>` writes (`nvidia-smi > gpu.txt`). Its ASCII
# letters come with NUL bytes, so it would read as binary; it is transcoded to UTF-8 first.
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def _decode(data: bytes, name: str, notes: list[str] | None = None) -> str:
    if _compression(data[:_MAGIC_BYTES], name) is not None:
        data = _inflate(data, name, notes)
    if data[:2] in _UTF16_BOMS:
        return data.decode("utf-16", errors="replace")
    if looks_binary(data):
        raise InputError(f"{name}: binary file, not a log ({_WHAT_IS_READ})")
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
        raise InputError(f"{path or repr(path)}: no such file or folder") from exc
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


def _is_line_log(head: str) -> bool:
    """Whether an input whose first bytes are `head` is a log of lines (parsed block by block) rather
    than one document (Kubernetes JSON, OTLP, /api/history, /metrics, nvidia-smi) parsed whole."""
    from gpuobs.rca.parsers import exposition, nvsmi

    if nvsmi.looks_like_nvsmi_query(head) or exposition.looks_like_exposition(head):
        return False
    stripped = head.lstrip()
    if stripped[:1] not in ("{", "["):
        return True
    # JSON lines: the first line is a whole object and more follow; a document spans lines or is one line
    lines = stripped.splitlines()
    if len(lines) < 2:
        return False
    try:
        first = json_input.loads(lines[0])
    except ValueError:
        return False
    return isinstance(first, dict) and "kind" not in first and "resourceSpans" not in first


def _open_stream(path: str, stdin: IO[bytes] | None) -> tuple[str, BinaryIO, BinaryIO | None]:
    """(display name, binary stream of the inflated input, the file to close) for a plain or compressed file,
    or `-` (stdin is not closed)."""
    if path == "-":
        given = stdin if stdin is not None else sys.stdin.buffer
        raw = given if hasattr(given, "peek") else io.BufferedReader(given)  # type: ignore[arg-type,type-var]
        name, owned = "<stdin>", None
    else:
        name = str(Path(path))
        try:
            raw = open(path, "rb")  # noqa: SIM115 - closed by the caller, after the stream
        except FileNotFoundError as exc:
            raise InputError(f"{path or repr(path)}: no such file or folder") from exc
        except IsADirectoryError as exc:
            raise InputError(f"{path}: is a folder") from exc
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
        owned = raw
    try:
        magic = raw.peek(_MAGIC_BYTES)[:_MAGIC_BYTES]
    except OSError as exc:  # opened, but the first read fails (EIO: a bad disk, /proc/self/mem)
        if owned is not None:
            owned.close()
        raise InputError(f"{name}: cannot read ({exc.strerror or exc})") from exc
    stream, _ = _decompressing(raw, magic, name)  # type: ignore[arg-type]
    if stream.peek(2)[:2] in _UTF16_BOMS:  # type: ignore[attr-defined]
        # read as UTF-8 bytes like any other input; the decoder keeps a character split across reads
        stream = codecs.EncodedFile(stream, "utf-8", "utf-16", errors="replace")  # type: ignore[assignment]
    return name, stream, owned


def _kind(stream: BinaryIO) -> str:
    """The compression a stream from `_open_stream` is read through (for an error about its data)."""
    for _, kind, opener in _COMPRESSED:
        if isinstance(stream, opener):
            return kind
    return "input"


def _stream_line_log(
    name: str, stream: BinaryIO, head: bytes, notes: list[str] | None, phrasebook: Phrasebook | None = None
) -> list[Evidence]:
    """Parse a line log in blocks of whole lines: memory holds one block and the evidence, whatever the
    size; reading stops at MAX_EXPANDED_BYTES and evidence at MAX_EVIDENCE_PER_INPUT (with a note).
    Each block goes through both tiers (the exact parsers and the text tier), as a whole input would."""
    from gpuobs.rca.parsers.document import parse_document

    out: list[Evidence] = []
    pending, total, cut = head, len(head), False
    while True:
        block = stream.read(_BLOCK_BYTES)
        total += len(block)
        if total > MAX_EXPANDED_BYTES:
            block = block[: max(0, len(block) - (total - MAX_EXPANDED_BYTES))]
            cut = True
        data = pending + block
        end = data.rfind(b"\n") + 1 if block and not cut else len(data)
        if end == 0 and block:
            pending = data  # one line longer than a block: keep reading until it ends
            continue
        text, pending = data[:end].decode("utf-8", errors="replace"), data[end:]
        out.extend(parse_document(name, text, None, phrasebook))
        if len(out) > MAX_EVIDENCE_PER_INPUT:
            _too_much_evidence(name, notes)
            return out[:MAX_EVIDENCE_PER_INPUT]
        if cut:
            _note(notes, f"{name}: more than {MAX_EXPANDED_BYTES >> 20} MiB; the rest was not read")
            return out
        if not block and not pending:
            return out


def _read_log_streamed(
    path: str, stdin: IO[bytes] | None, notes: list[str] | None, phrasebook: Phrasebook | None = None
) -> list[Evidence]:
    """Evidence from one log input, streamed when it is a log of lines, else parsed whole (capped)."""
    from gpuobs.rca.parsers.document import parse_document

    name, stream, owned = _open_stream(path, stdin)
    try:
        try:
            head = stream.read(_HEAD_BYTES)
        except _DECOMPRESS_ERRORS as exc:
            raise InputError(f"{name}: corrupt {_kind(stream)} data ({exc})") from exc
        if looks_binary(head):
            raise InputError(f"{name}: binary file, not a log ({_WHAT_IS_READ})")
        try:
            if _is_line_log(head.decode("utf-8", errors="replace")):
                return _stream_line_log(name, stream, head, notes, phrasebook)
            rest = stream.read(MAX_EXPANDED_BYTES + 1 - len(head))
        except _DECOMPRESS_ERRORS as exc:
            raise InputError(f"{name}: corrupt {_kind(stream)} data ({exc})") from exc
        data = head + rest
        if len(data) > MAX_EXPANDED_BYTES:
            _note(notes, f"{name}: more than {MAX_EXPANDED_BYTES >> 20} MiB; the rest was not read")
            data = data[:MAX_EXPANDED_BYTES]
    finally:
        if owned is not None:
            stream.close()
            owned.close()
    when = None
    if name != "<stdin>":
        try:
            when = Path(name).stat().st_mtime
        except OSError:
            when = None
    found = parse_document(name, data.decode("utf-8", errors="replace"), when, phrasebook)
    if len(found) > MAX_EVIDENCE_PER_INPUT:
        _too_much_evidence(name, notes)
        found = found[:MAX_EVIDENCE_PER_INPUT]
    return found


def log_heads(paths: list[str], stdin: bytes | None, max_bytes: int = _HEAD_BYTES) -> list[tuple[str, str]]:
    """(name, text) of each log input's first `max_bytes` (inflated), for a reader that needs the words
    rather than the records (the semantic tier). An input that cannot be read or is binary is left out:
    the main read has already reported it; `-` is read only from `stdin` bytes (never the terminal)."""
    out: list[tuple[str, str]] = []
    for path in _log_paths(paths):
        if path == "-" and stdin is None:
            continue
        try:
            name, stream, owned = _open_stream(path, io.BytesIO(stdin or b""))
            try:
                data = stream.read(max_bytes)
            finally:
                if owned is not None:
                    stream.close()
                    owned.close()
        except (InputError, *_DECOMPRESS_ERRORS) as exc:
            logger.info("semantic read of %s skipped: %s", path, exc)
            continue
        if not looks_binary(data):
            out.append((name, data.decode("utf-8", errors="replace")))
    return out


def machine_written(text: str) -> bool:
    """Whether a log input is a machine's structured document rather than words: JSON (Kubernetes, OTLP,
    /api/history), JSON lines or a saved /metrics, nine in ten of its non-blank lines shaped so. Its records
    are the exact tier's; a reader of words (the semantic tier) would only read meaning into field names and
    request ids. A thread that quotes a few metric or JSON lines among its sentences is words."""
    from gpuobs.rca.parsers.exposition import exposition_lines

    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return False
    if lines[0].startswith(("# HELP ", "# TYPE ")):
        return len(exposition_lines("\n".join(lines)).splitlines()) >= 0.9 * len(lines)
    if lines[0][:1] not in ("{", "["):
        return False
    try:
        json_input.loads(text)
        return True
    except ValueError:
        pass
    return sum(_is_json_object(line) for line in lines) >= 0.9 * len(lines)


def _is_json_object(line: str) -> bool:
    if not (line.startswith("{") and line.endswith("}")):
        return False
    try:
        return isinstance(json_input.loads(line), dict)
    except ValueError:
        return False


def _log_paths(paths: list[str]) -> Iterator[str]:
    """Every file named by `paths` (folders walked as iter_log_inputs does), `-` kept as is."""
    for path in paths:
        if path != "-" and os.path.isdir(path):
            for f in sorted(
                f
                for f in Path(path).rglob("*")
                if f.is_file() and not any(part.startswith(".") for part in f.relative_to(path).parts)
            ):
                if f.suffix.lower() in _SKIP_SUFFIXES:
                    logger.info("skipping %s (not a log by its name)", f)
                    continue
                yield str(f)
        else:
            yield path


def read_logs(
    paths: list[str],
    stdin: IO[bytes] | None = None,
    keep: list[LogInput] | None = None,
    notes: list[str] | None = None,
    unread: list[str] | None = None,
    phrasebook: Phrasebook | None = None,
) -> list[Evidence]:
    """Evidence from log inputs, each parsed by what it is (a saved /metrics is timed at its mtime).

    Logs of lines are parsed as a stream, so memory does not grow with the file; what is cut by the caps
    on inflated size and evidence count is said in `notes`. With `keep`, every input read is also
    appended to it whole (bundles archive the texts; stdin reads once). With `unread`, each input named
    in `paths` (not found in a folder) that gave no evidence at all is named there with why, so a report
    never says "no known failure signature" over a file it could not read. `phrasebook` is the text
    tier's vocabulary (default: the bundled catalog's).
    """
    from gpuobs.rca.parsers.document import parse_document

    out: list[Evidence] = []
    if unread is not None:  # a folder with nothing to read is not a quiet node (exit 1): say it was empty
        unread.extend(
            f"{path}: a folder with no log file in it (hidden files, images, archives, weights are skipped)"
            for path in paths
            if path != "-" and os.path.isdir(path) and next(_log_paths([path]), None) is None
        )
    if keep is None:
        for path in _log_paths(paths):
            if path != "-":
                _check_size(path)
            found = _read_log_streamed(path, stdin, notes, phrasebook)
            named = path in paths  # named on the command line, not found in a folder
            if not found and unread is not None and named and not understood(_head_text(path)):
                unread.append(unread_reason("<stdin>" if path == "-" else path))
            out.extend(found)
        return out
    for item in iter_log_inputs(paths, stdin):
        keep.append(item)
        when = None
        if item.name != "<stdin>":
            try:
                when = Path(item.name).stat().st_mtime
            except OSError:
                when = None
        found = parse_document(item.name, item.text, when, phrasebook)
        named = item.name == "<stdin>" or item.name in {str(Path(p)) for p in paths}
        if not found and unread is not None and named and not understood(item.text):
            unread.append(unread_reason(item.name, item.text))
        out.extend(found)
    return out


def _check_size(path: str) -> None:
    """InputError for a file over the size limit (or missing: named as such)."""
    try:
        size = Path(path).stat().st_size
    except FileNotFoundError as exc:
        raise InputError(f"{path or repr(path)}: no such file or folder") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if size > _MAX_FILE_BYTES:
        raise InputError(
            f"{path}: {size} bytes is larger than the {_MAX_FILE_BYTES >> 20} MiB limit; "
            "cut the incident window out first"
        )


def understood(text: str) -> bool:
    """Whether an input that gave no evidence was still read: a log whose lines carry known prefixes, or a
    tool's output a reader recognised (`kubectl describe node` listing its GPUs, a pod list of running pods).
    Such an input is healthy (exit 1), not unreadable (exit 2). Asked only of inputs that gave no evidence."""
    from gpuobs.rca.parsers.document import reads_tool_output

    return looks_like_a_log(text) or reads_tool_output(text)


def looks_like_a_log(text: str, sample: int = 50) -> bool:
    """Whether most of the first lines carry a log prefix (a timestamp or a level) that diagnose reads.

    Such an input was understood: no evidence from it means nothing failed (a healthy log gives no
    cause, exit 1), not that it could not be read."""
    from gpuobs.rca.parsers.prefix import split_prefix

    lines = [line for line in text.splitlines()[: sample * 2] if line.strip()][:sample]
    if not lines:
        return False
    known = sum(
        1
        for line in lines
        if (p := split_prefix(line)).time is not None or p.level is not None or p.boot_seconds is not None
    )
    return known * 2 >= len(lines)


def _head_text(path: str) -> str:
    """The first 64 KiB of a named file as text ('' when it cannot be read)."""
    try:
        with open(path, "rb") as raw:
            stream, _ = _decompressing(raw, raw.peek(_MAGIC_BYTES)[:_MAGIC_BYTES], path)  # type: ignore[arg-type]
            with stream:
                return bytes(stream.read(65536)).decode("utf-8", errors="replace")
    except (InputError, *_DECOMPRESS_ERRORS):
        return ""


def unread_reason(name: str, text: str | None = None) -> str:
    """Why an input gave no evidence, with what gpuobs diagnose does read."""
    if text is not None:
        empty = not text.strip()
    else:
        try:
            empty = name != "<stdin>" and Path(name).stat().st_size == 0
        except OSError:
            empty = False
    if empty:
        return f"{name}: empty, nothing to read"
    return (
        f"{name}: no line of it was recognised; diagnose reads kernel logs (dmesg, journalctl -k), "
        "serving, NCCL and CUDA logs, Prometheus text, OTLP JSON and Kubernetes JSON "
        "(`kubectl get pods,events -o json`)"
    )


def read_traces(
    paths: list[str], stdin: IO[bytes] | None = None, unread: list[str] | None = None
) -> list[Evidence]:
    """Span evidence from OTLP JSON files (.gz accepted); InputError names a file that is not one.

    A file that is an OTLP export but gives no span goes to `unread` with the reason, as a log file of
    which no line was recognised does: the report must not read as if its spans had been weighed.
    """
    from gpuobs.rca.parsers.traces import parse_otlp_text

    out: list[Evidence] = []
    for path in paths:
        item = read_input(path, stdin)
        found = parse_otlp_text(item.text, source=item.name)
        if not found and unread is not None:
            unread.append(
                f"{item.name}: no span in it (diagnose reads resourceSpans[].scopeSpans[].spans[], each "
                "with a name and a startTimeUnixNano)"
            )
        out.extend(found)
    return out
