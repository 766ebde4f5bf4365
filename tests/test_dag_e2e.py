"""``rocketmq_retry_daily`` end to end with real ``dag.test()``: real spark-submit of the ingest and reconstruction
jobs on the committed example landing, real Great Expectations, a real SQLite metadata database.

Run twice for the same date: the second run must leave exactly the same outputs (idempotent partition tasks). The
first runs the Spark tasks as spark-submits, the second on a Spark Connect server (scripts/spark-connect.sh), the
deployment's other way to run them: one replaces the other's partitions and neither changes a row.
A run whose warehouse breaks a critical expectation fails at ``validate`` and nothing after it runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import ROOT
from rocketmq_retry.contract import partition_dir

DS = "2026-11-20"  # the date of examples/landing
TABLES = ("events", "quarantine", "transitions", "lifecycles", "dead_letters", "reconciliation")
pytestmark = [pytest.mark.airflow, pytest.mark.spark]


def _missing_job() -> str | None:
    """The e2e run needs the real jobs; name whichever has not landed instead of faking success."""
    import importlib.util

    for module in ("rocketmq_retry.jobs.ingest.job", "rocketmq_retry.jobs.reconstruct.job"):
        if importlib.util.find_spec(module) is None:
            return f"module {module} is missing"
    from rocketmq_retry.airflow.settings import load_airflow_settings

    apps = load_airflow_settings().spark_apps  # the checkout's spark/ unless the deployment names another folder
    for entry in ("ingest.py", "reconstruct.py"):
        if not (apps / entry).is_file():
            return f"spark-submit entry {apps / entry} is missing"
    return None


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, pathlib.Path]]:
    """Roots, config and GE project for the DAG, set the way a deployment sets them: by environment."""
    base = tmp_path_factory.mktemp("deployment")
    roots = {name: base / name for name in ("landing", "warehouse", "config")}
    for path in roots.values():
        path.mkdir()
    shutil.copy(ROOT / "examples" / "rocketmq-retry.yaml", roots["config"] / "rocketmq-retry.yaml")
    gx_root = base / "expectations"
    shutil.copytree(ROOT / "expectations", gx_root, ignore=shutil.ignore_patterns("uncommitted"))
    env = {
        "ROCKETMQ_RETRY_LANDING_ROOT": str(roots["landing"]),
        "ROCKETMQ_RETRY_WAREHOUSE_ROOT": str(roots["warehouse"]),
        "ROCKETMQ_RETRY_CONFIG": str(roots["config"] / "rocketmq-retry.yaml"),
        "ROCKETMQ_RETRY_GX_ROOT": str(gx_root),
        "AIRFLOW_CONN_SPARK_DEFAULT": '{"conn_type": "spark", "host": "local[2]"}',
        # SparkSubmitOperator runs the bare `spark-submit`, and its Python must be this one.
        "PATH": f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    yield {**roots, "gx": gx_root}
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def dag(deployment: dict[str, pathlib.Path]) -> Any:
    from airflow.dag_processing.dagbag import DagBag
    from airflow.utils import db

    db.initdb()
    bag = DagBag(dag_folder=str(ROOT / "dags"))
    assert bag.import_errors == {}
    return bag.dags["rocketmq_retry_daily"]


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """scripts/spark-connect.sh's server on a free port of 127.0.0.1, stopped after the module."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"},
        "SPARK_CONNECT_DIR": str(tmp_path_factory.mktemp("spark-connect")),
        "SPARK_CONNECT_PORT": str(port),
        "PY": sys.executable,
    }
    script = ROOT / "scripts" / "spark-connect.sh"
    try:
        started = subprocess.run(["bash", str(script), "start"], env=env, capture_output=True, text=True, timeout=400)
        assert started.returncode == 0, started.stdout + started.stderr
        yield port
    finally:
        subprocess.run(["bash", str(script), "stop"], env=env, capture_output=True, text=True, timeout=120)


def _snapshot(warehouse: pathlib.Path, ds: str) -> dict[str, Any]:
    """Every output of the run for ``ds``, order-independent: sorted rows of each table plus the report."""
    import pyarrow.dataset as pads

    out: dict[str, Any] = {}
    for table in TABLES:
        path = partition_dir(warehouse, table, ds)
        if path.is_dir():
            rows = pads.dataset(str(path), format="parquet").to_table().to_pylist()
            out[table] = sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)
    out["report"] = json.loads((partition_dir(warehouse, "run_reports", ds) / "summary.json").read_text())
    return out


def _states(dag_run: Any) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in dag_run.get_task_instances()}


def _asset_events(dag_run: Any) -> dict[str, tuple[str, dict[str, Any]]]:
    """The asset events a run recorded: asset name -> (the task that emitted it, its extra)."""
    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.scalars(select(AssetEvent).where(AssetEvent.source_run_id == dag_run.run_id)).all()
        events = [(e.asset.name, e.source_task_id, dict(e.extra or {})) for e in rows]
    assert len(events) == len({name for name, _, _ in events}), f"an asset event twice: {events}"
    return {name: (task_id, extra) for name, task_id, extra in events}


def _check_asset_events(dag_run: Any, warehouse: pathlib.Path, config: str) -> None:
    """Each table the run committed is one event of its table's asset, by the task that committed it, naming the
    date and its partition."""
    from rocketmq_retry.airflow.assets import TASK_TABLES

    events = _asset_events(dag_run)
    expected = {f"rocketmq_retry.{table}": task_id for task_id, tables in TASK_TABLES.items() for table in tables}
    assert {name: task_id for name, (task_id, _) in events.items()} == expected
    for name, (_, extra) in events.items():
        table = name.removeprefix("rocketmq_retry.")
        partition = partition_dir(warehouse, table, DS)
        assert extra == {
            "ds": DS,
            "table": table,
            "partition": str(partition),
            "warehouse": str(warehouse),
            "config": config,
        }
        assert partition.is_dir(), f"{name}: the event names {partition}, which is not there"


@contextlib.contextmanager
def openlineage_file_transport(path: pathlib.Path) -> Iterator[None]:
    """The OpenLineage provider on, with the file transport, for what runs inside (docs/airflow.md "Lineage").

    The provider reads its configuration once per process (cached) and registers its listener when its plugin is
    imported, off in this process because no transport was configured then: so the caches are cleared and the
    listener added to the Task SDK's listener manager here, and both undone after. Events are emitted in a thread
    (``execute_in_thread``): the default forks the task process, which also holds a JVM here."""
    from airflow.providers.openlineage import conf as ol_conf
    from airflow.providers.openlineage.plugins.listener import get_openlineage_listener
    from airflow.sdk.listener import get_listener_manager

    env = {
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "file", "log_file_path": str(path), "append": True}),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "rocketmq-retry-test",
        "AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD": "True",
    }
    saved = {k: os.environ.get(k) for k in env}

    def clear_caches() -> None:
        for value in vars(ol_conf).values():
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()

    os.environ.update(env)
    clear_caches()
    assert not ol_conf.is_disabled()
    manager = get_listener_manager()
    listener = get_openlineage_listener()
    manager.add_listener(listener)
    try:
        yield
    finally:
        manager.pm.unregister(listener)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        clear_caches()


def _lineage_events(path: pathlib.Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(task id, START/COMPLETE) -> the event, of the daily DAG's tasks."""
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    prefix = "rocketmq_retry_daily."
    out = {}
    for event in events:
        name = event["job"]["name"]
        if name.startswith(prefix) and event["eventType"] in ("START", "COMPLETE"):
            out[(name.removeprefix(prefix), event["eventType"])] = event
    return out


def _check_lineage(path: pathlib.Path, deployment: dict[str, pathlib.Path], report: dict[str, Any]) -> None:
    """Each Spark job's and validate's events name the landing folder and the tables (with the partition written),
    and carry what the run found."""
    import pyarrow.dataset as pads

    from rocketmq_retry.validation.status import status
    from rocketmq_retry.warehouse.partitions import JOB_TABLES

    events = _lineage_events(path)
    warehouse = str(deployment["warehouse"].resolve())
    landing = str((deployment["landing"] / DS).resolve())

    def names(datasets: list[dict[str, Any]]) -> list[str]:
        assert {d["namespace"] for d in datasets} <= {"file"}
        return [d["name"] for d in datasets]

    for kind in ("START", "COMPLETE"):
        ingest, reconstruct = events[("ingest", kind)], events[("reconstruct", kind)]
        assert names(ingest["inputs"]) == [landing]
        assert names(ingest["outputs"]) == [f"{warehouse}/{t}" for t in JOB_TABLES["ingest"]]
        assert names(reconstruct["inputs"]) == [f"{warehouse}/events", f"{warehouse}/bindings"]
        assert names(reconstruct["outputs"]) == [f"{warehouse}/{t}" for t in JOB_TABLES["reconstruct"]]
        for output in ingest["outputs"] + reconstruct["outputs"]:
            partitions = output["outputFacets"]["subset"]["outputCondition"]["partitions"]
            assert partitions == [{"dimensions": {"dt": DS}, "identifier": f"dt={DS}"}], output["name"]
    lines = pads.dataset(f"{warehouse}/ingest_report/dt={DS}", format="parquet").to_table(["lines_read"])
    ingest = events[("ingest", "COMPLETE")]["run"]["facets"]["rocketmqRetry"]
    assert ingest["ds"] == DS and ingest["linesRead"] == sum(lines.column("lines_read").to_pylist()) > 0
    assert ingest["partitions"] == [f"{warehouse}/{t}/dt={DS}" for t in JOB_TABLES["ingest"]]
    found = events[("reconstruct", "COMPLETE")]["run"]["facets"]["rocketmqRetry"]
    assert (found["lifecycles"], found["deadLetters"]) == (report["lifecycles"], report["dead_letters"])
    validate = events[("validate", "COMPLETE")]
    v = report["validation"]
    failed = len(v["critical_failures"]) + len(v["warning_failures"])
    assert validate["run"]["facets"]["rocketmqRetry"]["validation"] == status(
        len(v["critical_failures"]), len(v["warning_failures"])
    )
    tests = validate["run"]["facets"]["test"]["tests"]
    assert "events.schema" in {t["name"] for t in tests}
    assert len(tests) == v["evaluated"] and sum(t["status"] == "fail" for t in tests) == failed
    assert f"{warehouse}/dead_letters" in names(validate["inputs"])


def test_daily_run_twice_same_outputs(
    dag: Any,
    deployment: dict[str, pathlib.Path],
    connect_server: int,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: pathlib.Path,
) -> None:
    missing = _missing_job()
    if missing:
        pytest.skip(f"end-to-end run needs the real jobs: {missing}")
    import pendulum

    from rocketmq_retry.airflow import operators

    shutil.copytree(ROOT / "examples" / "landing", deployment["landing"] / DS)
    logical = pendulum.datetime(2026, 11, 20, tz="UTC")

    lineage = tmp_path / "openlineage.jsonl"
    with openlineage_file_transport(lineage):
        first = dag.test(logical_date=logical)
    assert first.state == "success", _states(first)
    outputs = _snapshot(deployment["warehouse"], DS)
    report = outputs["report"]
    _check_lineage(lineage, deployment, report)
    assert report["ds"] == DS and report["lifecycles"] > 0 and report["dead_letters"] > 0
    assert report["validation"]["success"] is True
    assert report["compensation"]["dead_letters"] == report["dead_letters"]
    assert set(report["lifecycles_by_final_state"]) <= {"CONSUMED", "DEAD_LETTERED", "IN_RETRY", "DROPPED", "UNKNOWN"}
    assert {"events", "transitions", "lifecycles", "dead_letters"} <= set(outputs)
    page = pathlib.Path(report["validation"]["data_docs"])
    assert page.is_file() and page.is_relative_to(deployment["gx"])
    config = str(deployment["config"] / "rocketmq-retry.yaml")
    _check_asset_events(first, deployment["warehouse"], config)

    # the second run's Spark tasks as clients of the Connect server: the same jobs, no spark-submit
    conn = {"conn_type": "spark_connect", "host": "sc://127.0.0.1", "port": connect_server}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(conn))
    on_connect: list[str] = []
    real_client = operators.spark_connect_client

    def client(url: str) -> Any:
        on_connect.append(url)
        return real_client(url)

    monkeypatch.setattr(operators, "spark_connect_client", client)
    monkeypatch.setattr(operators.SparkSubmitOperator, "execute", lambda *a, **k: pytest.fail("spark-submit ran"))
    second = dag.test(logical_date=logical)
    assert second.state == "success", _states(second)
    assert on_connect == [f"sc://127.0.0.1:{connect_server}/"] * 3  # ingest, reconstruct, validate
    _check_asset_events(second, deployment["warehouse"], config)  # the Connect path emits the same events
    again = _snapshot(deployment["warehouse"], DS)
    assert sorted(again) == sorted(outputs)
    for name, content in outputs.items():
        assert again[name] == content, f"{name} differs between two runs of the same date"
    # Nothing else was written: only this date's partitions exist.
    for table in TABLES:
        if (deployment["warehouse"] / table).is_dir():
            assert sorted(p.name for p in (deployment["warehouse"] / table).iterdir()) == [f"dt={DS}"]


def test_critical_expectation_failure_fails_at_validate(
    dag: Any, deployment: dict[str, pathlib.Path], spark: Any
) -> None:
    """The jobs are marked successful and the run's warehouse already holds a partition that breaks a critical
    expectation (reconsume times going backwards): validate must fail, and report must not run."""
    import pendulum

    from test_validation_suites import good_rows, write_warehouse

    ds = "2026-11-21"
    tables = good_rows()
    tables["transitions"][2]["reconsume_times"] = 0
    write_warehouse(spark, deployment["warehouse"] / "broken", tables, ds=ds)
    (deployment["landing"] / ds).mkdir(exist_ok=True)
    (deployment["landing"] / ds / "broker.log").write_text("landed\n")

    run = dag.test(
        logical_date=pendulum.datetime(2026, 11, 21, tz="UTC"),
        run_conf={"warehouse": "broken"},
        mark_success_pattern="ingest|reconstruct",
    )
    states = _states(run)
    assert run.state == "failed"
    assert states["validate"] == "failed", states
    assert states["plan_compensation"] == states["report"] == "upstream_failed", states
    assert states["wait_for_landing"] == "success" and states["resolve_run"] == "success", states


def test_param_outside_root_fails_at_resolve(dag: Any, deployment: dict[str, pathlib.Path]) -> None:
    import pendulum

    run = dag.test(logical_date=pendulum.datetime(2026, 11, 22, tz="UTC"), run_conf={"warehouse": "../elsewhere"})
    states = _states(run)
    assert run.state == "failed" and states["resolve_run"] == "failed", states
    assert states["wait_for_landing"] == "upstream_failed"
