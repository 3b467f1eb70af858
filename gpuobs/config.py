"""Settings: CLI flag > environment > config file > default, each setting read in one place.

The verbs get this precedence from click itself: every option of `gpuobs <verb>` also reads
`GPUOBS_<VERB>_<OPTION>` (click's `auto_envvar_prefix`; `--help` shows the name), and the `[<verb>]` table of
the config file becomes click's `default_map`. Library settings that no verb owns (the kernel span sample
rate, read by every process that launches kernels) go through `resolve()`. The config file is TOML, at
`$GPUOBS_CONFIG` or `~/.config/gpuobs/config.toml`, with one table per verb (`[export]`, `[serve]`, ...).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from gpuobs.errors import InputError

__all__ = [
    "ENV_PREFIX",
    "KERNELS_TABLE",
    "Setting",
    "config_path",
    "default_map",
    "drop_service_links",
    "load_config",
    "resolve",
    "verb_env_prefix",
]

T = TypeVar("T")

ENV_PREFIX = "GPUOBS"
"""Environment variables of `gpuobs <verb> --<option>` are `GPUOBS_<VERB>_<OPTION>`."""

KERNELS_TABLE = "kernels"
"""The config table of the kernel launcher's settings (read by `resolve()` in every process that launches)."""

# Kubernetes gives every pod `<SERVICE>_PORT=tcp://<cluster IP>:<port>` for each Service of its namespace
# (service links): a Service named `gpuobs-serve` yields GPUOBS_SERVE_PORT, which is not a port.
_SERVICE_LINK = re.compile(r"(?:tcp|udp|sctp)://[0-9A-Fa-f.:\[\]]+:\d+")


def verb_env_prefix(verb: str) -> str:
    """`GPUOBS_EXPORT` for `export`: the prefix click puts before an option's upper-cased name."""
    return f"{ENV_PREFIX}_{verb.upper().replace('-', '_')}"


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
    except RecursionError:  # tomllib parses nested arrays recursively
        raise InputError(f"cannot read config file {path}: nested too deeply") from None


@dataclass(frozen=True)
class Setting:
    """One option of a verb as the config file may name it: its parameter name, its long flag (`json` for
    `--json`, whose parameter is `json_out`), and whether it takes several values (a lone string is then a
    list of one)."""

    name: str
    flag: str | None = None
    many: bool = False

    def names(self) -> set[str]:
        return {k.replace("_", "-") for k in (self.name, self.flag) if k}


def default_map(
    config: Mapping[str, Any], verbs: Mapping[str, Iterable[str | Setting]], others: Iterable[str] = ()
) -> dict[str, dict[str, Any]]:
    """click's `default_map` from the config file's verb tables; keys may use `-` or `_`, and name an option
    by its flag (`json`, `catalog`) or its parameter (`json_out`, `catalog_dir`).

    `verbs` maps each verb to its options. A key that names no option of its verb is an InputError, so a typo
    does not silently leave the default in place; so is a table that is neither a verb's nor one of `others`
    (read by their own readers: `[dashboards]`, `[kernels]`), and a setting outside any table.
    """
    known_tables = sorted({*verbs, *others})
    for name, value in config.items():
        if not isinstance(value, dict) and name not in known_tables:
            raise InputError(
                f"{name} = {value!r} in {config_path()} is outside any table: put it under the verb it sets "
                f"([{'], ['.join(known_tables)}])"
            )
        if name not in known_tables:
            raise InputError(f"unknown table [{name}] in {config_path()} (known: {', '.join(known_tables)})")
    out: dict[str, dict[str, Any]] = {}
    for verb, options in verbs.items():
        table = config.get(verb)
        if table is None:
            continue
        if not isinstance(table, dict):
            raise InputError(f"[{verb}] in {config_path()} must be a table of settings")
        settings = [o if isinstance(o, Setting) else Setting(o) for o in options]
        by_key = {key: s for s in settings for key in s.names()}
        section: dict[str, Any] = {}
        for key, value in table.items():
            setting = by_key.get(str(key).replace("_", "-"))
            if setting is None:
                known = ", ".join(sorted((s.flag or s.name).replace("_", "-") for s in settings))
                raise InputError(f"unknown setting {key!r} in [{verb}] of {config_path()} (known: {known})")
            if setting.name in section:
                shown = (setting.flag or setting.name).replace("_", "-")
                raise InputError(f"[{verb}] of {config_path()} sets {shown} twice")
            section[setting.name] = [value] if setting.many and isinstance(value, str) else value
        out[verb] = section
    return out


def drop_service_links(environ: MutableMapping[str, str]) -> dict[str, str]:
    """Remove `GPUOBS_*_PORT=tcp://IP:PORT` (Kubernetes service links, never settings); what was removed."""
    dropped = {
        name: value
        for name, value in environ.items()
        if name.startswith(f"{ENV_PREFIX}_") and name.endswith("_PORT") and _SERVICE_LINK.fullmatch(value)
    }
    for name in dropped:
        del environ[name]
    return dropped


def resolve(
    section: str,
    name: str,
    flag_value: T | None,
    default: T,
    cast: Callable[[Any], T],
    config: dict[str, Any] | None = None,
) -> T:
    """A library setting `section.name` by precedence argument > GPUOBS_<NAME> > file > default."""
    if flag_value is not None:
        return flag_value
    env_name = f"{ENV_PREFIX}_{name.upper().replace('-', '_')}"
    source, raw = None, None
    if env_name in os.environ:
        source, raw = env_name, os.environ[env_name]
    else:
        table = (config if config is not None else load_config()).get(section, {})
        if not isinstance(table, dict):
            raise InputError(f"[{section}] in {config_path()} must be a table of settings")
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
