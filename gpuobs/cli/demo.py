"""`gpuobs demo`: a short game-day on the embedded stack (--exporter-only: a simulated node's table)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.table import Table

from gpuobs.cli.render import console, emit_json
from gpuobs.errors import InputError
from gpuobs.jsonlog import setup_logging
from gpuobs.names import exporter as ex
from gpuobs.names import gpu as g

__all__ = ["register"]

_HELP = "\n\n".join(
    [
        "A short game-day on the embedded local stack: start `gpuobs serve --supervise` (tiny model) and "
        "`gpuobs export` on a simulated node on loopback, then break them three times in turn (the host OOM "
        "killer SIGKILLs the serving worker; every model step runs out of GPU memory; a GPU falls off the "
        "bus) and show live how each is detected, diagnosed by `gpuobs diagnose` and recovered, then the "
        "MTTR table, and stop everything. About a minute or two.",
        "With --exporter-only: the exporter alone on a simulated 8-GPU node with a few faults (XID 13 on "
        "GPU 5, a hot GPU 3, a memory hog on GPU 1), scraped over HTTP and shown per GPU, within ~10 s.",
        "Examples: gpuobs demo  |  gpuobs demo --json  |  gpuobs demo --exporter-only --scrapes 3 --json",
        "Exit codes: 0 every fault healed (or every scrape answered), 1 one did not, 2 bad input.",
    ]
)

DEMO_EXPERIMENTS = ("serving-worker-sigkill", "serving-cuda-oom", "node-gpu-fallen-off-bus")

# Headers and cells short enough that the table fits 80 columns (a piped or default terminal).
_COLUMNS = ("gpu", "util%", "GiB", "°C", "W", "MHz", "MJ", "XID", "throttle", "procs", "up")


def _scrape(url: str, timeout_s: float = 5.0) -> dict[str, list[tuple[dict[str, str], float]]]:
    # imported here: every gpuobs command imports this module to register it, and these two cost
    # ~60 ms of each command's start-up (`gpuobs diagnose` at 2 a.m. included)
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=timeout_s) as resp:
        if resp.status != 200:
            raise RuntimeError(f"{url} answered {resp.status}")
        text = resp.read().decode("utf-8")
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def _per_gpu(metrics: dict[str, list[tuple[dict[str, str], float]]], name: str) -> dict[str, float]:
    return {labels["gpu"]: value for labels, value in metrics.get(name, []) if "gpu" in labels}


def _rows(metrics: dict[str, list[tuple[dict[str, str], float]]]) -> list[dict[str, Any]]:
    info = {labels["gpu"]: labels for labels, _ in metrics.get(g.GPU_INFO.native, [])}
    util = _per_gpu(metrics, g.GPU_UTILIZATION.native)
    used = _per_gpu(metrics, g.MEMORY_USED.native)
    total = _per_gpu(metrics, g.MEMORY_TOTAL.native)
    temp = _per_gpu(metrics, g.GPU_TEMPERATURE.native)
    power = _per_gpu(metrics, g.POWER_USAGE.native)
    sm = _per_gpu(metrics, g.SM_CLOCK.native)
    energy = _per_gpu(metrics, g.ENERGY.exposed_native)
    xid = _per_gpu(metrics, g.XID_LAST.native)
    up = _per_gpu(metrics, ex.GPU_UP.native)
    xids: dict[str, float] = {}
    for labels, value in metrics.get(g.XID_ERRORS.exposed_native, []):
        xids[labels["gpu"]] = xids.get(labels["gpu"], 0.0) + value
    throttle: dict[str, list[str]] = {}
    for labels, value in metrics.get(g.CLOCK_EVENT_ACTIVE.native, []):
        if value and labels.get("reason") != "gpu_idle":
            throttle.setdefault(labels["gpu"], []).append(labels["reason"])
    procs: dict[str, int] = {}
    for labels, _ in metrics.get(g.PROCESS_MEMORY_USED.native, []):
        procs[labels["gpu"]] = procs.get(labels["gpu"], 0) + 1
    gib = 1024**3
    rows = []
    for gpu in sorted(up, key=int):

        def num(d: dict[str, float], scale: float = 1.0, digits: int = 1, key: str = gpu) -> float | None:
            return None if key not in d else round(d[key] * scale, digits)

        rows.append(
            {
                "gpu": int(gpu),
                "model": info.get(gpu, {}).get("model_name"),
                "utilization_percent": num(util, 100),
                "memory_used_gib": num(used, 1 / gib),
                "memory_total_gib": num(total, 1 / gib),
                "temperature_c": num(temp),
                "power_w": num(power),
                "sm_clock_mhz": num(sm, 1e-6, 0),
                "energy_mj": num(energy, 1e-6, 3),
                "xid_last": num(xid, digits=0),
                "xid_count": xids.get(gpu, 0.0),
                "throttle_reasons": throttle.get(gpu, []),
                "processes": procs.get(gpu, 0),
                "up": bool(up[gpu]),
            }
        )
    return rows


def _cells(row: dict[str, Any]) -> tuple[str, ...]:
    """One table row in the order of _COLUMNS: whole numbers, short throttle reasons."""

    def whole(value: float | None) -> str:
        return "" if value is None else f"{value:.0f}"

    reasons = [r.removesuffix("_slowdown") for r in row["throttle_reasons"]]
    return (
        str(row["gpu"]),
        whole(row["utilization_percent"]),
        f"{whole(row['memory_used_gib'])}/{whole(row['memory_total_gib'])}",
        whole(row["temperature_c"]),
        whole(row["power_w"]),
        whole(row["sm_clock_mhz"]),
        whole(row["energy_mj"]),
        whole(row["xid_last"]),
        " ".join(reasons) or "-",
        str(row["processes"]),
        "yes" if row["up"] else "LOST",
    )


def _gameday_demo(json_out: bool, out: Path | None) -> None:
    """Three faults in turn on the embedded stack, shown live, then the MTTR table."""
    from gpuobs.chaos.gameday.runner import find_experiments
    from gpuobs.cli.gameday import run_with_display

    started = time.monotonic()
    folder = out or Path(tempfile.mkdtemp(prefix="gpuobs-demo-"))
    try:
        result = run_with_display(
            find_experiments(list(DEMO_EXPERIMENTS)), folder, json_out, prometheus=False
        )
    except RuntimeError as exc:
        raise InputError(f"the local stack did not start: {exc}") from None
    rows = [o.to_row() for o in result.outcomes]
    if json_out:
        emit_json(rows)
    else:
        columns = (
            "experiment",
            "diagnosed_signature",
            "detect_s",
            "diagnose_s",
            "recover_s",
            "mttr_s",
            "requests_lost",
            "passed",
        )
        console.print()
        table = Table(title="MTTR (seconds from the fault)", header_style="bold")
        for column in columns:
            table.add_column(column)
        for row in rows:
            table.add_row(*("-" if row[c] is None else str(row[c]) for c in columns))
        console.print(table)
        console.print(f"reports in {folder}; stack stopped after {time.monotonic() - started:.0f} s")
    if result.interrupted or not all(r["passed"] for r in rows):
        raise typer.Exit(1)


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the user set the option (a flag, a GPUOBS_DEMO_* variable or the config file) rather than
    leaving its default."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


def demo(
    ctx: typer.Context,
    exporter_only: bool = typer.Option(
        False, "--exporter-only", help="Only the exporter on a simulated node, shown as a table."
    ),
    gpus: int = typer.Option(8, "--gpus", help="GPUs of the simulated node (--exporter-only)."),
    scrapes: int = typer.Option(
        3, "--scrapes", help="How many times to scrape /metrics (1-10; --exporter-only)."
    ),
    interval: float = typer.Option(1.0, "--interval", help="Seconds between scrapes (0-3; --exporter-only)."),
    out: Path | None = typer.Option(None, "--out", help="Folder for the game-day's journals and reports."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    # Options of the other demo would be ignored without a word: said instead.
    table_only = [f"--{name}" for name in ("gpus", "scrapes", "interval") if _given(ctx, name)]
    if table_only and not exporter_only:
        verb = "apply" if len(table_only) > 1 else "applies"
        raise InputError(
            f"{', '.join(table_only)} {verb} only with --exporter-only (the game-day demo runs its own stack)"
        )
    if out is not None and exporter_only:
        raise InputError("--out is the game-day demo's folder; --exporter-only writes no files")
    if not exporter_only:
        _gameday_demo(json_out, out)
        return
    from gpuobs.exporters.sidecar.service import Exporter, ExporterConfig

    if not 1 <= scrapes <= 10 or not 0 <= interval <= 3:
        raise InputError("--scrapes must be 1-10 and --interval 0-3 seconds (the demo stops within ~10 s)")
    if not 1 <= gpus <= 64:
        raise InputError("--gpus must be 1-64 for the demo")
    config = ExporterConfig(
        backend="sim",
        gpus=gpus,
        naming="native",
        address="127.0.0.1",
        port=0,
        enable_fault_injection=True,
        slow_interval_s=0.5,
        history_interval_s=1.0,
        pod_resources_socket="none",
    )
    setup_logging("critical")  # the table is the output; the exporter's JSON log lines would interleave
    exporter = Exporter(config).start()
    started = time.monotonic()
    ok = True
    rows: list[dict[str, Any]] = []
    try:
        backend: Any = exporter.backend
        for fault in (
            {"kind": "xid", "gpu": 5 % gpus, "code": 13},
            {"kind": "temperature_ramp", "gpu": 3 % gpus, "delta_c": 60.0, "seconds": 0.0},
            {"kind": "memory_hog", "gpu": 1 % gpus, "gib": 30.0},
        ):
            kind = fault.pop("kind")
            backend.inject(kind, **fault)
        time.sleep(0.6)  # let the slow poller fill its cache once
        url = f"{exporter.url}/metrics"
        if not json_out:
            console.print(f"[bold]gpuobs export[/] (sim, {gpus} GPUs) serving {url}")
        for i in range(scrapes):
            t0 = time.perf_counter()
            try:
                metrics = _scrape(url)
            except (OSError, RuntimeError) as exc:
                ok = False
                console.print(f"[red]scrape {i + 1} failed:[/] {exc}")
                continue
            ms = (time.perf_counter() - t0) * 1000
            rows = _rows(metrics)
            if not json_out:
                console.print(
                    f"scrape {i + 1}/{scrapes}: {sum(len(v) for v in metrics.values())} samples "
                    f"in {ms:.1f} ms over HTTP"
                )
            if i + 1 < scrapes and time.monotonic() - started < 8:
                time.sleep(interval)
    finally:
        exporter.stop()
    if json_out:
        emit_json({"url": f"{exporter.url}/metrics", "ok": ok, "gpus": rows})
    else:
        model = rows[0]["model"] if rows else "?"
        table = Table(
            title=f"What gpuobs export sees ({gpus} simulated {model})",
            header_style="bold",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
        )
        for column in _COLUMNS:
            wraps = column == "throttle"
            table.add_column(
                column,
                justify="left" if wraps else "right",
                no_wrap=not wraps,
                min_width=10 if wraps else None,
            )
        for row in rows:
            table.add_row(*_cells(row))
        console.print(table)
        console.print(f"stopped after {time.monotonic() - started:.1f} s")
    if not ok or not rows:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("demo", help=_HELP)(demo)
