#!/usr/bin/env bash
# One device call on the lent H200: self-check vs nvidia-smi, a /metrics snapshot of the NVML backend, the benchmark.
# Run from the repository root; writes everything under $OUT (device tool) or ./.device-out.
set -u
OUT=$(realpath -m "${OUT:-.device-out}"); mkdir -p "$OUT"
rm -rf /tmp/pkg && mkdir -p /tmp/pkg && python3 tools/repo_layout.py link-tree /tmp/pkg >/dev/null
cp -rs "$PWD/bench" /tmp/pkg/bench
# Run from the link tree: `python -m` puts the working directory first on sys.path.
cd /tmp/pkg
export PYTHONPATH=/tmp/pkg PYTHONUNBUFFERED=1 GPUOBS_CONFIG=/dev/null
python3 --version; nvidia-smi -L; python3 -c "import pynvml, prometheus_client; print('nvidia-ml-py', pynvml.__file__)"
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
timeout 240 python3 -m bench.exporter --process-seconds 15 --runs 300 --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"
echo "=== self-check"; tail -45 "$OUT/selfcheck.txt"
