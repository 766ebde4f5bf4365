#!/usr/bin/env bash
# make demo: one day through the whole product the way Airflow runs it.
#   scripts/demo.sh DEMO_DIR DATE CONFIG
# Lands a day of RocketMQ logs (the committed sample for its date, else simulated), then runs
# `airflow dags test rocketmq_retry_daily DATE` (local SQLite metadata DB, local Spark) and prints what it found.
# DEMO_SPARK=connect runs the Spark tasks on one warm Spark Connect server (scripts/spark-connect.sh, started here
# if it is not running and left running, so the next run finds it warm) instead of a spark-submit per task.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEMO_DIR="$(mkdir -p "${1:-$ROOT/.demo}" && cd "${1:-$ROOT/.demo}" && pwd)"
DATE="${2:-2026-11-20}"
CONFIG="$(cd "$(dirname "${3:-$ROOT/examples/rocketmq-retry.yaml}")" && pwd)/$(basename "${3:-$ROOT/examples/rocketmq-retry.yaml}")"
SAMPLE_DATE=2026-11-20   # the date of examples/landing
start=$(date +%s)
say() { printf '[demo] %s\n' "$*"; }

# --- environment: everything under DEMO_DIR, nothing listens on a network port --------------------------
export PATH="$ROOT/.venv/bin:$PATH"      # SparkSubmitOperator runs the bare `spark-submit`
export SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON="$ROOT/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$ROOT/.venv/bin/python"
export AIRFLOW_HOME="$DEMO_DIR/airflow"
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="sqlite:///$AIRFLOW_HOME/airflow.db?timeout=30"
export AIRFLOW__CORE__LOAD_EXAMPLES=False AIRFLOW__CORE__DAGS_FOLDER="$ROOT/dags" AIRFLOW__CORE__PLUGINS_FOLDER="$ROOT/plugins"
if [ "${DEMO_SPARK:-submit}" = connect ]; then
  export SPARK_CONNECT_PORT="${SPARK_CONNECT_PORT:-15002}"
  bash "$ROOT/scripts/spark-connect.sh" start | sed 's/^/[demo] /'
  export AIRFLOW_CONN_SPARK_DEFAULT="{\"conn_type\": \"spark_connect\", \"host\": \"sc://127.0.0.1\", \"port\": $SPARK_CONNECT_PORT}"
elif [ "${DEMO_SPARK:-submit}" = submit ]; then
  export AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[*]"}'
else
  echo "[demo] DEMO_SPARK=${DEMO_SPARK}: use submit (the default: a spark-submit per Spark task) or connect" >&2
  exit 2
fi
export ROCKETMQ_RETRY_CONFIG="$CONFIG"
export ROCKETMQ_RETRY_LANDING_ROOT="$DEMO_DIR/landing" ROCKETMQ_RETRY_WAREHOUSE_ROOT="$DEMO_DIR/warehouse"
# A copy of the GE project: the demo's config (its groups' max reconsume times) rewrites the stored transitions
# suite, and results and Data Docs belong to the demo, not to the checkout.
export ROCKETMQ_RETRY_GX_ROOT="$DEMO_DIR/expectations"
mkdir -p "$AIRFLOW_HOME" "$ROCKETMQ_RETRY_LANDING_ROOT" "$ROCKETMQ_RETRY_WAREHOUSE_ROOT"
rm -rf "$ROCKETMQ_RETRY_GX_ROOT" && cp -R "$ROOT/expectations" "$ROCKETMQ_RETRY_GX_ROOT"
rm -rf "$ROCKETMQ_RETRY_GX_ROOT/gx/uncommitted"

# --- 1. the retry path the engine expects for a default group ---------------------------------------------
say "expected retry path of a consumer group with default settings:"
rocketmq-retry schedule --group any | sed 's/^/  /'

# --- 2. a day of logs in landing/<date> ----------------------------------------------------------------------
landing="$ROCKETMQ_RETRY_LANDING_ROOT/$DATE"
rm -rf "$landing"
if [ "$DATE" = "$SAMPLE_DATE" ] && [ -z "${DEMO_SIMULATE:-}" ]; then
  cp -R "$ROOT/examples/landing" "$landing"
  say "landing $DATE: the committed sample (examples/landing, $(find "$landing" -type f | wc -l) files)"
else
  # --noise 0.001 thins heartbeat lines: a full day of them is ~280 MB, and the demo is about retries
  rocketmq-retry simulate --date "$DATE" --out "$landing" --config "$CONFIG" --noise 0.001 >"$DEMO_DIR/simulate.log"
  say "landing $DATE: simulated ($(find "$landing" -type f | wc -l) files; log: $DEMO_DIR/simulate.log)"
fi

# --- 3. the DAG, as `airflow dags test` runs it ----------------------------------------------------------------
say "airflow db migrate (SQLite at $AIRFLOW_HOME/airflow.db)"
airflow db migrate >"$DEMO_DIR/db-migrate.log" 2>&1 || { tail -20 "$DEMO_DIR/db-migrate.log"; exit 1; }
say "airflow dags test rocketmq_retry_daily $DATE (local Spark; log: $DEMO_DIR/dags-test.log)"
dag_start=$(date +%s)
if ! airflow dags test rocketmq_retry_daily "$DATE" >"$DEMO_DIR/dags-test.log" 2>&1; then
  grep -E "ERROR|Traceback|Exception|failed" "$DEMO_DIR/dags-test.log" | tail -20 >&2 || true
  echo "[demo] the DAG run failed: see $DEMO_DIR/dags-test.log" >&2
  exit 1
fi
say "DAG run succeeded in $(( $(date +%s) - dag_start )) s (Spark: ${DEMO_SPARK:-submit}); task states:"
grep -oE "\[DAG TEST\] end task task_id=[a-z_]+" "$DEMO_DIR/dags-test.log" | sed 's/.*task_id=/  done: /' || true

# --- 4. what the run found ------------------------------------------------------------------------------------
echo
python - "$ROCKETMQ_RETRY_WAREHOUSE_ROOT" "$DATE" <<'PY'
import json, pathlib, sys
from rocketmq_retry.airflow.tasks import REPORT_TABLE, render_report
from rocketmq_retry.validation.settings import load_validation_settings

warehouse, ds = sys.argv[1], sys.argv[2]
report = json.loads((pathlib.Path(warehouse) / REPORT_TABLE / f"dt={ds}" / "summary.json").read_text())
print(render_report(report))
print(f"  Data Docs index: {load_validation_settings().docs_dir / 'index.html'}")
PY
echo
say "done in $(( $(date +%s) - start )) s. Outputs: $ROCKETMQ_RETRY_WAREHOUSE_ROOT/<table>/dt=$DATE"
if [ "${DEMO_SPARK:-submit}" = connect ]; then
  say "the Spark Connect server stays up for the next run: stop it with scripts/spark-connect.sh stop"
fi
