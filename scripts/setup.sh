#!/usr/bin/env bash
# Idempotent environment setup: Java 17 check, a pinned uv bootstrap, .venv from constraints.txt.
# A second run with nothing changed only verifies and exits in a second or two.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.11}
UV_VERSION=0.13.9

say() { printf '[setup] %s\n' "$*"; }

# --- Java 17 (PySpark 4 needs Java 17 or 21) -------------------------------------------------------
java_major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1; }
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "Java 17 not found: installing Debian's openjdk-17-jre-headless"
    apt-get update -q >/dev/null && apt-get install -y -q openjdk-17-jre-headless >/dev/null
  else
    echo "[setup] ERROR: PySpark 4 needs Java 17 (found: $(java -version 2>&1 | head -1 || echo none))." >&2
    echo "[setup] Install it, e.g. 'sudo apt-get install openjdk-17-jre-headless' (Debian/Ubuntu)" >&2
    echo "[setup] or 'brew install openjdk@17' (macOS), then run 'make setup' again." >&2
    exit 1
  fi
fi
say "java: $(java -version 2>&1 | head -1)"

# --- Python 3.11 ----------------------------------------------------------------------------------
if ! command -v "$PY" >/dev/null 2>&1; then
  echo "[setup] ERROR: $PY not found. Install Python 3.11 (or set PYTHON=/path/to/python3.11)." >&2
  exit 1
fi

# --- uv (pinned) in a private tools venv ------------------------------------------------------------
if [ ! -x .tools/bin/uv ] || [ "$(.tools/bin/uv --version | awk '{print $2}')" != "$UV_VERSION" ]; then
  say "bootstrapping uv $UV_VERSION into .tools/"
  "$PY" -m venv .tools
  .tools/bin/pip install -q --disable-pip-version-check "uv==$UV_VERSION" 2>&1 | grep -v "is ignored" || true
fi

# --- the project venv, from the committed constraints ----------------------------------------------
stamp=.venv/.installed
want=$(cat constraints.txt pyproject.toml | sha256sum | cut -c1-16)
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  say "environment up to date (.venv)"
else
  [ -x .venv/bin/python ] || .tools/bin/uv venv -q -p "$(command -v "$PY")" .venv
  say "installing pinned dependencies into .venv (first run: about a minute)"
  .tools/bin/uv pip install -q -p .venv/bin/python -c constraints.txt -e ".[dev]"
  echo "$want" > "$stamp"
fi

# --- bytecode, compiled once per install --------------------------------------------------------------
# uv installs sources only, and a process that may not write bytecode (PYTHONDONTWRITEBYTECODE, a read-only venv)
# then compiles every module it imports, every time: importing Great Expectations took 8 s instead of 4, the
# Airflow CLI 3.5 s instead of 2 (docs/scale.md). The project's own sources are compiled too (__pycache__ is
# ignored by git; an edited module is compiled again in memory until the next setup).
bytecode=.venv/.bytecode
if [ ! -f "$bytecode" ] || [ "$(cat "$bytecode")" != "$want" ]; then
  say "compiling the packages' bytecode (once per install)"
  site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  # a few packages ship files that are not Python 3.11 (templates, tests for other versions): they stay sources
  .venv/bin/python -m compileall -q -j 0 "$site" src >/dev/null 2>&1 || true
  echo "$want" > "$bytecode"
fi
# --- the class archive of Spark's JVM, once per Java and PySpark --------------------------------------
# Every Spark driver of this venv maps Spark's classes from it instead of loading them from the jars: one Spark
# start 11-12 -> 6 s (docs/scale.md "Spark starts"). Without it everything still runs, only slower to start.
if ! .venv/bin/python -m rocketmq_retry.spark_classes > .venv/.spark-classes.log 2>&1; then
  say "WARNING: the class archive of Spark's JVM could not be written (Spark starts without it); see .venv/.spark-classes.log"
else
  say "$(tail -1 .venv/.spark-classes.log)"
fi
.venv/bin/python - <<'PY'
# Versions from package metadata: importing great_expectations here would print dozens of log lines.
from importlib.metadata import version
import rocketmq_retry  # noqa: F401  (the editable install resolves)
print("[setup] ok: " + ", ".join(f"{p} {version(p)}" for p in ("pyspark", "apache-airflow", "great-expectations")))
PY
