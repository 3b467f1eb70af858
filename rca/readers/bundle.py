"""A support bundle made by `gpuobs bundle` -> the Evidence it stored (or its archived inputs, re-parsed).

The archive layout is described in `gpuobs.rca.bundle`, which writes it. `load_bundle(path)` returns the
same `CollectResult` that collection gave when the bundle was made, so `gpuobs diagnose --bundle FILE`
replays an incident deterministically.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

from gpuobs.errors import InputError
from gpuobs.evidence import Evidence
from gpuobs.rca.collect import CollectResult

__all__ = ["BUNDLE_FORMAT", "BUNDLE_ROOT", "BUNDLE_VERSION", "load_bundle", "read_manifest"]

BUNDLE_FORMAT = "gpuobs-bundle"
BUNDLE_VERSION = 1
BUNDLE_ROOT = "gpuobs-bundle"
_MAX_MEMBER_BYTES = 1 << 30


def _open(path: str | Path) -> tarfile.TarFile:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"--bundle {path}: no such file")
    try:
        return tarfile.open(p, "r:*")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise InputError(f"--bundle {path}: not a gpuobs bundle (.tar.gz): {exc}") from exc


def _member(tar: tarfile.TarFile, name: str, path: str | Path) -> bytes:
    try:
        info = tar.getmember(f"{BUNDLE_ROOT}/{name}")
    except KeyError as exc:
        raise InputError(f"--bundle {path}: {name} missing; not a gpuobs bundle") from exc
    if not info.isfile() or info.size > _MAX_MEMBER_BYTES:
        raise InputError(f"--bundle {path}: {name} is not a regular file of sane size")
    fh = tar.extractfile(info)
    if fh is None:
        raise InputError(f"--bundle {path}: cannot read {name}")
    return fh.read()


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of a bundle (InputError when the file is not a gpuobs bundle)."""
    with _open(path) as tar:
        try:
            manifest = json.loads(_member(tar, "manifest.json", path))
        except ValueError as exc:
            raise InputError(f"--bundle {path}: manifest.json is not JSON ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise InputError(f"--bundle {path}: not a gpuobs bundle (manifest format is not {BUNDLE_FORMAT!r})")
    if int(manifest.get("version", 0)) > BUNDLE_VERSION:
        raise InputError(
            f"--bundle {path}: bundle version {manifest.get('version')} is newer than this gpuobs "
            f"understands ({BUNDLE_VERSION}); upgrade gpuobs"
        )
    return manifest


def load_bundle(path: str | Path, reparse: bool = False) -> CollectResult:
    """The CollectResult stored in a bundle; with `reparse`, logs and traces are parsed again from
    the archived (redacted) inputs with this version's parsers, metrics/Kubernetes kept as stored."""
    manifest = read_manifest(path)
    with _open(path) as tar:
        try:
            stored = CollectResult.from_dict(json.loads(_member(tar, "evidence.json", path)))
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"--bundle {path}: evidence.json is damaged ({exc})") from exc
        if not reparse:
            return stored
        from gpuobs.rca.parsers.document import parse_document
        from gpuobs.rca.parsers.traces import parse_otlp_text

        fresh: list[Evidence] = []
        log_names = set(manifest.get("inputs", {}).get("logs", []))
        for entry in manifest.get("files", []):
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
