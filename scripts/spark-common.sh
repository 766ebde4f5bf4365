#!/usr/bin/env bash
# Shell functions shared by scripts/spark-cluster.sh and scripts/spark-connect.sh (sourced, not run). The caller
# sets NAME (the prefix of its messages), HOST, and PY (the project's Python, whose PySpark is Spark's home).

die() {
	echo "$NAME: $*" >&2
	exit 1
}

spark_home() {
	if [[ -n ${SPARK_HOME:-} ]]; then
		echo "$SPARK_HOME"
		return
	fi
	[[ -x $PY ]] || die "no Python at $PY (run make setup, or set PY or SPARK_HOME)"
	"$PY" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' ||
		die "pyspark is not importable by $PY (run make setup)"
}

check_java() {
	command -v java >/dev/null || die "java not found on PATH: Spark 4 needs Java 17 or later (e.g. apt-get install openjdk-17-jre-headless)"
	local version major
	version=$(java -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n1)
	major=${version%%.*}
	[[ $major =~ ^[0-9]+$ && $major -ge 17 ]] ||
		die "java on PATH is version '${version:-unknown}': Spark 4 needs Java 17 or later"
}

pid_alive() { # pidfile -> 0 when its process is running
	[[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

port_busy() {
	(exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
}

wait_port() { # port seconds what logfile
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		port_busy "$1" && return 0
		sleep 0.1
	done
	die "$3 did not open $HOST:$1 within $2 s; see $4"
}

stop_pid() { # pidfile name
	local pidfile=$1 name=$2 pid i
	[[ -f $pidfile ]] || return 0
	pid=$(cat "$pidfile")
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid"
		for ((i = 0; i < 150; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			echo "$NAME: $name (pid $pid) still running 15 s after TERM: sending KILL" >&2
			kill -9 "$pid" 2>/dev/null || true
		fi
		echo "$NAME: stopped $name (pid $pid)"
	fi
	rm -f "$pidfile"
}

