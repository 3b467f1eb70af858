"""JSON from outside (a file, a pasted log, an HTTP answer): one more way for it to be malformed.

`json.loads` raises RecursionError, not a decode error, on a document nested a few thousand levels deep; every
reader catches decode errors to say "not JSON" and would let this one escape as a crash. `loads` turns it into
the decode error it is.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["NestedTooDeeply", "loads"]


class NestedTooDeeply(json.JSONDecodeError):
    """A document nested past what the parser can follow; reads as "nested too deeply to read" (it has no
    line and column worth naming: the whole document is the problem)."""

    def __init__(self) -> None:
        super().__init__("nested too deeply to read", "", 0)

    def __str__(self) -> str:
        return self.msg


def loads(text: str | bytes) -> Any:
    """`json.loads`, raising NestedTooDeeply (a json.JSONDecodeError, so a ValueError) for a document nested
    too deeply too."""
    try:
        return json.loads(text)
    except RecursionError:
        raise NestedTooDeeply() from None
