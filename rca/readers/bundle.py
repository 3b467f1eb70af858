"""A support bundle made by `gpuobs bundle` -> the Evidence it stored (or its archived inputs, re-parsed).

The archive layout is described in `gpuobs.rca.bundle`, which writes it. `load_bundle(path)` returns the
same `CollectResult` that collection gave when the bundle was made, so `gpuobs diagnose --bundle FILE`
replays an incident deterministically.
"""

from __future__ import annotations

import tarfile
import zlib
from pathlib import Path
from typing import Any

from gpuobs import json_input
from gpuobs.errors import InputError
from gpuobs.evidence import Evidence
from gpuobs.rca.collect import CollectResult

__all__ = [
    "BUNDLE_FORMAT",
    "BUNDLE_ROOT",
    "BUNDLE_VERSION",
    "MAX_MEMBER_BYTES",
    "load_bundle",
    "read_manifest",
]

BUNDLE_FORMAT = "gpuobs-bundle"
BUNDLE_VERSION = 1
BUNDLE_ROOT = "gpuobs-bundle"
MAX_MEMBER_BYTES = 256 << 20
"""Largest member read from a bundle: a bomb inflating past it is refused, not read whole into memory."""
# what a damaged archive raises mid-read; click turns a stray EOFError into "Aborted." with exit 1
_READ_ERRORS = (tarfile.TarError, OSError, EOFError, zlib.error)


def _open(path: str | Path) -> tarfile.TarFile:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"--bundle {path}: no such file")
    try:
        return tarfile.open(p, "r:*")
    except _READ_ERRORS as exc:
        # one line: tarfile's own message lists every compression it tried, one per line
        what = "gzip data with no tar archive inside" if _starts_with(p, b"\x1f\x8b") else "not a .tar.gz"
        raise InputError(
            f"--bundle {path}: not a gpuobs bundle ({what}; `gpuobs bundle -o FILE.tar.gz` makes one)"
        ) from exc


def _starts_with(path: Path, magic: bytes) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(len(magic)) == magic
    except OSError:
        return False


def _member(tar: tarfile.TarFile, name: str, path: str | Path, max_bytes: int | None = None) -> bytes:
    """One member's bytes, read in chunks up to `max_bytes` (default MAX_MEMBER_BYTES); InputError when
    it is missing, not a file, larger than the cap, or the archive is truncated or corrupt."""
    cap = MAX_MEMBER_BYTES if max_bytes is None else max_bytes
    try:
        try:
            info = tar.getmember(f"{BUNDLE_ROOT}/{name}")
        except KeyError as exc:
            raise InputError(f"--bundle {path}: {name} missing; not a gpuobs bundle") from exc
        if not info.isfile() or info.size > cap:
            raise InputError(f"--bundle {path}: {name} is not a regular file of at most {cap >> 20} MiB")
        fh = tar.extractfile(info)
        if fh is None:
            raise InputError(f"--bundle {path}: cannot read {name}")
        data = fh.read(cap + 1)
    except _READ_ERRORS as exc:
        why = str(exc) or type(exc).__name__
        raise InputError(f"--bundle {path}: damaged or truncated archive ({why})") from exc
    if len(data) > cap:
        raise InputError(f"--bundle {path}: {name} is larger than {cap >> 20} MiB")
    return data


def _json_member(tar: tarfile.TarFile, name: str, path: str | Path) -> Any:
    """A member parsed as JSON; InputError for what is not JSON or nests too deep to parse."""
    try:
        return json_input.loads(_member(tar, name, path))
    except ValueError as exc:
        raise InputError(f"--bundle {path}: {name} is not JSON ({exc})") from None


def _version(manifest: dict[str, Any], path: str | Path) -> int:
    raw = manifest.get("version", 0)
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise InputError(f"--bundle {path}: manifest.json version {str(raw)[:40]!r} is not an integer")
    return raw


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of a bundle (InputError when the file is not a gpuobs bundle)."""
    with _open(path) as tar:
        manifest = _json_member(tar, "manifest.json", path)
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise InputError(f"--bundle {path}: not a gpuobs bundle (manifest format is not {BUNDLE_FORMAT!r})")
    if _version(manifest, path) > BUNDLE_VERSION:
        raise InputError(
            f"--bundle {path}: bundle version {manifest.get('version')} is newer than this gpuobs "
            f"understands ({BUNDLE_VERSION}); upgrade gpuobs"
        )
    return manifest


def _files(manifest: dict[str, Any], path: str | Path) -> list[dict[str, Any]]:
    """The manifest's list of archived inputs, each an object with a string `path`; InputError otherwise."""
    files = manifest.get("files", [])
    if not isinstance(files, list) or not all(
        isinstance(entry, dict) and isinstance(entry.get("path", ""), str) for entry in files
    ):
        raise InputError(f"--bundle {path}: manifest.json is damaged (its files are not a list of inputs)")
    return files


def bundle_log_texts(path: str | Path) -> list[tuple[str, str]]:
    """The archived (redacted) log inputs as (original name, text), for a reader that needs the words
    rather than the stored records (the semantic tier), so that a replay reads what the diagnosis read."""
    manifest = read_manifest(path)
    with _open(path) as tar:
        return [
            (str(entry.get("original", name)), _member(tar, name, path).decode("utf-8", errors="replace"))
            for entry in _files(manifest, path)
            if (name := str(entry.get("path", ""))).startswith("inputs/logs/")
        ]


def load_bundle(path: str | Path, reparse: bool = False) -> CollectResult:
    """The CollectResult stored in a bundle; with `reparse`, logs and traces are parsed again from
    the archived (redacted) inputs with this version's parsers, metrics/Kubernetes kept as stored."""
    manifest = read_manifest(path)
    with _open(path) as tar:
        data = _json_member(tar, "evidence.json", path)
        if not isinstance(data, dict) or not isinstance(data.get("evidence"), list):
            raise InputError(f"--bundle {path}: evidence.json is damaged (no list of evidence records)")
        try:
            stored = CollectResult.from_dict(data)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise InputError(f"--bundle {path}: evidence.json is damaged ({exc})") from exc
        if not reparse:
            return stored
        from gpuobs.rca.parsers.document import parse_document
        from gpuobs.rca.parsers.traces import parse_otlp_text

        fresh: list[Evidence] = []
        log_names = set(manifest.get("inputs", {}).get("logs", []))
        for entry in _files(manifest, path):
            name = entry.get("path", "")
            text = _member(tar, name, path).decode("utf-8", errors="replace")
            if name.startswith("inputs/logs/"):
                fresh.extend(parse_document(entry.get("original", name), text))
            elif name.startswith("inputs/traces/"):
                fresh.extend(parse_otlp_text(text, source=entry.get("original", name)))
        kept = [
            e
            for e in stored.evidence
            if e.source not in log_names
            and not e.source.startswith(tuple(manifest.get("inputs", {}).get("traces", [])) or ("\0",))
        ]
        stored.evidence = sorted(kept + fresh, key=lambda e: (e.time is None, e.time or 0.0))
        return stored
