"""`gpuobs bundle`: one redacted archive with raw inputs, evidence and manifest; `load_bundle` replays it."""

# ruff: noqa: E501  (real log lines and Kubernetes messages are longer than the code line limit)

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from support.bundle import archive_members, pod, pod_list
from support.kube_api import mock_kube_api
from typer.testing import CliRunner

from gpuobs.cli.app import app
from gpuobs.errors import InputError
from gpuobs.rca import DiagnoseInputs, keys
from gpuobs.rca.bundle import make_bundle
from gpuobs.rca.readers.bundle import load_bundle, read_manifest
from gpuobs.rca.redact import MASK, Redactor, is_secret_name, redact_env, redact_json, redact_text

SECRETS = {
    "hf": "hf_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789",
    "bearer": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ",
    "aws_id": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "password": "Tr0ub4dor&3-horse",
    "pem_body": "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0",
    "pod_env": "s3cr3t-pod-api-key-value-42",
    "env_token": "tok-env-77f3a9c1d2e4b5a6",
    "openai": "sk-proj-abcdefghijklmnopqrstuvwxyz0123",
}

LOG = f"""\
[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 79, pid=2024380, name=python3, GPU has fallen off the bus.
2025-02-23T16:24:19Z INFO calling https://hub.internal/api with header Authorization: Bearer {SECRETS["bearer"]}
2025-02-23T16:24:19Z INFO env HF_TOKEN={SECRETS["hf"]} OPENAI_API_KEY={SECRETS["openai"]}
2025-02-23T16:24:20Z ERROR db login failed for postgres://svc:{SECRETS["password"]}@db:5432/x password={SECRETS["password"]}
aws_access_key_id = {SECRETS["aws_id"]}
aws_secret_access_key = {SECRETS["aws_secret"]}
-----BEGIN RSA PRIVATE KEY-----
{SECRETS["pem_body"]}
-----END RSA PRIVATE KEY-----
RuntimeError: CUDA error: an illegal memory access was encountered
"""

PODS = pod_list(
    pod(
        "vllm-0",
        "serving",
        [
            {
                "name": "vllm",
                "env": [
                    {"name": "API_KEY", "value": SECRETS["pod_env"]},
                    {"name": "NCCL_DEBUG", "value": "INFO"},
                ],
            }
        ],
        node="n1",
        status={
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "vllm",
                    "restartCount": 3,
                    "state": {
                        "waiting": {
                            "reason": "CrashLoopBackOff",
                            "message": f"startup failed: token={SECRETS['pod_env']}",
                        }
                    },
                }
            ],
        },
    )
)


@pytest.fixture
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "node.log").write_text(LOG)
    (logs / "pods.json").write_text(json.dumps(PODS))
    monkeypatch.setenv("HF_TOKEN", SECRETS["env_token"])
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    return {"logs": logs}


def test_bundle_round_trip_and_redaction(tmp_path: Path, inputs: dict[str, Path]) -> None:
    out = tmp_path / "incident.tar.gz"
    summary = make_bundle(str(out), DiagnoseInputs(logs=[str(inputs["logs"])]))
    members = archive_members(out)
    assert set(members) >= {
        "gpuobs-bundle/manifest.json",
        "gpuobs-bundle/evidence.json",
        "gpuobs-bundle/node/env.json",
        "gpuobs-bundle/inputs/logs/node.log",
        "gpuobs-bundle/inputs/logs/pods.json",
    }
    blob = b"".join(members.values())
    for name, secret in SECRETS.items():
        assert secret.encode() not in blob, f"secret {name} leaked into the bundle"
    assert MASK.encode() in members["gpuobs-bundle/inputs/logs/node.log"]
    env = json.loads(members["gpuobs-bundle/node/env.json"])
    assert env["HF_TOKEN"] == MASK and env["NCCL_DEBUG"] == "INFO" and env["CUDA_VISIBLE_DEVICES"] == "0,1"
    manifest = read_manifest(out)
    assert manifest == summary.manifest and manifest["evidence"] == len(summary.result.evidence)
    assert sum(manifest["redactions"].values()) >= 9
    for entry in manifest["files"]:
        assert hashlib.sha256(members[f"gpuobs-bundle/{entry['path']}"]).hexdigest() == entry["sha256"]
    # the raw log still parses: redaction keeps the evidence
    replay = load_bundle(out)
    assert [e.to_dict() for e in replay.evidence] == [e.to_dict() for e in summary.result.evidence]
    got = {e.key for e in replay.evidence}
    assert {keys.XID, keys.CUDA_ERROR, keys.K8S_POD_STATUS} <= got
    crash = next(e for e in replay.evidence if e.key == keys.K8S_POD_STATUS)
    assert SECRETS["pod_env"] not in json.dumps(crash.to_dict())
    reparsed = load_bundle(out, reparse=True)
    assert sorted(e.key for e in reparsed.evidence) == sorted(e.key for e in replay.evidence)


def test_bundle_records_failed_sources(tmp_path: Path, inputs: dict[str, Path]) -> None:
    out = tmp_path / "b.tar.gz"
    summary = make_bundle(
        str(out), DiagnoseInputs(logs=[str(inputs["logs"] / "node.log")], prometheus="http://127.0.0.1:1")
    )
    assert len(summary.manifest["problems"]) == 1 and summary.manifest["problems"][0].startswith(
        "[prometheus]"
    )
    assert load_bundle(out).problems == summary.manifest["problems"]


def test_load_bundle_rejects_what_is_not_a_bundle(tmp_path: Path) -> None:
    text = tmp_path / "x.tar.gz"
    text.write_text("hello")
    with pytest.raises(InputError, match=r"not a gpuobs bundle \(not a .tar.gz;") as plain:
        load_bundle(text)
    gzipped = tmp_path / "log.gz"
    gzipped.write_bytes(gzip.compress(b"a log, not an archive\n"))
    with pytest.raises(InputError, match="gzip data with no tar archive inside") as no_tar:
        load_bundle(gzipped)
    for error in (plain, no_tar):  # one line, not tarfile's list of every compression it tried
        assert "\n" not in str(error.value) and "method" not in str(error.value)
    empty = tmp_path / "empty.tar.gz"
    with tarfile.open(empty, "w:gz") as tar:
        info = tarfile.TarInfo("other/file.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    with pytest.raises(InputError, match=r"manifest.json missing"):
        load_bundle(empty)
    future = tmp_path / "future.tar.gz"
    with tarfile.open(future, "w:gz") as tar:
        data = json.dumps({"format": "gpuobs-bundle", "version": 99}).encode()
        info = tarfile.TarInfo("gpuobs-bundle/manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(InputError, match="newer than this gpuobs"):
        load_bundle(future)
    with pytest.raises(InputError, match="no such file"):
        load_bundle(tmp_path / "missing.tar.gz")


def test_cli_bundle_then_diagnose_replays_it(tmp_path: Path, inputs: dict[str, Path]) -> None:
    out = tmp_path / "cli.tar.gz"
    runner = CliRunner()
    res = runner.invoke(app, ["bundle", "--logs", str(inputs["logs"]), "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    manifest = json.loads(res.output)
    assert manifest["format"] == "gpuobs-bundle" and manifest["sources"]["logs"] == manifest["evidence"]
    for secret in SECRETS.values():
        assert secret not in res.output
    diag = subprocess.run(
        [sys.executable, "-m", "gpuobs", "diagnose", "--bundle", str(out), "--json"],
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert diag.returncode in (0, 1), diag.stderr.decode()
    report = json.loads(diag.stdout)
    assert "causes" in report
    bad = runner.invoke(app, ["bundle", "--logs", str(inputs["logs"]), "-o", str(tmp_path / "x.zip")])
    assert bad.exit_code != 0 and isinstance(bad.exception, InputError)


def test_an_existing_archive_is_kept_unless_forced(tmp_path: Path, inputs: dict[str, Path]) -> None:
    """`-o incident.tar.gz` named twice wrote the second bundle over the first incident's evidence."""
    out = tmp_path / "incident.tar.gz"
    first = subprocess.run(
        [sys.executable, "-m", "gpuobs", "bundle", "--logs", str(inputs["logs"]), "-o", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert first.returncode == 0, first.stderr
    kept = out.read_bytes()
    again = subprocess.run(
        [sys.executable, "-m", "gpuobs", "bundle", "--logs", str(inputs["logs"]), "-o", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert again.returncode == 2 and f"-o {out} exists (an earlier bundle?)" in again.stderr, again.stderr
    assert "--force" in again.stderr and out.read_bytes() == kept
    forced = subprocess.run(
        [sys.executable, "-m", "gpuobs", "bundle", "--logs", str(inputs["logs"]), "-o", str(out), "--force"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert forced.returncode == 0, forced.stderr
    assert load_bundle(out).evidence  # a whole new archive in its place


def test_redaction_rules() -> None:
    r = Redactor()
    assert r.text("Authorization: Basic dXNlcjpwYXNz") == f"Authorization: Basic {MASK}"
    assert (
        r.text("max_tokens=128 token_count=5 tokenizer=llama")
        == "max_tokens=128 token_count=5 tokenizer=llama"
    )
    assert r.text('{"api_key": "abc123def456"}') == f'{{"api_key": "{MASK}"}}'
    assert r.text("ghp_" + "a" * 36) == MASK
    assert redact_text("nothing to hide: loss=0.5 step=10") == "nothing to hide: loss=0.5 step=10"
    doc = redact_json(
        {
            "env": [{"name": "DB_PASSWORD", "value": "x1"}, {"name": "MODEL", "value": "llama"}],
            "client_secret": "abc",
            "note": "Bearer abcdefghijklmnop",
        }
    )
    assert doc == {
        "env": [{"name": "DB_PASSWORD", "value": MASK}, {"name": "MODEL", "value": "llama"}],
        "client_secret": MASK,
        "note": f"Bearer {MASK}",
    }
    assert redact_env({"AWS_SECRET_ACCESS_KEY": "x", "PATH": "/bin"}) == {
        "AWS_SECRET_ACCESS_KEY": MASK,
        "PATH": "/bin",
    }
    assert is_secret_name("HF_TOKEN") and is_secret_name("x-api-key") and not is_secret_name("max_tokens")
    assert r.total == 3  # the three masks above; vetoed look-alikes (max_tokens=128) are not counted


def test_bundle_keeps_remote_documents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The exporter's /api/history (real sim exporter) and the Kubernetes objects (MOCK API server) go
    into the archive as raw inputs, redacted."""
    from gpuobs.exporters.sidecar.service import Exporter, ExporterConfig

    kubeconfig = tmp_path / "kubeconfig"
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    config = ExporterConfig(
        backend="sim", gpus=2, port=0, history_interval_s=0.2, pod_resources_socket="none", host="node-b"
    )
    out = tmp_path / "remote.tar.gz"
    with mock_kube_api(kubeconfig):
        exp = Exporter(config).start()
        try:
            time.sleep(0.6)
            summary = make_bundle(str(out), DiagnoseInputs(exporter=exp.url, k8s_namespace="serving"))
        finally:
            exp.stop()
    assert summary.manifest["problems"] == []
    members = archive_members(out)
    history = json.loads(members["gpuobs-bundle/inputs/exporter/history.json"])
    assert history["host"] == "node-b" and history["samples"]
    objects = json.loads(members["gpuobs-bundle/inputs/k8s/serving.json"])
    assert {o["kind"] for o in objects["items"]} == {"Event", "Pod"}
    assert b"hf_abcdefghijklmnopqrstuvwxyz0123456789" not in b"".join(members.values())
    assert summary.manifest["sources"]["exporter"] > 0 and summary.manifest["sources"]["kubernetes"] == 7


def _bundle_with_manifest(path: Path, manifest: bytes) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("gpuobs-bundle/manifest.json")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
    return path


def _diagnose_bundle(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuobs", "diagnose", "--bundle", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )


def test_damaged_bundles_are_one_line_input_errors(tmp_path: Path, inputs: dict[str, Path]) -> None:
    """Truncated archive, deeply nested manifest, non-integer version: exit 2 and one line, never
    "Aborted." (exit 1, the "no cause" code) or a traceback (issue 10 item 13)."""
    good = tmp_path / "good.tar.gz"
    make_bundle(str(good), DiagnoseInputs(logs=[str(inputs["logs"])]))
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    nested = _bundle_with_manifest(tmp_path / "nested.tar.gz", b"[" * 200_000 + b"]" * 200_000)
    version = _bundle_with_manifest(
        tmp_path / "version.tar.gz", json.dumps({"format": "gpuobs-bundle", "version": "abc"}).encode()
    )
    for bad, why in ((truncated, "truncated"), (nested, "manifest.json is not JSON (nested too deeply to read)"), (version, "not an integer")):
        res = _diagnose_bundle(bad)
        assert res.returncode == 2, (bad.name, res.returncode, res.stdout, res.stderr)
        assert why in res.stderr and "Traceback" not in res.stderr and "Aborted" not in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_bundle_member_over_the_cap_is_refused_without_reading_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member that inflates past the cap (a bomb) is refused after reading cap+1 bytes (issue 10 item 5)."""
    import gzip as _gzip

    from gpuobs.rca.readers import bundle as bundle_reader

    bomb = tmp_path / "bomb.tar.gz"
    manifest = json.dumps({"format": "gpuobs-bundle", "version": 1}).encode()
    with (
        open(bomb, "wb") as raw,
        _gzip.GzipFile(fileobj=raw, mode="wb") as gz,
        tarfile.open(fileobj=gz, mode="w|") as tar,
    ):
        info = tarfile.TarInfo("gpuobs-bundle/manifest.json")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
        info = tarfile.TarInfo("gpuobs-bundle/evidence.json")
        info.size = 64 << 20
        tar.addfile(info, io.BytesIO(bytes(64 << 20)))
    assert bomb.stat().st_size < 1 << 20
    monkeypatch.setattr(bundle_reader, "MAX_MEMBER_BYTES", 8 << 20)
    with pytest.raises(InputError, match=r"evidence\.json is not a regular file of at most 8 MiB"):
        load_bundle(bomb)
