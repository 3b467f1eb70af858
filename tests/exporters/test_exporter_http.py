"""The exporter over real HTTP on loopback: endpoints, fault injection, faults that must not take it down."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.exporter import SIM_NODE, ExporterProcess

from gpuobs.exporters.sidecar.service import Exporter, ExporterConfig
from gpuobs.names import exporter as ex
from gpuobs.names import gpu as g


def _get(url: str, timeout: float = 5.0) -> tuple[int, bytes, dict[str, str]]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read(), dict(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, err.read(), dict(err.headers)


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def _samples(body: bytes) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for fam in text_string_to_metric_families(body.decode()):
        for s in fam.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def _value(samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float | None:
    for got, value in samples.get(name, []):
        if all(got.get(k) == v for k, v in labels.items()):
            return value
    return None


@pytest.fixture
def exporter() -> Iterator[Exporter]:
    config = ExporterConfig(
        backend="sim",
        gpus=4,
        naming="native",
        port=0,
        enable_fault_injection=True,
        slow_interval_s=0.1,
        history_interval_s=0.2,
        pod_resources_socket="none",
        host="node-a",
    )
    exp = Exporter(config)
    exp.core.settings = type(exp.core.settings)(
        **{**exp.core.settings.__dict__, "init_backoff_s": 0.05, "xid_wait_s": 0.05}
    )
    exp.start()
    yield exp
    exp.stop()


def _metrics(exp: Exporter) -> dict[str, list[tuple[dict[str, str], float]]]:
    status, body, headers = _get(f"{exp.url}/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    return _samples(body)


def _eventually(fn: Any, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = fn()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.05)


def test_endpoints(exporter: Exporter) -> None:
    m = _metrics(exporter)
    assert _value(m, ex.NVML_UP.native) == 1.0
    assert _value(m, g.GPU_TEMPERATURE.native, gpu="3", host="node-a", model_name="NVIDIA H200") is not None
    assert len({labels["reason"] for labels, _ in m[g.CLOCK_EVENT_ACTIVE.native]}) == len(
        g.CLOCK_EVENT_REASONS
    )
    assert _value(m, ex.COLLECTOR_SUCCESS.native, collector="gpu") == 1.0
    assert _value(m, ex.SCRAPE_DURATION.native, collector="total") is not None
    _eventually(lambda: _value(_metrics(exporter), g.ENERGY.exposed_native, gpu="0"))
    m = _metrics(exporter)
    assert _value(m, g.ENERGY.exposed_native, gpu="0") > 0  # type: ignore[operator]
    assert _value(m, ex.SLOW_FIELD_AGE.native, gpu="0") < 5  # type: ignore[operator]
    assert _value(m, g.TENSOR_ACTIVE.native, gpu="0") is not None, "GPM metrics on the sim backend too"

    status, body, _ = _get(f"{exporter.url}/healthz")
    health = json.loads(body)
    assert status == 200 and health["status"] == "ok" and health["nvml_up"] and health["gpus"] == 4

    _eventually(lambda: len(exporter.core.history) >= 2)
    status, body, _ = _get(f"{exporter.url}/api/history?since=1m")
    hist = json.loads(body)
    assert status == 200 and hist["host"] == "node-a" and len(hist["samples"]) >= 2
    assert hist["samples"][-1]["gpus"][0]["values"][g.MEMORY_USED.native] > 0
    status, body, _ = _get(f"{exporter.url}/api/history?since=1m30s")
    assert status == 200 and len(json.loads(body)["samples"]) >= 2
    # `since` is gpuobs.timeparse's: a naive ISO time is UTC, as in `gpuobs diagnose --start`
    ago = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 600))
    ahead = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + 3600))
    assert len(json.loads(_get(f"{exporter.url}/api/history?since={ago}")[1])["samples"]) >= 2
    assert json.loads(_get(f"{exporter.url}/api/history?since={ahead}")[1])["samples"] == []
    status, body, _ = _get(f"{exporter.url}/api/history?since=garbage")
    assert status == 400 and b"since: invalid time 'garbage'" in body
    status, _, _ = _get(f"{exporter.url}/nope")
    assert status == 404


def test_fault_endpoints_are_off_without_the_flag() -> None:
    exp = Exporter(ExporterConfig(backend="sim", gpus=1, port=0, pod_resources_socket="none")).start()
    try:
        status, body = _post(f"{exp.url}/api/faults", {"fault": "xid", "gpu": 0, "code": 79})
        assert status == 404 and "enable-fault-injection" in body["error"]
        assert _get(f"{exp.url}/api/faults")[0] == 404
    finally:
        exp.stop()


def test_faults_over_http(exporter: Exporter) -> None:
    url = f"{exporter.url}/api/faults"
    assert _post(url, {"fault": "xid", "gpu": 2, "code": 31})[0] == 200
    assert _post(url, {"fault": "xid", "gpu": 2, "code": 31})[0] == 200
    assert _post(url, {"fault": "ecc", "gpu": 1, "corrected": 5})[0] == 200
    assert _post(url, {"fault": "throttle", "gpu": 0, "reason": "hw_slowdown"})[0] == 200
    status, proc = _post(url, {"fault": "process_start", "gpu": 3, "name": "vllm", "gib": 7})
    assert status == 200
    assert _post(url, {"fault": "bogus"})[0] == 400
    assert _post(url, {"gpu": 1})[0] == 400
    m = _eventually(
        lambda: (lambda m: m if _value(m, g.XID_LAST.native, gpu="2") == 31 else None)(_metrics(exporter))
    )
    assert m, "XID 31 never showed up"
    assert _value(m, g.XID_ERRORS.exposed_native, gpu="2", code="31") == 2.0
    assert _value(m, g.ECC_SBE_VOLATILE.exposed_native, gpu="1") == 5.0
    assert _value(m, g.CLOCK_EVENT_ACTIVE.native, gpu="0", reason="hw_slowdown") == 1.0
    assert _value(m, g.CLOCK_EVENT_ACTIVE.native, gpu="1", reason="hw_slowdown") == 0.0
    assert (
        _value(m, g.PROCESS_MEMORY_USED.native, gpu="3", pid=str(proc["pid"]), process_name="vllm")
        == 7 * 2**30
    )
    assert _post(url, {"fault": "process_exit", "pid": proc["pid"]})[0] == 200
    assert _value(_metrics(exporter), g.PROCESS_MEMORY_USED.native, pid=str(proc["pid"])) is None


def test_lost_gpu_and_not_supported_never_500(exporter: Exporter) -> None:
    url = f"{exporter.url}/api/faults"
    assert _post(url, {"fault": "fall_off_bus", "gpu": 1})[0] == 200
    assert _post(url, {"fault": "field_error", "gpu": 2, "field": "fan_speed_ratio"})[0] == 200
    assert (
        _post(url, {"fault": "field_error", "gpu": 3, "field": "power_w", "error": "no_permission"})[0] == 200
    )
    m = _metrics(exporter)
    assert _value(m, ex.GPU_UP.native, gpu="1") == 0.0
    assert [_value(m, ex.GPU_UP.native, gpu=str(i)) for i in (0, 2, 3)] == [1.0, 1.0, 1.0]
    assert _value(m, g.POWER_USAGE.native, gpu="1") is None and _value(m, g.POWER_USAGE.native, gpu="0")
    assert _value(m, g.FAN_SPEED.native, gpu="2") is None, "NotSupported is skipped, never 0"
    assert _value(m, g.FAN_SPEED.native, gpu="3") is not None
    assert _value(m, g.POWER_USAGE.native, gpu="3") is None
    assert _value(m, ex.COLLECTOR_SUCCESS.native, collector="gpu") == 1.0
    # A read that blows up inside the backend: still 200, the part is marked failed.
    assert (
        _post(url, {"fault": "field_error", "gpu": 0, "field": "temperature_c", "error": "unknown"})[0] == 200
    )
    m = _metrics(exporter)
    assert _value(m, ex.COLLECTOR_SUCCESS.native, collector="gpu") == 0.0
    assert _value(m, g.GPU_TEMPERATURE.native, gpu="2") is not None


def test_nvml_failure_serves_nvml_up_0_then_recovers(exporter: Exporter) -> None:
    assert _post(f"{exporter.url}/api/faults", {"fault": "nvml_failure", "init_failures": 3})[0] == 200
    m = _metrics(exporter)
    assert _value(m, ex.NVML_UP.native) == 0.0
    assert _value(m, g.POWER_USAGE.native, gpu="0") is None
    status, body, _ = _get(f"{exporter.url}/healthz")
    assert status == 200 and json.loads(body)["nvml_up"] is False
    m = _eventually(
        lambda: (lambda m: m if _value(m, ex.NVML_UP.native) == 1.0 else None)(_metrics(exporter))
    )
    assert m, "the exporter never re-initialised"
    assert _value(m, ex.NVML_INIT_FAILURES.exposed_native) == 3.0
    assert _value(m, g.POWER_USAGE.native, gpu="0") is not None


def test_promtool_reports_nothing_for_native_names(exporter: Exporter) -> None:
    assert _post(f"{exporter.url}/api/faults", {"fault": "xid", "gpu": 0, "code": 79})[0] == 200
    assert _post(f"{exporter.url}/api/faults", {"fault": "mig", "gpu": 1, "instances": 2})[0] == 200
    _eventually(lambda: exporter.core.read().readings[0].xid_last)
    body = _get(f"{exporter.url}/metrics")[1]
    assert b"gpuobs_mig_device_memory_used_bytes" in body and b"gpuobs_gpu_xid_errors_total" in body
    out = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, timeout=30)
    assert out.returncode == 0 and out.stdout.strip() == b"" and out.stderr.strip() == b"", out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_clean_shutdown_on_signal(sig: signal.Signals) -> None:
    with ExporterProcess(*SIM_NODE, "--gpus", "2") as exp:
        assert _get(f"{exp.url}/metrics")[0] == 200
        rc = exp.stop(sig, timeout=10)
    assert rc == 0, exp.logs()
    assert "export_stopped" in exp.logs() and "Traceback" not in exp.logs()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{exp.url}/healthz", timeout=1)


def test_xid_event_is_one_json_log_line() -> None:
    with ExporterProcess(*SIM_NODE, "--gpus", "2", "--enable-fault-injection") as exp:
        exp.fault(fault="xid", gpu=1, code=79)
        assert _eventually(
            lambda: _value(_samples(_get(f"{exp.url}/metrics")[1]), g.XID_LAST.native, gpu="1") == 79
        )
    assert exp.returncode == 0, exp.logs()
    lines = exp.json_logs()
    xids = [line for line in lines if line.get("event") == "xid"]
    assert len(xids) == 1, lines
    assert xids[0]["xid"] == 79 and xids[0]["gpu"] == 1 and xids[0]["uuid"].startswith("GPU-")
    assert xids[0]["level"] == "error" and "ts" in xids[0] and xids[0]["pci_bus_id"]
