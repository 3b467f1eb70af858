"""`gpuobs export`: the GPU exporter sidecar (Prometheus /metrics, /healthz, /api/history, OTLP push)."""

from __future__ import annotations

import logging

import typer

from gpuobs.cli.render import console, emit_json
from gpuobs.errors import InputError
from gpuobs.jsonlog import setup_logging

__all__ = ["register"]

logger = logging.getLogger(__name__)

_HELP = "\n\n".join(
    [
        "Serve GPU metrics for Prometheus (native or DCGM-compatible names) and, optionally, push OTLP.",
        "Backends: nvml (the NVIDIA driver), sim (a simulated node of --gpus H200-like GPUs), "
        "auto (NVML when a driver answers, else exit 2). Endpoints: /metrics, /healthz, "
        "/api/history?since=5m (flight recorder), and "
        '/api/faults (POST {"fault": "xid", "gpu": 0, "code": 79}) only with --enable-fault-injection.',
        "Settings: flag > GPUOBS_EXPORT_<OPTION> environment (shown beside each option) > the \\[export] "
        "table of ~/.config/gpuobs/config.toml ($GPUOBS_CONFIG) > default.",
        "Example: gpuobs export --backend sim --gpus 8 --naming dcgm --port 9400",
        "Self-check on a GPU machine (exporter values beside nvidia-smi's): gpuobs export --self-check",
        "Exit codes: 0 stopped cleanly (SIGTERM/SIGINT) or self-check agreed, 1 self-check disagreed, "
        "2 bad input, no driver for --backend auto, or port in use.",
    ]
)


def export(
    backend: str = typer.Option("auto", "--backend", help="nvml | sim | auto."),
    gpus: int = typer.Option(8, "--gpus", help="GPUs of the simulated node (sim backend)."),
    naming: str = typer.Option("native", "--naming", help="native | dcgm | both."),
    address: str = typer.Option("127.0.0.1", "--address", help="Bind address (0.0.0.0 for all)."),
    port: int = typer.Option(9400, "--port", help="Port (0 picks a free one)."),
    web_config: str | None = typer.Option(
        None, "--web-config", help="exporter-toolkit web config (TLS, basic auth)."
    ),
    enable_fault_injection: bool = typer.Option(
        False, "--enable-fault-injection/--no-fault-injection", help="Serve /api/faults (sim backend only)."
    ),
    otlp_endpoint: str | None = typer.Option(
        None, "--otlp-endpoint", help="Push hw.gpu.* metrics over OTLP/HTTP."
    ),
    otlp_interval: float = typer.Option(10.0, "--otlp-interval", help="Seconds between OTLP pushes."),
    history_minutes: float = typer.Option(30.0, "--history-minutes", help="Flight recorder span."),
    history_interval: float = typer.Option(
        10.0, "--history-interval", help="Seconds between recorder samples."
    ),
    slow_interval: float = typer.Option(
        5.0, "--slow-interval", help="Seconds between slow-field polls (energy, PCIe, GPM)."
    ),
    pod_resources_socket: str | None = typer.Option(
        None,
        "--pod-resources-socket",
        help="kubelet pod-resources socket ('none' to disable).",
        show_default="/var/lib/kubelet/pod-resources/kubelet.sock",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the simulated node."),
    log_level: str = typer.Option("info", "--log-level", help="debug | info | warning | error."),
    self_check: bool = typer.Option(
        False, "--self-check", help="Compare NVML readings with nvidia-smi, exit."
    ),
    json_out: bool = typer.Option(False, "--json", help="With --self-check: print the comparison as JSON."),
) -> None:
    from gpuobs.exporters.sidecar.service import (
        DEFAULT_POD_RESOURCES_SOCKET,
        ExporterConfig,
        run_until_signal,
    )

    if log_level.lower() not in ("debug", "info", "warning", "error"):
        raise InputError(f"--log-level must be debug, info, warning or error, got {log_level!r}")
    setup_logging(log_level)
    if self_check:
        _self_check(json_out)
        return
    config = ExporterConfig(
        backend=backend,
        gpus=gpus,
        naming=naming,
        address=address,
        port=port,
        web_config=web_config,
        enable_fault_injection=enable_fault_injection,
        otlp_endpoint=otlp_endpoint,
        otlp_interval_s=otlp_interval,
        history_minutes=history_minutes,
        history_interval_s=history_interval,
        slow_interval_s=slow_interval,
        pod_resources_socket=pod_resources_socket or DEFAULT_POD_RESOURCES_SOCKET,
        seed=seed,
    )
    run_until_signal(config)


def _self_check(json_out: bool) -> None:
    from gpuobs.exporters.sidecar.selfcheck import run_self_check

    report = run_self_check()
    if json_out:
        emit_json(report.to_dict())
    else:
        from rich.table import Table

        table = Table(title=f"gpuobs export self-check vs nvidia-smi ({report.driver})", header_style="bold")
        for col in ("gpu", "field", "nvidia-smi", "gpuobs", "tolerance", "agree"):
            table.add_column(col)
        for row in report.rows:
            table.add_row(
                str(row.gpu),
                row.field,
                row.smi,
                row.ours,
                row.tolerance,
                "[green]yes[/]" if row.agree else "[red]NO[/]",
            )
        console.print(table)
        console.print(f"{report.agreeing}/{len(report.rows)} fields agree")
    if not report.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("export", help=_HELP, no_args_is_help=False)(export)
