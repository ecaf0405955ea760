#!/usr/bin/env bash
# Run every nbgpumon benchmark, each under a time limit, carrying on when one fails; then
# print a markdown summary (also written to DIR/summary.md).
#
#   bench/run_all.sh [DIR] [ARGS...]     DIR defaults to ./bench-results; ARGS (e.g. --quick)
#                                        go to every script. PYTHON picks the interpreter.
#
# DIR gets one JSON file per benchmark, run_all.log (everything printed) and summary.md.
set -u

OUT="${1:-./bench-results}"
[ $# -gt 0 ] && shift
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
PY="${PYTHON:-$(command -v python3 || command -v python)}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"  # this checkout's nbgpumon first
export PYTHONUNBUFFERED=1

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
LOG="$OUT/run_all.log"
: >"$LOG"

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

# Shortest first, so that a run cut short still leaves most results.
run nvml_calls 60 "$@"
run identity_check 60 "$@"
run report_build 120 "$@"
run timeline_memory 180 "$@"
run load_time 240 "$@"
run hook_cost 150 "$@"
run cell_scale 480 "$@"
run cell_cost 480 "$@"
run after_reply_order 120 "$@"
run nvtx_cost 120 "$@"
run allocator_reads 150 "$@"
run holder_scan 120 "$@"
run cell_kinds 240 "$@"
run trace_cost 240 "$@"
run tick_cost 180 "$@"
run sampler_share 150 "$@"
run children_share 300 "$@"
run tick_cpu 150 "$@"
run cluster_tick 120 "$@"
run exporter_scrape 120 "$@"
run training_loop 510 "$@"

echo "=== summary" | tee -a "$LOG"
"$PY" "$HERE/summarize.py" "$OUT" 2>&1 | tee -a "$LOG"
