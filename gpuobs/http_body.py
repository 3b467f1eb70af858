"""An HTTP answer's body as one line of its words, for error messages and reports.

A proxy's or web server's HTML error page would otherwise bring its tags, newlines and indentation, and one
error then fills a screen. The load tester and the RCA readers both quote bodies of answers they did not want.
"""

from __future__ import annotations

import re

__all__ = ["body_excerpt"]


def body_excerpt(body: bytes, limit: int = 200) -> str:
    """At most `limit` characters of the body's words (an HTML page's tags left out)."""
    text = body[: limit * 8].decode("utf-8", "replace")
    if text.lstrip().startswith("<"):
        text = re.sub(r"<[^>]*>", " ", text)
    return " ".join(text.split())[:limit]
