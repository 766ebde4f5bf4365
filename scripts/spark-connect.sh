#!/usr/bin/env bash
# One warm Spark Connect server on 127.0.0.1 from the installed PySpark, for the DAG's Spark tasks to connect to
# instead of each starting (and JIT-compiling) a JVM of its own (docs/airflow.md "A warm Spark Connect server"):
# point the `spark_default` connection at it (conn type spark_connect, host sc://127.0.0.1, port below).
#
#   scripts/spark-connect.sh start    # idempotent: a running server is left as it is; waits until it answers
#   scripts/spark-connect.sh status   # its URL and pid; exit 1 when not running
#   scripts/spark-connect.sh stop     # by PID: TERM, wait, then KILL
#
# Settings (environment, with defaults):
#   SPARK_CONNECT_DIR       .spark-connect/ in the project: logs/, pids/, local/ (git-ignored)
#   SPARK_CONNECT_PORT      15002  (gRPC, bound to 127.0.0.1 only)
#   SPARK_CONNECT_MASTER    local[2]   (or spark://127.0.0.1:7077 from scripts/spark-cluster.sh)
#   SPARK_CONNECT_MEMORY    2g     (the server's driver heap: in local mode its executors' too)
#   SPARK_HOME              the installed PySpark's folder
#
# The server reads the landing and writes the warehouse itself, so both must be paths it sees; the jobs' Python
# runs in the client (the Airflow task), and the server needs no Python: the jobs use no Python UDF.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PY:-$ROOT/.venv/bin/python}
DIR=${SPARK_CONNECT_DIR:-$ROOT/.spark-connect}
PORT=${SPARK_CONNECT_PORT:-15002}
MASTER=${SPARK_CONNECT_MASTER:-local[2]}
MEMORY=${SPARK_CONNECT_MEMORY:-2g}
HOST=127.0.0.1
NAME=spark-connect
URL="sc://$HOST:$PORT"
CLASS=org.apache.spark.sql.connect.service.SparkConnectServer
export SPARK_LOCAL_IP=$HOST
export SPARK_CONF_DIR=${SPARK_CONF_DIR:-$DIR/conf}

# die, spark_home, check_java, pid_alive, port_busy, wait_port, stop_pid
source "$ROOT/scripts/spark-common.sh"

answers() { # 0 when a Connect client gets a result from the server
	"$PY" - "$URL" <<'EOF' >/dev/null 2>&1
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
assert spark.range(1).count() == 1
spark.stop()
EOF
}

start() {
	local pidfile=$DIR/pids/server.pid home
	if pid_alive "$pidfile"; then
		echo "$NAME: already running (pid $(cat "$pidfile")) at $URL"
		return 0
	fi
	check_java
	home=$(spark_home)
	[[ -x $home/bin/spark-submit ]] || die "$home/bin/spark-submit not found (SPARK_HOME=$home)"
	port_busy "$PORT" && die "port $HOST:$PORT is already in use (set SPARK_CONNECT_PORT)"
	mkdir -p "$DIR/logs" "$DIR/pids" "$DIR/local" "$SPARK_CONF_DIR"
	# The jobs' own Spark settings (JVM flags for their large generated methods, ...) as spark-submit gets them.
	nohup "$home/bin/spark-submit" --class "$CLASS" --name "rocketmq-retry Spark Connect" \
		--master "$MASTER" --driver-memory "$MEMORY" \
		--properties-file "$ROOT/spark/spark-defaults.conf" \
		--conf spark.master="$MASTER" \
		--conf spark.connect.grpc.binding.address="$HOST" \
		--conf spark.connect.grpc.binding.port="$PORT" \
		--conf spark.local.dir="$DIR/local" \
		--conf spark.ui.enabled=false \
		>"$DIR/logs/server.out" 2>&1 </dev/null &
	echo $! >"$pidfile"
	wait_port "$PORT" 180 "the Spark Connect server" "$DIR/logs/server.out"
	local i
	for ((i = 0; i < 120; i++)); do
		if answers; then
			echo "$NAME: running (pid $(cat "$pidfile")) at $URL, master $MASTER"
			return 0
		fi
		pid_alive "$pidfile" || die "the server exited; see $DIR/logs/server.out"
		sleep 1
	done
	die "the server at $URL did not answer a query within 120 s; see $DIR/logs/server.out"
}

stop() {
	stop_pid "$DIR/pids/server.pid" server
}

status() {
	pid_alive "$DIR/pids/server.pid" || die "not running (no live server pid in $DIR/pids)"
	answers || die "pid $(cat "$DIR/pids/server.pid") is alive but $URL does not answer a query"
	echo "$NAME: running (pid $(cat "$DIR/pids/server.pid")) at $URL"
}

case ${1:-} in
start) start ;;
stop) stop ;;
status) status ;;
*) die "usage: $0 start|stop|status" ;;
esac
