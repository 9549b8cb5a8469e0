#!/bin/bash
# Sets up Temporal's two databases with its own SQL tool (idempotent: create-database, setup-schema -v 0.0,
# update-schema), starts every service of the server in this one process, and then, as an operator would, creates
# the namespace and registers the platform's search attributes with the Temporal CLI. /tmp/temporal-ready marks
# the end of that for the healthcheck.
set -euo pipefail
: "${POSTGRES_SEEDS:?POSTGRES_SEEDS is not set}" "${POSTGRES_PWD:?POSTGRES_PWD is not set}"
DB_PORT=${DB_PORT:-5432}
POSTGRES_USER=${POSTGRES_USER:-temporal}
DBNAME=${DBNAME:-temporal}
VISIBILITY_DBNAME=${VISIBILITY_DBNAME:-temporal_visibility}
NAMESPACE=${DEFAULT_NAMESPACE:-default}
RETENTION=${DEFAULT_NAMESPACE_RETENTION:-72h}
DYNAMIC_CONFIG=${DYNAMIC_CONFIG_FILE_PATH:-config/dynamicconfig/empty.yaml}
case "$DYNAMIC_CONFIG" in /*) ;; *) DYNAMIC_CONFIG=/etc/temporal/$DYNAMIC_CONFIG ;; esac
READY=/tmp/temporal-ready
rm -f "$READY"
log() { echo "temporal-entrypoint: $*"; }

# The password goes to the SQL tool by environment, never on a command line.
export SQL_PASSWORD="$POSTGRES_PWD"
sql() {
  local db=$1
  shift
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" --port "$DB_PORT" --user "$POSTGRES_USER" --db "$db" "$@"
}
for pair in "$DBNAME:temporal" "$VISIBILITY_DBNAME:visibility"; do
  db=${pair%%:*}
  schema=${pair##*:}
  if ! out=$(sql "$db" create-database 2>&1); then
    grep -q 'already exists' <<< "$out" || { echo "$out" >&2; exit 1; }
  fi
  sql "$db" setup-schema -v 0.0 > /dev/null 2>&1 || { sql "$db" setup-schema -v 0.0; exit 1; }
  sql "$db" update-schema -d "/etc/temporal/schema/postgresql/v12/$schema/versioned" > /dev/null 2>&1 \
    || { sql "$db" update-schema -d "/etc/temporal/schema/postgresql/v12/$schema/versioned"; exit 1; }
  log "schema of $db ($schema) is current"
done

ip=$(hostname -i | awk '{print $1}')
config=/etc/temporal/config/compose.yaml
# It holds the database password: readable by this user alone.
umask 077
store() {
  cat <<YAML
    $1:
      sql:
        pluginName: postgres12
        databaseName: $2
        connectAddr: "$POSTGRES_SEEDS:$DB_PORT"
        connectProtocol: tcp
        user: "$POSTGRES_USER"
        password: "$POSTGRES_PWD"
        maxConns: $3
        maxIdleConns: $3
        maxConnLifetime: 1h
YAML
}
service() {
  cat <<YAML
  $1:
    rpc:
      grpcPort: $2
      membershipPort: $3
      bindOnIP: 0.0.0.0
YAML
}
{
  cat <<YAML
log:
  stdout: true
  level: ${LOG_LEVEL:-warn}
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: ${NUM_HISTORY_SHARDS:-4}
  datastores:
YAML
  store default "$DBNAME" 20
  store visibility "$VISIBILITY_DBNAME" 10
  cat <<YAML
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "$ip"
services:
YAML
  service frontend 7233 6933
  echo "      httpPort: 7243"
  service history 7234 6934
  service matching 7235 6935
  service worker 7239 6939
  cat <<YAML
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:7233
dcRedirectionPolicy:
  policy: noop
publicClient:
  hostPort: 127.0.0.1:7233
archival:
  history:
    state: disabled
  visibility:
    state: disabled
namespaceDefaults:
  archival:
    history:
      state: disabled
    visibility:
      state: disabled
dynamicConfigClient:
  filepath: $DYNAMIC_CONFIG
  pollInterval: 10s
YAML
} > "$config"

temporal-server --config-file "$config" --allow-no-auth start &
server=$!
trap 'kill -TERM "$server" 2>/dev/null' TERM INT

cli() { temporal "$@" --address 127.0.0.1:7233 --command-timeout 10s; }
# The cluster takes namespaces once its internal worker has set up the system namespace.
for i in $(seq 1 180); do
  if out=$(cli operator namespace create --namespace "$NAMESPACE" --retention "$RETENTION" 2>&1) \
    || grep -qi 'already' <<< "$out"; then
    break
  fi
  kill -0 "$server" 2>/dev/null || { echo "$out" >&2; wait "$server"; exit 1; }
  [ "$i" = 180 ] && { echo "$out" >&2; exit 1; }
  sleep 1
done
log "namespace $NAMESPACE (retention $RETENTION)"
IFS=',' read -r -a attributes <<< "${SEARCH_ATTRIBUTES:-}"
for name in "${attributes[@]}"; do
  for i in $(seq 1 60); do
    if out=$(cli operator search-attribute create --namespace "$NAMESPACE" --name "$name" --type Keyword 2>&1) \
      || grep -qi 'already' <<< "$out"; then
      break
    fi
    [ "$i" = 60 ] && { echo "$out" >&2; exit 1; }
    sleep 1
  done
done
log "search attributes registered on $NAMESPACE: ${SEARCH_ATTRIBUTES:-none}"
touch "$READY"
wait "$server"
