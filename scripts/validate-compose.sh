#!/usr/bin/env bash
# Validates docker-compose.yml with whichever compose client exists; needs no Docker engine.
set -euo pipefail
cd "$(dirname "$0")/.."

if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
  compose=(docker-compose)
else
  echo "skipped: no compose client (docker compose or docker-compose) found"
  exit 0
fi

"${compose[@]}" -f docker-compose.yml config --quiet
echo "docker-compose.yml is valid (checked with ${compose[*]})"
