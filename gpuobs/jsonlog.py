"""JSON-lines logging: `ts`, `level`, `msg`, the logger name and any entity fields passed in `extra`."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, TextIO

from gpuobs.names import logs as fields
from gpuobs.names.logs import ENTITY_FIELDS

__all__ = ["ENTITY_FIELDS", "JsonFormatter", "setup_logging"]


_STANDARD_ATTRS = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object per line."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            fields.TS: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            fields.LEVEL: record.levelname.lower(),
            fields.MSG: record.getMessage(),
            fields.LOGGER: record.name,
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload[fields.EXC] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str, ensure_ascii=False)


def setup_logging(level: str = "info", stream: TextIO | None = None) -> None:
    """Route the `gpuobs` logger hierarchy to JSON lines on stderr (idempotent)."""
    root = logging.getLogger("gpuobs")
    root.setLevel(level.upper())
    for handler in list(root.handlers):
        if getattr(handler, "_gpuobs_json", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler._gpuobs_json = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.propagate = False
