#!/usr/bin/env bash
# Runs the benchmarks against a started Redis (the manifest cache), the way
# hack/test.sh runs the tests against the test bed: starts Redis, runs
# `go test -bench` over $BENCH_PKGS (default ./activities/render/), stops
# Redis again whatever happens. The output is kept in .cache/bench/, headed
# by the machine it ran on. BENCH (regexp, default .), BENCHTIME and COUNT
# narrow or lengthen the run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
DIR=$ROOT/.cache/testbed-bench
OUT=$ROOT/.cache/bench
TOOLS=$ROOT/bin/tools
BENCH_PKGS=${BENCH_PKGS:-./activities/render/}
export GOFLAGS=${GOFLAGS:--buildvcs=false}

go build -o "$TOOLS/cluster" ./hack/cluster
"$TOOLS/cluster" redis-down --dir "$DIR" >/dev/null 2>&1 || true
trap '"$TOOLS/cluster" redis-down --dir "$DIR" >/dev/null 2>&1 || true' EXIT
eval "$("$TOOLS/cluster" redis-up --dir "$DIR")"
export WINDLASS_TEST_REDIS_ADDR

mkdir -p "$OUT"
file=$OUT/bench-$(date -u +%Y%m%dT%H%M%SZ).txt
{
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
  echo "# go: $(go version | cut -d' ' -f3-)"
  echo "# load average (the machine is shared): $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$file"
# -p 1: packages run one at a time on this 2-core machine.
set +e
go test -p 1 -run '^$' -bench "${BENCH:-.}" -benchmem -benchtime "${BENCHTIME:-1s}" -count "${COUNT:-1}" \
  -timeout 30m $BENCH_PKGS 2>&1 | grep -v '^# Warning: ' | tee -a "$file"
code=${PIPESTATUS[0]}
ln -sf "$(basename "$file")" "$OUT/latest.txt"
echo "bench: results in $file"
exit "$code"
