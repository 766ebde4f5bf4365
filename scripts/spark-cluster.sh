#!/usr/bin/env bash
# A Spark standalone cluster on this machine from the installed PySpark: one master and N workers bound to
# 127.0.0.1, for running the jobs with `spark-submit --master spark://127.0.0.1:<port>` (docs/airflow.md
# "On a Spark cluster"). The same settings as docker-compose.yml's spark-master and spark-worker services.
#
#   scripts/spark-cluster.sh start    # idempotent: a running cluster is left as it is
#   scripts/spark-cluster.sh status   # master URL and the registered workers; exit 1 when not running
#   scripts/spark-cluster.sh stop     # by PID: TERM, wait, then KILL
#
# Settings (environment, with defaults):
#   SPARK_CLUSTER_DIR            .spark-cluster/ in the project: logs/, work/, pids/ (git-ignored)
#   SPARK_MASTER_PORT            7077
#   SPARK_MASTER_WEBUI_PORT      8081   (the master's /json/ endpoint, read by `status`)
#   SPARK_WORKER_WEBUI_PORT      8082   (worker i listens on this + i - 1)
#   SPARK_CLUSTER_WORKERS        2
#   SPARK_WORKER_CORES           1      (per worker: 2 workers fit a 2-core machine)
#   SPARK_WORKER_MEMORY          1g     (per worker: what its executors may take)
#   SPARK_HOME                   the installed PySpark's folder
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PY:-$ROOT/.venv/bin/python}
DIR=${SPARK_CLUSTER_DIR:-$ROOT/.spark-cluster}
MASTER_PORT=${SPARK_MASTER_PORT:-7077}
MASTER_UI_PORT=${SPARK_MASTER_WEBUI_PORT:-8081}
WORKER_UI_PORT=${SPARK_WORKER_WEBUI_PORT:-8082}
WORKERS=${SPARK_CLUSTER_WORKERS:-2}
CORES=${SPARK_WORKER_CORES:-1}
MEMORY=${SPARK_WORKER_MEMORY:-1g}
HOST=127.0.0.1
NAME=spark-cluster
MASTER_URL="spark://$HOST:$MASTER_PORT"
# The web UIs bind SPARK_LOCAL_IP (all interfaces without it); the daemons' own heap stays small.
export SPARK_LOCAL_IP=$HOST SPARK_DAEMON_MEMORY=${SPARK_DAEMON_MEMORY:-256m}
# Without this the daemons read $SPARK_HOME/conf, which a pip-installed PySpark does not have anyway.
export SPARK_CONF_DIR=${SPARK_CONF_DIR:-$DIR/conf}
# The master's REST submission server would take the fixed port 6066 (and accept unauthenticated submissions).
export SPARK_MASTER_OPTS="${SPARK_MASTER_OPTS:-} -Dspark.master.rest.enabled=false"

# die, spark_home, check_java, pid_alive, port_busy, wait_port, stop_pid
source "$ROOT/scripts/spark-common.sh"

master_json() {
	"$PY" - "http://$HOST:$MASTER_UI_PORT/json/" <<'EOF'
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
    state = json.load(r)
alive = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
print(f"master {state['url']} ({state.get('status')}), {len(alive)} worker(s) alive")
for w in alive:
    print(f"  worker {w['id']} {w['host']}:{w['port']} cores={w['cores']} memory={w['memory']}m ui={w['webuiaddress']}")
for a in state.get("activeapps", []):
    print(f"  app {a['id']} {a['name']} cores={a['cores']}")
sys.exit(0 if state.get("status") == "ALIVE" else 1)
EOF
}

start() {
	check_java
	local home
	home=$(spark_home)
	[[ -x $home/bin/spark-class ]] || die "$home/bin/spark-class not found (SPARK_HOME=$home)"
	mkdir -p "$DIR/logs" "$DIR/pids" "$DIR/work" "$SPARK_CONF_DIR"
	local i ports=("$MASTER_PORT" "$MASTER_UI_PORT")
	for ((i = 1; i <= WORKERS; i++)); do ports+=($((WORKER_UI_PORT + i - 1))); done
	if pid_alive "$DIR/pids/master.pid"; then
		echo "spark-cluster: master already running (pid $(cat "$DIR/pids/master.pid"))"
	else
		for p in "${ports[@]}"; do
			port_busy "$p" && die "port $HOST:$p is already in use (set SPARK_MASTER_PORT, SPARK_MASTER_WEBUI_PORT or SPARK_WORKER_WEBUI_PORT)"
		done
		nohup "$home/bin/spark-class" org.apache.spark.deploy.master.Master \
			--host "$HOST" --port "$MASTER_PORT" --webui-port "$MASTER_UI_PORT" \
			>"$DIR/logs/master.out" 2>&1 </dev/null &
		echo $! >"$DIR/pids/master.pid"
	fi
	# Workers start without waiting for the master (each JVM start takes seconds on a loaded machine): a worker
	# that finds no master yet retries its registration.
	for ((i = 1; i <= WORKERS; i++)); do
		local pidfile="$DIR/pids/worker-$i.pid" ui=$((WORKER_UI_PORT + i - 1))
		if pid_alive "$pidfile"; then
			echo "spark-cluster: worker $i already running (pid $(cat "$pidfile"))"
			continue
		fi
		port_busy "$ui" && die "port $HOST:$ui (worker $i UI) is already in use (set SPARK_WORKER_WEBUI_PORT)"
		mkdir -p "$DIR/work/worker-$i"
		nohup "$home/bin/spark-class" org.apache.spark.deploy.worker.Worker \
			--host "$HOST" --webui-port "$ui" --cores "$CORES" --memory "$MEMORY" \
			--work-dir "$DIR/work/worker-$i" "$MASTER_URL" \
			>"$DIR/logs/worker-$i.out" 2>&1 </dev/null &
		echo $! >"$pidfile"
	done
	wait_port "$MASTER_UI_PORT" 120 "the master UI" "$DIR/logs/master.out"
	# Registered means the master lists the worker as ALIVE: only then can an application get its executors.
	for ((i = 0; i < 1200; i++)); do
		if [[ $(master_json 2>/dev/null | sed -n 's/.*, \([0-9]*\) worker(s) alive/\1/p') == "$WORKERS" ]]; then
			master_json
			return 0
		fi
		sleep 0.1
	done
	die "the $WORKERS worker(s) did not register with $MASTER_URL within 120 s; see $DIR/logs/"
}

stop() {
	local f
	shopt -s nullglob
	# workers first, so the master does not log them as lost and try to relaunch their executors
	for f in "$DIR"/pids/worker-*.pid; do stop_pid "$f" "$(basename "$f" .pid)"; done
	stop_pid "$DIR/pids/master.pid" master
}

status() {
	pid_alive "$DIR/pids/master.pid" || die "not running (no live master pid in $DIR/pids)"
	master_json || die "master at $MASTER_URL does not answer on http://$HOST:$MASTER_UI_PORT/json/"
}

case ${1:-} in
start) start ;;
stop) stop ;;
status) status ;;
*) die "usage: $0 start|stop|status" ;;
esac
