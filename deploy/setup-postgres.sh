#!/bin/sh
# Create the Temporal databases on PostgreSQL and bring their schemas up to date.
# Runs in the temporalio/admin-tools image; safe to re-run on every `docker compose up`.
set -eu

: "${POSTGRES_SEEDS:=postgresql}"
: "${DB_PORT:=5432}"
: "${POSTGRES_USER:=temporal}"
: "${DBNAME:=temporal}"
: "${VISIBILITY_DBNAME:=temporal_visibility}"
export SQL_PASSWORD="${POSTGRES_PWD:?set POSTGRES_PWD}"

SCHEMA=/etc/temporal/schema/postgresql/v12

echo "waiting for PostgreSQL at ${POSTGRES_SEEDS}:${DB_PORT} ..."
tries=0
until nc -z -w 2 "${POSTGRES_SEEDS}" "${DB_PORT}"; do
  tries=$((tries + 1))
  [ "$tries" -lt 60 ] || { echo "PostgreSQL never answered"; exit 1; }
  sleep 1
done

sql() {
  temporal-sql-tool --plugin postgres12 --ep "${POSTGRES_SEEDS}" -p "${DB_PORT}" \
    -u "${POSTGRES_USER}" "$@"
}

for pair in "${DBNAME}:temporal" "${VISIBILITY_DBNAME}:visibility"; do
  db=${pair%%:*}
  kind=${pair##*:}
  # `create` fails when the database exists (a re-run): the schema steps below still run.
  sql --db "$db" create || echo "database $db exists"
  sql --db "$db" setup-schema -v 0.0
  sql --db "$db" update-schema -d "${SCHEMA}/${kind}/versioned"
done
echo "PostgreSQL schemas are up to date"
