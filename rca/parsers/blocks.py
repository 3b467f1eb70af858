"""Logical messages that span several physical lines: wrapped, indented or continued after a colon.

A terminal wraps a long message at its width, NCCL prints `Last error:` and the error on the next line,
a kernel message continues on indented lines, a watchdog timeout puts its operation, timeout and
elapsed time on separate lines. `block_around` finds the block a line belongs to (the head line and its
continuation lines) so that a parser can read the message whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["MAX_BLOCK_LINES", "block_around", "is_continuation", "joined"]

MAX_BLOCK_LINES = 6
# A line this long that ends mid-sentence was most likely cut by the terminal, not by the program.
_WRAP_WIDTH = 78
# Starts of a new record: a timestamp, a bracketed tag, a level word, a traceback header or frame.
_NEW_RECORD_RE = re.compile(
    r"^(?:\d{4}[-/]\d{2}[-/]\d{2}|\[|\(|<\d|[A-Z][a-z]{2} [ \d]\d |[IWEF]\d{4} |"
    r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b|Traceback |File \"|During handling|"
    r"The above exception|[\w.]+(?:Error|Exception|Warning)\b:)"
)


def _head_ends_open(head: str) -> bool:
    """The head line announces more to come (`Last error:`) or was cut mid-sentence at the terminal width."""
    text = head.rstrip()
    if not text:
        return False
    if text.endswith((":", ",", "(", "=", "-", "and", "or")):
        return True
    return len(head) >= _WRAP_WIDTH and text[-1] not in ".!?)]}'\"`"


def is_continuation(previous: str, line: str) -> bool:
    """Whether `line` continues the message of `previous` (the line above it) rather than starting one."""
    if not line.strip() or not previous.strip():
        return False
    body = line.lstrip()
    indented = len(line) - len(body) >= 2
    if indented:
        # an indented traceback frame or code line belongs to a traceback, which parsers read by itself
        return not body.startswith(('File "', "^", "~", "at ")) and not previous.lstrip().startswith(
            ('File "', "Traceback ")
        )
    if _NEW_RECORD_RE.match(body):
        return False
    return _head_ends_open(previous)


def block_around(lines: Sequence[str], index: int) -> tuple[int, int]:
    """The (first, last) line indices of the block holding line `index` (at most MAX_BLOCK_LINES)."""
    first = index
    while (
        first > 0 and index - first < MAX_BLOCK_LINES - 1 and is_continuation(lines[first - 1], lines[first])
    ):
        first -= 1
    last = index
    while (
        last + 1 < len(lines)
        and last - first < MAX_BLOCK_LINES - 1
        and is_continuation(lines[last], lines[last + 1])
    ):
        last += 1
    return first, last


def joined(parts: Sequence[str], raws: Sequence[str] | None = None) -> str:
    """The physical lines of one block as one message.

    `parts` are the lines' messages (prefixes removed), `raws` the lines as printed: where a line as long
    as a terminal ends without a space and the next is not indented, the terminal cut a word in two
    (`ray log` / `s raylet.out`) and the halves are joined without a space; elsewhere with one space.
    """
    out = ""
    for i, part in enumerate(parts):
        text = part.strip()
        if not text:
            continue
        if out:
            prev = raws[i - 1] if raws is not None else ""
            cut = (
                raws is not None
                and len(prev) >= _WRAP_WIDTH
                and not prev.endswith((" ", "\t"))
                and not raws[i][:1].isspace()
            )
            out += text if cut else " " + text
        else:
            out = text
    return out
