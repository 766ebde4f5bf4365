# Source this file (". ./env.sh") to run the project's commands by hand; the Makefile sets the same.
_root="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
export PATH="$_root/.venv/bin:$PATH"                 # spark-submit and airflow must be on PATH
if [ -z "${JAVA_HOME:-}" ] && command -v java >/dev/null 2>&1; then
  JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"; export JAVA_HOME
fi
export SPARK_LOCAL_IP=127.0.0.1                      # else Spark binds the first non-loopback address
export PYSPARK_PYTHON="$_root/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$_root/.venv/bin/python"
export AIRFLOW_HOME="${AIRFLOW_HOME:-$_root/.airflow}"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__DAGS_FOLDER="$_root/dags"
export AIRFLOW__CORE__PLUGINS_FOLDER="$_root/plugins"
unset _root
