"""Peak memory of `gpuobs diagnose --logs FILE` against the log's size (issue 10 item 11).

Writes a synthetic kernel/serving log of each size (ordinary lines with an Xid and CUDA errors sprinkled
in), runs the real command in a subprocess per size and prints its peak RSS (getrusage of the child).

    python bench/rca_memory.py [--sizes-mb 10 50 100] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_NORMAL = (
    "2026-11-30T10:{m:02d}:{s:02d}Z node-7 vllm[311]: INFO step {i} batch=32 tokens=4096 latency_ms=41.2\n"
)
_ERRORS = (
    "2026-11-30T10:{m:02d}:{s:02d}Z node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=311, GPU has fallen "
    "off the bus.\n",
    "2026-11-30T10:{m:02d}:{s:02d}Z node-7 vllm[311]: ERROR RuntimeError: CUDA error: an illegal memory "
    "access was encountered\n",
)


def write_log(path: Path, size_bytes: int) -> None:
    """A log of about `size_bytes`: one error line per 5,000 ordinary ones."""
    with path.open("w", encoding="utf-8") as fh:
        written, i = 0, 0
        while written < size_bytes:
            m, s = (i // 60) % 60, i % 60
            line = _ERRORS[(i // 5000) % 2] if i % 5000 == 4999 else _NORMAL
            text = line.format(m=m, s=s, i=i)
            fh.write(text)
            written += len(text)
            i += 1


def peak_rss_mb(log: Path) -> tuple[float, float, int]:
    """(peak RSS MiB, seconds, exit code) of one diagnose run in a fresh process."""
    code = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run([sys.executable, '-m', 'gpuobs', 'diagnose', '--logs', sys.argv[1], '--json'],"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)\n"
    )
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, check=True)
    took = time.monotonic() - started
    kib, rc = out.stdout.split()
    return int(kib) / 1024, took, int(rc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mb in args.sizes_mb:
            log = Path(tmp) / f"{mb}mb.log"
            write_log(log, mb * 10**6)
            rss, took, rc = peak_rss_mb(log)
            rows.append(
                {"input_mb": mb, "peak_rss_mib": round(rss, 1), "seconds": round(took, 1), "exit": rc}
            )
            log.unlink()
    if args.json:
        print(json.dumps(rows))
    else:
        print(f"{'input MB':>9} {'peak RSS MiB':>13} {'ratio':>6} {'seconds':>8} {'exit':>5}")
        for r in rows:
            ratio = r["peak_rss_mib"] / r["input_mb"]
            print(
                f"{r['input_mb']:>9} {r['peak_rss_mib']:>13} {ratio:>6.1f} {r['seconds']:>8} {r['exit']:>5}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
