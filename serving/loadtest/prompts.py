"""The prompt mix of a load run: short and long prompts drawn deterministically from a seed."""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["PlannedRequest", "PromptMix", "plan_requests"]

# Plain lower-case words: every tokenizer (byte-level, BPE, word-level) takes them without surprises.
_WORDS = (
    "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "while", "gpu", "kernels", "stream",
    "tokens", "across", "paged", "cache", "blocks", "each", "request", "waits", "in", "a", "bucket",
    "until", "batch", "picker", "trades", "queue", "time", "against", "fill", "then", "prefill", "runs",
    "once", "and", "decode", "steps", "emit", "one", "token", "per", "step", "for", "every", "running",
    "sequence", "order",
)


@dataclass(frozen=True)
class PromptMix:
    """Share of long prompts and the length range (in words) and max_tokens of each class."""

    long_fraction: float = 0.25
    short_words: tuple[int, int] = (4, 16)
    long_words: tuple[int, int] = (64, 128)
    short_max_tokens: int = 16
    long_max_tokens: int = 16

    def __post_init__(self) -> None:
        if not 0.0 <= self.long_fraction <= 1.0:
            raise ValueError(f"long_fraction must lie in [0, 1], got {self.long_fraction}")
        for name, (lo, hi) in (("short_words", self.short_words), ("long_words", self.long_words)):
            if not 1 <= lo <= hi:
                raise ValueError(f"{name} must be a range 1 <= lo <= hi, got {(lo, hi)}")
        if self.short_max_tokens < 1 or self.long_max_tokens < 1:
            raise ValueError("max_tokens of each prompt class must be >= 1")


@dataclass(frozen=True)
class PlannedRequest:
    """One request of a run, fixed before it starts: when it arrives and what it asks."""

    index: int
    offset_s: float
    kind: str
    prompt: str
    max_tokens: int


def plan_requests(arrivals: list[float], mix: PromptMix, seed: int = 0) -> list[PlannedRequest]:
    """Attach a prompt of the mix to every arrival; the same inputs give the same plan."""
    rng = random.Random(seed ^ 0x5EED)
    plan = []
    for i, offset in enumerate(arrivals):
        long = rng.random() < mix.long_fraction
        lo, hi = mix.long_words if long else mix.short_words
        words = [rng.choice(_WORDS) for _ in range(rng.randint(lo, hi))]
        plan.append(PlannedRequest(
            index=i,
            offset_s=offset,
            kind="long" if long else "short",
            prompt=" ".join(words),
            max_tokens=mix.long_max_tokens if long else mix.short_max_tokens,
        ))
    return plan
