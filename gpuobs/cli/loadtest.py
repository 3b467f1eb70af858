"""`gpuobs loadtest`: open-loop load test of an OpenAI-compatible server, with a rich display or --json."""

from __future__ import annotations

import logging
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from gpuobs.cli.render import console, emit_json
from gpuobs.errors import InputError
from gpuobs.extras import require

__all__ = ["register"]

logger = logging.getLogger(__name__)

_HELP = "\n\n".join(" ".join(paragraph.split()) for paragraph in """
Open-loop load test of an OpenAI-compatible server (gpuobs serve, vLLM, ...).

Requests arrive on a Poisson (or constant) schedule at an offered rate that does not wait for answers,
stream so that time to first token and inter-token gaps are measured per chunk, and mix short and
long prompts. The offered rate steps up (x10^0.25 per step) from --rate until P99 end-to-end latency
misses --p99-target-ms; the report gives the four dimensions engines are judged by: throughput at
the P99 target, cost per 1000 requests at --gpu-hour-price, elasticity (latency growth over a tenfold
load step below saturation) and robustness (--robustness random bad requests: each must get a clear
4xx, none may crash the server, which must be healthy after).

Example: gpuobs loadtest http://127.0.0.1:8000 --rate 2 --duration 10 --p99-target-ms 2000 --json

Exit codes: 0 target met and robustness passed, 1 target missed at every rate or robustness failed,
2 bad input or server unreachable.
""".strip().split("\n\n"))


def _range(text: str, flag: str) -> tuple[int, int]:
    try:
        lo_s, hi_s = text.split("-", 1)
        lo, hi = int(lo_s), int(hi_s)
    except ValueError:
        raise InputError(f"{flag} must look like LO-HI (words), e.g. 4-16; got {text!r}") from None
    if not 1 <= lo <= hi:
        raise InputError(f"{flag} needs 1 <= LO <= HI, got {text!r}")
    return lo, hi


def _check_flags(limits: list[tuple[str, float, str]]) -> None:
    """Each (flag, value, bound) with bound "> 0", ">= 0", ">= 1", "> 1" or "0..1": one line naming the flag,
    before any config is built (the config classes word their checks by field, several to a message)."""
    tests = {
        "> 0": lambda v: v > 0,
        ">= 0": lambda v: v >= 0,
        ">= 1": lambda v: v >= 1,
        "> 1": lambda v: v > 1,
        "0..1": lambda v: 0 <= v <= 1,
    }
    for flag, value, bound in limits:
        if not tests[bound](value):
            shown = "between 0 and 1" if bound == "0..1" else bound
            raise InputError(f"{flag} must be {shown}, got {value:g}")


def _choice(flag: str, value: str, choices: list[str]) -> str:
    if value not in choices:
        raise InputError(f"{flag} must be {' or '.join(choices)}, got {value!r}")
    return value


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f}"


def _steps_table(steps: list[dict[str, Any]], target_ms: float) -> Table:
    table = Table(title=f"Offered-load steps (latencies in ms; P99 e2e target {target_ms:.0f} ms)",
                  header_style="bold")
    for col in ("offered", "sent", "ok", "fail", "req/s", "tok/s", "TTFT p50", "TTFT p99", "e2e p50",
                "e2e p99", "ITL p50", "target"):
        table.add_column(col, justify="right")
    for s in sorted(steps, key=lambda s: s["offered_rate"]):
        verdict = "[green]met[/]" if s["passed"] else "[red]missed[/]"
        if s["purpose"] != "ladder":
            verdict += f" ({s['purpose']})"
        table.add_row(f"{s['offered_rate']:.3g}", str(s["requests"]), str(s["completed"]), str(s["failed"]),
                      f"{s['throughput_rps']:.2f}", f"{s['output_tokens_per_s']:.1f}",
                      _ms(s["ttft"]["p50"]), _ms(s["ttft"]["p99"]), _ms(s["e2e"]["p50"]),
                      _ms(s["e2e"]["p99"]), _ms(s["inter_token"]["p50"]), verdict)
    return table


def _dimensions_table(data: dict[str, Any]) -> Table:
    table = Table(title="Four dimensions", header_style="bold")
    table.add_column("dimension")
    table.add_column("result")
    cfg = data["config"]
    best = data["throughput_at_p99"]
    if best:
        table.add_row(f"throughput at P99 <= {cfg['p99_target_s'] * 1000:.0f} ms",
                      f"{best['throughput_rps']:.2f} req/s, {best['output_tokens_per_s']:.1f} tok/s "
                      f"(offered {best['offered_rate']:.3g} req/s, P99 {_ms(best['p99_e2e_s'])} ms"
                      + (f"; missed at {best['first_failing_rate']:.3g} req/s)" if best["first_failing_rate"]
                         else "; never missed: raise --rate or --max-steps)"))
    else:
        table.add_row("throughput at P99", f"[red]target missed already at {cfg['start_rate']:.3g} req/s[/]")
    cost = data["cost"]
    if cost and cost["per_1000_requests"] is not None:
        per_tok = cost["per_million_output_tokens"]
        table.add_row("cost", f"{cost['per_1000_requests']:.4f} per 1000 requests"
                      + (f", {per_tok:.4f} per 1M output tokens" if per_tok is not None else "")
                      + f" (at {cost['gpu_hour_price']:g}/GPU-hour x {cost['gpus']})")
    else:
        table.add_row("cost", "- (no sustainable rate)")
    el = data["elasticity"]
    if el:
        table.add_row("elasticity",
                      f"x{el['load_factor']:.1f} load ({el['low_rate']:.3g} -> {el['high_rate']:.3g} req/s):"
                      f" P50 e2e x{_ratio(el['p50_e2e_ratio'])}, P99 e2e x{_ratio(el['p99_e2e_ratio'])},"
                      f" P99 TTFT x{_ratio(el['p99_ttft_ratio'])}")
    else:
        table.add_row("elasticity", "- (no run at a tenth of the sustainable rate)")
    rb = data["robustness"]
    if rb:
        colour = "green" if rb["passed"] else "red"
        table.add_row("robustness", f"[{colour}]{rb['total']} bad requests: {rb['clear_4xx']} clear 4xx, "
                      f"{rb['unclear_4xx']} unclear 4xx, {rb['accepted']} accepted, {rb['crashes']} crashes, "
                      f"{rb['timeouts']} timeouts; healthy after: {rb['healthy_after']}[/]")
        for f in rb["failures"][:5]:
            table.add_row("", f"  {f['category']} ({f['description']}): {f['verdict']} {f['status']} "
                          f"{f['answer'][:80]}")
    else:
        table.add_row("robustness", "- (skipped: --robustness 0)")
    return table


def _error_lines(steps: list[dict[str, Any]]) -> list[str]:
    """What failed requests were told, per step: the server's own message (e.g. model not found)."""
    lines = []
    for s in steps:
        for e in s.get("errors", []):
            lines.append(f"step at {s['offered_rate']:.3g} req/s: {e['count']} requests failed with: "
                         f"{e['message']}")
    return lines


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def register(app: typer.Typer) -> None:
    @app.command("loadtest", help=_HELP)
    def loadtest(
        url: str = typer.Argument(..., help="Base URL of the server, e.g. http://127.0.0.1:8000"),
        model: str | None = typer.Option(None, "--model", help="Model name; default: first of /v1/models."),
        rate: float = typer.Option(1.0, "--rate", help="First offered rate of the ladder, requests/s."),
        duration: float = typer.Option(10.0, "--duration", help="Seconds of arrivals per step."),
        requests: int = typer.Option(1000, "--requests", help="At most this many requests per step."),
        p99_target_ms: float = typer.Option(2000.0, "--p99-target-ms", help="P99 end-to-end target, ms."),
        gpu_hour_price: float = typer.Option(3.0, "--gpu-hour-price", help="Price of one GPU-hour."),
        gpus: int = typer.Option(1, "--gpus", help="GPUs behind the URL (for the cost)."),
        robustness: int = typer.Option(100, "--robustness", help="Random bad requests to send (0: skip)."),
        max_steps: int = typer.Option(8, "--max-steps", help="At most this many rates on the ladder."),
        step_factor: float = typer.Option(10**0.25, "--step-factor", help="Rate multiplier between steps."),
        arrival: str = typer.Option("poisson", "--arrival", help="Arrival process: poisson or constant."),
        endpoint: str = typer.Option("completions", "--endpoint", help="completions or chat."),
        long_fraction: float = typer.Option(0.25, "--long-fraction", help="Share of long prompts."),
        short_words: str = typer.Option("4-16", "--short-words", help="Short prompt length, words LO-HI."),
        long_words: str = typer.Option("64-128", "--long-words", help="Long prompt length, words LO-HI."),
        max_tokens: int = typer.Option(16, "--max-tokens", help="max_tokens of every request."),
        ignore_eos: bool = typer.Option(False, "--ignore-eos", help="Send ignore_eos (vLLM extension)."),
        elasticity_max_s: float = typer.Option(
            60.0, "--elasticity-max-s", help="Longest extra run at a tenth of the sustainable rate, s."),
        timeout: float = typer.Option(60.0, "--timeout", help="Per-request timeout, seconds."),
        api_key: str | None = typer.Option(
            None, "--api-key", envvar="GPUOBS_API_KEY", show_envvar=True,
            help="Sent as `Authorization: Bearer KEY` (the --api-key of vLLM and gpuobs serve)."),
        seed: int = typer.Option(0, "--seed", help="Seed of arrivals, prompts and bad requests."),
        json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of tables."),
    ) -> None:
        require("httpx", "loadtest")
        from gpuobs.serving import loadtest as lt

        target_ms, price = p99_target_ms, gpu_hour_price
        process = lt.ArrivalProcess(_choice("--arrival", arrival, [a.value for a in lt.ArrivalProcess]))
        ep = lt.Endpoint(_choice("--endpoint", endpoint, [e.value for e in lt.Endpoint]))
        _check_flags([
            ("--rate", rate, "> 0"), ("--duration", duration, "> 0"), ("--requests", requests, ">= 1"),
            ("--p99-target-ms", target_ms, "> 0"), ("--gpu-hour-price", price, ">= 0"),
            ("--gpus", gpus, ">= 1"), ("--robustness", robustness, ">= 0"),
            ("--max-steps", max_steps, ">= 1"),
            ("--step-factor", step_factor, "> 1"), ("--long-fraction", long_fraction, "0..1"),
            ("--max-tokens", max_tokens, ">= 1"), ("--elasticity-max-s", elasticity_max_s, "> 0"),
            ("--timeout", timeout, "> 0"),
        ])
        if api_key is not None and not api_key.strip():  # `--api-key "$KEY"` with KEY unset: a 401 each
            raise InputError("--api-key is empty (an unset variable?): leave it out for a server without one")
        try:
            mix = lt.PromptMix(long_fraction=long_fraction, short_words=_range(short_words, "--short-words"),
                               long_words=_range(long_words, "--long-words"), short_max_tokens=max_tokens,
                               long_max_tokens=max_tokens)
            step = lt.LoadConfig(rate=rate, duration_s=duration, max_requests=requests, arrival=process,
                                 mix=mix, seed=seed, request_timeout_s=timeout, drain_timeout_s=timeout)
            config = lt.LoadtestConfig(step=step, p99_target_s=target_ms / 1000.0, step_factor=step_factor,
                                       max_steps=max_steps, gpu_hour_price=price, gpus=gpus,
                                       robustness_requests=robustness,
                                       elasticity_max_duration_s=elasticity_max_s)
            lt.cost_at(1.0, 1.0, price, gpus)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        try:
            extra = {"ignore_eos": True} if ignore_eos else None
            target = lt.resolve_target(url, model, ep, api_key=api_key or None, extra_body=extra)
        except ValueError as exc:
            raise InputError(str(exc)) from None

        err = Console(stderr=True)
        plain = not err.is_terminal      # no live bar: a line as each step starts and ends
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=err,
                      transient=True) as progress:
            tasks: dict[str, TaskID] = {}

            def on_event(event: Any) -> None:
                if event.phase == "step" and event.progress is not None:
                    p = event.progress
                    key = f"step{event.step_index}"
                    if key not in tasks:
                        if plain:
                            err.print(f"  step {event.step_index + 1}: {p.rate:.3g} req/s, "
                                      f"{p.planned} requests planned", highlight=False)
                        tasks[key] = progress.add_task(
                            f"step {event.step_index + 1} at {p.rate:.3g} req/s", total=p.planned, info="")
                    progress.update(tasks[key], completed=p.completed + p.failed,
                                    info=f"ok {p.completed} failed {p.failed} in flight {p.in_flight}")
                elif event.phase == "step_done":
                    err.print(f"  step {event.step_index + 1}: {event.message}", highlight=False)
                elif event.phase == "robustness":
                    if "robustness" not in tasks:
                        tasks["robustness"] = progress.add_task("robustness", total=event.robustness_total,
                                                                info="bad requests")
                    progress.update(tasks["robustness"], completed=event.robustness_done)

            report = lt.run_loadtest(target, config, on_event)
        data = report.to_dict()
        if json_out:
            emit_json(data)
        else:
            console.print(_steps_table(data["steps"], target_ms))
            for line in _error_lines(data["steps"]):
                console.print(line, highlight=False, markup=False)
            console.print(_dimensions_table(data))
        if not report.passed:
            raise typer.Exit(1)
