"""gpuobs.exporters: the two kinds of exporter.

`sidecar` is the `gpuobs export` process beside a node or pod (NVML or simulated GPUs -> /metrics, OTLP);
`inprocess` is the instrumentation that a process launching kernels serves on its own /metrics (the launcher:
launch counters, CUDA error codes, kernel-launch spans; the TensorRT adapter).
"""

__all__: list[str] = []
