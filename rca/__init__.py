"""gpuobs.rca: sources -> Evidence -> signature catalog -> ranked root causes."""

__all__: list[str] = []
