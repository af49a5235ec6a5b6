#!/usr/bin/env bash
# Installs the system packages the tests and `windlass dev` need (Debian):
# redis-server (manifest cache), git (its http-backend serves test repos),
# postgresql (Temporal's production persistence) and chromium (the web UI's
# browser tests).
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v git >/dev/null 2>&1 || missing+=(git)
# The test bed runs Temporal on PostgreSQL; Debian keeps the server binaries
# in /usr/lib/postgresql/<version>/bin, off PATH.
command -v initdb >/dev/null 2>&1 || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
[[ -x "$(git --exec-path 2>/dev/null)/git-http-backend" ]] || missing+=(git)
# The web UI's browser tests drive Debian's chromium (test/ui).
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# docker-compose.yaml is validated with `docker compose config` (test/deploy),
# no engine needed: Debian's docker-compose when there is no compose plugin.
docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
[[ ${#missing[@]} -eq 0 ]] && exit 0
echo "deps: installing ${missing[*]} with apt-get..."
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "deps: ${missing[*]} missing and not root: install them (apt-get install ${missing[*]})" >&2; exit 1
  fi
fi
${SUDO:-} apt-get update -qq
DEBIAN_FRONTEND=noninteractive ${SUDO:-} apt-get install -y -qq "${missing[@]}" >/dev/null
echo "deps: installed ${missing[*]}"
