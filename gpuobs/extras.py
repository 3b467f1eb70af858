"""Lazy imports of heavy optional dependencies with a one-line message naming the extra."""

from __future__ import annotations

import importlib
from types import ModuleType

from gpuobs.errors import MissingExtraError

__all__ = ["require"]


def require(module: str, extra: str) -> ModuleType:
    """Import `module` or raise MissingExtraError telling which `gpuobs[extra]` to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{module} is not installed: pip install 'gpuobs[{extra}]' ({exc})"
        ) from exc
