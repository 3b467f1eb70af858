"""RCA parsers: pure functions from text or documents to Evidence, one module per family.

Log lines (`lines` runs one pass over a text with every line parser: `nvrm` NVIDIA driver messages,
`host_kernel` host kernel messages, `cuda`, `nccl`, `apps` serving stacks; `prefix` peels timestamps
and hosts off each line; `context` is the pass state), `kmsg` records, and documents: `k8s` objects,
`nvsmi` reports, `exposition` (saved /metrics), `history` (exporter /api/history), `traces` (OTLP JSON),
with `metrics` building every metric record and `document` recognising which one a text is.
"""

from gpuobs.rca.parsers.lines import parse_lines, parse_text

__all__ = ["parse_lines", "parse_text"]
