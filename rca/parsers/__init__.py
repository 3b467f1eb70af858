"""RCA parsers: pure functions from text or documents to Evidence, one module per family.

Log lines (`lines` runs one pass over a text with every line parser: `nvrm` NVIDIA driver messages,
`host_kernel` host kernel messages, `cuda`, `nccl`, `apps` serving stacks; `prefix` peels timestamps
and hosts off each line; `context` is the pass state; `blocks` joins wrapped and continued messages),
`kmsg` records, and documents: `k8s` objects, `nvsmi` reports, `exposition` (saved /metrics), `history`
(exporter /api/history), `traces` (OTLP JSON), with `metrics` building every metric record and `document`
recognising which one a text is. Pasted text (issue 11): `wrappers` peel compose prefixes, borders,
paste numbers and progress bars; tool output has readers of its own (`nvsmi_text`, `lspci`, `describe`,
`pyrepr`, `containers`), `trend` turns growing memory readings into a record, and `text` is the text
tier, which recognises a known failure's wording where no exact parser applies (`lowered` is the
lower-cased view these scans share).
"""

from gpuobs.rca.parsers.lines import parse_lines, parse_text

__all__ = ["parse_lines", "parse_text"]
