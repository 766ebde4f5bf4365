#!/usr/bin/env bash
# Start or stop the Airflow 3 components for the UI, triggered runs and backfills, loopback only:
#   scripts/airflow-services.sh start|stop|status
# Unlike `airflow standalone`, no serve-logs listener is started (it binds all interfaces and has no host
# option); the api-server reads task logs from $AIRFLOW_HOME/logs itself. Needs the environment of
# docs/airflow.md (AIRFLOW_HOME, the PostgreSQL URLs, roots, spark_default).
set -euo pipefail
: "${AIRFLOW_HOME:?set AIRFLOW_HOME (see docs/airflow.md)}"
HOST="${AIRFLOW__API__HOST:-127.0.0.1}"
PORT="${AIRFLOW__API__PORT:-8080}"
export AIRFLOW__API__HOST="$HOST" AIRFLOW__API__PORT="$PORT"
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="${AIRFLOW__CORE__EXECUTION_API_SERVER_URL:-http://$HOST:$PORT/execution/}"
PIDS="$AIRFLOW_HOME/services.pids"
LOGS="$AIRFLOW_HOME/services"

case "${1:-}" in
  start)
    if [ "$HOST" != "127.0.0.1" ] && [ "$HOST" != "localhost" ]; then
      echo "refusing to bind the api-server to $HOST: use 127.0.0.1" >&2; exit 2
    fi
    [ -s "$PIDS" ] && { echo "already started (pids in $PIDS); run '$0 stop' first" >&2; exit 1; }
    case "${AIRFLOW__DATABASE__SQL_ALCHEMY_CONN:-sqlite}" in
      sqlite*) echo "warning: four components on one SQLite file lock each other ('database is locked');" \
                 "use PostgreSQL (docs/airflow.md, 'Running it')" >&2 ;;
    esac
    mkdir -p "$LOGS"
    airflow db migrate >"$LOGS/db-migrate.log" 2>&1
    setsid airflow api-server -H "$HOST" -p "$PORT" >"$LOGS/api-server.log" 2>&1 </dev/null & echo $! >>"$PIDS"
    setsid airflow scheduler --skip-serve-logs >"$LOGS/scheduler.log" 2>&1 </dev/null & echo $! >>"$PIDS"
    setsid airflow dag-processor >"$LOGS/dag-processor.log" 2>&1 </dev/null & echo $! >>"$PIDS"
    setsid airflow triggerer --skip-serve-logs >"$LOGS/triggerer.log" 2>&1 </dev/null & echo $! >>"$PIDS"
    for _ in $(seq 1 90); do
      if curl -sf "http://$HOST:$PORT/api/v2/monitor/health" >/dev/null 2>&1; then
        echo "Airflow UI: http://$HOST:$PORT (logs in $LOGS; user admin, password in" \
          "$AIRFLOW_HOME/simple_auth_manager_passwords.json.generated)"
        exit 0
      fi
      sleep 2
    done
    echo "api-server not healthy after 180 s; see $LOGS" >&2; exit 1
    ;;
  stop)
    [ -s "$PIDS" ] || { echo "not started"; exit 0; }
    # Each component was started with setsid: TERM its own process group, nothing else. Their descendants are
    # listed first, by parent pid, so that a process that left the group (a task's own session) is not left
    # running; whatever is still alive after the grace period gets KILL, named.
    descendants() { local kid; for kid in $(ps -o pid= --ppid "$1" 2>/dev/null); do echo "$kid"; descendants "$kid"; done; }
    started=$(cat "$PIDS")
    tree=$(for pid in $started; do echo "$pid"; descendants "$pid"; done)
    for pid in $started; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    for _ in $(seq 1 "${AIRFLOW_SERVICES_STOP_SECONDS:-30}"); do
      alive=$(for pid in $tree; do kill -0 "$pid" 2>/dev/null && echo "$pid"; done || true)
      [ -z "$alive" ] && break
      sleep 1
    done
    if [ -n "${alive:-}" ]; then
      for pid in $alive; do
        echo "still running after TERM, sending KILL: $pid $(ps -o args= -p "$pid" 2>/dev/null | cut -c1-80)" >&2
        kill -KILL "$pid" 2>/dev/null || true
      done
    fi
    rm -f "$PIDS"
    echo "stopped"
    ;;
  status)
    [ -s "$PIDS" ] || { echo "not started"; exit 0; }
    while read -r pid; do
      if kill -0 "$pid" 2>/dev/null; then echo "$pid running: $(ps -o args= -p "$pid" | cut -c1-80)"; else echo "$pid gone"; fi
    done <"$PIDS"
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
