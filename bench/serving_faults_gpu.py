"""Check on a GPU that the serving memory faults hold what they say in the CUDA caching allocator.

`memory_leak` must keep its bytes allocated until cleared; `fragmentation` must leave at least its bytes
reserved but unallocated (holes between live blocks), and both must give everything back when cleared.
Run on the H200 from the link tree that `bash bench/gpu.sh` sets up (see docs/BENCHMARKS.md):

    PYTHONPATH=<link tree> python3 bench/serving_faults_gpu.py
"""

from __future__ import annotations

import sys

MIB = 1 << 20


def main() -> int:
    import torch

    from gpuobs.serving.faults import FaultInjector

    faults = FaultInjector(True, device="cuda:0")
    base = torch.cuda.memory_allocated()
    rows: list[tuple[str, str, bool]] = []

    faults.inject("memory_leak", bytes_per_request=8 * MIB, bytes_per_prompt_token=1024)
    faults.before_step("prefill", new_prompts=(1000, 2000))
    held = torch.cuda.memory_allocated() - base
    rows.append(("leak held", f"{faults.leaked_bytes / MIB:.1f} MiB said, {held / MIB:.1f} MiB allocated",
                 held == faults.leaked_bytes > 0))
    faults.clear("memory_leak")
    rows.append(("leak cleared", f"{(torch.cuda.memory_allocated() - base) / MIB:.1f} MiB left",
                 torch.cuda.memory_allocated() == base))

    faults.inject("fragmentation", bytes=256 * MIB)
    holes = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
    rows.append(("fragmentation holes", f"{faults.fragmented_bytes / MIB:.1f} MiB said, "
                 f"{holes / MIB:.1f} MiB reserved-unallocated", holes >= faults.fragmented_bytes * 0.95))
    faults.clear("fragmentation")
    torch.cuda.empty_cache()
    rows.append(("fragmentation cleared", f"{(torch.cuda.memory_allocated() - base) / MIB:.1f} MiB left",
                 torch.cuda.memory_allocated() == base))

    print(f"\n{'check':<24} {'result':<60} ok")
    for name, result, ok in rows:
        print(f"{name:<24} {result:<60} {'yes' if ok else 'NO'}")
    return 0 if all(ok for _, _, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
