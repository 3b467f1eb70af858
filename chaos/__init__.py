"""gpuobs.chaos: fault injection, game-days and MTTR measurement."""

__all__: list[str] = []
