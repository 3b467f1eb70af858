"""Run `gpuobs serve` so that a hot swap's new engine fails its warm-up with the engine's own CUDA OOM fault.

How tests/rca/incidents/cuda_oom_hot_swap_warmup_failed was captured. `/admin/faults` reaches only the engine
that is serving, never the one a swap is building, so this wrapper injects `cuda_oom` (repeat) into every
engine built for a model directory (the initial engine is built with none) before its warm-up; everything
else (HTTP, hot-swap manager, JSON logging) is the real server. Usage, on loopback:

    python tests/support/serve_swap_oom.py serve --enable-fault-injection --address 127.0.0.1 \\
        --port 18431 --device cpu 2> serve.log &
    curl -s -X POST 127.0.0.1:18431/admin/models/load -H 'content-type: application/json' \\
        -d '{"model": "'$HOME'/.cache/gpuobs/models/gpuobs-tiny-llama-v1", "wait": true}'
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["patch"]


def patch() -> None:
    """Make engines built for a model directory start with the cuda_oom fault active."""
    from gpuobs.serving.http.runtime import ServingRuntime

    original = ServingRuntime._build_engine

    def build(self: Any, model_dir: str | None) -> Any:
        engine = original(self, model_dir)
        if model_dir is not None:
            engine.faults.inject("cuda_oom", at_allocation=1, repeat=True)
        return engine

    ServingRuntime._build_engine = build  # type: ignore[method-assign]


if __name__ == "__main__":
    patch()
    from gpuobs.cli.app import main

    sys.argv = ["gpuobs", *sys.argv[1:]]
    main()
