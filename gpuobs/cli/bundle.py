"""`gpuobs bundle`: collect an incident's logs, metrics, traces and node state into one redacted archive."""

from __future__ import annotations

import os

import typer
from rich.markup import escape

from gpuobs.cli.render import console, emit_json, emit_table
from gpuobs.errors import InputError

__all__ = ["register"]

HELP = """Collect everything `gpuobs diagnose` would read into one .tar.gz: the raw inputs, the parsed
evidence and a manifest, with secrets (tokens, passwords, API keys, bearer headers, AWS keys, private
keys) redacted from logs and environment. Replay it anywhere with `gpuobs diagnose --bundle FILE`.

Examples:

  gpuobs bundle --logs /var/log/kern.log --logs vllm.log --exporter http://127.0.0.1:9400 -o node-7.tar.gz

  kubectl logs my-pod --previous | gpuobs bundle --logs - --k8s-namespace serving -o incident.tar.gz

  gpuobs bundle --prometheus http://prom:9090 --since 1h -o fleet.tar.gz

With no input flags it takes the live state of this node (NVML and the kernel log), as --live does.

An archive already at FILE is kept unless --force: an earlier incident's evidence is not written over.

Exit codes: 0 bundle written (sources that failed are listed in its manifest), 2 usage or input error,
74 the archive could not be written (a full disk; an archive already at FILE is left as it was).
"""


def bundle(
    output: str = typer.Option(..., "-o", "--output", help="Archive to write (FILE.tar.gz)."),
    logs: list[str] = typer.Option(
        [], "--logs", help="Log file, folder, .gz/.bz2/.xz or '-' for stdin (repeatable)."
    ),
    prometheus: str = typer.Option(None, "--prometheus", help="Prometheus base URL."),
    exporter: str = typer.Option(
        None, "--exporter", help="Exporter URL (/api/history) or a saved /metrics file."
    ),
    traces: list[str] = typer.Option([], "--traces", help="OTLP JSON trace file (repeatable)."),
    k8s_namespace: str = typer.Option(
        None, "--k8s-namespace", help="Read events and pods of this namespace."
    ),
    since: str = typer.Option(None, "--since", help="Window back from now, e.g. 30m, 1m30s, 2h."),
    start: str = typer.Option(
        None, "--start", help="Window start: RFC 3339 (no offset = UTC), epoch seconds, now-1h or 1h (ago)."
    ),
    end: str = typer.Option(None, "--end", help="Window end: same forms as --start."),
    live: bool = typer.Option(None, "--live/--no-live", help="Add this node's NVML state and kernel log."),
    json_out: bool = typer.Option(False, "--json", help="Print the manifest as JSON."),
    force: bool = typer.Option(False, "--force", help="Replace the archive if it exists."),
) -> None:
    from gpuobs.rca import DiagnoseInputs, TimeWindow
    from gpuobs.rca.bundle import make_bundle

    if not output.endswith((".tar.gz", ".tgz")):
        raise InputError(f"-o {output}: the bundle is a gzip tar; name it FILE.tar.gz")
    if live is False and not (logs or prometheus or exporter or traces or k8s_namespace):
        raise InputError(  # an archive of nothing reads, at replay, as a quiet node
            "--no-live and no input: nothing to bundle; give --logs, --traces, --prometheus, --exporter or "
            "--k8s-namespace, or drop --no-live to take this node's state"
        )
    if os.path.lexists(output) and not force:  # an earlier incident's evidence is not written over unasked
        raise InputError(
            f"-o {output} exists (an earlier bundle?); name another file, or --force to replace it"
        )
    inputs = DiagnoseInputs(
        logs=logs,
        prometheus=prometheus,
        exporter=exporter,
        traces=traces,
        k8s_namespace=k8s_namespace,
        live=live,
        window=TimeWindow.from_flags(since, start, end),
    )
    summary = make_bundle(output, inputs)
    manifest = summary.manifest
    if json_out:
        emit_json(manifest)
        return
    rows = [{"source": name, "records": count} for name, count in sorted(manifest["sources"].items())]
    emit_table(f"bundle {summary.path}", ["source", "records"], rows)
    console.print(
        f"{len(manifest['files'])} files, {manifest['evidence']} evidence records, "
        f"{sum(manifest['redactions'].values())} secrets redacted"
    )
    for problem in manifest["problems"]:
        console.print(f"[yellow]source failed:[/] {escape(problem)}", highlight=False, soft_wrap=True)
    for note in manifest["notes"]:
        console.print(f"[dim]{note}[/]", highlight=False)
    console.print(f"replay: gpuobs diagnose --bundle {summary.path}")


def register(app: typer.Typer) -> None:
    app.command("bundle", help=HELP)(bundle)
