"""RCA sources: every input (logs, Kubernetes, metrics, traces, live NVML) turned into `Evidence`."""

from gpuobs.rca.sources.lines import parse_lines, parse_text

__all__ = ["parse_lines", "parse_text"]
