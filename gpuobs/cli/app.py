"""The `gpuobs` typer app. Every module in gpuobs.cli with a `register(app)` function adds its verbs.

Exit codes for every verb: 0 ok, 1 a finding or a failed check, 2 a usage or input error.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import typer
from rich.console import Console

from gpuobs import __version__
from gpuobs.errors import GpuobsError

__all__ = ["app", "main"]

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
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """gpuobs: exporter, diagnose, chaos and dashboards for GPU inference fleets."""


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


def main() -> None:
    """Console-script entry point: runs the app and turns gpuobs errors into exit code 2."""
    try:
        app()
    except GpuobsError as exc:
        _err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)  # one line, never wrapped
        sys.exit(2)
    except KeyboardInterrupt:
        _err.print("interrupted")
        sys.exit(130)
