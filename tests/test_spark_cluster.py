"""Both jobs on a real Spark standalone cluster (scripts/spark-cluster.sh: a master and two workers on 127.0.0.1),
submitted exactly as the DAG submits them (RocketMQSparkJobOperator.prepare -> SparkSubmitHook's command, with the
package zip as --py-files), the driver here and the executors in the workers, into a ``file://`` warehouse so the
partitions are committed through Hadoop's FileSystem API (warehouse/partitions.py). Every table must equal, row by row,
the same day run in local mode."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import ROOT
from rocketmq_retry.warehouse import partitions as P

DS = "2026-11-20"
LANDING = ROOT / "examples" / "landing"
CONFIG = ROOT / "examples" / "rocketmq-retry.yaml"
SCRIPT = ROOT / "scripts" / "spark-cluster.sh"
TABLES = (*P.JOB_TABLES["ingest"], *P.JOB_TABLES["reconstruct"])
EXPECTED = {"events": 878, "lifecycles": 91, "dead_letters": 12, "transitions": 474}

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    master, master_ui, worker_ui = _free_ports(3)
    # worker i's UI is worker_ui + i - 1: the next port must be free too, so pick a pair
    while True:
        (worker_ui,) = _free_ports(1)
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", worker_ui + 1)) != 0:
                break
    env = {
        **os.environ,
        "SPARK_CLUSTER_DIR": str(tmp_path_factory.mktemp("spark-cluster")),
        "SPARK_MASTER_PORT": str(master),
        "SPARK_MASTER_WEBUI_PORT": str(master_ui),
        "SPARK_WORKER_WEBUI_PORT": str(worker_ui),
        "PY": sys.executable,
    }
    info = {"env": env, "url": f"spark://127.0.0.1:{master}", "ui": f"http://127.0.0.1:{master_ui}"}
    info["worker_uis"] = [f"http://127.0.0.1:{worker_ui}", f"http://127.0.0.1:{worker_ui + 1}"]
    try:
        started = subprocess.run(["bash", str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=400)
        print(started.stdout, started.stderr)
        assert started.returncode == 0, started.stdout + started.stderr
        yield info
    finally:
        stopped = subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, text=True, timeout=120)
        print(stopped.stdout, stopped.stderr)


def _submit(
    cluster: dict[str, Any], job: str, paths: dict[str, str], out: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    """The DAG's spark-submit for ``job``, to the cluster; returns its output."""
    from rocketmq_retry.airflow.operators import RocketMQSparkJobOperator
    from rocketmq_retry.config_sections import spark_apps_default

    conn = {"conn_type": "spark", "host": cluster["url"], "extra": {"deploy-mode": "client"}}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(conn))
    op = RocketMQSparkJobOperator(
        task_id=job,
        job=job,
        apps_dir=str(spark_apps_default()),
        package_dir=str(out / "dist"),
        needs_landing=job == "ingest",
        # one 1-core executor per worker (the workers offer 1 core and 1g each)
        extra_conf={"spark.executor.memory": "768m", "spark.executor.cores": "1", "spark.cores.max": "2"},
        conn_id="spark_default",
    )
    op.prepare(paths)
    command = op._get_hook()._build_spark_submit_command(op.application)
    assert command[command.index("--master") + 1] == cluster["url"]
    assert command[command.index("--py-files") + 1].endswith(".zip")
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    env.update(op.env_vars, PATH=f"{pathlib.Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1500)
    log = done.stdout + done.stderr
    (out / f"{job}.log").write_text(log)
    print(f"{job} on the cluster: exit {done.returncode} in {time.monotonic() - started:.1f} s")
    assert done.returncode == 0, log[-5000:]
    return log


def _rows(spark: Any, path: Any) -> list[str]:
    return sorted(spark.read.parquet(str(path)).toJSON().collect())


def test_both_jobs_on_the_cluster_equal_local_mode(
    cluster: dict[str, Any],
    spark: Any,
    example_day: pathlib.Path,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wh_cluster = f"file://{tmp_path / 'wh-cluster'}"
    paths = {"ds": DS, "landing": str(LANDING), "warehouse": wh_cluster, "config": str(CONFIG)}
    for job in ("ingest", "reconstruct"):
        _submit(cluster, job, paths, tmp_path, monkeypatch)

    # The executors ran in the workers: each worker lists a finished executor of each application, and their
    # own logs (the workers' work dirs) say they registered with the driver here.
    apps = [a for a in _json(cluster["ui"] + "/json/")["completedapps"] if a["name"].startswith("rocketmq-retry-")]
    assert sorted(a["name"] for a in apps) == ["rocketmq-retry-ingest", "rocketmq-retry-reconstruct"]
    for url in cluster["worker_uis"]:
        # the master lists an application as completed before each worker has moved its executor to the finished
        # ones (the worker hears of the end from the master, then kills the executor): wait for that, briefly
        deadline = time.monotonic() + 60
        while True:
            worker = _json(url + "/json/")
            ran = sorted(e["appid"] for e in worker["finishedexecutors"])
            if ran == sorted(a["id"] for a in apps) or time.monotonic() > deadline:
                break
            time.sleep(1)
        print(f"worker {worker['id']}: executors of {ran}")
        assert sorted(a["id"] for a in apps) == ran
    work = pathlib.Path(cluster["env"]["SPARK_CLUSTER_DIR"]) / "work"
    lines = [
        f"{f.relative_to(work)}: {line}"
        for f in sorted(work.glob("worker-*/app-*/*/stderr"))
        for line in f.read_text().splitlines()
        if "Successfully registered with driver" in line or "Starting executor ID" in line
    ]
    print("\n".join(lines))
    assert sum("Successfully registered with driver" in line for line in lines) == 4  # 2 apps x 2 workers

    # the same day in local mode: the session's example day (conftest.example_day: the same landing, config and
    # jobs, run in this process's local Spark), built once for every test that reads it
    wh_local = example_day
    for table in TABLES:
        on_cluster = P.committed(wh_cluster, table, DS)
        assert isinstance(on_cluster, P.HadoopPath) and on_cluster.is_dir(), table
        cluster_rows, local_rows = _rows(spark, on_cluster), _rows(spark, P.committed(wh_local, table, DS))
        assert cluster_rows == local_rows, table
        if table in EXPECTED:
            assert len(cluster_rows) == EXPECTED[table], table
        print(f"{table}: {len(cluster_rows)} rows, identical on the cluster and in local mode")
    for job in ("ingest", "reconstruct"):
        manifest = P.manifest(wh_cluster, job, DS)
        assert manifest is not None and set(manifest["tables"]) == set(P.JOB_TABLES[job])
        runs = {P.commit_of(P.committed(wh_cluster, t, DS))["run_id"] for t in P.JOB_TABLES[job]}  # type: ignore[index]
        assert runs == {manifest["run_id"]}
    assert sorted(p.name for t in TABLES for p in (tmp_path / "wh-cluster" / t).glob(".dt=*")) == []
    assert not list((tmp_path / "wh-cluster" / P.COMMITS_DIR).glob("*/*.lock"))
