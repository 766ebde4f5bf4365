#!/usr/bin/env bash
# make airflow / make airflow-stop: the product in a running Airflow on this machine, from a bare clone.
#   scripts/airflow-local.sh start|stop|status
# start: a PostgreSQL metadata database of its own on 127.0.0.1:5432 (created if missing), the four components
# (scripts/airflow-services.sh: api-server, scheduler, dag-processor, triggerer; loopback only), the committed example
# day in the landing and through the daily DAG as a triggered run, two small simulated earlier days as a backfill;
# then the URL, the user and where the password is. Everything lives under .airflow/ (git-ignored): AIRFLOW_HOME,
# the landing, the warehouse, the GE project, the environment file for the CLI. Idempotent: components that still
# run are reused, a run or backfill that exists is not created again. stop: stops what start started, by pid.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
say() { printf '[airflow] %s\n' "$*"; }

export AIRFLOW_HOME="${AIRFLOW_LOCAL_HOME:-$ROOT/.airflow}"
ENV_FILE="$AIRFLOW_HOME/airflow-env.sh"
PG_HOST=127.0.0.1 PG_PORT="${AIRFLOW_LOCAL_PG_PORT:-5432}" PG_USER="${AIRFLOW_LOCAL_PG_USER:-postgres}"
DB_NAME="${AIRFLOW_LOCAL_DB:-rocketmq_retry_airflow}"
PORT="${AIRFLOW_LOCAL_PORT:-8080}"
DS=2026-11-20                             # the date of examples/landing
EARLIER=(2026-11-18 2026-11-19)           # simulated, loaded by a backfill
RUN_ID="manual__example_$DS"
PY="$ROOT/.venv/bin/python"
WAIT_SECONDS="${AIRFLOW_LOCAL_WAIT_SECONDS:-1800}"

write_env() {
  # One file with everything the components and the CLI need: `. .airflow/airflow-env.sh` gives a shell the same.
  # The JWT secret is made once and kept: every component must sign and check task tokens with the same one.
  local secret
  secret="$( [ -f "$ENV_FILE" ] && sed -n "s/^export AIRFLOW__API_AUTH__JWT_SECRET='\(.*\)'$/\1/p" "$ENV_FILE" || true)"
  [ -n "$secret" ] || secret="$("$PY" -c 'import secrets; print(secrets.token_urlsafe(32))')"
  local url="postgresql+psycopg://$PG_USER@$PG_HOST:$PG_PORT/$DB_NAME"
  mkdir -p "$AIRFLOW_HOME"
  umask 077
  cat >"$ENV_FILE" <<EOF
# written by scripts/airflow-local.sh; source it to use the airflow CLI against this deployment
. '$ROOT/env.sh'
export AIRFLOW_HOME='$AIRFLOW_HOME'
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN='$url'
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC='${url/+psycopg:/+psycopg_async:}'
export AIRFLOW__CORE__EXECUTOR=LocalExecutor AIRFLOW__CORE__PARALLELISM=4
export AIRFLOW__API__HOST=127.0.0.1 AIRFLOW__API__PORT='$PORT' AIRFLOW__API__WORKERS=1
export AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL=30
export AIRFLOW__API_AUTH__JWT_SECRET='$secret'
export AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[*]"}'
export ROCKETMQ_RETRY_CONFIG='$ROOT/examples/rocketmq-retry.yaml'
export ROCKETMQ_RETRY_LANDING_ROOT='$AIRFLOW_HOME/rocketmq-retry/landing'
export ROCKETMQ_RETRY_WAREHOUSE_ROOT='$AIRFLOW_HOME/rocketmq-retry/warehouse'
export ROCKETMQ_RETRY_GX_ROOT='$AIRFLOW_HOME/rocketmq-retry/expectations'
EOF
  umask 022
}

# SQL against the metadata database (or the server's "postgres" database), through the venv's psycopg: no psql
# client needed.
sql() {
  "$PY" - "$@" <<'PY'
import sys
import psycopg
dbname, query = sys.argv[1], sys.argv[2]
host, port, user = sys.argv[3], sys.argv[4], sys.argv[5]
with psycopg.connect(host=host, port=port, user=user, dbname=dbname, autocommit=True, connect_timeout=5) as conn:
    row = conn.execute(query).fetchone() if query.lstrip().upper().startswith("SELECT") else conn.execute(query)
    if isinstance(row, tuple):
        print(row[0])
PY
}

ensure_database() {
  if ! "$PY" -c "import psycopg; psycopg.connect(host='$PG_HOST', port=$PG_PORT, user='$PG_USER', dbname='postgres', connect_timeout=5).close()" 2>/dev/null; then
    cat >&2 <<EOF
[airflow] PostgreSQL is not reachable at $PG_USER@$PG_HOST:$PG_PORT (no password: loopback 'trust' auth).
[airflow] The four Airflow components lock each other on SQLite, so this needs PostgreSQL. Install and start it:
[airflow]   Debian/Ubuntu: sudo apt-get install postgresql && sudo pg_ctlcluster <version> main start
[airflow]                  (scripts/ensure-postgres.sh does both when run as root, with trust auth on 127.0.0.1)
[airflow]   macOS:         brew install postgresql@16 && brew services start postgresql@16
[airflow] or point AIRFLOW_LOCAL_PG_PORT / AIRFLOW_LOCAL_PG_USER at one that accepts $PG_USER without a password.
EOF
    exit 1
  fi
  if [ "$(sql postgres "SELECT count(*) FROM pg_database WHERE datname = '$DB_NAME'" $PG_HOST "$PG_PORT" "$PG_USER")" = 0 ]; then
    sql postgres "CREATE DATABASE \"$DB_NAME\"" $PG_HOST "$PG_PORT" "$PG_USER"
    say "created database $DB_NAME on $PG_HOST:$PG_PORT"
  fi
}

running() {  # every recorded component is alive
  local pids="$AIRFLOW_HOME/services.pids" pid
  [ -s "$pids" ] || return 1
  while read -r pid; do kill -0 "$pid" 2>/dev/null || return 1; done <"$pids"
}

meta() { sql "$DB_NAME" "$1" $PG_HOST "$PG_PORT" "$PG_USER"; }

quiet() {  # run an airflow CLI command; its output only when it fails
  local out
  out="$("$@" 2>&1)" || { printf '%s\n' "$out" | tail -20 >&2; say "failed: $*" >&2; return 1; }
}

wait_for() {  # wait_for SECONDS WHAT QUERY: until QUERY (a SELECT of one value) prints a non-empty, non-zero value
  local deadline=$(( $(date +%s) + $1 )) value
  while [ "$(date +%s)" -lt "$deadline" ]; do
    value="$(meta "$3" 2>/dev/null || true)"
    if [ -n "$value" ] && [ "$value" != 0 ] && [ "$value" != None ]; then echo "$value"; return 0; fi
    sleep 3
  done
  echo "[airflow] timed out after $1 s waiting for $2" >&2
  return 1
}

start() {
  local t0; t0=$(date +%s)
  ensure_database
  write_env
  # shellcheck disable=SC1090
  . "$ENV_FILE"
  if running; then
    say "components already running (pids in $AIRFLOW_HOME/services.pids): reusing them"
  else
    [ -s "$AIRFLOW_HOME/services.pids" ] && bash "$ROOT/scripts/airflow-services.sh" stop >/dev/null
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
      say "port $PORT on 127.0.0.1 is taken by another program: free it or set AIRFLOW_LOCAL_PORT" >&2; exit 1
    fi
    say "starting api-server, scheduler, dag-processor, triggerer (logs in $AIRFLOW_HOME/services)"
    bash "$ROOT/scripts/airflow-services.sh" start | sed 's/^/[airflow] /'
  fi

  # the example day, and two small simulated days before it (each with its own seed)
  local landing="$ROCKETMQ_RETRY_LANDING_ROOT"
  mkdir -p "$landing" "$ROCKETMQ_RETRY_WAREHOUSE_ROOT"
  [ -d "$landing/$DS" ] || cp -R "$ROOT/examples/landing" "$landing/$DS"
  for d in "${EARLIER[@]}"; do
    [ -d "$landing/$d" ] || rocketmq-retry simulate --date "$d" --out "$landing/$d" --config "$ROCKETMQ_RETRY_CONFIG" \
      --scenario "$ROOT/examples/simulate-scenario.yaml" --messages 80 --seed "${d: -2}" --noise 0.001 --quiet \
      | sed 's/^/[airflow] /'
  done

  wait_for 300 "the dag-processor to parse the DAGs" \
    "SELECT count(*) FROM serialized_dag WHERE dag_id = 'rocketmq_retry_daily'" >/dev/null
  errors="$(meta "SELECT count(*) FROM import_error")"
  [ "$errors" = 0 ] || { say "DAG import errors: see the UI's banner or $AIRFLOW_HOME/services/dag-processor.log" >&2; exit 1; }
  quiet airflow dags unpause rocketmq_retry_daily
  if [ "$(meta "SELECT count(*) FROM dag_run WHERE dag_id = 'rocketmq_retry_daily' AND run_id = '$RUN_ID'")" = 0 ]; then
    quiet airflow dags trigger rocketmq_retry_daily --logical-date "${DS}T00:00:00+00:00" --run-id "$RUN_ID"
    say "triggered $RUN_ID (the committed example day)"
  fi

  say "UI: http://127.0.0.1:$PORT   user: admin   password: in $AIRFLOW_HOME/simple_auth_manager_passwords.json.generated"
  say "waiting for the example day's run (at most $WAIT_SECONDS s)"
  state="$(wait_for "$WAIT_SECONDS" "$RUN_ID" \
    "SELECT state FROM dag_run WHERE run_id = '$RUN_ID' AND state IN ('success', 'failed')")" || exit 1
  say "$RUN_ID: $state"
  if [ "$state" = success ]; then
    "$PY" - "$ROCKETMQ_RETRY_WAREHOUSE_ROOT" "$DS" <<'PY' | sed 's/^/[airflow]   /'
import json, pathlib, sys
from rocketmq_retry.airflow.tasks import REPORT_TABLE, render_report
print(render_report(json.loads((pathlib.Path(sys.argv[1]) / REPORT_TABLE / f"dt={sys.argv[2]}" / "summary.json").read_text())))
PY
  else
    say "the run failed: its task logs are under $AIRFLOW_HOME/logs/dag_id=rocketmq_retry_daily/run_id=$RUN_ID" >&2
  fi
  # The backfill only after the example day: on a small machine its Spark jobs would share the cores with that run.
  if [ "$(meta "SELECT count(*) FROM backfill WHERE dag_id = 'rocketmq_retry_daily'")" = 0 ]; then
    # 2026-11-20 has its triggered run: reprocess behaviour "none" leaves it to that run
    quiet airflow backfill create --dag-id rocketmq_retry_daily --from-date "${EARLIER[0]}" --to-date "$DS" \
      --max-active-runs 2
    say "backfill created: ${EARLIER[0]} .. ${EARLIER[-1]} (simulated days; runs on in the background)"
  fi
  say "ready in $(( $(date +%s) - t0 )) s"
  say "UI: http://127.0.0.1:$PORT   user: admin   password: in $AIRFLOW_HOME/simple_auth_manager_passwords.json.generated"
  say "operator's pages: http://127.0.0.1:$PORT/rocketmq-retry/ops/   CLI: . $ENV_FILE   stop: make airflow-stop"
  [ "$state" = success ]
}

case "${1:-}" in
  start) start ;;
  stop)
    if [ -f "$ENV_FILE" ]; then . "$ENV_FILE"; fi
    bash "$ROOT/scripts/airflow-services.sh" stop | sed 's/^/[airflow] /'
    ;;
  status)
    if [ -f "$ENV_FILE" ]; then . "$ENV_FILE"; fi
    bash "$ROOT/scripts/airflow-services.sh" status
    ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
