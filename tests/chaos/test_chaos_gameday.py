"""Every experiment against one real local stack (serve --supervise, the simulated exporter, Prometheus when
installed): the steady state holds before, deviates under the fault, the expected signature is diagnosed from
the stack's own signals, and the steady state holds again after the rollback. Then the stock `chaos run`, the
`gpuobs gameday --json` verb, and the HTML report in a real headless Chromium.

Timings are reported, not raced: the asserts on them carry wide margins (the targets and the measured figures
are in docs/BENCHMARKS.md).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from support.paths import EXPERIMENTS
from support.procs import like_a_terminal

from gpuobs.chaos.gameday.report import html_report, markdown_report
from gpuobs.chaos.gameday.runner import Outcome, run_one
from gpuobs.chaos.gameday.stack import LocalStack

pytestmark = pytest.mark.slow

STACK_EXPERIMENTS = sorted(p for p in EXPERIMENTS.glob("*.json") if not p.stem.startswith("k8s-"))
OUTCOMES: list[Outcome] = []


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in STACK_EXPERIMENTS])
def test_experiment_passes_against_the_local_stack(stack: LocalStack, path: Path, tmp_path: Path) -> None:
    outcome = run_one(path, stack.target.configuration(), tmp_path)
    OUTCOMES.append(outcome)
    journal = json.loads(Path(outcome.journal).read_text())
    assert journal["steady_states"]["before"]["steady_state_met"], outcome.failures
    assert "fault" in outcome.marks and outcome.detect_s is not None, "the fault was never detected"
    assert journal["steady_states"]["after"]["steady_state_met"], outcome.failures
    assert [r["status"] for r in journal["rollbacks"]] == ["succeeded"] * len(journal["rollbacks"])
    assert outcome.diagnosed_signature == outcome.expected_signature
    assert outcome.passed, outcome.failures
    if path.stem == "serving-worker-sigkill":
        assert outcome.recover_s is not None and outcome.recover_s < 30  # target 10 s: see BENCHMARKS.md
    if path.stem == "serving-worker-sigterm":
        assert outcome.requests_lost == 0
        load = json.dumps(journal["run"][-1]["output"])
        assert load == "0", "the drain load's accepted requests must all be answered"


def test_stock_chaos_run_runs_the_sigkill_experiment(stack: LocalStack, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "GPUOBS_CHAOS_SERVING_URL": stack.target.serving_url,
        "GPUOBS_CHAOS_SERVE_LOG": stack.target.serve_log,
        "GPUOBS_CHAOS_KERNEL_LOG": stack.target.kernel_log,
    }
    chaos = Path(sys.executable).with_name("chaos")
    journal_path = tmp_path / "journal.json"
    proc = subprocess.run(
        [
            str(chaos),
            "--no-version-check",
            "run",
            "--journal-path",
            str(journal_path),
            str(EXPERIMENTS / "serving-worker-sigkill.json"),
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    journal = json.loads(journal_path.read_text())
    assert journal["status"] == "completed" and not journal["deviated"]
    assert journal["steady_states"]["before"]["steady_state_met"]
    assert journal["steady_states"]["after"]["steady_state_met"]
    outputs = {r["activity"]["name"]: (r["status"], r["output"]) for r in journal["run"]}
    assert outputs["diagnose"] == ("succeeded", "host_oom_killer")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_an_interrupted_chaos_run_leaves_no_fault_behind(stack: LocalStack, tmp_path: Path, sig: int) -> None:
    """Stock `chaos run` skips rollbacks when interrupted; the experiment control still undoes the fault."""
    exp = json.loads((EXPERIMENTS / "serving-cuda-oom.json").read_text())
    exp["method"] = [
        {
            **exp["method"][0],
            "provider": {
                **exp["method"][0]["provider"],
                "arguments": {
                    "kind": "slow_kernel",
                    "params": {"delay_s": 0.05},
                    "base_url": "${serving_url}",
                },
            },
        },
        {
            "type": "action",
            "name": "long-wait",
            "provider": {"type": "process", "path": "sleep", "arguments": "60"},
        },
    ]
    path = tmp_path / "interrupted.json"
    path.write_text(json.dumps(exp))
    env = {**os.environ, "GPUOBS_CHAOS_SERVING_URL": stack.target.serving_url}
    chaos = Path(sys.executable).with_name("chaos")
    proc = subprocess.Popen(
        [str(chaos), "--no-version-check", "run", str(path)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=like_a_terminal,
    )
    url = f"{stack.target.serving_url}/admin/faults"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "slow_kernel" not in _get_json(url)["active"]:
            time.sleep(0.2)
        assert "slow_kernel" in _get_json(url)["active"], "the fault never went in"
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _get_json(url)["active"] == {}


def _get_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return dict(json.loads(resp.read()))


def test_gameday_verb_prints_the_json_rows(stack: LocalStack, artifacts: Path) -> None:
    t = stack.target
    tmp_path = artifacts / "gameday-verb"
    shutil.rmtree(tmp_path, ignore_errors=True)  # kept after the run: journal, chaostoolkit.log, reports
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuobs",
            "gameday",
            "serving-cuda-oom",
            "--json",
            "--out",
            str(tmp_path),
            "--serving-url",
            t.serving_url,
            "--exporter-url",
            t.exporter_url,
            "--serve-log",
            t.serve_log,
            "--kernel-log",
            t.kernel_log,
            "--exporter-log",
            t.exporter_log,
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = json.loads(proc.stdout)
    keys = {
        "experiment",
        "expected_signature",
        "diagnosed_signature",
        "detect_s",
        "diagnose_s",
        "recover_s",
        "mttr_s",
        "requests_lost",
        "passed",
    }
    assert len(rows) == 1 and keys <= set(rows[0])
    assert rows[0]["diagnosed_signature"] == "cuda_oom_capacity" and rows[0]["passed"] is True
    assert (tmp_path / "serving-cuda-oom.journal.json").is_file() and (tmp_path / "gameday.html").is_file()


@pytest.mark.skipif(
    shutil.which("chromium") is None, reason="Debian chromium is not installed (make system-deps)"
)
def test_report_renders_every_plot_in_headless_chromium(tmp_path: Path, artifacts: Path) -> None:
    assert OUTCOMES, "the experiments above produced no outcomes"
    page = tmp_path / "gameday.html"
    page.write_text(html_report(OUTCOMES))
    (artifacts / "gameday.md").write_text(markdown_report(OUTCOMES))
    shutil.copy(page, artifacts / "gameday.html")
    text = page.read_text()
    assert not re.search(r"(src|href)\s*=|@import|url\(", text), "the page must fetch nothing"
    base = [
        "chromium",
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=3000",
    ]
    dom = subprocess.run([*base, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = re.findall(r'<svg[^>]*class="timeline"[^>]*data-rendered="(\w+)"', dom.stdout)
    assert rendered == ["true"] * len(OUTCOMES), rendered
    shot = artifacts / "gameday.png"
    subprocess.run(
        [*base, f"--screenshot={shot}", "--window-size=1000,2400", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 10_000
