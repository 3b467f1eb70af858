"""TLS for the exporter's web config: the `tls_server_config` model and the server SSLContext built
from it, rebuilt on the next handshake after its certificate files change (cert-manager rotation)."""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuobs.errors import InputError

__all__ = [
    "CLIENT_AUTH",
    "GO_CIPHERS",
    "TLS13_CIPHERS",
    "TLS_VERSIONS",
    "UNVERIFIED_CLIENT_AUTH",
    "ReloadingContext",
    "TLSServerConfig",
    "build_context",
]

logger = logging.getLogger(__name__)

TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}

# Go's crypto/tls names (those tls.CipherSuites() lists as secure) -> OpenSSL names. TLS 1.3
# suites are not configurable, in Go as in OpenSSL's cipher string, so they are accepted and skipped.
GO_CIPHERS = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
}
TLS13_CIPHERS = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}

CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
UNVERIFIED_CLIENT_AUTH = {"RequestClientCert", "RequireAnyClientCert"}


@dataclass(frozen=True)
class TLSServerConfig:
    """`tls_server_config` with file paths resolved and inline PEM kept as text."""

    cert_file: Path | None = None
    key_file: Path | None = None
    cert: str | None = None
    key: str | None = field(default=None, repr=False)
    client_auth_type: str = "NoClientCert"
    client_ca_file: Path | None = None
    client_ca: str | None = None
    client_allowed_sans: tuple[str, ...] = ()
    min_version: str = "TLS12"
    max_version: str = "TLS13"
    cipher_suites: tuple[str, ...] = ()
    prefer_server_cipher_suites: bool = True

    def watched_files(self) -> tuple[Path, ...]:
        """The files whose change triggers a reload of the certificates."""
        return tuple(p for p in (self.cert_file, self.key_file, self.client_ca_file) if p is not None)


class ReloadingContext:
    """An SSLContext whose certificate chain follows its files: checked at each handshake (one stat)."""

    def __init__(self, tls: TLSServerConfig, source: str) -> None:
        self.tls = tls
        self.source = source
        self._stamp = self._file_stamp()
        self.outer = build_context(tls, source)
        self.current = self.outer
        self._lock = threading.Lock()
        if tls.watched_files():
            self.outer.sni_callback = self._on_client_hello

    def _file_stamp(self) -> tuple[tuple[int, int], ...]:
        stamps = []
        for path in self.tls.watched_files():
            try:
                st = os.stat(path)
                stamps.append((st.st_mtime_ns, st.st_size))
            except OSError:
                stamps.append((-1, -1))
        return tuple(stamps)

    def _on_client_hello(self, sock: Any, server_name: str | None, ctx: ssl.SSLContext) -> None:
        stamp = self._file_stamp()
        with self._lock:
            if stamp != self._stamp:
                self._stamp = stamp
                try:
                    self.current = build_context(self.tls, self.source)
                    logger.info("TLS certificates of %s reloaded", self.source)
                except InputError as exc:
                    logger.warning("TLS certificates changed but do not load (%s); serving the "
                                   "previous ones", exc)
            current = self.current
        if current is not ctx:
            sock.context = current


def _pem_file(pem: str, directory: str) -> str:
    fd, name = tempfile.mkstemp(prefix="gpuobs-tls-", suffix=".pem", dir=directory)
    with os.fdopen(fd, "w") as handle:
        handle.write(pem)
    return name


def build_context(tls: TLSServerConfig, source: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.minimum_version = TLS_VERSIONS[tls.min_version]
        ctx.maximum_version = TLS_VERSIONS[tls.max_version]
    except ValueError as exc:
        raise InputError(f"{source}: TLS versions {tls.min_version}..{tls.max_version}: {exc}") from exc
    if tls.cipher_suites:
        names = [GO_CIPHERS[name] for name in tls.cipher_suites if name in GO_CIPHERS]
        if names:
            try:
                ctx.set_ciphers(":".join(names))
            except ssl.SSLError as exc:
                raise InputError(f"{source}: cipher_suites: none usable here ({exc})") from exc
    if tls.prefer_server_cipher_suites:
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    with tempfile.TemporaryDirectory(prefix="gpuobs-tls-") as tmp:  # only for inline PEM
        certfile = str(tls.cert_file) if tls.cert_file else _pem_file(tls.cert or "", tmp)
        keyfile = str(tls.key_file) if tls.key_file else _pem_file(tls.key or "", tmp)
        try:
            # An encrypted key must fail here, not prompt on a terminal that a daemon does not have.
            ctx.load_cert_chain(certfile, keyfile, password=lambda: b"")
        except FileNotFoundError as exc:
            raise InputError(f"{source}: TLS certificate or key file not found: {exc.filename}") from exc
        except (ssl.SSLError, OSError) as exc:
            raise InputError(f"{source}: cannot load the TLS certificate/key "
                             f"({tls.cert_file or 'inline cert'}, {tls.key_file or 'inline key'}): "
                             f"{exc}") from exc
    ctx.verify_mode = CLIENT_AUTH[tls.client_auth_type]
    if tls.client_ca_file or tls.client_ca:
        try:
            if tls.client_ca_file:
                ctx.load_verify_locations(cafile=str(tls.client_ca_file))
            else:
                ctx.load_verify_locations(cadata=tls.client_ca)
        except FileNotFoundError as exc:
            raise InputError(f"{source}: client_ca_file not found: {tls.client_ca_file}") from exc
        except (ssl.SSLError, OSError, ValueError) as exc:
            raise InputError(f"{source}: cannot load the client CA: {exc}") from exc
    return ctx
