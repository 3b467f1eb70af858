"""A running `gpuobs export` -> Evidence, from its flight recorder (`GET /api/history?since=`)."""

from __future__ import annotations

import urllib.error
from typing import Any

from gpuobs import json_input
from gpuobs.errors import InputError
from gpuobs.evidence import Evidence
from gpuobs.rca.parsers.history import evidence_from_history
from gpuobs.rca.readers.http import display_url, open_url

__all__ = ["fetch_exporter_history"]

_TIMEOUT_S = 10.0


def fetch_exporter_history(
    url: str,
    start: float | None = None,
    end: float | None = None,
    timeout_s: float = _TIMEOUT_S,
    raw: dict[str, Any] | None = None,
) -> list[Evidence]:
    """Evidence from an exporter's flight recorder (`GET /api/history?since=`); with `raw`, the document
    is also stored in it under `exporter_history` (for bundles)."""
    full = url.rstrip("/")
    if full.endswith("/api/history"):
        full = full[: -len("/api/history")]
    base = display_url(full)
    since = 0.0 if start is None else start
    target = f"{full}/api/history?since={since:.3f}"
    try:
        with open_url(target, timeout_s) as resp:
            data = json_input.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raise InputError(f"exporter {base}: /api/history answered HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise InputError(f"exporter {base}: unreachable ({getattr(exc, 'reason', exc)})") from exc
    except ValueError as exc:
        raise InputError(f"exporter {base}: /api/history is not JSON ({exc})") from exc
    if raw is not None:
        raw["exporter_history"] = data
    return evidence_from_history(data, source=f"exporter:{base}", start=start, end=end)
