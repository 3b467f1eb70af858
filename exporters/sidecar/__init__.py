"""The `gpuobs export` node/pod sidecar: GPU backends (NVML, simulated), collectors, HTTP, OTLP push."""

__all__: list[str] = []
