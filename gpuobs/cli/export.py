"""`gpuobs export`: the GPU exporter sidecar (Prometheus /metrics, /healthz, /api/history, OTLP push)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import typer

from gpuobs.cli.render import console, emit_json
from gpuobs.config import load_config, resolve
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
        "Settings: flag > GPUOBS_<NAME> environment > the export table of the config file.",
        "Example: gpuobs export --backend sim --gpus 8 --naming dcgm --port 9400",
        "Self-check on a GPU machine (exporter values beside nvidia-smi's): gpuobs export --self-check",
        "Exit codes: 0 stopped cleanly (SIGTERM/SIGINT) or self-check agreed, 1 self-check disagreed, "
        "2 bad input, no driver for --backend auto, or port in use.",
    ]
)


def export(
    backend: str = typer.Option(None, "--backend", help="nvml | sim | auto (default auto)."),
    gpus: int = typer.Option(None, "--gpus", help="GPUs of the simulated node (sim backend; default 8)."),
    naming: str = typer.Option(None, "--naming", help="native | dcgm | both (default native)."),
    address: str = typer.Option(None, "--address", help="Bind address (default 127.0.0.1; 0.0.0.0 for all)."),
    port: int = typer.Option(None, "--port", help="Port (default 9400; 0 picks a free one)."),
    web_config: str = typer.Option(
        None, "--web-config", help="exporter-toolkit web config (TLS, basic auth)."
    ),
    enable_fault_injection: bool = typer.Option(
        None, "--enable-fault-injection/--no-fault-injection", help="Serve /api/faults (sim backend only)."
    ),
    otlp_endpoint: str = typer.Option(None, "--otlp-endpoint", help="Push hw.gpu.* metrics over OTLP/HTTP."),
    otlp_interval: float = typer.Option(
        None, "--otlp-interval", help="Seconds between OTLP pushes (default 10)."
    ),
    history_minutes: float = typer.Option(
        None, "--history-minutes", help="Flight recorder span (default 30)."
    ),
    history_interval: float = typer.Option(
        None, "--history-interval", help="Seconds between recorder samples (default 10)."
    ),
    slow_interval: float = typer.Option(
        None, "--slow-interval", help="Seconds between slow-field polls (energy, PCIe, GPM; default 5)."
    ),
    pod_resources_socket: str = typer.Option(
        None, "--pod-resources-socket", help="kubelet pod-resources socket ('none' to disable)."
    ),
    seed: int = typer.Option(None, "--seed", help="Seed of the simulated node (default 0)."),
    log_level: str = typer.Option(None, "--log-level", help="debug | info | warning | error (default info)."),
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

    cfg = load_config()

    def r(name: str, flag: Any, default: Any, cast: Callable[[Any], Any]) -> Any:
        return resolve("export", name, flag, default, cast, cfg)

    level = str(r("log_level", log_level, "info", str))
    if level.lower() not in ("debug", "info", "warning", "error"):
        raise InputError(f"--log-level must be debug, info, warning or error, got {level!r}")
    setup_logging(level)
    if self_check:
        _self_check(json_out)
        return
    config = ExporterConfig(
        backend=str(r("backend", backend, "auto", str)),
        gpus=int(r("gpus", gpus, 8, int)),
        naming=str(r("naming", naming, "native", str)),
        address=str(r("address", address, "127.0.0.1", str)),
        port=int(r("port", port, 9400, int)),
        web_config=r("web_config", web_config, None, str),
        enable_fault_injection=bool(r("enable_fault_injection", enable_fault_injection, False, _bool)),
        otlp_endpoint=r("otlp_endpoint", otlp_endpoint, None, str),
        otlp_interval_s=float(r("otlp_interval", otlp_interval, 10.0, float)),
        history_minutes=float(r("history_minutes", history_minutes, 30.0, float)),
        history_interval_s=float(r("history_interval", history_interval, 10.0, float)),
        slow_interval_s=float(r("slow_interval", slow_interval, 5.0, float)),
        pod_resources_socket=str(
            r("pod_resources_socket", pod_resources_socket, DEFAULT_POD_RESOURCES_SOCKET, str)
        ),
        seed=int(r("seed", seed, 0, int)),
    )
    run_until_signal(config)


def _bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("expected true or false")


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
