"""The Prometheus probes and the game day against a server that is not the Prometheus they expect, over real
HTTP on loopback: wrong servers (a proxy's login page, an RBAC refusal, a JSON list, Prometheus-shaped JSON
of another shape, nothing listening) and a real Prometheus (Debian package) without gpuobs's rules.

A reply of another shape used to end a probe with a KeyError or an AttributeError ("'list' object has no
attribute 'get'"), the game day's alert watcher died on its thread with a traceback and the report simply
had no detection time, a NaN query value compared false against every threshold without a word, and an
alert that never fired said only that it did not, although its rule was not loaded at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chaoslib.exceptions import ActivityFailed
from support.prometheus import PrometheusServer, free_port, prometheus_available
from support.web import page_handler, serving

from gpuobs.chaos.gameday import runner
from gpuobs.chaos.incident import current
from gpuobs.chaos.prometheus import probes
from gpuobs.chaos.prometheus.api import check_prometheus, rule_report

GPUOBS = str(Path(sys.executable).parent / "gpuobs")


def _json(status: int, doc: Any) -> tuple[int, str, bytes]:
    return (status, "application/json", json.dumps(doc).encode())


# Each wrong server: (its answer to every path, words the one-line error must carry).
WRONG = {
    "login page": (None, "answered 200 without JSON (is it a Prometheus?)"),
    "rbac refusal": ((403, "text/plain", b"Forbidden (user=anonymous)\n"), "answered 403 without JSON"),
    "json list": (_json(200, [1, 2]), "answered 200 with JSON not of the Prometheus API"),
    "data of another shape": (_json(200, {"status": "success", "data": [1]}), "[1]"),
}


@pytest.fixture(autouse=True)
def fresh_incident() -> Iterator[None]:
    current().reset()
    yield
    current().reset()


def _probe(name: str, url: str) -> None:
    if name == "query_value":
        probes.query_value("up", prometheus_url=url)
    elif name == "alert_firing":
        probes.alert_firing("GpuXidError", prometheus_url=url)
    else:
        probes.wait_for_alert("GpuXidError", timeout_s=1, prometheus_url=url)


@pytest.mark.parametrize("probe", ["query_value", "alert_firing", "wait_for_alert"])
@pytest.mark.parametrize("server", sorted(WRONG))
def test_a_wrong_server_fails_a_probe_in_one_line(server: str, probe: str) -> None:
    answer, words = WRONG[server]
    handler = page_handler() if answer is None else page_handler(answer)
    with serving(handler) as url, pytest.raises(ActivityFailed) as err:
        _probe(probe, url)
    message = str(err.value)
    assert "\n" not in message and url in message, message
    assert words in message, message


def test_nothing_listening_is_named() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ActivityFailed, match="Connection refused"):
        probes.query_value("up", prometheus_url=url)


def test_the_alert_watcher_survives_a_wrong_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """The watcher runs on a thread beside the experiment: a reply of another shape killed it, traceback and
    all."""
    died: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_value))
    with serving(page_handler(_json(200, {"status": "success", "data": [1]}))) as url:
        stop = threading.Event()
        watcher = threading.Thread(target=runner._watch_alerts, args=(url, stop))
        watcher.start()
        current().mark("fault", "test")  # the watcher polls for new alerts once a fault is in
        threading.Timer(0.6, stop.set).start()
        watcher.join(10)
    assert not watcher.is_alive() and died == []


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus with one alerting rule of its own (never firing) and none of gpuobs's."""
    if not prometheus_available():
        pytest.fail("prometheus is not installed: `make system-deps` installs it")
    workdir = tmp_path_factory.mktemp("prometheus")
    rules = workdir / "rules.yml"
    quiet = {"alert": "AlwaysQuiet", "expr": "vector(0) > 1"}
    rules.write_text(json.dumps({"groups": [{"name": "own", "rules": [quiet]}]}))
    with PrometheusServer(workdir, targets=[f"127.0.0.1:{free_port()}"], rule_files=[rules]) as prom:
        yield prom.url


def test_an_alert_without_a_rule_says_so(prometheus: str) -> None:
    with pytest.raises(ActivityFailed) as err:
        probes.wait_for_alert("GpuXidError", timeout_s=0.5, prometheus_url=prometheus)
    assert "has no alerting rule named GpuXidError (1 alerting rules loaded)" in str(err.value)


def test_an_alert_that_stays_quiet_says_what_its_rule_is_doing(prometheus: str) -> None:
    with pytest.raises(ActivityFailed) as err:
        probes.wait_for_alert("AlwaysQuiet", timeout_s=0.5, prometheus_url=prometheus)
    assert "did not fire within 0 s: its rule is inactive, health " in str(err.value)


def test_query_values_from_a_real_prometheus(prometheus: str) -> None:
    assert probes.query_value("vector(3) or vector(1)", prometheus_url=prometheus) == 3.0
    assert probes.query_value("scalar(vector(2))", prometheus_url=prometheus) == 2.0
    assert probes.query_value("up{job='none'}", prometheus_url=prometheus) is None
    assert probes.value_below("up{job='none'}", 1, prometheus_url=prometheus)
    with pytest.raises(ActivityFailed, match=r"query '0/0' is NaN \(1 sample\(s\)\): nothing to compare"):
        probes.value_below("0/0", 1, prometheus_url=prometheus)
    with pytest.raises(ActivityFailed, match="gives a matrix, not an instant vector or a scalar"):
        probes.query_value("up[1m]", prometheus_url=prometheus)
    with pytest.raises(ActivityFailed, match="answered 400: bad_data: "):
        probes.query_value("up{", prometheus_url=prometheus)


def test_the_preflight_tells_a_prometheus_without_gpuobs_rules(prometheus: str) -> None:
    warning = check_prometheus(prometheus, {"GpuXidError", "ServingQueueSaturation"})
    assert warning is not None and "has none of gpuobs's 2 alerting rules loaded (1 others)" in warning
    assert check_prometheus(prometheus, {"AlwaysQuiet"}) is None


def test_the_preflight_warns_when_the_rules_cannot_be_read() -> None:
    """A Prometheus-compatible query API whose rules endpoint is not served (a query frontend without a
    ruler) still lets a game day measure recovery: a warning, not a refusal."""
    one = {"resultType": "vector", "result": [{"metric": {}, "value": [0, "1"]}]}
    query = {"/api/v1/query": _json(200, {"status": "success", "data": one})}
    with serving(page_handler((404, "text/plain", b"404 page not found\n"), query)) as url:
        warning = check_prometheus(url, {"GpuXidError"})
    assert warning is not None and "its alerting rules could not be read" in warning
    assert "/api/v1/rules answered 404" in warning


def test_the_game_day_refuses_a_prometheus_url_that_is_not_one(tmp_path: Path) -> None:
    """`gpuobs gameday --serving-url ... --prometheus-url <a login page>`: refused before any fault or folder,
    one line naming the flag (the alerts would never have marked a detection, and nobody would have known)."""
    with serving(page_handler()) as url:
        done = subprocess.run(
            [GPUOBS, "gameday", "serving-cuda-oom", "--out", str(tmp_path / "out"),
             "--serving-url", f"http://127.0.0.1:{free_port()}", "--prometheus-url", url],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "TERM": "dumb", "COLUMNS": "300", "GPUOBS_CONFIG": os.devnull},
        )
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    said = " ".join(done.stderr.split())
    assert f"--prometheus-url: {url}/api/v1/query answered 200 without JSON" in said, said
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()


def test_the_preflight_finds_the_rules_the_dashboards_write(tmp_path: Path) -> None:
    """Producer and consumer together: the alerting rules `gpuobs.dashboards` generates (as the game day's own
    stack writes them), loaded by a real Prometheus, satisfy the preflight that names gpuobs's alerts, with no
    warning. A rename on either side (an alert's name, the set the preflight asks for) fails here."""
    from gpuobs.chaos.gameday.stack import alert_rules as write_rules
    from gpuobs.dashboards.options import Options
    from gpuobs.dashboards.rules.alerts import alert_rules

    if not prometheus_available():
        pytest.fail("prometheus is not installed: `make system-deps` installs it")
    rules = write_rules(tmp_path)
    names = {r.name for r in alert_rules(Options())}
    with PrometheusServer(tmp_path, targets=[f"127.0.0.1:{free_port()}"], rule_files=rules) as prom:
        assert check_prometheus(prom.url, names) is None
        assert "has no alerting rule named" not in rule_report(prom.url, "GpuXidError")
