"""HTTP GET for the readers: URL credentials go as a Basic auth header, never into a host name or message.

`urllib` does not take `user:pass@` out of a URL: it would try to resolve `user:pass@host` as a host name
(sending the password to the resolver) and the URL, password included, would reach error messages and
evidence sources. Readers open URLs through `open_url` and name them with `display_url`.
"""

from __future__ import annotations

import base64
import urllib.parse
import urllib.request
from typing import IO

__all__ = ["display_url", "open_url", "split_credentials"]


def split_credentials(url: str) -> tuple[str, str | None]:
    """The URL without `user:pass@`, and the `Authorization` header value those credentials make."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    clean = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return clean, f"Basic {token}"


def display_url(url: str) -> str:
    """The URL as messages and evidence sources show it: credentials left out."""
    return split_credentials(url)[0]


def open_url(url: str, timeout_s: float) -> IO[bytes]:
    """`urlopen` of the URL with its credentials (if any) sent as Basic auth."""
    clean, auth = split_credentials(url)
    request = urllib.request.Request(clean, headers={"Authorization": auth} if auth else {})
    response: IO[bytes] = urllib.request.urlopen(request, timeout=timeout_s)
    return response
