"""Support bundles: every input of an incident in one redacted `.tar.gz`, replayable offline.

Layout of the archive (all under `gpuobs-bundle/`):
- `manifest.json`: format, version, creation time, host, window, the inputs and files (with sha256),
  evidence counts per source, problems and notes, redaction counts.
- `evidence.json`: the collected evidence (`CollectResult.to_dict()`), redacted.
- `inputs/logs/...`, `inputs/traces/...`, `inputs/exporter/...`: the raw inputs, redacted.
- `node/env.json`: the GPU-relevant environment (CUDA_*, NCCL_*, NVIDIA_*, ...), redacted.

`make_bundle(output, inputs)` reads the inputs with the pipeline's own collection stage (`collect`), so
a bundle holds exactly what `gpuobs diagnose` would read; `readers.bundle.load_bundle(path)` returns
that same `CollectResult`, so `gpuobs diagnose --bundle FILE` replays an incident deterministically.
"""

from __future__ import annotations

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
from gpuobs.evidence import Evidence
from gpuobs.rca.collect import CollectResult, collect
from gpuobs.rca.inputs import DiagnoseInputs
from gpuobs.rca.readers.bundle import BUNDLE_FORMAT, BUNDLE_ROOT, BUNDLE_VERSION
from gpuobs.rca.redact import Redactor, redact_env

__all__ = ["BundleSummary", "make_bundle"]

logger = logging.getLogger(__name__)

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
    attrs = r.json(ev.attrs)
    return Evidence(
        kind=ev.kind,
        key=ev.key,
        value=r.text(ev.value) if isinstance(ev.value, str) else ev.value,
        source=ev.source,
        time=ev.time,
        entity=ev.entity,
        raw=r.text(ev.raw),
        attrs=attrs,
        tier=ev.tier,
    )


class _Writer:
    def __init__(self, tar: tarfile.TarFile, mtime: float) -> None:
        self.tar = tar
        self.mtime = mtime
        self.files: list[dict[str, Any]] = []

    def add(self, name: str, data: bytes, original: str | None = None) -> None:
        info = tarfile.TarInfo(f"{BUNDLE_ROOT}/{name}")
        info.size = len(data)
        info.mtime = int(self.mtime)
        info.mode = 0o644
        self.tar.addfile(info, io.BytesIO(data))
        entry: dict[str, Any] = {"path": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        if original:
            entry["original"] = original
        self.files.append(entry)


def _redact_input(text: str, r: Redactor) -> bytes:
    """A raw input, redacted: JSON documents structurally (secret-named fields), anything else as text."""
    head = text.lstrip()[:1]
    if head in ("{", "["):
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if doc is not None:
            return json.dumps(r.json(doc), indent=1).encode("utf-8")
    return r.text(text).encode("utf-8")


def _safe_name(path: str, used: set[str]) -> str:
    base = "stdin.log" if path == "-" else Path(path).name or "input"
    base = "".join(c if c.isalnum() or c in "._-" else "_" for c in base).lstrip(".") or "input"
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{n}-{base}"
    used.add(name)
    return name


def make_bundle(output: str | Path, inputs: DiagnoseInputs) -> BundleSummary:
    """Collect every input (as `gpuobs diagnose` would) and write one redacted archive to `output`."""
    out_path = Path(output)
    if out_path.exists() and out_path.is_dir():
        raise InputError(f"-o {output}: is a folder; give a file name like incident.tar.gz")
    if not out_path.parent.exists():
        raise InputError(f"-o {output}: folder {out_path.parent} does not exist")
    now = time.time()
    redactor = Redactor()
    inputs = inputs.resolved(now)
    result = collect(inputs, keep_raw=True)
    raw_logs = [(item.name, item.text) for item in result.raw_logs]
    remote = result.remote
    traces = list(inputs.traces)
    exporter = inputs.exporter
    result.evidence = [_redact_evidence(e, redactor) for e in result.evidence]

    used: set[str] = set()
    partial = out_path.with_name(out_path.name + ".partial")
    try:
        with tarfile.open(partial, "w:gz") as tar:
            w = _Writer(tar, now)
            for name, text in raw_logs:
                w.add(f"inputs/logs/{_safe_name(name, used)}", _redact_input(text, redactor), original=name)
            for path in traces:
                item_text = Path(path).read_text(encoding="utf-8", errors="replace") if path != "-" else ""
                w.add(
                    f"inputs/traces/{_safe_name(path, used)}",
                    _redact_input(item_text, redactor),
                    original=path,
                )
            if exporter and not exporter.startswith(("http://", "https://")) and Path(exporter).is_file():
                w.add(
                    f"inputs/exporter/{_safe_name(exporter, used)}",
                    _redact_input(Path(exporter).read_text(encoding="utf-8", errors="replace"), redactor),
                    original=exporter,
                )
            for key, doc in sorted(remote.items()):
                name = (
                    "exporter/history.json"
                    if key == "exporter_history"
                    else f"k8s/{key.split(':', 1)[1]}.json"
                )
                w.add(
                    f"inputs/{name}", json.dumps(redactor.json(doc), indent=1).encode("utf-8"), original=key
                )
            env = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)}
            w.add("node/env.json", json.dumps(redact_env(env, redactor), indent=2, sort_keys=True).encode())
            w.add("evidence.json", json.dumps(result.to_dict(), default=str).encode("utf-8"))
            manifest = {
                "format": BUNDLE_FORMAT,
                "version": BUNDLE_VERSION,
                "created": now,
                "gpuobs_version": __version__,
                "host": socket.gethostname(),
                "window": {"start": inputs.window.start, "end": inputs.window.end},
                "inputs": {
                    "logs": [n for n, _ in raw_logs],
                    "prometheus": inputs.prometheus,
                    "exporter": exporter,
                    "traces": traces,
                    "k8s_namespace": inputs.k8s_namespace,
                    "live": inputs.live,
                },
                "sources": result.sources,
                "evidence": len(result.evidence),
                "problems": result.problems,
                "notes": result.notes,
                "redactions": dict(sorted(redactor.counts.items())),
                "files": list(w.files),
            }
            w.add("manifest.json", json.dumps(manifest, indent=2, default=str).encode("utf-8"))
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
