"""Settings resolution: CLI flag > environment (`GPUOBS_*`) > config file > default.

One function resolves every setting so that no setting is read in two places. The config file is
TOML, at `$GPUOBS_CONFIG` or `~/.config/gpuobs/config.toml`, with one table per verb
(`[export]`, `[diagnose]`, ...).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from gpuobs.errors import InputError

__all__ = ["config_path", "load_config", "resolve"]

T = TypeVar("T")


def config_path() -> Path:
    explicit = os.environ.get("GPUOBS_CONFIG")
    if explicit:
        return Path(explicit)
    return Path.home() / ".config" / "gpuobs" / "config.toml"


def load_config(path: Path | None = None) -> dict[str, Any]:
    """The parsed config file, or {} when there is none; a broken file is an InputError."""
    path = path or config_path()
    if not path.exists():
        if os.environ.get("GPUOBS_CONFIG"):
            raise InputError(f"config file {path} (from GPUOBS_CONFIG) does not exist")
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise InputError(f"cannot read config file {path}: {exc}") from exc


def resolve(
    section: str,
    name: str,
    flag_value: T | None,
    default: T,
    cast: Callable[[Any], T],
    config: dict[str, Any] | None = None,
) -> T:
    """The value of setting `section.name` by precedence flag > GPUOBS_<NAME> > file > default."""
    if flag_value is not None:
        return flag_value
    env_name = f"GPUOBS_{name.upper().replace('-', '_')}"
    source, raw = None, None
    if env_name in os.environ:
        source, raw = env_name, os.environ[env_name]
    else:
        table = (config if config is not None else load_config()).get(section, {})
        key = name.replace("_", "-")
        for candidate in (name, key):
            if candidate in table:
                source, raw = f"[{section}] {candidate} in {config_path()}", table[candidate]
                break
    if source is None:
        return default
    try:
        return cast(raw)
    except (TypeError, ValueError) as exc:
        raise InputError(f"invalid value {raw!r} for {name} (from {source}): {exc}") from exc
