#!/usr/bin/env bash
# Builds the test-bed binaries (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok) from the Go module proxy into $OUT (default bin/testbed).
# A binary is rebuilt only when it is missing or its recorded version differs.
# Cold: about 8-9 minutes on 2 cores. Warm: seconds.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${OUT:-$ROOT/bin/testbed}
export GOFLAGS=-buildvcs=false
unset CGO_ENABLED # the Go default, not the static setting `make` exports for Windlass
KUBE_VERSION=v1.33.13
ETCD_VERSION=v3.5.21
KWOK_VERSION=v0.8.0
mkdir -p "$OUT"

need() { # name version -> true when a build is needed
  [[ -x $OUT/$1 && -f $OUT/$1.version && $(cat "$OUT/$1.version") == "$2" ]] && return 1
  return 0
}
timed() { # name cmd...
  local name=$1 s; shift; s=$(date +%s)
  echo "testbed: building $name (one-time; cached in $OUT)..."
  "$@"
  echo "testbed: built $name in $(( $(date +%s) - s ))s"
}

LDF="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=33 -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=2026-01-01T00:00:00Z -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  if need $c $KUBE_VERSION; then
    (cd "$HERE/k8s" && timed $c go build -trimpath -ldflags "$LDF" -o "$OUT/$c" ./cmd/$c)
    echo $KUBE_VERSION > "$OUT/$c.version"
  fi
done
if need etcd $ETCD_VERSION; then
  (cd "$HERE/etcd" && timed etcd go build -trimpath -ldflags "-s -w" -o "$OUT/etcd" .)
  echo $ETCD_VERSION > "$OUT/etcd.version"
fi
if need kwok $KWOK_VERSION; then
  timed kwok env GOBIN="$OUT" go install -trimpath -ldflags "-s -w" sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION
  echo $KWOK_VERSION > "$OUT/kwok.version"
fi
# kwok's stages come from the kwok module itself: nodes become Ready, pods
# become Ready, pods of Jobs complete, deleted pods go away. Our own stages
# (kwok-stage-*.yaml here) follow: pods labelled windlass.dev/test-fail=true
# fail. The version records a digest of our stages so a change rebuilds.
STAGES_VERSION="$KWOK_VERSION+$(cat "$HERE"/kwok-stage-*.yaml | sha256sum | cut -c1-12)"
if [[ ! -s $OUT/kwok-stages.yaml || $(cat "$OUT/kwok-stages.version" 2>/dev/null) != "$STAGES_VERSION" ]]; then
  S=$(go env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage
  [[ -d $S ]] || (cd "$HERE/k8s" && go mod download sigs.k8s.io/kwok@$KWOK_VERSION)
  { for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
             pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
      echo "---"; cat "$S/$f"; done
    for f in "$HERE"/kwok-stage-*.yaml; do echo "---"; cat "$f"; done; } > "$OUT/kwok-stages.yaml"
  echo "$STAGES_VERSION" > "$OUT/kwok-stages.version"
fi
