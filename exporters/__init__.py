"""gpuobs.exporters: GPU backends, collectors and the `gpuobs export` sidecar."""

__all__: list[str] = []
