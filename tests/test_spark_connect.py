"""The Spark tasks' other way to run: as clients of one warm Spark Connect server (scripts/spark-connect.sh). The
whole DAG on a real server is tests/test_dag_e2e.py's second run; here, what decides and guards that path."""

from __future__ import annotations

import collections
import json
import os
import pathlib
import socket
import subprocess
import sys
import types

import pytest

from conftest import ROOT
from rocketmq_retry.warehouse import partition_fs


def test_the_connection_type_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    from rocketmq_retry.airflow.operators import spark_connect_url

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_WARM", json.dumps({"conn_type": "spark_connect", "host": "sc://127.0.0.1", "port": 15002})
    )
    assert spark_connect_url("spark_local") is None
    assert spark_connect_url("spark_warm") == "sc://127.0.0.1:15002/"
    assert spark_connect_url("no_such_connection") is None  # validate then starts its own local session
    assert spark_connect_url(None) is None


@pytest.mark.parametrize("before", [None, "sc://elsewhere:1/"])
def test_the_client_sets_spark_remote_for_the_task_only(monkeypatch: pytest.MonkeyPatch, before: str | None) -> None:
    from rocketmq_retry.airflow.operators import spark_connect_client

    if before is None:
        monkeypatch.delenv("SPARK_REMOTE", raising=False)
    else:
        monkeypatch.setenv("SPARK_REMOTE", before)
    monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED", raising=False)
    with spark_connect_client("sc://127.0.0.1:15002/"):
        assert os.environ["SPARK_REMOTE"] == "sc://127.0.0.1:15002/"
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"  # what PySpark sets when it creates a remote session
    assert os.environ.get("SPARK_REMOTE") == before
    assert "SPARK_CONNECT_MODE_ENABLED" not in os.environ  # a later classic session stays classic


def test_a_uri_warehouse_is_refused_on_a_connect_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_REMOTE", "sc://127.0.0.1:15002/;token=secret")
    with pytest.raises(partition_fs.CommitError) as err:
        partition_fs.HadoopFs("hdfs://nn:8020/warehouse")
    message = str(err.value)
    assert "hdfs://nn:8020/warehouse" in message and "Spark Connect server at sc://127.0.0.1:15002/" in message
    assert "plain path" in message and "secret" not in message


def test_the_script_refuses_a_busy_port_and_starts_nothing(tmp_path: pathlib.Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {**os.environ, "SPARK_CONNECT_DIR": str(tmp_path), "SPARK_CONNECT_PORT": str(port), "PY": sys.executable}
        done = subprocess.run(
            ["bash", str(ROOT / "scripts" / "spark-connect.sh"), "start"], env=env, capture_output=True, text=True
        )
    assert done.returncode == 1
    assert f"port 127.0.0.1:{port} is already in use (set SPARK_CONNECT_PORT)" in done.stderr
    assert not (tmp_path / "pids" / "server.pid").exists()
    status = subprocess.run(
        ["bash", str(ROOT / "scripts" / "spark-connect.sh"), "status"], env=env, capture_output=True, text=True
    )
    assert status.returncode == 1 and "not running" in status.stderr


@pytest.mark.spark
def test_a_classic_session_here_is_not_taken_for_the_servers(spark: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test suite (or a notebook) may hold a classic session while a task runs on the server: validate must
    not pick it up, and must be able to build the remote one beside it."""
    from rocketmq_retry.spark_session import active_session

    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    assert active_session() is spark
    monkeypatch.setenv("SPARK_REMOTE", "sc://127.0.0.1:1/")
    assert active_session() is None


@pytest.mark.parametrize(("code", "outcome"), [(0, None), (65, "AirflowFailException"), (1, "AirflowException")])
def test_on_the_server_a_user_error_fails_the_task_without_retries(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, code: int, outcome: str | None
) -> None:
    """The job's exit on the server is read as spark-submit's is: 65 fails at once, another failure may retry."""
    import contextlib

    from rocketmq_retry.airflow import operators
    from rocketmq_retry.jobs.reconstruct import job as reconstruct

    ran: list[list[str]] = []
    monkeypatch.setattr(operators, "spark_connect_url", lambda conn_id: "sc://127.0.0.1:15002/")
    monkeypatch.setattr(operators, "spark_connect_client", lambda url: contextlib.nullcontext())
    monkeypatch.setattr(reconstruct, "cli", lambda argv: ran.append(argv) or code)

    class TI:
        def xcom_pull(self, task_ids: str) -> dict[str, str]:
            return {"ds": "2026-11-20", "landing": "", "warehouse": str(tmp_path), "config": ""}

    op = operators.RocketMQSparkJobOperator(task_id="reconstruct", job="reconstruct", apps_dir=str(tmp_path))
    # what a task's context holds for this operator: the task and its outlets' events (airflow/assets.py)
    context = {"ti": TI(), "task": op, "outlet_events": collections.defaultdict(types.SimpleNamespace)}
    if outcome is None:
        op.execute(context)
    else:
        with pytest.raises(Exception) as err:
            op.execute(context)
        assert type(err.value).__name__ == outcome and f"reconstruct exited {code}" in str(err.value)
    assert ran == [["--date", "2026-11-20", "--warehouse", str(tmp_path)]]
