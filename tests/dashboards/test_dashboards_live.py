"""Live: a real Prometheus scrapes `gpuobs export` (a simulated 4-GPU node) and `gpuobs serve` under load with
the generated rules loaded; every panel query of every generated dashboard returns data; faults injected
into the exporter fire their alerts, and the real Alertmanager receives them with their signatures.

Rules are built with test-only windows (`for` 2 s, events over 1 minute); everything else is the
default build. Nothing sleeps a fixed time: every wait polls with a generous deadline.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.alertmanager import Alertmanager, JobsPrometheus, http_post_json
from support.exporter import ExporterProcess
from support.serve import ServeProcess, http_json

from gpuobs.dashboards.build import RULES_DIR, build
from gpuobs.dashboards.options import Options
from gpuobs.dashboards.rules import recording as rec
from gpuobs.names import kernel as k
from gpuobs.names import serving as s

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

OPTIONS = Options(for_override="2s", event_window="1m")
SUBSTITUTIONS = {
    "$__rate_interval": "10s",
    "$__interval": "5s",
    "$__range": "5m",
}
_VARIABLE = re.compile(r"\$(\w+)")
_LABEL_VALUES = re.compile(r"^label_values\((.+),\s*(\w+)\)$")


def _substitute(expr: str) -> str:
    """Grafana's variables as a dashboard opened on "All" would send them: built-ins as short windows
    (the scrape interval is 0.5 s), every template variable as the regex `.*`."""
    for name, value in SUBSTITUTIONS.items():
        expr = expr.replace(name, value)
    return _VARIABLE.sub(".*", expr)


def _panel_queries(board: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for panel in board["panels"]:
        for inner in [panel, *(panel.get("panels") or [])]:
            for target in inner.get("targets") or []:
                out.append((f"{board['uid']} / {inner['title']}", target["expr"]))
    return out


def _poll(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if not last:
            return None
        time.sleep(interval)
    pytest.fail(f"{what} after {timeout:.0f} s: {last}")


@pytest.fixture
def load(tmp_path: Path) -> Iterator[ServeProcess]:
    """`gpuobs serve` (embedded tiny model, CPU) with a client sending short completions until the end;
    every kernel launch is timed (sample rate 1), so the per-kernel time has data from the first request."""
    serve = ServeProcess(tmp_path / "serve", "--device", "cpu", "--log-level", "warning", grpc=False,
                         env={k.SPAN_SAMPLE_ENV: "1"}).start()
    status, models = http_json("GET", f"{serve.url}/v1/models")
    assert status == 200, models
    model = models["data"][0]["id"]
    stop = threading.Event()
    sent: list[int] = []

    def client() -> None:
        n = 0
        while not stop.is_set():
            try:
                http_post_json(f"{serve.url}/v1/completions",
                               {"model": model, "prompt": f"hello {n}", "max_tokens": 6}, timeout=30)
                n += 1
                sent.append(n)
            except OSError:
                if stop.is_set():
                    return
                raise
            stop.wait(0.05)

    thread = threading.Thread(target=client, daemon=True)
    thread.start()
    try:
        yield serve
    finally:
        stop.set()
        thread.join(timeout=35)
        serve.stop()
    assert sent, "the load client completed no request"


def test_dashboards_return_data_and_faults_reach_alertmanager(
    tmp_path: Path,
    load: ServeProcess,
    sim_exporter: Callable[[int], ExporterProcess],
    alertmanager: Alertmanager,
    jobs_prometheus: Callable[..., JobsPrometheus],
) -> None:
    result = build(tmp_path / "out", OPTIONS)
    boards = [json.loads(f.path.read_text()) for f in result.of_kind("dashboard")]
    assert len(boards) == 4
    exporter = sim_exporter(4)
    serve_target = load.url.removeprefix("http://")
    prom = jobs_prometheus(
        {OPTIONS.exporter_job: [exporter.target], OPTIONS.serving_job: [serve_target]},
        alertmanager.url.removeprefix("http://"),
        interval="500ms",
        rule_files=sorted((tmp_path / "out" / RULES_DIR).glob("*.yml")),
    )
    prom.wait_for_up(timeout=40)
    # Rates need two scrapes of traffic; recorded quantiles need an evaluation after that.
    prom.wait_for(f"sum(rate({s.REQUEST_SUCCESS.exposed_native}[10s])) > 0", timeout=40)

    # Every panel query of every dashboard returns data on the healthy fleet.
    queries = [(where, _substitute(expr)) for board in boards for where, expr in _panel_queries(board)]
    assert len(queries) > 100
    _poll(lambda: [f"{where}: {expr}" for where, expr in queries if not prom.query(expr)], 40,
          "panel queries without data")
    # Zero fallbacks hide a missing series: the GPU time per kernel is really recorded from serve's
    # sampled durations (host time of the reference ops on this CPU server), not the fallback 0.
    kernel_time = f'{rec.KERNEL_GPU_SECONDS_RATE}{{{k.BACKEND_LABEL}="{k.BACKEND_TORCH}"}} > 0'
    recorded = prom.wait_for(kernel_time, timeout=40)
    assert {r["metric"]["kernel"] for r in recorded} >= {"rms_norm", "silu_and_mul", "paged_attention_decode"}
    # The variables' label_values() queries find their values too.
    for board in boards:
        for variable in board["templating"]["list"]:
            match = _LABEL_VALUES.match(str(variable.get("query", "")))
            if match:
                found = prom.query(_substitute(match.group(1)))
                label = match.group(2)
                assert any(label in r["metric"] for r in found), f"{board['uid']} ${variable['name']}"
    # A healthy fleet under light load fires nothing.
    firing = [a["labels"]["alertname"] for a in prom.alerts() if a["state"] == "firing"]
    assert not firing, f"alerts fire on a healthy fleet: {firing}"

    exporter.fault(fault="fall_off_bus", gpu=1)
    exporter.fault(fault="temperature_ramp", gpu=2, delta_c=70, seconds=0)
    exporter.fault(fault="ecc", gpu=3, uncorrected=1)
    exporter.fault(fault="xid", gpu=0, code=13)
    expected = {
        ("GpuFallenOffBus", "1"): "xid_79_fallen_off_bus",
        ("GpuThermalThrottling", "2"): "thermal_throttling",
        ("GpuEccUncorrectableErrors", "3"): "xid_48_double_bit_ecc",
        ("GpuRowRemapPending", "3"): "gpu_reset_required",
        ("GpuXidError", "0"): "xid_13_graphics_exception",
    }

    def missing_in(alerts: list[dict[str, Any]]) -> list[tuple[str, str]]:
        seen = {(a["labels"]["alertname"], a["labels"].get("gpu", "")): a["labels"] for a in alerts}
        out = []
        for key, signature in expected.items():
            labels = seen.get(key)
            if labels is None or labels.get("signature") != signature or "severity" not in labels:
                out.append(key)
        return out

    _poll(lambda: missing_in([a for a in prom.alerts() if a["state"] == "firing"]), 60,
          "alerts not firing in Prometheus")
    _poll(lambda: missing_in(alertmanager.alerts()), 30, "alerts not received by Alertmanager")
    received = {(a["labels"]["alertname"], a["labels"].get("gpu", "")): a for a in alertmanager.alerts()}
    fell = received[("GpuFallenOffBus", "1")]
    assert fell["labels"]["severity"] == "critical"
    assert fell["annotations"]["runbook_url"].endswith("/GpuFallenOffBus.md")
    assert fell["annotations"]["summary"].startswith("GPU 1 on ")
    assert received[("GpuXidError", "0")]["labels"]["code"] == "13"
    # GPUs without a fault stay quiet.
    quiet = {key for key in received if key[1] and key[1] not in {"0", "1", "2", "3"}}
    assert not quiet, quiet
