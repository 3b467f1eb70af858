"""Redaction throughput against input shape: ordinary logs, secret-dense text, pathological lines.

`gpuobs bundle` passes every input through `gpuobs.rca.redact`; a rule that backtracks over long runs
made one 40 KB line of dots cost 42 s. This prints MB/s per shape (each shape built here, about
`--mb` MB) so a regression to super-linear time shows as a collapse on the pathological rows, and
how the time grows when the input doubles (a linear redactor gives a ratio near 2). With
`--baseline REV`, the redactor of that git revision is timed on the shapes without long lines (on
those, the quadratic one before issue 10 takes minutes).

    python -m bench.redact [--mb 2] [--baseline 354dd6d] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import string
import subprocess
import sys
import time
import types
from collections.abc import Callable
from typing import Any

from gpuobs.rca.redact import MAX_LINE_CHARS, Redactor

__all__ = ["main"]

_RNG = random.Random(1)


def _tok(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _ordinary_line(i: int) -> str:
    return _RNG.choice(
        [
            f"[Sun Feb 23 16:{i % 60:02d}:18 2025] NVRM: Xid (PCI:0000:9b:00): 79, pid={2024380 + i}, "
            "name=python3, GPU has fallen off the bus.",
            f"INFO 02-23 16:24:19 metrics.py:455] Avg prompt throughput: {i % 997}.3 tokens/s, Avg "
            "generation throughput: 88.1 tokens/s, Running: 12 reqs, GPU KV cache usage: 41.2%",
            f"node-7:1234:{i} [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
            f"request {i} done max_tokens=128 prompt_tokens=12 completion_tokens=40 latency_ms=812.5",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            f"GET /v1/models 200 {i % 50} ms user_agent=python-httpx/0.27",
        ]
    )


def _json_line(i: int) -> str:
    return json.dumps(
        {
            "ts": f"2025-02-23T16:24:{i % 60:02d}Z",
            "level": "info",
            "msg": "request done",
            "request_id": _tok(16),
            "prompt_tokens": i % 900,
            "completion_tokens": 40,
            "model": "llama-3-8b",
        }
    )


def _secret_line(i: int) -> str:
    return _RNG.choice(
        [
            f"Authorization: Bearer {_tok(40)}",
            f"HF_TOKEN=hf_{_tok(34)} OPENAI_API_KEY=sk-proj-{_tok(40)}",
            f"--password hunter{i} --db-url postgres://app:p@ss{i}@db:5432/app",
            f'{{"pwd": "{_tok(12)}", "msg": "login failed"}}',
            f"AccountKey={_tok(86)}==;EndpointSuffix=core.windows.net",
            f"curl -u admin:{_tok(10)} http://grafana:3000/api",
            f"Cookie: session={_tok(32)}; csrftoken={_tok(32)}",
        ]
    )


def _lines(make: Callable[[int], str], size: int) -> str:
    out, total, i = [], 0, 0
    while total < size:
        line = make(i)
        out.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(out)


def _repeat_lines(fragment: str, line_chars: int, size: int) -> str:
    line = (fragment * (line_chars // len(fragment) + 1))[:line_chars]
    return "\n".join([line] * max(1, size // (line_chars + 1)))


def _shapes(size: int) -> dict[str, str]:
    under = MAX_LINE_CHARS - 2048
    return {
        "ordinary log lines": _lines(_ordinary_line, size),
        "JSON lines": _lines(_json_line, size),
        "one secret per line": _lines(_secret_line, size),
        f"{under // 1000} KB lines of dots": _repeat_lines(".", under, size),
        "40 KB lines of dots (cut)": _repeat_lines(".", 40_000, size),
        f"{under // 1000} KB lines 'password'": _repeat_lines("password", under, size),
        f"{under // 1000} KB lines '--password '": _repeat_lines("--password ", under, size),
        f"{under // 1000} KB lines '://@'": _repeat_lines("://@", under, size),
        f"{under // 1000} KB lines 'a='": _repeat_lines("a=", under, size),
        f"{under // 1000} KB lines 'curl -u '": _repeat_lines("curl -u ", under, size),
        "PGP BEGIN lines, no END": _repeat_lines("-----BEGIN PGP PRIVATE KEY BLOCK-----", 37, size),
    }


def _module_at(rev: str, path: str, name: str) -> types.ModuleType | None:
    """The module in `path` at git revision `rev`, registered as `name`; None if it was not there."""
    shown = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True)
    if shown.returncode != 0:
        return None
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(shown.stdout, f"{rev}:{path}", "exec"), module.__dict__)
    return module


def _baseline_redactor(rev: str) -> Any:
    """The `Redactor` class of `rca/redact.py` at git revision `rev`, with that revision's rules
    (`rca/redact_rules.py`, where the revision has it, stands in for the current one while it loads)."""
    rules_name = "gpuobs.rca.redact_rules"
    current_rules = sys.modules.get(rules_name)
    try:
        _module_at(rev, "rca/redact_rules.py", rules_name)
        module = _module_at(rev, "rca/redact.py", f"redact_{rev}")
    finally:
        if current_rules is not None:
            sys.modules[rules_name] = current_rules
    if module is None:
        raise SystemExit(f"rca/redact.py is not in git revision {rev}")
    return module.Redactor


def _time(text: str, runs: int, redactor: Any = Redactor) -> tuple[float, int]:
    best, masks = float("inf"), 0
    for _ in range(runs):
        r = redactor()
        started = time.perf_counter()
        r.text(text)
        best = min(best, time.perf_counter() - started)
        masks = r.total
    return best, masks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=2.0, help="size of each shape (MB)")
    parser.add_argument("--runs", type=int, default=3, help="runs per shape (best is kept)")
    parser.add_argument("--baseline", help="git revision whose redactor to time beside this one")
    parser.add_argument("--json", dest="json_path", help="write the figures to this file")
    args = parser.parse_args(argv)
    baseline = _baseline_redactor(args.baseline) if args.baseline else None
    size = int(args.mb * 1_000_000)
    rows: list[dict[str, Any]] = []
    small, large = _shapes(size), _shapes(2 * size)
    for name, text in small.items():
        seconds, masks = _time(text, args.runs)
        seconds_2x, _ = _time(large[name], args.runs)
        row = {
            "shape": name,
            "mb": len(text) / 1e6,
            "seconds": seconds,
            "mb_per_s": len(text) / 1e6 / seconds,
            "masks": masks,
            "time_ratio_2x_input": seconds_2x / seconds,
        }
        if baseline is not None and "KB lines" not in name:
            old_seconds, old_masks = _time(text, args.runs, baseline)
            row["baseline_mb_per_s"] = len(text) / 1e6 / old_seconds
            row["baseline_masks"] = old_masks
        rows.append(row)
    out = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "baseline": args.baseline,
        "rows": rows,
    }
    cols = ["shape", "mb", "seconds", "mb_per_s", "masks", "time_ratio_2x_input"]
    if baseline is not None:
        cols += ["baseline_mb_per_s", "baseline_masks"]
    widths = [max(len(c), *(len(_fmt(r.get(c))) for r in rows)) for c in cols]
    print(f"redaction throughput, {out['date']} on {out['machine']}, Python {out['python']}")
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)))
    for r in rows:
        print("  ".join(_fmt(r.get(c)).ljust(w) for c, w in zip(cols, widths, strict=True)))
    if args.json_path:
        with open(args.json_path, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}" if v < 10 else f"{v:.1f}"
    return str(v)


if __name__ == "__main__":
    sys.exit(main())
