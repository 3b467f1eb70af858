"""`gpuobs diagnose`: read the telemetry at hand, name the root cause with its evidence and the fix.

Exit codes: 0 a cause was found, 1 no known failure signature matched, 2 a usage or input error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from gpuobs.cli.render import console, emit_json, emit_table
from gpuobs.errors import InputError
from gpuobs.output_files import check_output_file, write_texts

__all__ = ["register"]

_SEVERITY_STYLE = {"critical": "bold red", "high": "red", "medium": "yellow", "low": "cyan"}
# Tiers whose causes are recognised by wording or guessed, not extracted as facts: the report says so.
_GUESS_TIERS = ("text", "prose", "semantic")

HELP = """Diagnose a GPU inference incident: correlate logs, metrics, traces and Kubernetes state and name the
root cause with its evidence chain and remediation.

With no input flags it reads this node's live state (NVML, kernel log) over the last 30 minutes.

Examples:

  gpuobs diagnose dmesg.txt vllm.log        (the same as --logs dmesg.txt --logs vllm.log)

  kubectl logs my-pod --previous | gpuobs diagnose --logs - --json

  gpuobs diagnose --prometheus http://prom:9090 --since 1h --markdown incident.md

  gpuobs diagnose --bundle node-7.tar.gz

Exit codes: 0 cause found, 1 no known failure signature, 2 usage or input error, 74 the report could
not be written (a full disk; a --markdown file there is left as it was), 141 stdout closed before the report
was written (`| head`).
"""


def _entity_text(entity: dict[str, Any]) -> str:
    order = (
        "host",
        "gpu_index",
        "gpu_uuid",
        "pci_bus_id",
        "namespace",
        "pod",
        "container",
        "model",
        "tenant",
    )
    names = {"gpu_index": "gpu", "gpu_uuid": "uuid", "pci_bus_id": "pci"}
    return " ".join(f"{names.get(k, k)}={entity[k]}" for k in order if entity.get(k) is not None) or "-"


def _short(source: str) -> str:
    return Path(source).name if "/" in source else source


def _cjk_read(item: dict[str, Any]) -> bool:
    """Whether the semantic tier's reader of Chinese, Japanese or Korean text named this evidence item."""
    from gpuobs.rca.report import CJK_READER  # after a diagnosis: the rca package is loaded by then

    return item.get("reader") == CJK_READER


def _semantic_top_note(causes: list[dict[str, Any]]) -> str:
    """Why a guess by meaning is the top cause: nothing else was named, or (`engine._declared_cause_first`)
    the catalog declares it the cause of what the other tiers named; and which reader read the text."""
    named = [c["id"] for c in causes[1:] if c.get("tier") != "semantic"]
    if named:
        why = (
            f"Read by the semantic tier and put first: the other tiers name {named[0]}, which the catalog "
            "says this failure causes, and a sentence encoder reads the whole text confidently as this "
            "failure (the lines below read most like it)."
        )
    else:
        why = (
            "Guessed by the semantic tier: no other tier named a cause; a sentence encoder reads the whole "
            "text as most like this failure (the lines below read most like it), hence the lowest confidence."
        )
    if any(_cjk_read(item) for item in causes[0]["evidence"]):
        from gpuobs.rca.report import CJK_READ_NOTE

        why += f" {CJK_READ_NOTE[:1].upper()}{CJK_READ_NOTE[1:]}."
    return why + " Check it against the text."


def _render(report: Any) -> None:
    data = report.to_dict()
    sources = ", ".join(f"{_short(k)} ({v})" for k, v in data["sources"].items()) or "no source"
    header = Text(
        f"{data['evidence_count']} records from {sources}; {data['signatures_evaluated']} signatures"
    )
    causes = data["causes"]
    if not causes:
        body: list[Any] = [Text("No known failure signature matched.", style="bold green")]
        if data["anomalies"]:
            table = Table(title="Strongest anomalies", header_style="bold", expand=True)
            for column in ("first seen", "key", "count", "source", "example"):
                table.add_column(column, overflow="fold")
            for a in data["anomalies"]:
                key = a["key"] if a["value"] in (None, "") else f"{a['key']}={a['value']}"
                cells = (a["first_time_iso"] or "-", key, str(a["count"]), _short(a["source"]), a["text"])
                table.add_row(*(Text(c) for c in cells))  # Text: log lines hold "[rank0]" and the like
            body.append(table)
        console.print(Panel(Group(*body), title="gpuobs diagnose", subtitle=header))
    else:
        top = causes[0]
        style = _SEVERITY_STYLE.get(top["severity"], "bold")
        title = Text.assemble(
            ("TOP CAUSE  ", "bold"),
            (top["title"], style),
            (f"  [{top['id']}]", "dim"),
            (f"  confidence {top['confidence']:.2f}", "bold"),
            (f"  {top['severity']}", style),
            *([(f"  [{top['tier']} tier]", "yellow")] if top.get("tier") in _GUESS_TIERS else []),
        )
        parts: list[Any] = [
            title,
            Text(f"entity: {_entity_text(top['entity'])}"),
            *(
                [
                    Text(
                        "also on: "
                        + "; ".join(_entity_text(e) for e in top["entities"] if e != top["entity"])
                    )
                ]
                if len(top["entities"]) > 1
                else []
            ),
            Text(top["explanation"], style="italic"),
            *(
                [
                    Text(
                        "Recognised by the text tier: the wording of the lines below names this failure, "
                        "but no parser extracted a structured fact from them, hence the lower confidence.",
                        style="yellow",
                    )
                ]
                if top.get("tier") == "text"
                else []
            ),
            *(
                [
                    Text(
                        "Guessed by the prose tier: no line was recognised, and the words of the lines "
                        "below are likeliest under this failure, hence the lowest confidence.",
                        style="yellow",
                    )
                ]
                if top.get("tier") == "prose"
                else []
            ),
            *([Text(_semantic_top_note(causes), style="yellow")] if top.get("tier") == "semantic" else []),
        ]
        chain = Text("Evidence chain:\n", style="bold")
        for item in top["evidence"]:
            chain.append(f"  {item['time_iso'] or 'no time':<24} ", style="cyan")
            chain.append(f"{_short(item['source'])}  ", style="magenta")
            entity = _entity_text(item["entity"])
            if entity != "-":
                chain.append(f"[{entity}]  ", style="dim")
            if _cjk_read(item):
                chain.append(f"({item['tier']} tier, CJK reader) ", style="yellow")
            elif item.get("tier") in _GUESS_TIERS:
                chain.append(f"({item['tier']} tier) ", style="yellow")
            chain.append(f"{item['text']}\n", style="" if item["role"] == "anchor" else "dim")
        parts.append(chain)
        if top["explained_symptoms"]:
            lines = Text("Explained symptoms (not separate causes):\n", style="bold")
            for s in top["explained_symptoms"]:
                label = f"{s['id']}: " if s["id"] else ""
                when = s["time_iso"] or "-"
                lines.append(f"  - {when}  {label}{s['text']}  (x{s['count']})\n", style="")
            parts.append(lines)
        fix = Text("Remediation:\n", style="bold")
        for n, step in enumerate(top["remediation"], 1):
            fix.append(f"  {n}. {step}\n", style="")
        parts.append(fix)
        console.print(Panel(Group(*parts), title="gpuobs diagnose", subtitle=header))
        if len(causes) > 1:
            others = Table(title="Other candidates", header_style="bold")
            for column in ("#", "id", "title", "confidence", "tier", "entity", "first seen"):
                others.add_column(column)
            for rank, c in enumerate(causes[1:], 2):
                row = (
                    str(rank),
                    c["id"],
                    c["title"],
                    f"{c['confidence']:.2f}",
                    c.get("tier", "exact"),
                    _entity_text(c["entity"]),
                    c["first_seen_iso"] or "-",
                )
                others.add_row(*(Text(x) for x in row))
            console.print(others)
    for note in data["notes"]:
        console.print(Text(f"note: {note}", style="dim"))
    if data["problems"]:
        console.print(Text("Problems (the run went on):", style="bold yellow"))
        for p in data["problems"]:
            console.print(Text(f"  {p}", style="yellow"))


def _catalog_markdown(rows: list[dict[str, str]]) -> str:
    """The catalog as a Markdown table (`--list-signatures --markdown`), for a runbook or a wiki page."""
    columns = ["id", "severity", "scope", "title"]
    lines = [f"# {len(rows)} failure signatures", "", "| " + " | ".join(columns) + " |"]
    lines.append("|" + "|".join("---" for _ in columns) + "|")
    for row in rows:
        lines.append("| " + " | ".join(row[c].replace("|", "\\|") for c in columns) + " |")
    return "\n".join(lines) + "\n"


def diagnose_cmd(
    paths: list[str] | None = typer.Argument(
        None,
        metavar="[LOG]...",
        help="Log files or folders to read, as with --logs (the way a pasted file is usually given).",
        show_default=False,
    ),
    logs: list[str] = typer.Option(
        [],
        "--logs",
        help="Log file or folder (.gz, .bz2, .xz ok); '-' reads stdin. Repeatable.",
        show_default=False,
    ),
    prometheus: str | None = typer.Option(None, "--prometheus", help="Prometheus base URL to query."),
    exporter: str | None = typer.Option(None, "--exporter", help="gpuobs exporter URL (/api/history)."),
    traces: list[str] = typer.Option(
        [], "--traces", help="OTLP JSON trace file (collector file exporter). Repeatable.", show_default=False
    ),
    bundle: str | None = typer.Option(None, "--bundle", help="Replay an archive made by `gpuobs bundle`."),
    k8s_namespace: str | None = typer.Option(
        None, "--k8s-namespace", help="Read pods and events of this namespace (current kubeconfig context)."
    ),
    since: str | None = typer.Option(None, "--since", help="Window ending now, e.g. 30m, 1m30s, 2h, 1d."),
    start: str | None = typer.Option(
        None, "--start", help="Window start: RFC 3339 (no offset = UTC), epoch seconds, now-1h or 1h (ago)."
    ),
    end: str | None = typer.Option(None, "--end", help="Window end: same forms as --start, e.g. now."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON object."),
    markdown: Path | None = typer.Option(
        None,
        "--markdown",
        help="Also write the report (with --list-signatures, the catalog) as Markdown to FILE ('-': stdout).",
    ),
    catalog_dir: Path | None = typer.Option(
        None, "--catalog", help="Folder of extra signature TOML files (same id replaces the bundled one)."
    ),
    list_signatures: bool = typer.Option(
        False, "--list-signatures", help="Print the signature catalog (id, severity, scope, title) and exit."
    ),
    semantic: bool | None = typer.Option(
        None,
        "--semantic/--no-semantic",
        help=(
            "The semantic tier: a sentence encoder reads text no other tier understood, and lists "
            "alternatives when fewer than three causes were named (extra gpuobs[semantic]). Default: on when "
            "installed, unless GPUOBS_SEMANTIC=off."
        ),
    ),
) -> None:
    from gpuobs.rca import DiagnoseInputs, TimeWindow, catalog_with_overrides, diagnose, load_catalog

    markdown_to_stdout = markdown is not None and str(markdown) == "-"
    if markdown_to_stdout and as_json:
        raise InputError("--markdown - and --json both write to stdout: give --markdown a file, or drop one")
    read = [Path(p) for p in [*(paths or []), *logs, *traces, *([bundle] if bundle else [])] if p != "-"]
    if markdown is not None and not markdown_to_stdout:
        check_output_file(markdown, "--markdown", read)
    catalog = catalog_with_overrides(catalog_dir) if catalog_dir is not None else load_catalog()
    if list_signatures:
        rows = [
            {"id": sig.id, "severity": sig.severity.value, "scope": sig.scope.value, "title": sig.title}
            for sig in sorted(catalog.signatures, key=lambda x: x.id)
        ]
        if markdown is not None and not markdown_to_stdout:
            write_texts([(markdown, _catalog_markdown(rows))], what=f"--markdown {markdown}")
        if as_json:
            emit_json({"signatures": rows, "problems": list(catalog.problems)})
        elif markdown_to_stdout:
            typer.echo(_catalog_markdown(rows), nl=False)
        else:
            emit_table(f"{len(rows)} failure signatures", ["id", "severity", "scope", "title"], rows)
        raise typer.Exit(0)
    inputs = DiagnoseInputs(
        logs=[*(paths or []), *logs],
        traces=traces,
        prometheus=prometheus,
        exporter=exporter,
        k8s_namespace=k8s_namespace,
        bundle=bundle,
        window=TimeWindow.from_flags(since, start, end),
    )
    report = diagnose(inputs, catalog=catalog, semantic=semantic)
    if markdown is not None and not markdown_to_stdout:
        # Whole or not at all: a full disk must not leave the last incident's report half overwritten.
        write_texts([(markdown, report.to_markdown())], what=f"--markdown {markdown}")
    if as_json:
        emit_json(report.to_dict())
    elif markdown_to_stdout:
        typer.echo(report.to_markdown(), nl=False)
    else:
        _render(report)
    raise typer.Exit(0 if report.causes else 1)


def register(app: typer.Typer) -> None:
    app.command("diagnose", help=HELP)(diagnose_cmd)
