"""TLS, basic auth and response headers for the exporter, from a Prometheus exporter-toolkit web-config file.

The file format is the one every Prometheus exporter reads with `--web.config.file`
(https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md)::

    tls_server_config:
      cert_file: server.crt          # relative paths are relative to the config file
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert   # optional mTLS
      client_ca_file: ca.crt
      min_version: TLS12
    http_server_config:
      headers:
        X-Content-Type-Options: nosniff
    basic_auth_users:
      prometheus: $2y$10$...          # bcrypt: htpasswd -nBC 10 "" | tr -d ':\\n'
    rate_limit:
      interval: 100ms
      burst: 20

Wiring it into an `http.server` server is one call to `webserver.serve_with_web_config`, before
`serve_forever()`::

    server = ThreadingHTTPServer((address, port), Handler)
    if web_config_path:
        serve_with_web_config(server, load_web_config(web_config_path), unauthenticated_paths={"/healthz"})

which wraps the listening socket with TLS (handshakes run in the connection's thread, bounded by
a timeout, so a stalled client cannot block `accept()`), answers 401 with `WWW-Authenticate` /
429 before the handler's `do_GET` runs, and adds the configured headers to every response.
Certificates are re-read on the next handshake after their files change (cert-manager rotation).

Differences from exporter-toolkit: the `rate_limit` bucket is spent only by requests that got past
basic auth; a wrong password spends its own client's budget of bcrypt checks (same interval and
burst), and the open paths (`/healthz`) are never limited, so a flood of failed logins starves neither
the scraper nor the liveness probe. A bcrypt cost above `MAX_BCRYPT_COST` is refused.
`client_auth_type` `RequestClientCert` and
`RequireAnyClientCert` (client certificates accepted unverified) and `curve_preferences` are
refused with a clear error, since Python's ssl module cannot do the former and silently ignoring
a security setting would be worse; `http2` is accepted and ignored (http.server speaks HTTP/1.1).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import ipaddress
import logging
import os
import re
import secrets
import ssl
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from gpuobs.errors import InputError
from gpuobs.exporters.sidecar.tls import (
    CLIENT_AUTH,
    GO_CIPHERS,
    TLS13_CIPHERS,
    TLS_VERSIONS,
    UNVERIFIED_CLIENT_AUTH,
    ReloadingContext,
    TLSServerConfig,
)
from gpuobs.timeparse import DURATION_FORMS, parse_duration

__all__ = [
    "MAX_BCRYPT_COST",
    "WebConfig",
    "load_web_config",
    "parse_web_config",
]

logger = logging.getLogger(__name__)

_TOP_KEYS = {"tls_server_config", "http_server_config", "basic_auth_users", "rate_limit"}
_TLS_KEYS = {
    "cert", "key", "client_ca", "cert_file", "key_file", "client_auth_type", "client_ca_file",
    "client_allowed_sans", "min_version", "max_version", "cipher_suites",
    "prefer_server_cipher_suites", "curve_preferences",
}
_HTTP_KEYS = {"http2", "headers"}


# Headers exporter-toolkit lets a config set, with their allowed values (None: any value).
_ALLOWED_HEADERS: dict[str, tuple[str, ...] | None] = {
    "Strict-Transport-Security": None,
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": None,
    "Content-Security-Policy": None,
}

_BCRYPT_RE = re.compile(r"^\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}$")
_AUTH_CACHE_SIZE = 256
_LOGIN_CLIENTS = 4096  # clients whose failed-login budget is remembered (least recently seen go first)

MAX_BCRYPT_COST = 14
"""The highest bcrypt cost accepted. exporter-toolkit's guide: cost 10 takes about 70 ms, 18 a few
seconds, and the hash is computed on a user's first request (then cached); every wrong password pays
it again. Above 14 (over a second per check) a few wrong guesses a second keep a core busy; cost 31
takes hours."""



class WebConfig:
    """A parsed web-config: TLS context factory, basic-auth checker, extra headers and rate limit."""

    def __init__(self, tls: TLSServerConfig | None = None, users: dict[str, str] | None = None,
                 headers: dict[str, str] | None = None, rate_limit_interval_s: float = 0.0,
                 rate_limit_burst: int = 0, source: str = "<web config>") -> None:
        self.tls = tls
        self.source = source
        self.headers: dict[str, str] = dict(headers or {})
        self._users = {name.encode(): hashed.encode() for name, hashed in (users or {}).items()}
        self._cache_key = secrets.token_bytes(32)
        self._cache: OrderedDict[bytes, None] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._bcrypt_lock = threading.Lock()
        # Unknown users are checked against the costliest configured hash, so that timing does not
        # tell them apart; nothing is hashed here, so nothing slow runs before the port opens.
        self._dummy_hash = max(self._users.values(), key=lambda h: int(h[4:6]), default=b"")
        self._rate_interval_s = rate_limit_interval_s
        self._rate_burst = rate_limit_burst
        self._bucket = _TokenBucket(rate_limit_interval_s, rate_limit_burst)
        self._login_budgets: OrderedDict[str, _TokenBucket] = OrderedDict()
        self._login_lock = threading.Lock()
        self._context: ssl.SSLContext | None = None
        self._context_lock = threading.Lock()

    def __repr__(self) -> str:
        return (f"WebConfig(source={self.source!r}, tls={self.tls is not None}, "
                f"users={len(self._users)}, headers={sorted(self.headers)})")

    # -- basic auth -------------------------------------------------------------------------------

    @property
    def auth_required(self) -> bool:
        """Whether `basic_auth_users` is non-empty."""
        return bool(self._users)

    @property
    def users(self) -> list[str]:
        """The configured user names (never the hashes)."""
        return sorted(name.decode() for name in self._users)

    def check_authorization(self, header_value: str | None) -> bool:
        """Whether an `Authorization` header value grants access (always True without users).

        Unknown users cost one bcrypt comparison against the costliest configured hash, like known
        ones; successful (user, password) pairs are remembered under a keyed hash, so only the first
        request of a scraper pays bcrypt's cost (about 60 ms at cost 10).
        """
        return self.authorize(header_value) == 200

    def authorize(self, header_value: str | None, client: str | None = None) -> int:
        """The HTTP status an `Authorization` header earns: 200 granted, 401 refused, or 429 when
        `client` (an address) has spent its budget of password checks under `rate_limit`.

        Only a check that needs bcrypt spends that budget, and only the client's own: a flood of
        wrong passwords neither reaches the shared bucket nor slows a scraper whose credentials
        were verified before (they are cached) or a first login from another address.
        """
        if not self._users:
            return 200
        credentials = _parse_basic(header_value)
        if credentials is None:
            return 401
        user, password = credentials
        hashed = self._users.get(user)
        known = hashed is not None
        if hashed is None:
            hashed = self._dummy_hash
        key = hmac.new(self._cache_key, b"\0".join((user, hashed, password)), hashlib.sha256).digest()
        with self._cache_lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return 200 if known else 401
        if client is not None and not self._login_budget(client).take():
            return 429
        import bcrypt

        with self._bcrypt_lock:  # bcrypt is CPU-bound: one at a time, as exporter-toolkit does
            try:
                ok = bcrypt.checkpw(password, hashed)
            except ValueError:  # passwords over 72 bytes: refused, as by Go's bcrypt
                ok = False
        if ok and known:
            with self._cache_lock:
                self._cache[key] = None
                while len(self._cache) > _AUTH_CACHE_SIZE:
                    self._cache.popitem(last=False)
        return 200 if ok and known else 401

    def _login_budget(self, client: str) -> _TokenBucket:
        with self._login_lock:
            budget = self._login_budgets.get(client)
            if budget is None:
                budget = self._login_budgets[client] = _TokenBucket(self._rate_interval_s, self._rate_burst)
                while len(self._login_budgets) > _LOGIN_CLIENTS:
                    self._login_budgets.popitem(last=False)
            else:
                self._login_budgets.move_to_end(client)
            return budget

    # -- rate limit -------------------------------------------------------------------------------

    @property
    def rate_limited(self) -> bool:
        """Whether `rate_limit` is on."""
        return self._rate_interval_s > 0 and self._rate_burst > 0

    def allow_request(self) -> bool:
        """Take one token from the `rate_limit` bucket; False means answer 429."""
        return self._bucket.take()

    # -- TLS --------------------------------------------------------------------------------------

    def ssl_context(self) -> ssl.SSLContext | None:
        """The server-side SSLContext (None without `tls_server_config`); built once, reloads on change."""
        if self.tls is None:
            return None
        with self._context_lock:
            if self._context is None:
                self._context = ReloadingContext(self.tls, self.source).outer
            return self._context

    def client_sans_allowed(self, peer_cert: dict[str, Any] | None) -> bool:
        """Whether a verified client certificate carries a SAN listed in `client_allowed_sans`."""
        if self.tls is None or not self.tls.client_allowed_sans:
            return True
        if not peer_cert:
            return False
        allowed = set(self.tls.client_allowed_sans)
        for kind, value in peer_cert.get("subjectAltName", ()):
            candidate = str(value).strip()
            if kind == "IP Address":
                with contextlib.suppress(ValueError):  # not an address: compared as text
                    candidate = str(ipaddress.ip_address(candidate))
            if candidate in allowed:
                return True
        return False


class _TokenBucket:
    """`burst` tokens, one more every `interval_s`; never empty when the interval or burst is 0 (off)."""

    def __init__(self, interval_s: float, burst: int) -> None:
        self.interval_s = interval_s
        self.burst = burst
        self._tokens = float(burst)
        self._at = time.monotonic()
        self._lock = threading.Lock()

    def take(self) -> bool:
        if self.interval_s <= 0 or self.burst <= 0:
            return True
        with self._lock:
            now = time.monotonic()
            self._tokens = min(float(self.burst), self._tokens + (now - self._at) / self.interval_s)
            self._at = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False


def _parse_basic(header_value: str | None) -> tuple[bytes, bytes] | None:
    if not header_value:
        return None
    scheme, _, encoded = header_value.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, sep, password = decoded.partition(b":")
    if not sep:
        return None
    return user, password




# -- parsing ---------------------------------------------------------------------------------------


def _expect_mapping(value: Any, where: str, source: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{source}: {where} must be a mapping, got {type(value).__name__}")
    return value


def _reject_unknown(mapping: dict[str, Any], allowed: set[str], where: str, source: str) -> None:
    unknown = sorted(str(k) for k in mapping if k not in allowed)
    if unknown:
        raise InputError(f"{source}: unknown field(s) in {where}: {', '.join(unknown)} "
                         f"(allowed: {', '.join(sorted(allowed))})")


def _duration_s(value: Any, where: str, source: str) -> float:
    """Seconds of a web-config duration (`1s`, `100ms`, `1m30s`, a bare number of seconds, `0`)."""
    try:
        return parse_duration(value, allow_zero=True)
    except ValueError:
        raise InputError(f"{source}: {where}: {value!r} is not a duration ({DURATION_FORMS}, or 0)") from None


def _string_list(value: Any, where: str, source: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{source}: {where} must be a list of strings")
    return tuple(value)


def _path(value: Any, base: Path, where: str, source: str) -> Path | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise InputError(f"{source}: {where} must be a file name")
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def _parse_tls(raw: dict[str, Any], base: Path, source: str) -> TLSServerConfig:
    _reject_unknown(raw, _TLS_KEYS, "tls_server_config", source)
    cert_file = _path(raw.get("cert_file"), base, "cert_file", source)
    key_file = _path(raw.get("key_file"), base, "key_file", source)
    client_ca_file = _path(raw.get("client_ca_file"), base, "client_ca_file", source)
    cert, key, client_ca = raw.get("cert"), raw.get("key"), raw.get("client_ca")
    if cert and cert_file:
        raise InputError(f"{source}: tls_server_config: give cert or cert_file, not both")
    if key and key_file:
        raise InputError(f"{source}: tls_server_config: give key or key_file, not both")
    if client_ca and client_ca_file:
        raise InputError(f"{source}: tls_server_config: give client_ca or client_ca_file, not both")
    if not (cert or cert_file):
        raise InputError(f"{source}: tls_server_config needs cert_file (or inline cert)")
    if not (key or key_file):
        raise InputError(f"{source}: tls_server_config needs key_file (or inline key)")
    for name, path in (("cert_file", cert_file), ("key_file", key_file), ("client_ca_file", client_ca_file)):
        if path is not None and not path.is_file():
            raise InputError(f"{source}: {name} {path} does not exist or is not a file")

    client_auth = str(raw.get("client_auth_type") or "NoClientCert")
    if client_auth in UNVERIFIED_CLIENT_AUTH:
        raise InputError(f"{source}: client_auth_type {client_auth} accepts client certificates "
                         "without verifying them, which gpuobs does not support; use "
                         "RequireAndVerifyClientCert (or VerifyClientCertIfGiven) with client_ca_file")
    if client_auth not in CLIENT_AUTH:
        raise InputError(f"{source}: unknown client_auth_type {client_auth!r} "
                         f"(one of {', '.join(sorted(CLIENT_AUTH))})")
    has_ca = bool(client_ca or client_ca_file)
    if client_auth == "NoClientCert" and has_ca:
        raise InputError(f"{source}: client CA given but client_auth_type is NoClientCert; set "
                         "client_auth_type: RequireAndVerifyClientCert")
    if client_auth != "NoClientCert" and not has_ca:
        raise InputError(f"{source}: client_auth_type {client_auth} needs client_ca_file")
    sans = _string_list(raw.get("client_allowed_sans"), "client_allowed_sans", source)
    if sans and client_auth != "RequireAndVerifyClientCert":
        raise InputError(f"{source}: client_allowed_sans needs client_auth_type RequireAndVerifyClientCert")

    versions = []
    for name, default in (("min_version", "TLS12"), ("max_version", "TLS13")):
        version = str(raw.get(name) or default)
        if version not in TLS_VERSIONS:
            raise InputError(f"{source}: {name} {version!r} is not one of {', '.join(TLS_VERSIONS)}")
        versions.append(version)
    if TLS_VERSIONS[versions[0]] > TLS_VERSIONS[versions[1]]:
        raise InputError(f"{source}: min_version {versions[0]} is above max_version {versions[1]}")

    ciphers = _string_list(raw.get("cipher_suites"), "cipher_suites", source)
    unknown = [c for c in ciphers if c not in GO_CIPHERS and c not in TLS13_CIPHERS]
    if unknown:
        raise InputError(f"{source}: cipher_suites: unsupported {', '.join(unknown)} "
                         f"(supported: {', '.join(sorted(GO_CIPHERS))})")
    if raw.get("curve_preferences"):
        raise InputError(f"{source}: curve_preferences is not supported by gpuobs (OpenSSL picks the "
                         "curves); remove it")
    prefer = raw.get("prefer_server_cipher_suites", True)
    if not isinstance(prefer, bool):
        raise InputError(f"{source}: prefer_server_cipher_suites must be true or false")
    for name, value in (("cert", cert), ("key", key), ("client_ca", client_ca)):
        if value is not None and not isinstance(value, str):
            raise InputError(f"{source}: {name} must be PEM text")
    return TLSServerConfig(
        cert_file=cert_file, key_file=key_file, cert=cert, key=key, client_auth_type=client_auth,
        client_ca_file=client_ca_file, client_ca=client_ca, client_allowed_sans=sans,
        min_version=versions[0], max_version=versions[1], cipher_suites=ciphers,
        prefer_server_cipher_suites=prefer,
    )


def _parse_users(raw: dict[str, Any], source: str) -> dict[str, str]:
    users = {}
    for name, hashed in raw.items():
        if not isinstance(name, str) or not name or ":" in name:
            raise InputError(f"{source}: basic_auth_users: {name!r} is not a valid user name")
        if not isinstance(hashed, str) or not _BCRYPT_RE.match(hashed):
            raise InputError(f"{source}: basic_auth_users: the password of {name!r} is not a bcrypt "
                             "hash ($2y$/$2b$/$2a$, cost 4-31); make one with "
                             "htpasswd -nBC 10 \"\" | tr -d ':\\n'")
        cost = int(hashed[4:6])
        if cost > MAX_BCRYPT_COST:
            raise InputError(f"{source}: basic_auth_users: the hash of {name!r} has bcrypt cost {cost}; "
                             f"gpuobs accepts at most {MAX_BCRYPT_COST} (each wrong password pays it: about "
                             "70 ms at 10, over a second above 14, hours at 31); make one with "
                             "htpasswd -nBC 10 \"\" | tr -d ':\\n'")
        users[name] = hashed
    return users


def _parse_headers(raw: dict[str, Any], source: str) -> dict[str, str]:
    headers = {}
    for name, value in raw.items():
        if name not in _ALLOWED_HEADERS:
            raise InputError(f"{source}: HTTP header {name!r} can not be configured "
                             f"(allowed: {', '.join(sorted(_ALLOWED_HEADERS))})")
        if value in (None, ""):
            continue  # "unset if blank"
        text = str(value)
        allowed = _ALLOWED_HEADERS[name]
        if allowed is not None and text not in allowed:
            raise InputError(f"{source}: invalid value for {name}: {text!r} (one of {', '.join(allowed)})")
        if "\r" in text or "\n" in text:
            raise InputError(f"{source}: header {name} contains a line break")
        headers[name] = text
    return headers


def parse_web_config(data: Any, base_dir: Path | str = ".", source: str = "<web config>") -> WebConfig:
    """A WebConfig from already-parsed YAML; relative file names resolve against `base_dir`."""
    top = _expect_mapping(data, "the document", source)
    _reject_unknown(top, _TOP_KEYS, "the top level", source)
    base = Path(base_dir)
    tls_raw = top.get("tls_server_config")
    tls = _parse_tls(_expect_mapping(tls_raw, "tls_server_config", source), base, source) \
        if tls_raw else None
    http_raw = _expect_mapping(top.get("http_server_config"), "http_server_config", source)
    _reject_unknown(http_raw, _HTTP_KEYS, "http_server_config", source)
    headers = _parse_headers(_expect_mapping(http_raw.get("headers"), "http_server_config.headers",
                                             source), source)
    users = _parse_users(_expect_mapping(top.get("basic_auth_users"), "basic_auth_users", source), source)
    rate_raw = _expect_mapping(top.get("rate_limit"), "rate_limit", source)
    _reject_unknown(rate_raw, {"interval", "burst"}, "rate_limit", source)
    interval = _duration_s(rate_raw.get("interval", 0), "rate_limit.interval", source)
    burst = rate_raw.get("burst", 0)
    if not isinstance(burst, int) or isinstance(burst, bool) or burst < 0:
        raise InputError(f"{source}: rate_limit.burst must be a non-negative integer")
    if interval > 0 and burst == 0:
        raise InputError(f"{source}: rate_limit.burst must be at least 1 when interval is set")
    config = WebConfig(tls=tls, users=users, headers=headers, rate_limit_interval_s=interval,
                       rate_limit_burst=burst, source=source)
    config.ssl_context()  # a bad certificate fails now, with the file named, not at the first scrape
    return config


def load_web_config(path: str | os.PathLike[str]) -> WebConfig:
    """Read and check a web-config YAML file; every problem is an InputError naming the file."""
    import yaml

    file = Path(path)
    source = f"web config {file}"
    if file.exists() and not file.is_file():  # a pipe with no writer blocks the open, signals and all
        raise InputError(f"{source}: not a regular file (a folder, a pipe or a device); give the YAML file")
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InputError(f"{source}: file not found") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{source}: cannot read it: {exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None) or exc
        raise InputError(f"{source}: invalid YAML{at}: {problem}") from exc
    except RecursionError:  # PyYAML composes nested collections recursively
        raise InputError(f"{source}: invalid YAML: nested too deeply to read") from None
    config = parse_web_config(data, base_dir=file.resolve().parent, source=source)
    logger.info("web config %s: TLS %s, basic auth %s", file, "on" if config.tls else "off",
                f"on ({len(config.users)} users)" if config.auth_required else "off")
    return config
