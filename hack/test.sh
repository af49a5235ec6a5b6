#!/usr/bin/env bash
# Runs the tests against one shared test bed: starts a Kubernetes control
# plane, Redis and PostgreSQL, runs `go test` over the packages in $PKGS (default ./...),
# prints a summary, and stops the test bed again, whatever happens.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
DIR=$ROOT/.cache/testbed-test
TOOLS=$ROOT/bin/tools
PKGS=${PKGS:-./...}
export GOFLAGS=${GOFLAGS:--buildvcs=false}
export CGO_ENABLED=${CGO_ENABLED:-0} # static, as `make` builds (see the Makefile)

go build -o "$TOOLS/cluster" ./hack/cluster
go build -o "$TOOLS/testsum" ./hack/testsum
"$TOOLS/cluster" postgres-down --dir "$DIR" >/dev/null 2>&1 || true
"$TOOLS/cluster" redis-down --dir "$DIR" >/dev/null 2>&1 || true
"$TOOLS/cluster" down --dir "$DIR" >/dev/null 2>&1 || true
cleanup() {
  "$TOOLS/cluster" postgres-down --dir "$DIR" >/dev/null 2>&1 || true
  "$TOOLS/cluster" redis-down --dir "$DIR" >/dev/null 2>&1 || true
  "$TOOLS/cluster" down --dir "$DIR" >/dev/null 2>&1 || true
}
trap cleanup EXIT
start=$(date +%s)
eval "$("$TOOLS/cluster" up --dir "$DIR")"
eval "$("$TOOLS/cluster" redis-up --dir "$DIR")"
eval "$("$TOOLS/cluster" postgres-up --dir "$DIR")"
echo "test: test bed up in $(( $(date +%s) - start ))s (cluster $WINDLASS_TEST_CLUSTER_DIR, redis $WINDLASS_TEST_REDIS_ADDR, postgres $WINDLASS_TEST_POSTGRES_DIR)"
export WINDLASS_TEST_CLUSTER_DIR WINDLASS_TEST_REDIS_ADDR WINDLASS_TEST_POSTGRES_DIR
set +e
# -p 1: packages run one at a time on this 2-core machine; the test bed is shared.
go test -json -count=1 -p 1 -timeout 20m $PKGS | "$TOOLS/testsum"
code=${PIPESTATUS[1]}
echo "test: finished in $(( $(date +%s) - start ))s"
exit "$code"
