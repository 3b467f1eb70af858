"""URLs a user gives on the command line, checked before anything is read or started."""

from __future__ import annotations

import re
import urllib.parse

from gpuobs.errors import InputError

__all__ = ["require_http_url"]


def require_http_url(flag: str, url: str, example: str) -> None:
    """InputError unless `url` is an http(s) URL with a host.

    A typo (`prom:9090`, `ftp://prom`) is a usage error before anything is read, not a source that failed with
    urllib's words after the others were read. The message leaves out whatever stands before an `@`.
    """
    try:
        parts = urllib.parse.urlsplit(url.strip())
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # a broken IPv6 literal
        ok = False
    if not ok:
        shown = re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)?[^/@]*@", r"\1", url.strip())
        raise InputError(f"{flag} {shown!r} is not an http(s) URL, e.g. {example}")
