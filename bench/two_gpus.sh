#!/usr/bin/env bash
# Issue 15 on a machine of two (or more) GPUs, in one call: the CUDA_VISIBLE_DEVICES `-m gpu`
# tests, then the benchmarks whose figures are per GPU: tick cost, hook cost, widget traffic
# (faked 1, 2 and 8 GPUs). Carries on past failures. The limits add up to under 10 minutes (the
# device tool's limit for one command); ALL_GPU_TESTS=1 also runs every other `-m gpu` test
# (about 20 minutes more: a call of its own).
#
#   bench/two_gpus.sh [DIR] [ARGS...]    DIR defaults to ./bench-results-2gpu; ARGS (e.g.
#                                        --quick) go to every benchmark. PYTHON picks the
#                                        interpreter; install the packages first (the shared
#                                        gpu/README.md says how).
#
# DIR gets pytest-visible-devices.log, pytest-gpu.log, one JSON file per benchmark,
# two_gpus.log (everything printed) and summary.md.
set -u

OUT="${1:-./bench-results-2gpu}"
[ $# -gt 0 ] && shift
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
PY="${PYTHON:-$(command -v python3 || command -v python)}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" # this checkout's nbgpumon first
export PYTHONUNBUFFERED=1
unset CUDA_VISIBLE_DEVICES # every GPU: the tests set it kernel by kernel

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
LOG="$OUT/two_gpus.log"
: >"$LOG"

echo "=== GPUs" | tee -a "$LOG"
nvidia-smi -L 2>&1 | tee -a "$LOG"

tests() {
    local name=$1 limit=$2
    shift 2
    local started=$SECONDS
    echo "=== pytest $name (limit ${limit} s)" | tee -a "$LOG"
    (cd "$ROOT" && timeout --kill-after=15 "$limit" "$PY" -m pytest -m gpu -q -rs "$@") \
        2>&1 | tee "$OUT/pytest-$name.log" | tee -a "$LOG" | tail -40
    local rc=${PIPESTATUS[0]}
    echo "### test-status name=$name rc=$rc seconds=$((SECONDS - started))" | tee -a "$LOG"
}

run() {
    local name=$1 limit=$2
    shift 2
    local started=$SECONDS
    rm -f "$OUT/$name.json" # a stale result must not stand in for a failed run
    echo "=== $name (limit ${limit} s)" | tee -a "$LOG"
    timeout --kill-after=15 "$limit" "$PY" "$HERE/$name.py" --out "$OUT" "$@" 2>&1 | tee -a "$LOG"
    local rc=${PIPESTATUS[0]}
    echo "### bench-status name=$name rc=$rc seconds=$((SECONDS - started))" | tee -a "$LOG"
}

tests visible-devices 240 tests/test_visible_devices_gpu.py
if [ "${ALL_GPU_TESTS:-0}" = 1 ]; then
    tests gpu 1500 --ignore=tests/test_visible_devices_gpu.py tests/
fi

run tick_cost 150 "$@"
run hook_cost 120 "$@"
run widget_wire 60 --gpus 1,2,8 --seconds 5 "$@"

echo "=== summary" | tee -a "$LOG"
"$PY" "$HERE/summarize.py" "$OUT" 2>&1 | tee -a "$LOG"
