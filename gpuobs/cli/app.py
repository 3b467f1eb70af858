"""The `gpuobs` typer app. Every module in gpuobs.cli with a `register(app)` function adds its verbs.

Exit codes for every verb: 0 ok, 1 a finding or a failed check, 2 a usage or input error, 141 stdout was
closed before the output was written (`gpuobs diagnose ... | head -1`).
Settings: flag > `GPUOBS_<VERB>_<OPTION>` > the `[<verb>]` table of the config file > default, applied by
click (auto_envvar_prefix and default_map, set up by the root callback; see gpuobs/config.py).
"""

from __future__ import annotations

import importlib
import math
import os
import pkgutil
import sys
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from gpuobs import __version__
from gpuobs.config import (
    ENV_PREFIX,
    KERNELS_TABLE,
    Setting,
    config_path,
    default_map,
    drop_service_links,
    load_config,
    verb_env_prefix,
)
from gpuobs.errors import GpuobsError, OutputWriteError
from gpuobs.output_files import WRITE_ERRNOS

__all__ = ["EXIT_STDOUT_CLOSED", "EXIT_WRITE_FAILED", "app", "main", "tidy_help"]

app = typer.Typer(
    name="gpuobs",
    no_args_is_help=True,
    add_completion=False,
    help="Observability and reliability for GPU inference fleets.",
    pretty_exceptions_enable=False,
)

_err = Console(stderr=True)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gpuobs {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """gpuobs: exporter, diagnose, chaos and dashboards for GPU inference fleets."""
    _settings(ctx)


def _settings(ctx: typer.Context) -> None:
    """Give the verb's context its environment prefix and the config file's tables (before it parses)."""
    verb = ctx.invoked_subcommand or ""
    for name, value in drop_service_links(os.environ).items():
        if name.startswith(f"{verb_env_prefix(verb)}_"):
            service = name.removesuffix("_PORT").lower().replace("_", "-")
            _err.print(
                f"warning: ignoring {name}={value}: Kubernetes sets it for a Service named {service} "
                "(a service link, not a port); set enableServiceLinks: false in the pod spec",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
    ctx.auto_envvar_prefix = ENV_PREFIX
    commands = getattr(ctx.command, "commands", {})  # typer's group (typer carries its own click)
    # A group's table (`[dashboards]`) holds the settings its subcommands share, read by `resolve()`.
    groups = {name for name, cmd in commands.items() if hasattr(cmd, "commands")}
    verbs = {
        name: [_setting(p) for p in cmd.params if p.name]
        for name, cmd in commands.items()
        if name not in groups
    }
    ctx.default_map = default_map(load_config(), verbs, others=[*groups, KERNELS_TABLE])


def _setting(param: Any) -> Setting:
    """A verb's option as its config-file table may name it (by flag or by parameter)."""
    flags = [opt[2:] for opt in param.opts if opt.startswith("--")]
    many = bool(param.multiple) or (param.nargs != 1 and param.param_type_name == "argument")
    return Setting(param.name, flags[0] if flags else None, many)


def _register_verbs() -> None:
    import gpuobs.cli as cli_pkg

    for info in sorted(pkgutil.iter_modules(cli_pkg.__path__), key=lambda m: m.name):
        if info.name in {"app", "render"} or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"gpuobs.cli.{info.name}")
        register = getattr(module, "register", None)
        if callable(register):
            register(app)


_register_verbs()


_TYPE_LABELS = {
    "str": "TEXT", "int": "INTEGER", "float": "NUMBER", "path": "PATH", "Path": "PATH", "bool": ""
}


def _type_label(typer_label: str) -> str | None:
    """What an option takes in words (TEXT, INTEGER, a|b, TEXT...), not typer's `<str>`; none for a flag."""
    inner = typer_label.strip("<>")
    if inner.startswith("list[") and inner.endswith("]"):
        item = _type_label(inner[5:-1])
        return f"{item}..." if item else None
    return _TYPE_LABELS.get(inner, inner) or None


def tidy_help(command: Any) -> Any:
    """Make every verb's --help say what it means under typer's rich rendering.

    Rich reads `[...]` in help text as markup and drops it (`[default: x]`, `gpuobs[serving]`), typer shows
    types as `<str>`/`<bool>`, and float defaults print their full repr: escape, relabel, round.
    """
    if command.help and "[" in command.help:
        command.help = escape(command.help)
    if command.epilog and "[" in command.epilog:
        command.epilog = escape(command.epilog)
    param: Any
    for param in command.params:
        help_text = getattr(param, "help", None) or ""
        if "[" in help_text:
            param.help = help_text = escape(help_text)
        default = param.default
        long_float = isinstance(default, float) and len(repr(default)) > 8
        if long_float and getattr(param, "show_default", None) is True:
            param.show_default = False
            param.help = f"{help_text} \\[default: {default:.4g}]".strip()
    for child in getattr(command, "commands", {}).values():
        tidy_help(child)
    return command


def finite_numbers(command: Any) -> Any:
    """Make every NUMBER option of every verb refuse `nan` and `inf`.

    A float option takes them, and each then passed or slipped past the verbs' own range checks (`nan > 0`
    is false, `inf > 0` true): an OTLP push every `inf` seconds, a load-test ladder of `inf` requests/s. One
    pass here covers flags, GPUOBS_* variables and the config file alike, for every verb.
    """
    for param in command.params:
        param.callback = _finite(param.callback)
    for child in getattr(command, "commands", {}).values():
        finite_numbers(child)
    return command


def _finite(callback: Any) -> Any:
    """A parameter callback that refuses a non-finite number, then runs the parameter's own callback."""

    def check(ctx: Any, param: Any, value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            raise typer.BadParameter(f"{value} is not a finite number", ctx=ctx, param=param)
        return callback(ctx, param, value) if callback is not None else value

    return check


def name_setting_sources(command: Any) -> Any:
    """Make a bad value that came from a GPUOBS_* variable or the config file say where it was set.

    click names only the flag (`Invalid value for '--port'`) although the user never typed `--port`: the
    value came from `port = "abc"` in the `[export]` table or from GPUOBS_EXPORT_PORT.
    """
    for param in command.params:
        param.process_value = _naming_source(param, param.process_value)
    for child in getattr(command, "commands", {}).values():
        name_setting_sources(child)
    return command


def _naming_source(param: Any, process_value: Any) -> Any:
    """`process_value` of one parameter, its BadParameter message ending with where the value was set."""

    def process(ctx: Any, value: Any) -> Any:
        try:
            return process_value(ctx, value)
        except typer.BadParameter as exc:
            # By name: the enum lives in the click that typer carries, which has no public path.
            source = getattr(ctx.get_parameter_source(param.name), "name", None)
            if source == "DEFAULT_MAP":
                exc.message = f"{exc.message} (set in the [{ctx.info_name}] table of {config_path()})"
            elif source == "ENVIRONMENT":
                envvar = param.envvar if isinstance(param.envvar, str) else None
                envvar = envvar or f"{ctx.auto_envvar_prefix}_{str(param.name).upper()}"
                exc.message = f"{exc.message} (set by the environment variable {envvar})"
            raise

    return process


# typer labels every option `<str>`, `<int>`, `<bool>` (flags included); click's words read better.
typer.core.TyperOption.display_type_rich = (  # type: ignore[method-assign]
    lambda self, ctx: _type_label(self.display_type(ctx))
)
typer.core.TyperArgument.display_type_rich = (  # type: ignore[method-assign]
    lambda self, ctx: _type_label(self.display_type(ctx))
)


# stdout closed before the output was written (`gpuobs diagnose ... | head -1`): 128 + SIGPIPE, what a
# shell reports for `cat` in the same place, so it never reads as a verb's own 0/1/2.
EXIT_STDOUT_CLOSED = 141
# A write that failed for want of room or a device error (`gpuobs diagnose --json > /full/disk/out.json`):
# sysexits' EX_IOERR, one line on stderr instead of a traceback from deep inside click or rich.
EXIT_WRITE_FAILED = OutputWriteError.exit_code


def _is_devnull(fd: int) -> bool:
    try:
        st, null = os.fstat(fd), os.stat(os.devnull)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (null.st_dev, null.st_ino)


def _stdout_closed(was_devnull: bool) -> bool:
    """True once stdout's reader went away: typer wraps the streams after EPIPE; rich points the stdout
    descriptor at /dev/null and exits 1 (which would read as a verb's "1")."""
    if type(sys.stdout).__name__ == "PacifyFlushWrapper":
        return True
    return not was_devnull and _is_devnull(1)


def main() -> None:
    """Console-script entry point: runs the app and turns gpuobs errors into exit code 2."""
    was_devnull = _is_devnull(1)
    try:
        name_setting_sources(finite_numbers(tidy_help(typer.main.get_command(app))))()
    except GpuobsError as exc:
        _err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _err.print("interrupted")
        sys.exit(130)
    except BrokenPipeError:
        _quiet_stdout()
        sys.exit(EXIT_STDOUT_CLOSED)
    except OSError as exc:
        if exc.errno not in WRITE_ERRNOS:
            raise
        _err.print(f"[bold red]error:[/] a write failed: {escape(exc.strerror or str(exc))}", highlight=False)
        _quiet_stdout()  # the interpreter's last flush of the same stdout would fail again, with a traceback
        sys.exit(EXIT_WRITE_FAILED)
    except SystemExit:
        if _stdout_closed(was_devnull):
            sys.exit(EXIT_STDOUT_CLOSED)
        raise


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not raise on the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
