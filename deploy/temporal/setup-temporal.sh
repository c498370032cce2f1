#!/bin/sh
# One-shot (temporalio/admin-tools), once the server answers: creates the namespace the worker uses and registers the
# AgentState and AgentTenant Keyword search attributes agent runs set (the server rejects upserts of unknown attributes).
# Safe on every `docker compose up`: what exists is left alone.
set -eu
address="${TEMPORAL_ADDRESS:-temporal:7233}"
namespace="${TEMPORAL_NAMESPACE:-default}"
retention="${TEMPORAL_NAMESPACE_RETENTION:-72h}"

# Retries a command for up to a minute: the server, then a new namespace, take a moment to be ready everywhere.
retry() {
  tries=0
  until "$@"; do
    tries=$((tries + 1))
    if [ "${tries}" -ge 30 ]; then
      echo "gave up after ${tries} tries: $*" >&2
      return 1
    fi
    sleep 2
  done
}

has_attribute() {
  temporal operator search-attribute list --address "${address}" --namespace "${namespace}" | grep -qw "$1"
}

retry temporal operator cluster health --address "${address}"
if ! temporal operator namespace describe --address "${address}" --namespace "${namespace}" >/dev/null 2>&1; then
  temporal operator namespace create --address "${address}" --namespace "${namespace}" --retention "${retention}"
fi
# Listing works once the namespace is known to the whole server, not just where it was created.
retry temporal operator search-attribute list --address "${address}" --namespace "${namespace}" >/dev/null
for attribute in AgentState AgentTenant; do
  if ! has_attribute "${attribute}"; then
    retry temporal operator search-attribute create --address "${address}" --namespace "${namespace}" --name "${attribute}" --type Keyword
  fi
  retry has_attribute "${attribute}"
done
echo "namespace ${namespace} is ready, with the AgentState and AgentTenant search attributes"
