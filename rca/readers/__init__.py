"""RCA readers: each kind of input turned into Evidence (one module per input).

`files` (logs, folders, .gz, stdin, OTLP trace files), `prometheus` (a Prometheus server over the
window), `exporter` (a running exporter's /api/history), `kubernetes` (a namespace's events and pods),
`bundle` (a `gpuobs bundle` archive), `node` (this machine's NVML state and kernel log). Readers fetch
or open; the text -> Evidence work is in `gpuobs.rca.parsers`. `gpuobs.rca.collect` runs them.
"""

__all__: list[str] = []
