"""Values a user names on the command line (server URLs, Kubernetes namespaces), checked before anything is
read, written or started: a typo is one line naming the flag, not a failure later in another library's
words."""

from __future__ import annotations

import re
import urllib.parse

from gpuobs.errors import InputError

__all__ = ["require_http_url", "require_namespace"]

# A namespace is an RFC 1123 label (Kubernetes' own rule).
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def require_http_url(flag: str, url: str, example: str) -> None:
    """InputError unless `url` is an http(s) URL with a host (a valid port, no space or control character).

    A typo (`prom:9090`, `ftp://prom`) is a usage error before anything is read, not a source that failed with
    urllib's words after the others were read. The message leaves out whatever stands before an `@`.
    """
    try:
        parts = urllib.parse.urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a port past 65535
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        ok = ok and not re.search(r"[\s\x00-\x1f\x7f]", url.strip())  # http.client refuses them, mid-read
    except ValueError:  # a broken IPv6 literal, a port out of range or not a number
        ok = False
    if not ok:
        shown = re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)?[^/@]*@", r"\1", url.strip())
        raise InputError(f"{flag} {shown!r} is not an http(s) URL, e.g. {example}")


def require_namespace(flag: str, namespace: str) -> None:
    """InputError unless `namespace` can name a Kubernetes namespace."""
    if not _NAMESPACE.fullmatch(namespace):
        raise InputError(
            f"{flag} {namespace!r} is not a namespace name (at most 63 lower-case letters, digits and '-', "
            "starting and ending with a letter or digit)"
        )
