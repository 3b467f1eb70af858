"""Benchmark of the RCA sources: log-parser throughput, parser fuzzing, and a Prometheus window fetch.

Usage: `python bench/rca_parsers.py [--lines 100000] [--fuzz 10000] [--no-prometheus]`

Parsers: 100,000 log lines (noise with 0 %, 2 % and 20 % failure lines, tests/support/rca_corpus.py)
through `parse_text` (the exact line parsers) and through `parse_document` (everything a `--logs` text
gets: wrappers, tool readers, line parsers, memory trend and the text tier), beside three baselines
measured in the same run: the floor (split lines and one
substring check per line), the naive prefilter (every trigger substring checked on every line, what
the parser did before the anchor scan) and `parse_text` with the anchors found by one `str.find` scan
each (before the Aho-Corasick pass). CLI: `gpuobs diagnose --logs` on a 100,000-line file in a fresh
process (wall and CPU, median of 5), beside `python -c pass` and `gpuobs --help` (start-up and
imports). Fuzz: hypothesis feeds random and mutated lines to the parsers in strict mode (a parser
exception fails); the seeded loop of tests/rca/test_rca_text_fuzz.py feeds 10,000 mutated excerpts and
tool-output templates to every reader of issue 11 and to the text tier. Prometheus: the real server
filled with a 64-GPU, one-hour window via promtool, summarised by `fetch_prometheus`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.rca_corpus import fleet_openmetrics, make_log  # noqa: E402

from gpuobs.evidence import EvidenceTier  # noqa: E402
from gpuobs.rca.parsers import lines as _lines  # noqa: E402
from gpuobs.rca.parsers import parse_text  # noqa: E402
from gpuobs.rca.parsers.document import parse_document  # noqa: E402
from gpuobs.rca.parsers.lines import _FALLBACK_NEEDLES, _NEEDLES  # noqa: E402
from gpuobs.rca.parsers.scan import MultiScanner  # noqa: E402


def _best(fn, repeat: int = 3) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench_parsers(lines: int) -> None:
    needles = [n for n, _ in _NEEDLES] + list(_FALLBACK_NEEDLES)
    print(f"\n## log parsers: {lines:,} lines (best of 3)")
    print(
        f"{'failure lines':>14} | {'floor: 1 check/line':>20} | {'naive: all needles/line':>24} | "
        f"{'str.find scan':>13} | {'parse_text':>11} | {'lines/s':>10} | records | "
        f"{'both tiers':>10} | text records"
    )
    for ratio in (0.0, 0.02, 0.2):
        text = make_log(lines, ratio)

        def floor(text: str = text) -> None:
            sum(1 for line in text.splitlines() if "Xid" in line)

        def naive(text: str = text) -> None:
            for line in text.splitlines():
                for n in needles:
                    if n in line:
                        break

        records = len(parse_text(text))
        t_floor, t_naive, t_parse = _best(floor), _best(naive), _best(lambda: parse_text(text))  # noqa: B023
        automaton = _lines._SCANNER
        _lines._SCANNER = MultiScanner(automaton.patterns, automaton=False)  # str.find, one pass per needle
        try:
            assert len(parse_text(text)) == records
            t_find = _best(lambda: parse_text(text))  # noqa: B023
        finally:
            _lines._SCANNER = automaton
        documents = parse_document("app.log", text)
        worded = sum(1 for ev in documents if ev.tier is EvidenceTier.TEXT)
        t_doc = _best(lambda: parse_document("app.log", text))  # noqa: B023
        print(
            f"{ratio:>13.0%} | {t_floor:>19.3f}s | {t_naive:>23.3f}s | {t_find:>12.3f}s | "
            f"{t_parse:>10.3f}s | {lines / t_parse:>10,.0f} | {records:>7} | {t_doc:>9.3f}s | {worded}"
        )


def _run_cli(args: list[str], repeat: int = 5) -> tuple[float, float]:
    """Median wall and CPU (user + sys) seconds of a fresh process running `args`."""
    import resource
    import statistics

    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(args, check=False, capture_output=True, timeout=120)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def bench_cli(lines: int) -> None:
    import os

    cli = [sys.executable, "-c", "from gpuobs.cli.app import main; main()"]
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "app.log"
        log.write_text(make_log(lines, 0.015))
        rows = [
            ("python -c pass (interpreter start)", [sys.executable, "-c", "pass"]),
            ("gpuobs --help (CLI imports)", [*cli, "--help"]),
            (
                f"gpuobs diagnose --logs <{lines:,} lines> --json",
                [*cli, "diagnose", "--logs", str(log), "--json"],
            ),
        ]
        print(f"\n## CLI, fresh process, median of 5 (load average {os.getloadavg()[0]:.1f})")
        print(f"{'command':>48} | {'wall':>7} | {'CPU':>7}")
        for name, args in rows:
            wall, cpu = _run_cli(args)
            print(f"{name:>48} | {wall:>6.2f}s | {cpu:>6.2f}s")


def bench_fuzz(examples: int) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    sys.path.insert(0, str(ROOT / "tests" / "rca"))  # the RCA tests moved under tests/rca
    from test_rca_sources_fuzz import mutated_lines, random_lines, structured_noise

    count = {"n": 0, "records": 0}

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(st.one_of(mutated_lines, random_lines, structured_noise), min_size=1, max_size=8))
    def run(lines: list[str]) -> None:
        count["n"] += 1
        count["records"] += len(parse_text("\n".join(lines), source="fuzz", year=2026, strict=True))

    t0 = time.perf_counter()
    run()
    print(
        f"\n## fuzz: {count['n']:,} random/mutated inputs in {time.perf_counter() - t0:.1f} s, 0 crashes, "
        f"{count['records']:,} records"
    )


def bench_text_fuzz(examples: int) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "rca"))
    import test_rca_text_fuzz as fuzz

    fuzz.INPUTS = examples
    t0 = time.perf_counter()
    fuzz.test_readers_and_text_tier_never_crash_on_10k_inputs()
    print(
        f"\n## fuzz, issue 11 readers and text tier: {examples:,} mutated inputs in "
        f"{time.perf_counter() - t0:.1f} s, 0 crashes (every {fuzz.FULL_EVERY}th through the whole pipeline)"
    )


def bench_prometheus(gpus: int = 64) -> None:
    from support.prometheus import PrometheusServer, free_port, prometheus_available

    from gpuobs.rca.readers.prometheus import fetch_prometheus

    if not prometheus_available():
        print("\n## prometheus: skipped (prometheus/promtool not installed)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        end = float(int(time.time()) - 120)
        data = Path(tmp) / "data.om"
        data.write_text(fleet_openmetrics(end, gpus))
        t0 = time.perf_counter()
        subprocess.run(
            ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(data), f"{tmp}/tsdb"],
            check=True,
            capture_output=True,
            timeout=300,
        )
        t_blocks = time.perf_counter() - t0
        with PrometheusServer(
            Path(tmp) / "w", [f"127.0.0.1:{free_port()}"], storage=Path(tmp) / "tsdb"
        ) as prom:
            fetch_prometheus(prom.url, end - 3600, end)  # warm the server's caches once
            t_fetch = _best(lambda: fetch_prometheus(prom.url, end - 3600, end))
            records = len(fetch_prometheus(prom.url, end - 3600, end))
    print(f"\n## prometheus: {gpus} GPUs x 1 h (blocks built in {t_blocks:.1f} s)")
    print(f"fetch_prometheus over the window: {t_fetch:.3f} s, {records} records (target < 3 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--fuzz", type=int, default=10_000)
    parser.add_argument("--no-prometheus", action="store_true")
    args = parser.parse_args()
    bench_parsers(args.lines)
    bench_cli(args.lines)
    if args.fuzz:
        bench_fuzz(args.fuzz)
        bench_text_fuzz(args.fuzz)
    if not args.no_prometheus:
        bench_prometheus()


if __name__ == "__main__":
    main()
