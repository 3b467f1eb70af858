"""Web-config (exporter-toolkit format): real HTTPS on loopback, certificates made here, bcrypt basic auth."""

from __future__ import annotations

import base64
import datetime
import http.client
import http.server
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bcrypt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from gpuobs.errors import InputError
from gpuobs.exporters.sidecar.webconfig import load_web_config
from gpuobs.exporters.sidecar.webserver import serve_with_web_config

PASSWORD = "s3cret-scrape"
HASH = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode().replace("$2b$", "$2y$", 1)


# -- a small PKI made with `cryptography` ----------------------------------------------------------


@dataclass
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_client_cert: Path
    other_client_key: Path
    make_leaf: Callable[[str, list[x509.GeneralName], Path, Path], None]


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("pki")
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder().subject_name(_name("gpuobs test CA")).issuer_name(_name("gpuobs test CA"))
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (d / "ca.crt").write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))

    def make_leaf(common_name: str, sans: list[x509.GeneralName], cert_path: Path, key_path: Path) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                               serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    make_leaf("localhost", [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
              d / "server.crt", d / "server.key")
    make_leaf("prometheus", [x509.DNSName("prometheus.monitoring.svc")], d / "client.crt", d / "client.key")
    make_leaf("intruder", [x509.DNSName("intruder.example")], d / "other.crt", d / "other.key")
    return Pki(d / "ca.crt", d / "server.crt", d / "server.key", d / "client.crt", d / "client.key",
               d / "other.crt", d / "other.key", make_leaf)


# -- a real ThreadingHTTPServer on loopback --------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"gpuobs_up 1\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., int]]:
    """Factory: write a web-config YAML, start a real server with it, return the port."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(yaml_text: str, **kwargs: Any) -> int:
        path = tmp_path / f"web{len(servers)}.yml"
        path.write_text(yaml_text)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        serve_with_web_config(server, load_web_config(path), **kwargs)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return int(server.server_address[1])

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _auth(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def _https_get(port: int, context: ssl.SSLContext, path: str = "/metrics",
               headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=5)
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def _client_context(pki: Pki, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    if cert is not None:
        ctx.load_cert_chain(str(cert), str(key))
    return ctx


def _tls_auth_yaml(pki: Pki, extra_tls: str = "") -> str:
    return f"""
tls_server_config:
  cert_file: {pki.server_cert}
  key_file: {pki.server_key}
{extra_tls}
http_server_config:
  headers:
    X-Content-Type-Options: nosniff
    X-Frame-Options: deny
basic_auth_users:
  prometheus: '{HASH}'
"""


# -- end to end over real HTTPS ----------------------------------------------------------------------


def test_https_with_basic_auth_end_to_end(pki: Pki, serve: Callable[..., int]) -> None:
    port = serve(_tls_auth_yaml(pki), unauthenticated_paths={"/healthz"})
    ctx = _client_context(pki)

    ok = _https_get(port, ctx, headers=_auth("prometheus", PASSWORD))
    assert ok.status == 200
    assert ok.getheader("X-Content-Type-Options") == "nosniff"
    assert ok.getheader("X-Frame-Options") == "deny"

    for headers in ({}, _auth("prometheus", "wrong"), _auth("mallory", PASSWORD),
                    {"Authorization": "Basic !!!not-base64"}, {"Authorization": "Bearer abc"}):
        refused = _https_get(port, ctx, headers=headers)
        assert refused.status == 401, headers
        assert (refused.getheader("WWW-Authenticate") or "").startswith("Basic")
        assert refused.getheader("X-Content-Type-Options") == "nosniff"

    # the liveness probe path is exempt, the rest is not
    assert _https_get(port, ctx, "/healthz").status == 200
    assert _https_get(port, ctx, "/healthz/../metrics").status == 401


def test_plain_http_and_unknown_ca_are_refused(pki: Pki, serve: Callable[..., int]) -> None:
    port = serve(_tls_auth_yaml(pki))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    with pytest.raises((http.client.HTTPException, ConnectionError)):
        conn.request("GET", "/metrics", headers=_auth("prometheus", PASSWORD))
        conn.getresponse().read()
    conn.close()
    with pytest.raises(ssl.SSLCertVerificationError):
        _https_get(port, ssl.create_default_context(), headers=_auth("prometheus", PASSWORD))
    # the server is still healthy after both
    assert _https_get(port, _client_context(pki), headers=_auth("prometheus", PASSWORD)).status == 200


def test_a_stalled_client_does_not_block_others(pki: Pki, serve: Callable[..., int]) -> None:
    port = serve(_tls_auth_yaml(pki), handshake_timeout_s=2.0)
    stalled = socket.create_connection(("127.0.0.1", port))  # connects, never says hello
    try:
        started = time.monotonic()
        assert _https_get(port, _client_context(pki), headers=_auth("prometheus", PASSWORD)).status == 200
        assert time.monotonic() - started < 1.5
    finally:
        stalled.close()


def test_mutual_tls_and_allowed_sans(pki: Pki, serve: Callable[..., int]) -> None:
    extra = (f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {pki.ca}\n"
             "  client_allowed_sans: [prometheus.monitoring.svc]\n")
    port = serve(_tls_auth_yaml(pki, extra))
    good = _client_context(pki, pki.client_cert, pki.client_key)
    assert _https_get(port, good, headers=_auth("prometheus", PASSWORD)).status == 200
    for ctx in (_client_context(pki), _client_context(pki, pki.other_client_cert, pki.other_client_key)):
        with pytest.raises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
            _https_get(port, ctx, headers=_auth("prometheus", PASSWORD))


def test_min_version_is_enforced(pki: Pki, serve: Callable[..., int]) -> None:
    port = serve(_tls_auth_yaml(pki, "  min_version: TLS13\n"))
    old = _client_context(pki)
    old.maximum_version = ssl.TLSVersion.TLSv1_2
    with pytest.raises(ssl.SSLError):
        _https_get(port, old, headers=_auth("prometheus", PASSWORD))
    assert _https_get(port, _client_context(pki), headers=_auth("prometheus", PASSWORD)).status == 200


def test_rotated_certificate_is_served_on_the_next_connection(pki: Pki, serve: Callable[..., int],
                                                              tmp_path: Path) -> None:
    cert, key = tmp_path / "rot.crt", tmp_path / "rot.key"
    sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    pki.make_leaf("before", sans, cert, key)
    port = serve(f"tls_server_config:\n  cert_file: {cert.name}\n  key_file: {key.name}\n")

    def served_common_name() -> str:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
                _client_context(pki).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            peer = tls.getpeercert()
        assert peer is not None
        return dict(x[0] for x in peer["subject"])["commonName"]

    assert served_common_name() == "before"
    time.sleep(0.01)  # a distinct mtime
    pki.make_leaf("after", sans, cert, key)
    assert served_common_name() == "after"


def test_rate_limit_answers_429(serve: Callable[..., int]) -> None:
    port = serve("rate_limit:\n  interval: 1h\n  burst: 2\n")
    statuses = []
    for _ in range(3):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/metrics")
        statuses.append(conn.getresponse().status)
        conn.close()
    assert statuses == [200, 200, 429]


# -- the checker itself ------------------------------------------------------------------------------


def test_successful_checks_are_cached_and_failures_are_not(tmp_path: Path) -> None:
    slow_hash = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(10)).decode()
    path = tmp_path / "web.yml"
    path.write_text(f"basic_auth_users:\n  prometheus: '{slow_hash}'\n")
    config = load_web_config(path)
    assert config.auth_required and config.users == ["prometheus"]
    good = _auth("prometheus", PASSWORD)["Authorization"]
    bad = _auth("prometheus", "nope")["Authorization"]

    def fastest(header: str, runs: int = 2) -> tuple[bool, float]:
        # the fastest of a few runs: load on a shared CI machine only ever adds time
        results, times = set(), []
        for _ in range(runs):
            started = time.perf_counter()
            results.add(config.check_authorization(header))
            times.append(time.perf_counter() - started)
        assert len(results) == 1
        return results.pop(), min(times)

    def bcrypt_once() -> float:
        started = time.perf_counter()
        bcrypt.checkpw(b"whatever", slow_hash.encode())
        return time.perf_counter() - started

    bcrypt_s = min(bcrypt_once(), bcrypt_once())  # what one comparison costs here (cost 10)
    assert config.check_authorization(good)  # the first success pays bcrypt, then it is cached
    cached_ok, cached_s = fastest(good, runs=5)
    assert cached_ok and cached_s < bcrypt_s / 10, (bcrypt_s, cached_s)
    # failures are never cached, and unknown users pay a dummy bcrypt: timing tells nothing apart
    for header in (bad, _auth("nobody", PASSWORD)["Authorization"]):
        ok, seconds = fastest(header)
        assert not ok and seconds > bcrypt_s / 3, (header, bcrypt_s, seconds)
    assert not config.check_authorization(_auth("prometheus", "x" * 100)["Authorization"])
    assert not config.check_authorization(None)


def test_no_users_means_no_auth(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text("http_server_config:\n  headers:\n    Strict-Transport-Security: max-age=31536000\n")
    config = load_web_config(path)
    assert not config.auth_required
    assert config.check_authorization(None)
    assert config.ssl_context() is None
    assert config.headers == {"Strict-Transport-Security": "max-age=31536000"}


def test_empty_file_is_an_empty_config(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text("")
    config = load_web_config(path)
    assert config.tls is None and not config.auth_required and config.headers == {}


def test_inline_pem_and_relative_paths(pki: Pki, tmp_path: Path) -> None:
    inline = tmp_path / "inline.yml"
    cert_pem = "\n".join("    " + line for line in pki.server_cert.read_text().splitlines())
    key_pem = "\n".join("    " + line for line in pki.server_key.read_text().splitlines())
    inline.write_text(f"tls_server_config:\n  cert: |\n{cert_pem}\n  key: |\n{key_pem}\n")
    assert isinstance(load_web_config(inline).ssl_context(), ssl.SSLContext)

    relative = pki.ca.parent / "relative.yml"
    relative.write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n")
    config = load_web_config(relative)
    assert config.tls is not None and config.tls.cert_file == pki.server_cert


@pytest.mark.parametrize(("text", "message"), [
    ("tls_server_config: [1, 2\n", "invalid YAML at line"),
    ("- just\n- a list\n", "must be a mapping"),
    ("basic_auth_user:\n  a: b\n", "unknown field(s) in the top level: basic_auth_user"),
    ("basic_auth_users:\n  alice: plaintext\n", "is not a bcrypt hash"),
    ("basic_auth_users:\n  alice: '$2b$10$tooshort'\n", "is not a bcrypt hash"),
    ("tls_server_config:\n  key_file: {key}\n", "needs cert_file"),
    ("tls_server_config:\n  cert_file: {cert}\n", "needs key_file"),
    ("tls_server_config:\n  cert_file: /nonexistent/server.crt\n  key_file: {key}\n", "does not exist"),
    ("tls_server_config:\n  cert_file: {key}\n  key_file: {key}\n", "cannot load the TLS certificate"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n  client_ca_file: {ca}\n",
     "client_auth_type is NoClientCert"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n"
     "  client_auth_type: RequireAndVerifyClientCert\n", "needs client_ca_file"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n  client_auth_type: RequireAnyClientCert\n",
     "without verifying"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n  min_version: TLS14\n",
     "min_version 'TLS14'"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n"
     "  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n",
     "unsupported TLS_RSA_WITH_RC4_128_SHA"),
    ("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n  curve_preferences: [X25519]\n",
     "curve_preferences is not supported"),
    ("http_server_config:\n  headers:\n    X-Frame-Options: allow\n", "invalid value for X-Frame-Options"),
    ("http_server_config:\n  headers:\n    Server: nginx\n", "can not be configured"),
    ("rate_limit:\n  interval: soon\n  burst: 2\n", "not a duration"),
])
def test_bad_config_is_a_clear_input_error(pki: Pki, tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "web.yml"
    path.write_text(text.format(cert=pki.server_cert, key=pki.server_key, ca=pki.ca))
    with pytest.raises(InputError) as info:
        load_web_config(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_web_config(tmp_path / "absent.yml")
    with pytest.raises(InputError, match="not a regular file"):
        load_web_config(tmp_path)  # a directory


def test_supported_go_cipher_suites_apply(pki: Pki, serve: Callable[..., int]) -> None:
    port = serve(_tls_auth_yaml(pki, "  max_version: TLS12\n  cipher_suites:\n"
                                     "    - TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384\n"))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            _client_context(pki).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        cipher = tls.cipher()
    assert cipher is not None and cipher[0] == "ECDHE-ECDSA-AES256-GCM-SHA384"
    assert _https_get(port, _client_context(pki), headers=_auth("prometheus", PASSWORD)).status == 200
