"""A document nested thousands of levels deep, wherever a verb reads JSON, YAML or TOML from outside.

`json.loads`, PyYAML and tomllib recurse, and raise RecursionError (not their decode error) past Python's
recursion limit: the readers, which catch decode errors to say "not JSON", let it out as a traceback, or as
"unexpected RecursionError" among diagnose's problems. Each such input is now one line naming it, exit 2.
"""

from __future__ import annotations

import http.server
import io
import json
import os
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

DEPTH = 100_000


def _deep_json(inside: str = "") -> str:
    return "[" * DEPTH + inside + "]" * DEPTH


def _gpuobs(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuobs", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GPUOBS_CONFIG": os.devnull, "COLUMNS": "250", **(env or {})},
    )


def _one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, (done.stdout[-500:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr, done.stderr[-2000:]
    text = " ".join(done.stderr.split())
    assert all(w in text for w in words), text


@pytest.fixture
def deep_http() -> Iterator[str]:
    """A real HTTP server answering every GET with a deeply nested JSON document."""
    body = _deep_json().encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_diagnose_trace_log_and_kubernetes_files(tmp_path: Path) -> None:
    spans = tmp_path / "spans.json"
    spans.write_text('{"resourceSpans": ' + _deep_json() + "}")
    _one_line_error(_gpuobs("diagnose", "--traces", str(spans)), str(spans), "nested too deeply")
    _one_line_error(_gpuobs("diagnose", "--logs", str(spans)), str(spans), "nested too deeply")
    objects = tmp_path / "pods.json"  # not read as Kubernetes JSON, then as lines: none is recognised
    objects.write_text('{"kind": "List", "items": ' + _deep_json() + "}")
    _one_line_error(_gpuobs("diagnose", "--logs", str(objects)), str(objects), "no line of it was recognised")


def test_diagnose_exporter_and_prometheus_answers(deep_http: str) -> None:
    for flag in ("--exporter", "--prometheus"):
        _one_line_error(_gpuobs("diagnose", flag, deep_http), flag.removeprefix("--"), "nested too deeply")


def test_diagnose_bundle(tmp_path: Path) -> None:
    bundle = tmp_path / "incident.tar.gz"
    with tarfile.open(bundle, "w:gz") as tar:
        for name, text in (
            ("gpuobs-bundle/manifest.json", json.dumps({"format": "gpuobs-bundle", "version": 1})),
            ("gpuobs-bundle/evidence.json", _deep_json()),
        ):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    _one_line_error(_gpuobs("diagnose", "--bundle", str(bundle)), "evidence.json", "nested too deeply")


def test_gameday_experiments(tmp_path: Path) -> None:
    as_json = tmp_path / "deep.json"
    as_json.write_text('{"title": ' + _deep_json() + "}")
    as_yaml = tmp_path / "deep.yaml"
    as_yaml.write_text("title: " + "[" * 5000 + "]" * 5000 + "\n")
    for path in (as_json, as_yaml):
        _one_line_error(_gpuobs("gameday", "--dry-run", str(path)), str(path), "nested too deeply")


def test_export_web_config_and_the_config_file(tmp_path: Path) -> None:
    web = tmp_path / "web.yml"
    web.write_text("basic_auth_users: " + "[" * 5000 + "]" * 5000 + "\n")
    exporter = _gpuobs("export", "--backend", "sim", "--port", "0", "--web-config", str(web))
    _one_line_error(exporter, str(web), "nested too deeply")
    config = tmp_path / "config.toml"
    config.write_text("[diagnose]\nsince = " + "[" * 5000 + "]" * 5000 + "\n")
    listing = _gpuobs("diagnose", "--list-signatures", env={"GPUOBS_CONFIG": str(config)})
    _one_line_error(listing, str(config), "nested too deeply")
