#!/usr/bin/env bash
# `make bench`: Windlass's benchmark harness (test/bench, issue 8). It
# builds the harness, which starts its own test bed (kube-apiserver with
# kwok nodes, Redis, a Git server), a standalone `windlass temporal`, a
# `windlass server` and a `windlass worker` as processes, and runs B1-B8
# (see docs/benchmarks.md). Every figure is printed as
# `BENCH <name> <value> <unit>`; the full results, each run included, go to
# bench-results.json (BENCH_OUT) with the machine, commit, date and load.
# The console output is kept in .cache/bench/ too.
#
# BENCH_APPS (B1 fleet sizes, default 100,500,1000), BENCH_RUNS (runs per
# size, default 3), BENCH_ITERATIONS (B2/B3, default 20) and BENCH_ONLY
# (say B1,B5) narrow or lengthen the run. B4: BENCH_IDLE_APPS (default
# 1000), BENCH_IDLE_DURATION (10m), BENCH_IDLE_SETTLE (1m). B6:
# BENCH_LIST_APPS (default 10000), BENCH_LIST_SAMPLES (30). BENCH_PROFILE=1
# takes a 30 s CPU profile of the worker during B1, a 1 minute one at the
# start of B4's window and a heap profile at its end, into .cache/bench/,
# and prints their top functions.
# BENCH_TEMPORAL (default sqlite; say sqlite,pg1,pg2) runs the suite once
# per Temporal variant, each on a fresh test bed: pg1 is one `windlass
# temporal --postgres-dsn`, pg2 two. B8=1 (`make bench B8=1`) adds B8, the
# 10,000-app run, and runs only B8 unless BENCH_ONLY is given:
# BENCH_B8_APPS (default 10000), BENCH_B8_IDLE_DURATION (10m).
# BENCH_ARGS passes more flags (say -histories DIR: B1 writes one app's
# histories there, B1-set its set's too, and B2 and B3 theirs).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=$ROOT/.cache/bench
TOOLS=$ROOT/bin/tools
export GOFLAGS=${GOFLAGS:--buildvcs=false}
export CGO_ENABLED=${CGO_ENABLED:-0} # static, as `make` builds (see the Makefile)

ONLY=${BENCH_ONLY:-B1,B1-shared,B1-set,B2,B3,B4,B5,B6,B7}
if [ "${B8:-0}" = 1 ]; then
  ONLY=${BENCH_ONLY:+$BENCH_ONLY,}B8
fi

mkdir -p "$OUT" "$TOOLS"
go build -o "$TOOLS/windlass-bench" ./test/bench
file=$OUT/bench-$(date -u +%Y%m%dT%H%M%SZ).txt
set +e
# shellcheck disable=SC2086
"$TOOLS/windlass-bench" -apps "${BENCH_APPS:-100,500,1000}" -runs "${BENCH_RUNS:-3}" \
  -iterations "${BENCH_ITERATIONS:-20}" -only "$ONLY" -temporal "${BENCH_TEMPORAL:-sqlite}" \
  -b8-apps "${BENCH_B8_APPS:-10000}" -b8-idle-duration "${BENCH_B8_IDLE_DURATION:-10m}" \
  -idle-apps "${BENCH_IDLE_APPS:-1000}" -idle-duration "${BENCH_IDLE_DURATION:-10m}" -idle-settle "${BENCH_IDLE_SETTLE:-1m}" \
  -list-apps "${BENCH_LIST_APPS:-10000}" -list-samples "${BENCH_LIST_SAMPLES:-30}" \
  -profile="$([ "${BENCH_PROFILE:-0}" = 1 ] && echo true || echo false)" -profile-dir "$OUT" \
  -out "${BENCH_OUT:-$ROOT/bench-results.json}" ${BENCH_ARGS:-} 2>&1 | tee "$file"
code=${PIPESTATUS[0]}
ln -sf "$(basename "$file")" "$OUT/latest.txt"
echo "bench: console output in $file"
exit "$code"
