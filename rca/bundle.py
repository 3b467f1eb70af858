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

from gpuobs import __version__, json_input
from gpuobs.errors import InputError
from gpuobs.evidence import Entity, Evidence
from gpuobs.output_files import write_failure
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
    return Evidence(
        kind=ev.kind,
        key=ev.key,
        value=r.text(ev.value) if isinstance(ev.value, str) else ev.value,
        source=r.text(ev.source),  # a --prometheus/--exporter URL with its credentials
        time=ev.time,
        entity=Entity.from_dict(r.strings(ev.entity.to_dict())),
        raw=r.text(ev.raw),
        attrs=r.json(ev.attrs),
        tier=ev.tier,
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
                doc = json_input.loads(text)
            except ValueError:
                doc = None
            if doc is not None:
                self.add_json(name, doc, original)
                return
        self.add_text(name, text, original)

    def _add(self, name: str, data: bytes, original: str | None) -> None:
        info = tarfile.TarInfo(f"{BUNDLE_ROOT}/{name}")
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
    for url in (inputs.prometheus, inputs.exporter):  # its password turns up in error messages too
        redactor.add_url_credentials(url)
    result = collect(inputs, keep_raw=True)
    raw_logs = [(item.name, item.text) for item in result.raw_logs]
    remote = result.remote
    traces = list(inputs.traces)
    exporter = inputs.exporter
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
                "lines_cut": redactor.lines_cut,
                "files": list(w.files),
            }
            manifest = redactor.strings(manifest)  # the input URLs, the problem messages
            w.add_json("manifest.json", manifest, foreign=False, indent=2)
        partial.replace(out_path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise write_failure(f"-o {output}", exc) from exc
    logger.info(
        "bundle %s: %d records, %d files, %d redactions",
        out_path,
        len(result.evidence),
        len(w.files),
        redactor.total,
    )
    return BundleSummary(path=out_path, manifest=manifest, result=result, files=[f["path"] for f in w.files])
