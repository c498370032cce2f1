#!/bin/sh
# One-shot (temporalio/admin-tools): creates Temporal's two PostgreSQL databases and brings their schemas to this
# admin-tools version. Safe on every `docker compose up`: existing databases are kept, and after an image upgrade only
# the newer schema versions are applied.
set -eu

tool() {
  temporal-sql-tool --plugin postgres12 --ep "${POSTGRES_SEEDS}" -p "${DB_PORT:-5432}" -u "${POSTGRES_USER}" "$@"
}
# temporal-sql-tool reads the password from SQL_PASSWORD.
SQL_PASSWORD="${POSTGRES_PWD}"
export SQL_PASSWORD

# The healthcheck already saw the server; this covers a restart of it in between.
tries=0
until nc -z "${POSTGRES_SEEDS}" "${DB_PORT:-5432}"; do
  tries=$((tries + 1))
  if [ "${tries}" -ge 30 ]; then
    echo "PostgreSQL at ${POSTGRES_SEEDS}:${DB_PORT:-5432} does not answer" >&2
    exit 1
  fi
  sleep 2
done

for store in temporal:temporal visibility:temporal_visibility; do
  schema="${store%%:*}"
  db="${store#*:}"
  # Each step leaves alone what exists: create skips an existing database, setup-schema an existing version table.
  tool --db "${db}" create
  tool --db "${db}" setup-schema -v 0.0
  tool --db "${db}" update-schema -d "/etc/temporal/schema/postgresql/v12/${schema}/versioned"
done
echo "PostgreSQL schemas are up to date"
