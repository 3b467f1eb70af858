"""Support bundles: every input of an incident in one redacted `.tar.gz`, replayable offline.

Layout of the archive (all under `gpuobs-bundle/`):
- `manifest.json`: format, version, creation time, host, window, the inputs and files (with sha256),
  evidence counts per source, problems and notes, redaction counts.
- `evidence.json`: the collected evidence (`CollectResult.to_dict()`), redacted.
- `inputs/logs/...`, `inputs/traces/...`, `inputs/exporter/...`: the raw inputs, redacted.
- `node/env.json`: the GPU-relevant environment (CUDA_*, NCCL_*, NVIDIA_*, ...), redacted.

`load_bundle(path)` returns the same `CollectResult` that `collect_evidence` returned when the
bundle was made, so `gpuobs diagnose --bundle FILE` replays an incident deterministically.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
import os
import socket
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuobs import __version__
from gpuobs.errors import InputError
from gpuobs.evidence import Entity, Evidence
from gpuobs.rca.collect import CollectResult, collect_evidence
from gpuobs.rca.redact import Redactor, redact_env

__all__ = ["BUNDLE_FORMAT", "BundleSummary", "load_bundle", "make_bundle", "read_manifest"]

logger = logging.getLogger(__name__)

BUNDLE_FORMAT = "gpuobs-bundle"
BUNDLE_VERSION = 1
_ROOT = "gpuobs-bundle"
_MAX_MEMBER_BYTES = 1 << 30
_ENV_PREFIXES = (
    "CUDA_",
    "NCCL_",
    "NVIDIA_",
    "PYTORCH_",
    "TORCH_",
    "VLLM_",
    "HF_",
    "TRANSFORMERS_",
    "TRITON_",
    "GPUOBS_",
    "OMP_",
    "LD_LIBRARY_PATH",
    "KUBERNETES_",
    "POD_",
    "NODE_",
    "RAY_",
    "TENSORRT_",
    "TRT_",
    "UCX_",
    "FI_",
    "MASTER_",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
)


@dataclass
class BundleSummary:
    """What `make_bundle` wrote: the path, the manifest and the collected evidence."""

    path: Path
    manifest: dict[str, Any]
    result: CollectResult
    files: list[str] = field(default_factory=list)


def _redact_evidence(ev: Evidence, r: Redactor) -> Evidence:
    return Evidence(
        kind=ev.kind,
        key=ev.key,
        value=r.text(ev.value) if isinstance(ev.value, str) else ev.value,
        source=r.text(ev.source),  # a --prometheus/--exporter URL with its credentials
        time=ev.time,
        entity=Entity.from_dict(r.strings(ev.entity.to_dict())),
        raw=r.text(ev.raw),
        attrs=r.json(ev.attrs),
    )


class _Writer:
    """Adds files to the archive; everything written goes through the redactor on the way in."""

    def __init__(self, tar: tarfile.TarFile, mtime: float, redactor: Redactor) -> None:
        self.tar = tar
        self.mtime = mtime
        self.redactor = redactor
        self.files: list[dict[str, Any]] = []

    def add_text(self, name: str, text: str, original: str | None = None) -> None:
        self._add(name, self.redactor.text(text).encode("utf-8"), original)

    def add_json(
        self,
        name: str,
        doc: Any,
        original: str | None = None,
        *,
        foreign: bool = True,
        indent: int | None = 1,
        sort_keys: bool = False,
    ) -> None:
        """A JSON document: foreign ones (Kubernetes objects, history) are also masked by field name;
        our own (evidence, environment, manifest) have every string through the text rules."""
        clean = self.redactor.json(doc) if foreign else self.redactor.strings(doc)
        data = json.dumps(clean, indent=indent, sort_keys=sort_keys, default=str)
        self._add(name, data.encode("utf-8"), original)

    def add_input(self, name: str, text: str, original: str) -> None:
        """A raw input: JSON documents structurally (secret-named fields), anything else as text."""
        if text.lstrip()[:1] in ("{", "["):
            try:
                doc = json.loads(text)
            except ValueError:
                doc = None
            if doc is not None:
                self.add_json(name, doc, original)
                return
        self.add_text(name, text, original)

    def _add(self, name: str, data: bytes, original: str | None) -> None:
        info = tarfile.TarInfo(f"{_ROOT}/{name}")
        info.size = len(data)
        info.mtime = int(self.mtime)
        info.mode = 0o644
        self.tar.addfile(info, io.BytesIO(data))
        entry: dict[str, Any] = {"path": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        if original:
            entry["original"] = self.redactor.text(original)
        self.files.append(entry)


def _safe_name(path: str, used: set[str]) -> str:
    base = "stdin.log" if path == "-" else Path(path).name or "input"
    base = "".join(c if c.isalnum() or c in "._-" else "_" for c in base).lstrip(".") or "input"
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{n}-{base}"
    used.add(name)
    return name


def make_bundle(
    output: str,
    logs: list[str],
    prometheus: str | None = None,
    exporter: str | None = None,
    traces: list[str] | None = None,
    k8s_namespace: str | None = None,
    start: float | None = None,
    end: float | None = None,
    live: bool = False,
    stdin_data: bytes | None = None,
) -> BundleSummary:
    """Collect everything (as `collect_evidence` does) and write one redacted archive to `output`."""
    from gpuobs.rca.sources.logs import iter_log_inputs

    traces = list(traces or [])
    out_path = Path(output)
    if out_path.exists() and out_path.is_dir():
        raise InputError(f"-o {output}: is a folder; give a file name like incident.tar.gz")
    if not out_path.parent.exists():
        raise InputError(f"-o {output}: folder {out_path.parent} does not exist")
    now = time.time()
    redactor = Redactor()
    for url in (prometheus, exporter):  # its password turns up in error messages outside URL form too
        redactor.add_url_credentials(url)

    # Read the raw log inputs once (stdin can only be read once) and hand the same bytes to collection.
    raw_logs: list[tuple[str, str]] = []
    stdin_stream = io.BytesIO(stdin_data) if stdin_data is not None else None
    for item in iter_log_inputs(logs, stdin=stdin_stream):
        raw_logs.append((item.name, item.text))
    tmp_paths: list[str] = []
    collect_logs: list[str] = []
    try:
        for name, text in raw_logs:
            if name == "<stdin>":
                import tempfile

                fd, tmp = tempfile.mkstemp(prefix="gpuobs-stdin-", suffix=".log")
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(text)
                tmp_paths.append(tmp)
                collect_logs.append(tmp)
            else:
                collect_logs.append(name)
        remote: dict[str, Any] = {}
        result = collect_evidence(
            collect_logs, prometheus, exporter, traces, k8s_namespace, start, end, live, raw=remote
        )
    finally:
        for tmp in tmp_paths:
            Path(tmp).unlink(missing_ok=True)
    stdin_tmp = set(tmp_paths)
    result.evidence = [
        dataclasses.replace(e, source="<stdin>") if e.source in stdin_tmp else e for e in result.evidence
    ]
    result.evidence = [_redact_evidence(e, redactor) for e in result.evidence]
    result.problems = [redactor.text(p) for p in result.problems]
    result.notes = [redactor.text(n) for n in result.notes]

    used: set[str] = set()
    partial = out_path.with_name(out_path.name + ".partial")
    try:
        with tarfile.open(partial, "w:gz") as tar:
            w = _Writer(tar, now, redactor)
            for name, text in raw_logs:
                w.add_input(f"inputs/logs/{_safe_name(name, used)}", text, original=name)
            for path in traces:
                item_text = Path(path).read_text(encoding="utf-8", errors="replace") if path != "-" else ""
                w.add_input(f"inputs/traces/{_safe_name(path, used)}", item_text, original=path)
            if exporter and not exporter.startswith(("http://", "https://")) and Path(exporter).is_file():
                w.add_input(
                    f"inputs/exporter/{_safe_name(exporter, used)}",
                    Path(exporter).read_text(encoding="utf-8", errors="replace"),
                    original=exporter,
                )
            for key, doc in sorted(remote.items()):
                name = (
                    "exporter/history.json"
                    if key == "exporter_history"
                    else f"k8s/{key.split(':', 1)[1]}.json"
                )
                w.add_json(f"inputs/{name}", doc, original=key)
            env = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)}
            w.add_json("node/env.json", redact_env(env, redactor), foreign=False, indent=2, sort_keys=True)
            w.add_json("evidence.json", result.to_dict(), foreign=False, indent=None)
            manifest = {
                "format": BUNDLE_FORMAT,
                "version": BUNDLE_VERSION,
                "created": now,
                "gpuobs_version": __version__,
                "host": socket.gethostname(),
                "window": {"start": start, "end": end},
                "inputs": {
                    "logs": [n for n, _ in raw_logs],
                    "prometheus": prometheus,
                    "exporter": exporter,
                    "traces": traces,
                    "k8s_namespace": k8s_namespace,
                    "live": live,
                },
                "sources": result.sources,
                "evidence": len(result.evidence),
                "problems": result.problems,
                "notes": result.notes,
                "redactions": dict(sorted(redactor.counts.items())),
                "lines_cut": redactor.lines_cut,
                "files": list(w.files),
            }
            manifest = redactor.strings(manifest)  # the input URLs, the problem messages
            w.add_json("manifest.json", manifest, foreign=False, indent=2)
        partial.replace(out_path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise InputError(f"-o {output}: cannot write the bundle ({exc.strerror or exc})") from exc
    logger.info(
        "bundle %s: %d records, %d files, %d redactions",
        out_path,
        len(result.evidence),
        len(w.files),
        redactor.total,
    )
    return BundleSummary(path=out_path, manifest=manifest, result=result, files=[f["path"] for f in w.files])


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
        info = tar.getmember(f"{_ROOT}/{name}")
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
        from gpuobs.rca.collect import evidence_from_input
        from gpuobs.rca.sources.traces import parse_otlp_text

        fresh: list[Evidence] = []
        log_names = set(manifest.get("inputs", {}).get("logs", []))
        for entry in manifest.get("files", []):
            name = entry.get("path", "")
            text = _member(tar, name, path).decode("utf-8", errors="replace")
            if name.startswith("inputs/logs/"):
                fresh.extend(evidence_from_input(entry.get("original", name), text))
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
