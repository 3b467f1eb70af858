#!/usr/bin/env bash
# GPU benchmarks on the lent H200 in one command, from the repository root:
#
#   bash bench/gpu.sh NAME...            NAME: kernels exporter_h200 serving_engine_gpu serving_load
#   bash bench/gpu.sh NAME -- ARGS...    one benchmark with extra arguments (e.g. kernels -- --skip tune)
#
# Prepare on the development machine with `make bench-gpu-prep` (wheels in build/wheels) and run through the
# `device` tool with carry ["build/wheels"] (docs/BENCHMARKS.md has the exact calls). On the H200 it installs
# the carried wheels offline (what the image already has is kept), lays the package out as a link tree,
# checks that every gpuobs module imports, then runs each benchmark with the arguments behind the figures of
# docs/BENCHMARKS.md. Per benchmark, $OUT (or ./.device-out) gets NAME.log (everything it printed), NAME.json
# (its figures) and NAME-files.tar.gz (anything else it wrote). Each benchmark's table is printed last.
# Exit: 0 every benchmark succeeded, 1 one failed, 2 usage, 3 the environment could not be set up.
set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
WHEELS=${GPUOBS_WHEELS:-$REPO/build/wheels}
OUT=$(realpath -m "${OUT:-$REPO/.device-out}")
TREE=${GPUOBS_BENCH_TREE:-/tmp/gpuobs-bench/tree}
WORK=${GPUOBS_BENCH_WORK:-/tmp/gpuobs-bench/out}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-540}
KNOWN="kernels exporter_h200 serving_engine_gpu serving_load"

usage() {
    echo "usage: bash bench/gpu.sh NAME... [-- ARGS...]   (NAME: ${KNOWN// /, })" >&2
    exit 2
}

# The command behind each benchmark's figures in docs/BENCHMARKS.md; $1 the benchmark's output folder.
bench_command() {
    local dir=$1
    case $NAME in
        kernels) CMD=(python3 bench/kernels.py --json-out "$dir/kernels.json") ;;
        exporter_h200) CMD=(env "OUT=$dir" bash bench/exporter_h200.sh) ;;
        serving_engine_gpu) CMD=(python3 bench/serving_engine_gpu.py --device cuda --json "$dir/serving_engine_gpu.json") ;;
        serving_load) CMD=(python3 bench/serving_load.py --device cuda --rate 8 16 24 32 48 64 --duration 10
                           --robustness 200 --json "$dir/serving_load.json") ;;
        *) return 1 ;;
    esac
}

names=()
extra=()
while (($#)); do
    if [[ $1 == -- ]]; then
        shift
        extra=("$@")
        break
    fi
    case $1 in -h | --help) usage ;; esac
    names+=("$1")
    shift
done
((${#names[@]})) || usage
for NAME in "${names[@]}"; do
    bench_command /dev/null || { echo "unknown benchmark '$NAME'" >&2; usage; }
done
if ((${#extra[@]})) && ((${#names[@]} != 1)); then
    echo "arguments after -- go to exactly one benchmark; got ${#names[@]}" >&2
    exit 2
fi

echo "== setup: carried wheels from ${WHEELS#"$REPO"/}"
if [[ ! -f $WHEELS/requirements.txt ]]; then
    echo "no $WHEELS/requirements.txt: run 'make bench-gpu-prep' on the development machine and carry build/wheels" >&2
    exit 3
fi
python3 -m pip install --quiet --disable-pip-version-check --no-cache-dir --root-user-action=ignore \
    --no-index --find-links "$WHEELS" -r "$WHEELS/requirements.txt" ||
    { echo "offline install of the carried wheels failed (see above)" >&2; exit 3; }
rm -rf "$TREE" && mkdir -p "$TREE" "$OUT"
python3 "$REPO/tools/repo_layout.py" link-tree "$TREE" >/dev/null || exit 3
ln -s "$REPO/bench" "$TREE/bench"
# Run from the link tree: `python -m` puts the working directory first on sys.path, and the checkout's own
# gpuobs/ folder (without the component folders) must not shadow the laid-out package.
cd "$TREE" || exit 3
export PYTHONPATH="$TREE${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 GPUOBS_CONFIG=/dev/null
python3 bench/gpu.py imports || { echo "the package does not import here (see above)" >&2; exit 3; }

header() {
    echo "# gpuobs bench $NAME, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/# gpu: /'
    python3 -c 'import platform, torch, triton; print(f"# python {platform.python_version()}, torch {torch.__version__}, triton {triton.__version__}")' 2>&1
    echo "# command: ${CMD[*]} ${extra[*]}"
}

failed=0
declare -A status
for NAME in "${names[@]}"; do
    dir=$WORK/$NAME
    rm -rf "$dir" && mkdir -p "$dir"
    bench_command "$dir"
    echo "== $NAME"
    { header; timeout "$BENCH_TIMEOUT" "${CMD[@]}" "${extra[@]}"; } 2>&1 | tee "$dir/$NAME.log"
    rc=${PIPESTATUS[0]}
    status[$NAME]=$rc
    ((rc == 0)) || failed=1
    cp "$dir/$NAME.log" "$OUT/"
    [[ -f $dir/$NAME.json ]] && cp "$dir/$NAME.json" "$OUT/"
    mapfile -t others < <(cd "$dir" && ls -A | grep -vxF -e "$NAME.log" -e "$NAME.json")
    ((${#others[@]})) && tar -czf "$OUT/$NAME-files.tar.gz" -C "$dir" "${others[@]}"
done

for NAME in "${names[@]}"; do
    echo
    echo "== $NAME: exit ${status[$NAME]}; the end of $NAME.log:"
    tail -n 40 "$OUT/$NAME.log"
done
count=$(find "$OUT" -type f | wc -l)
echo
echo "== $count files under \$OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
((count <= 8)) || echo "warning: the device tool brings back at most 8 files; run fewer benchmarks per call" >&2
exit $failed
