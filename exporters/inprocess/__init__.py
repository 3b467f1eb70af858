"""In-process instrumentation for processes that launch kernels: launch counters, spans, CUDA error codes."""

__all__: list[str] = []
