"""Serving cost from a GPU-hour price and a measured throughput."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Cost", "cost_at"]


@dataclass(frozen=True)
class Cost:
    """Cost of serving at a sustained throughput, in the currency of the GPU-hour price."""

    gpu_hour_price: float
    gpus: int
    throughput_rps: float
    output_tokens_per_s: float
    per_1000_requests: float | None      # None when nothing was served
    per_million_output_tokens: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cost_at(throughput_rps: float, output_tokens_per_s: float, gpu_hour_price: float, gpus: int = 1) -> Cost:
    """Price of 1000 requests (and of 1M output tokens) when `gpus` GPUs serve at the given throughput."""
    if gpu_hour_price < 0:
        raise ValueError(f"GPU-hour price must be >= 0, got {gpu_hour_price}")
    if gpus < 1:
        raise ValueError(f"gpus must be >= 1, got {gpus}")
    per_second = gpu_hour_price * gpus / 3600.0
    return Cost(
        gpu_hour_price=gpu_hour_price,
        gpus=gpus,
        throughput_rps=throughput_rps,
        output_tokens_per_s=output_tokens_per_s,
        per_1000_requests=per_second / throughput_rps * 1000.0 if throughput_rps > 0 else None,
        per_million_output_tokens=(
            per_second / output_tokens_per_s * 1e6 if output_tokens_per_s > 0 else None),
    )
