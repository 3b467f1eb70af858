"""Basic auth under abuse: a bcrypt cost that would stall start-up, and failed logins against the rate limit.

Issue 10 items 6 and 8. A cost-31 hash hung the exporter's start-up for hours before its port opened
(a dummy hash of that cost was computed for timing-safe checks); now a cost above the cap is refused
with a one-line error and exit 2, and nothing slow runs before the port opens. With `rate_limit` set, a
flood of failed logins used to spend the shared token bucket, so `/healthz` (the kubelet's probe) and
the real scraper got 429 too; now failed logins only spend their own client's budget.
"""

from __future__ import annotations

import base64
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest
from support.exporter import SIM_NODE, ExporterProcess

from gpuobs.errors import InputError
from gpuobs.exporters.sidecar.service import Exporter, ExporterConfig
from gpuobs.exporters.sidecar.webconfig import MAX_BCRYPT_COST, load_web_config

PASSWORD = "s3cret-scrape"
HASH = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()


def _hash_shaped(cost: int) -> str:
    """A string in bcrypt's format with this cost: computing a real one of cost 31 takes hours."""
    return f"$2b${cost:02d}$" + "abcdefghijklmnopqrstuv" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ01234"


def test_cost_above_the_cap_is_refused_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text(f"basic_auth_users:\n  prometheus: '{_hash_shaped(MAX_BCRYPT_COST + 1)}'\n")
    with pytest.raises(InputError) as info:
        load_web_config(path)
    message = str(info.value)
    assert f"cost {MAX_BCRYPT_COST + 1}" in message and f"at most {MAX_BCRYPT_COST}" in message
    assert str(path) in message and "prometheus" in message and "\n" not in message


def test_nothing_slow_before_the_port_opens(tmp_path: Path) -> None:
    """Loading a config whose hash has the highest cost allowed computes no bcrypt at all (the old code
    hashed a dummy password at that cost: about a second at 14, hours at 31)."""
    path = tmp_path / "web.yml"
    path.write_text(f"basic_auth_users:\n  prometheus: '{_hash_shaped(MAX_BCRYPT_COST)}'\n")
    started = time.perf_counter()
    config = load_web_config(path)
    assert time.perf_counter() - started < 0.5  # a millisecond or so; bcrypt at cost 14 is ~1 s
    assert config.auth_required


def test_exporter_with_a_cost_31_hash_exits_2_at_once(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text(f"basic_auth_users:\n  prometheus: '{_hash_shaped(31)}'\n")
    started = time.monotonic()
    exporter = ExporterProcess(*SIM_NODE, "--gpus", "1", "--web-config", str(path), log_dir=tmp_path)
    proc = exporter.run(timeout=60)  # the old exporter was still hashing after hours
    stderr = proc.stderr.decode()
    assert proc.returncode == 2, stderr
    assert "Traceback" not in stderr and "cost 31" in stderr
    assert [line for line in stderr.splitlines() if "error" in line.lower()] == [stderr.strip()]
    assert time.monotonic() - started < 30


# -- failed logins against the rate limit ---------------------------------------------------------------


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[str]:
    """An exporter with basic auth and a token bucket that does not refill during the test."""
    path = tmp_path / "web.yml"
    path.write_text(f"basic_auth_users:\n  prometheus: '{HASH}'\nrate_limit:\n  interval: 1h\n  burst: 5\n")
    exp = Exporter(
        ExporterConfig(backend="sim", gpus=1, port=0, web_config=str(path), pod_resources_socket="none")
    ).start()
    yield exp.url
    exp.stop()


def _status(url: str, password: str | None = None) -> int:
    req = urllib.request.Request(url)
    if password is not None:
        token = base64.b64encode(f"prometheus:{password}".encode()).decode()
        req.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


def test_failed_logins_starve_neither_healthz_nor_the_scraper(guarded: str) -> None:
    assert _status(f"{guarded}/metrics", PASSWORD) == 200  # the scraper, before the attack
    flood = [_status(f"{guarded}/metrics", f"guess-{i}") for i in range(30)]
    flood += [_status(f"{guarded}/metrics") for _ in range(30)]  # no credentials at all
    assert set(flood) <= {401, 429} and flood.count(401) >= 30, flood
    assert [_status(f"{guarded}/healthz") for _ in range(10)] == [200] * 10, "liveness probe starved"
    assert _status(f"{guarded}/metrics", PASSWORD) == 200, "authenticated scraper starved"


def test_a_clients_failed_logins_spend_only_its_own_budget(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text(f"basic_auth_users:\n  prometheus: '{HASH}'\nrate_limit:\n  interval: 1h\n  burst: 3\n")
    config = load_web_config(path)
    wrong = "Basic " + base64.b64encode(b"prometheus:nope").decode()
    right = "Basic " + base64.b64encode(f"prometheus:{PASSWORD}".encode()).decode()
    assert [config.authorize(wrong, "10.0.0.66") for _ in range(5)] == [401, 401, 401, 429, 429]
    assert config.authorize(right, "10.0.0.7") == 200, "another client's first login still gets through"
    assert config.authorize(right, "10.0.0.66") == 200, "cached good credentials need no login budget"
    assert config.authorize(None, "10.0.0.66") == 401
