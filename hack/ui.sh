#!/usr/bin/env bash
# Builds the web UI (make ui): installs the npm packages from the lockfile
# when they changed, type-checks and bundles web/src with Vite into
# web/bundle/dist, then stamps the bundle with the hash of its sources
# (web/bundle/dist/build-info.json), which TestBundleIsFresh compares with
# the sources. Without Node.js it builds nothing: the binary then serves a
# page saying the UI is not built, unless a stale bundle is there, which it
# refuses.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WEB=$ROOT/web
cd "$ROOT"
export GOFLAGS=${GOFLAGS:--buildvcs=false}
export CGO_ENABLED=${CGO_ENABLED:-0} # static, as `make` builds (see the Makefile)

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [[ -f $WEB/bundle/dist/index.html ]]; then
    echo "ui: node and npm are needed to rebuild the web UI (Node.js 20.19 or later); web/bundle/dist is stale: install Node.js, or delete web/bundle/dist to build without the UI" >&2
    exit 1
  fi
  echo "ui: node/npm not found: the UI is not built; the binary serves a page that says so (install Node.js 20.19 or later and run make ui)" >&2
  exit 0
fi
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)'; then
  echo "ui: Node.js $(node --version) is too old for Vite: install 20.19 or later" >&2
  exit 1
fi

# npm ci when node_modules is missing or older than the lockfile.
if [[ ! -f $WEB/node_modules/.package-lock.json || $WEB/package-lock.json -nt $WEB/node_modules/.package-lock.json ]]; then
  echo "ui: npm ci"
  (cd "$WEB" && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "ui: building web/bundle/dist"
(cd "$WEB" && npm run --silent build)
go run ./web/stamp -web "$WEB" -out "$WEB/bundle/dist/build-info.json"
echo "ui: built ($(du -sh "$WEB/bundle/dist" | cut -f1))"
