"""Values a user names on the command line (server URLs, Kubernetes namespaces), checked before anything is
read, written or started: a typo is one line naming the flag, not a failure later in another library's
words."""

from __future__ import annotations

import re
import urllib.parse

from gpuobs.errors import InputError

__all__ = ["http_url_problem", "require_http_url", "require_namespace", "url_without_credentials"]

# A namespace is an RFC 1123 label (Kubernetes' own rule).
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def http_url_problem(url: str) -> str | None:
    """Why `url` is not an http(s) URL every request could use, or None when it is.

    One rule for every command that takes a server's URL (the diagnose sources, the bundle, the game day, the
    load tester): a scheme of http or https, a host, a port from 0 to 65535, and no space or control character
    (http.client refuses those mid-read).
    """
    text = url.strip()
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:  # urlsplit refuses only a broken IPv6 literal
        return "a broken IPv6 address"
    try:
        parts.port  # noqa: B018 - raises ValueError for a port past 65535 or not a number
    except ValueError:
        return "the port is not a number from 0 to 65535"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "it needs http:// or https:// and a host"
    if re.search(r"[\s\x00-\x1f\x7f]", text):
        return "it has a space or a control character"
    return None


def require_http_url(flag: str, url: str, example: str) -> None:
    """InputError unless `url` is an http(s) URL with a host (a valid port, no space or control character).

    A typo (`prom:9090`, `ftp://prom`) is a usage error before anything is read, not a source that failed with
    urllib's words after the others were read. The message leaves out whatever stands before an `@`.
    """
    problem = http_url_problem(url)
    if problem is not None:
        shown = url_without_credentials(url)
        raise InputError(f"{flag} {shown!r} is not an http(s) URL ({problem}), e.g. {example}")


def url_without_credentials(url: str) -> str:
    """`url` as a message may repeat it: whatever stands before an `@` (a user and a password) left out."""
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)?[^/@]*@", r"\1", url.strip())


def require_namespace(flag: str, namespace: str) -> None:
    """InputError unless `namespace` can name a Kubernetes namespace."""
    if not _NAMESPACE.fullmatch(namespace):
        raise InputError(
            f"{flag} {namespace!r} is not a namespace name (at most 63 lower-case letters, digits and '-', "
            "starting and ending with a letter or digit)"
        )
