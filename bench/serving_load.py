"""Serving load benchmark: FIFO static batching against the length-bucketed continuous batcher.

Starts `gpuobs serve` twice on loopback (the embedded tiny model on CPU), `--scheduler fifo_static`
then `--scheduler bucketed`, offers both exactly the same open-loop load (same seeded Poisson
arrivals, same mix of short and long prompts, fixed output lengths) through the loadtest library,
and prints throughput and P50/P99 of TTFT and end-to-end latency for both, with the ratio. Then the
robustness run against the bucketed server: N random bad requests, 0 crashes, every answer a clear
4xx, the server healthy after.

    .venv/bin/python bench/serving_load.py                    # defaults: 8, 16, 32 req/s, 1000 bad requests
    .venv/bin/python bench/serving_load.py --rate 12 --duration 60 --json out.json

Exit code 0 when the P99 target (bucketed at least 3x lower, judged at every --rate) and the
robustness check are met, else 1.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from gpuobs.serving.loadtest import (
    LoadConfig,
    PromptMix,
    RunSummary,
    resolve_target,
    run_load,
    run_robustness,
)

SCHEDULERS = ("fifo_static", "bucketed")
TARGET_RATIO = 3.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """One `gpuobs serve` subprocess on loopback."""

    scheduler: str
    workdir: Path
    extra: tuple[str, ...] = ()
    proc: subprocess.Popen[bytes] | None = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 180.0) -> Server:
        self.port = _free_port()
        log = (self.workdir / f"serve-{self.scheduler}.log").open("ab")
        argv = [sys.executable, "-m", "gpuobs", "serve", "--address", "127.0.0.1", "--port", str(self.port),
                "--device", "cpu", "--scheduler", self.scheduler, "--log-level", "warning", *self.extra]
        self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"gpuobs serve --scheduler {self.scheduler} exited {self.proc.returncode}; "
                                 f"see {log.name}")
            try:
                if httpx.get(self.url + "/ready", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise SystemExit(f"gpuobs serve --scheduler {self.scheduler} not ready after {timeout_s:g} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f}"


def _row(name: str, s: RunSummary) -> list[str]:
    slo = s.slo_p99_e2e
    every = "-" if slo is None else ("unbounded" if math.isinf(slo) else _ms(slo))
    return [name, f"{s.offered_rate:g}", str(s.requests), str(s.completed), str(s.failed),
            f"{s.throughput_rps:.2f}", f"{s.output_tokens_per_s:.1f}", _ms(s.ttft.p50), _ms(s.ttft.p99),
            _ms(s.e2e.p50), _ms(s.e2e.p99), every]


def _print_table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    print("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b <= 0 else a / b


def _x(v: float | None) -> str:
    return "-" if v is None else f"x{v:.2f}"


def _ratios(fifo: RunSummary, bucketed: RunSummary) -> dict[str, float | None]:
    return {
        "throughput": _ratio(bucketed.throughput_rps, fifo.throughput_rps),
        "ttft_p50": _ratio(fifo.ttft.p50, bucketed.ttft.p50),
        "ttft_p99": _ratio(fifo.ttft.p99, bucketed.ttft.p99),
        "e2e_p50": _ratio(fifo.e2e.p50, bucketed.e2e.p50),
        "e2e_p99": _ratio(fifo.e2e.p99, bucketed.e2e.p99),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, nargs="+", default=[8.0, 16.0, 32.0],
                        help="offered loads, requests/s (Poisson); the target is judged at each")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of arrivals per run")
    parser.add_argument("--requests", type=int, default=2000, help="at most this many requests per run")
    parser.add_argument("--long-fraction", type=float, default=0.2, help="share of long prompts")
    parser.add_argument("--short-words", type=int, nargs=2, default=[4, 16], metavar=("LO", "HI"))
    parser.add_argument("--long-words", type=int, nargs=2, default=[24, 48], metavar=("LO", "HI"))
    parser.add_argument("--short-max-tokens", type=int, default=8)
    parser.add_argument("--long-max-tokens", type=int, default=128)
    parser.add_argument("--robustness", type=int, default=1000, help="bad requests (0: skip)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=120.0, help="per-request timeout, s")
    parser.add_argument("--json", type=Path, default=None, help="also write every figure to this file")
    parser.add_argument("-E", "--engine-option", action="append", default=[],
                        help="KEY=VALUE passed to both servers' EngineConfig")
    args = parser.parse_args(argv)

    mix = PromptMix(long_fraction=args.long_fraction, short_words=tuple(args.short_words),
                    long_words=tuple(args.long_words), short_max_tokens=args.short_max_tokens,
                    long_max_tokens=args.long_max_tokens)
    configs = [LoadConfig(rate=rate, duration_s=args.duration, max_requests=args.requests, mix=mix,
                          seed=args.seed, request_timeout_s=args.timeout, drain_timeout_s=args.timeout)
               for rate in args.rate]
    print(f"serving_load: Poisson arrivals (seed {args.seed}) at {', '.join(f'{r:g}' for r in args.rate)} "
          f"req/s for {args.duration:g} s each; {args.long_fraction:.0%} long prompts ({args.long_words[0]}-"
          f"{args.long_words[1]} words, {args.long_max_tokens} tokens out), the rest short "
          f"({args.short_words[0]}-{args.short_words[1]} words, {args.short_max_tokens} tokens out); "
          f"ignore_eos; tiny embedded model on CPU; {platform.node()} with {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    extra = tuple(x for opt in args.engine_option for x in ("-E", opt))
    summaries: dict[tuple[str, float], RunSummary] = {}
    lags: dict[str, float | None] = {}
    loads: dict[str, tuple[float, float]] = {}
    robustness = None
    with tempfile.TemporaryDirectory(prefix="serving_load-") as tmp:
        for scheduler in SCHEDULERS:
            server = Server(scheduler, Path(tmp), extra).start()
            try:
                target = resolve_target(server.url, extra_body={"ignore_eos": True})
                warm = LoadConfig(rate=4.0, duration_s=1.0, max_requests=4, mix=mix, seed=args.seed + 99)
                run_load(target, warm)                      # first-request costs stay out of the figures
                for config in configs:
                    key = f"{scheduler}@{config.rate:g}"
                    before = os.getloadavg()[0]
                    t = time.monotonic()
                    run = run_load(target, config)
                    summaries[(scheduler, config.rate)] = run.summary
                    lags[key] = run.send_lag_p99_s
                    loads[key] = (before, os.getloadavg()[0])
                    print(f"  {key}: {run.summary.completed}/{run.summary.requests} answered in "
                          f"{time.monotonic() - t:.0f} s, outcomes {run.summary.outcomes}", flush=True)
                if scheduler == "bucketed" and args.robustness > 0:
                    t = time.monotonic()
                    robustness = run_robustness(target, args.robustness, seed=args.seed, concurrency=8)
                    print(f"  robustness: {args.robustness} bad requests in {time.monotonic() - t:.0f} s",
                          flush=True)
            finally:
                server.stop()

    header = ["scheduler", "offered/s", "sent", "ok", "failed", "req/s", "tok/s", "TTFT p50 ms",
              "TTFT p99 ms", "e2e p50 ms", "e2e p99 ms", "p99 all ms"]
    rows: list[list[str]] = []
    ratios: dict[str, dict[str, float | None]] = {}
    for rate in args.rate:
        fifo, bucketed = summaries[("fifo_static", rate)], summaries[("bucketed", rate)]
        r = ratios[f"{rate:g}"] = _ratios(fifo, bucketed)
        rows += [_row("fifo_static", fifo), _row("bucketed", bucketed),
                 ["fifo/bucketed", "", "", "", "", _x(r["throughput"]) + " (b/f)", "", _x(r["ttft_p50"]),
                  _x(r["ttft_p99"]), _x(r["e2e_p50"]), _x(r["e2e_p99"]), ""]]
    _print_table("Same offered load, FIFO static batching vs length-bucketed continuous batching "
                 "(e2e p99 over answered requests; 'p99 all' counts failed ones as unbounded; the target is "
                 "judged on answered requests)", header, rows)
    by_kind_rows = []
    for (name, rate), summary in summaries.items():
        for kind, k in summary.by_kind.items():
            by_kind_rows.append([name, f"{rate:g}", kind, str(k["requests"]), str(k["completed"]),
                                 _ms(k["p50_ttft"]), _ms(k["p99_ttft"]), _ms(k["p50_e2e"]),
                                 _ms(k["p99_e2e"])])
    _print_table("By prompt class", ["scheduler", "offered/s", "class", "sent", "ok", "TTFT p50 ms",
                                     "TTFT p99 ms", "e2e p50 ms", "e2e p99 ms"], by_kind_rows)
    print("\nclient send lag p99 (ms): " + ", ".join(f"{k} {_ms(v)}" for k, v in lags.items()))
    print("load average before/after: " + ", ".join(f"{k} {a:.1f}/{b:.1f}" for k, (a, b) in loads.items()))
    met: dict[str, bool] = {}
    for rate in args.rate:
        judged = ratios[f"{rate:g}"]["e2e_p99"]
        met[f"{rate:g}"] = (judged is not None and judged >= TARGET_RATIO
                            and summaries[("bucketed", rate)].failed == 0)
        print(f"target P99 e2e at least {TARGET_RATIO:g}x lower with the bucketed batcher at {rate:g} req/s: "
              f"{_x(judged)} -> {'MET' if met[f'{rate:g}'] else 'MISSED'}")
    e2e_ok = all(met.values())
    robust_ok = True
    if robustness is not None:
        robust_ok = robustness.passed
        print(f"robustness: {robustness.total} bad requests, {robustness.clear_4xx} clear 4xx, "
              f"{robustness.unclear_4xx} unclear 4xx, {robustness.accepted} accepted, {robustness.crashes} "
              f"crashes, {robustness.timeouts} timeouts, statuses {robustness.statuses}, healthy after: "
              f"{robustness.healthy_after} -> {'MET' if robust_ok else 'MISSED'}")
        for f in robustness.failures:
            print(f"  {f['category']} ({f['description']}) {f['path']}: {f['verdict']} {f['status']} "
                  f"{f['answer'][:120]}")
    if args.json is not None:
        out: dict[str, Any] = {
            "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "machine": {"node": platform.node(), "cpus": os.cpu_count()},
            "runs": {f"{name}@{rate:g}": s.to_dict() for (name, rate), s in summaries.items()},
            "send_lag_p99_s": lags, "load_average": loads, "ratios": ratios,
            "robustness": robustness.to_dict() if robustness else None,
            "targets": {"e2e_p99_ratio": met, "robustness": robust_ok},
        }
        args.json.write_text(json.dumps(out, indent=2, default=str))
    return 0 if e2e_ok and robust_ok else 1


if __name__ == "__main__":
    sys.exit(main())
