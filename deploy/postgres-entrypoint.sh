#!/bin/bash
# Makes the cluster in $PGDATA on the first start (superuser $POSTGRES_USER with $POSTGRES_PASSWORD, password
# logins over the network), then runs the server in the foreground.
set -euo pipefail
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is not set}"
POSTGRES_USER=${POSTGRES_USER:-postgres}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 -D "$PGDATA" > /dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  echo "postgres-entrypoint: made the cluster in $PGDATA"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c max_connections=200
