#!/usr/bin/env bash
# The exporter on the lent H200, run by `bash bench/gpu.sh exporter_h200` (which installs the carried wheels
# and lays out the package): self-check vs nvidia-smi, a /metrics snapshot of the NVML backend, the benchmark.
# Writes into $OUT: exporter_h200.json (bench/exporter.py's figures), selfcheck.txt/.json, metrics_both.txt,
# history.json, healthz.json.
set -u
OUT=$(realpath -m "${OUT:-.device-out}"); mkdir -p "$OUT"
python3 -c "import gpuobs.exporters.sidecar.service" 2>/dev/null ||
    { echo "gpuobs is not importable here: run this through 'bash bench/gpu.sh exporter_h200'" >&2; exit 3; }
nvidia-smi -L; python3 -c "import pynvml, prometheus_client; print('nvidia-ml-py', pynvml.__file__)"
timeout 60 python3 -m gpuobs export --self-check >"$OUT/selfcheck.txt" 2>&1; echo "self-check rc=$?"
timeout 60 python3 -m gpuobs export --self-check --json >"$OUT/selfcheck.json" 2>/dev/null
timeout 60 python3 - "$OUT" <<'PY'
import json, sys, time, urllib.request
from gpuobs.exporters.sidecar.service import Exporter, ExporterConfig
out = sys.argv[1]
exp = Exporter(ExporterConfig(backend="nvml", naming="both", port=0, slow_interval_s=1.0, history_interval_s=1.0,
                              pod_resources_socket="none")).start()
try:
    time.sleep(3.5)
    for path, name in (("/metrics", "metrics_both.txt"), ("/api/history?since=1m", "history.json"), ("/healthz", "healthz.json")):
        with urllib.request.urlopen(exp.url + path, timeout=10) as r:
            open(f"{out}/{name}", "wb").write(r.read())
finally:
    exp.stop()
print("snapshot ok", open(f"{out}/healthz.json").read())
PY
echo "=== self-check"; tail -45 "$OUT/selfcheck.txt"
timeout 240 python3 -m bench.exporter --process-seconds 15 --runs 300 --json "$OUT/exporter_h200.json" "$@"
