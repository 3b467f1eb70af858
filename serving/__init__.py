"""gpuobs.serving: the reference LLM serving stack that gpuobs instruments and breaks on purpose."""

__all__: list[str] = []
