"""`gpuobs export --web-config`: real HTTPS, bcrypt basic auth, a real Prometheus scraping through them."""

from __future__ import annotations

import base64
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import bcrypt
import pytest
from support.certs import self_signed
from support.exporter import SIM_NODE, ExporterProcess
from support.prometheus import PrometheusServer

from gpuobs.names import exporter as ex

PASSWORD = "s3cret-scraper"


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    cert, key = self_signed(tmp_path)
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()
    config = tmp_path / "web.yml"
    config.write_text(
        f"tls_server_config:\n  cert_file: {cert.name}\n  key_file: {key.name}\n"
        f"basic_auth_users:\n  prometheus: '{hashed}'\n"
    )
    ctx = ssl.create_default_context(cafile=str(cert))
    with ExporterProcess(*SIM_NODE, "--gpus", "2", "--web-config", str(config), ssl_context=ctx) as exp:
        yield exp.url, cert
    assert exp.returncode == 0, exp.logs()


def _get(url: str, cert: Path, user: str | None = None, password: str | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url)
    if user is not None:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        req.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(
            req, timeout=5, context=ssl.create_default_context(cafile=str(cert))
        ) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_tls_and_basic_auth(
    secured: tuple[str, Path], prometheus: Callable[..., PrometheusServer], tmp_path: Path
) -> None:
    url, cert = secured
    status, body = _get(f"{url}/metrics", cert, "prometheus", PASSWORD)
    assert status == 200 and f"{ex.NVML_UP.native} 1.0".encode() in body
    assert _get(f"{url}/metrics", cert, "prometheus", "wrong")[0] == 401
    assert _get(f"{url}/metrics", cert)[0] == 401
    assert _get(f"{url}/api/history", cert, "someone", PASSWORD)[0] == 401
    assert _get(f"{url}/healthz", cert)[0] == 200, "liveness probes need no password"
    with pytest.raises(OSError):  # plain HTTP on the TLS port gets no answer
        urllib.request.urlopen(url.replace("https", "http") + "/metrics", timeout=3).read()
    # A real Prometheus scrapes through TLS with the password.
    prom = prometheus(
        targets=[url.removeprefix("https://")],
        scheme="https",
        extra_job_config={
            "tls_config": {"ca_file": str(cert)},
            "basic_auth": {"username": "prometheus", "password": PASSWORD},
        },
    )
    prom.wait_for_up(timeout=40)
    assert prom.wait_for(ex.NVML_UP.native)[0]["value"][1] == "1"
