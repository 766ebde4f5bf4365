"""A backfill of three dates on a real scheduler, as docs/airflow.md's "Running it" and "Backfilling" do it.

PostgreSQL metadata database (a fresh one, dropped afterwards), the four Airflow components started by
``scripts/airflow-services.sh`` on 127.0.0.1 (the LocalExecutor runs the tasks; its spark-submits are real),
the DAG unpaused, then ``airflow backfill create ... --max-active-runs 3`` over three landed dates. Every backfill
run must end ``success`` and the warehouse must hold each date's committed partitions.

Unpausing also makes the scheduler create the latest interval's run (yesterday), which has no landing folder:
once that date's data is overdue its sensor fails at once instead of waiting six hours (the stall the UI recipe
used to hit); before that it waits, deferred, and holds nothing the backfill needs. Either way it must not delay
the backfill.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import pathlib
import secrets
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow.parquet as pq
import pytest

from conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.airflow, pytest.mark.spark]

DAG_ID = "rocketmq_retry_daily"
# A committed multi-date estate, when there is one (landing/<date>/ and its config); else three simulated dates.
ESTATE = ROOT / "tests" / "data" / "backfill"
SIMULATED_DATES = ("2026-11-16", "2026-11-17", "2026-11-18")
MAX_ACTIVE_RUNS = 3
# One LocalExecutor process per backfill run in flight: each run's tasks are sequential, so three runs never
# need more, and on two cores more spark-submits at once would only share the same CPU.
PARALLELISM = 3
# Every run ends within this, or the test fails with the logs of what did not. Measured: 13-14 minutes from the
# parsed DAG to the last run's end on 2 cores whose load average stood at 12-16 (other jobs' benchmarks): each
# spark-submit of a tiny date took 4-5 minutes there.
BUDGET_SECONDS = 1500
ENGINE_TABLES = {"ingest": ("events", "quarantine"), "reconstruct": ("transitions", "lifecycles", "dead_letters")}
PG_BASE_URL = os.environ.get("ROCKETMQ_RETRY_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
AIRFLOW = str(pathlib.Path(sys.executable).parent / "airflow")


def _estate(landing_root: pathlib.Path, config_root: pathlib.Path) -> tuple[list[str], pathlib.Path]:
    """The dates' landing folders under ``landing_root`` and the config in ``config_root``."""
    if (ESTATE / "landing").is_dir():
        dates = sorted(p.name for p in (ESTATE / "landing").iterdir() if p.is_dir() and not p.name.startswith("_"))
        configs = sorted(ESTATE.glob("*.yaml"))
        assert dates and configs, f"{ESTATE} has no dates under landing/ or no *.yaml config"
        for ds in dates:
            shutil.copytree(ESTATE / "landing" / ds, landing_root / ds)
        config = config_root / configs[0].name
        shutil.copy(configs[0], config)
        return dates, config
    from rocketmq_retry.cli import main as rocketmq_retry

    config = config_root / "rocketmq-retry.yaml"
    shutil.copy(ROOT / "examples" / "rocketmq-retry.yaml", config)
    for seed, ds in enumerate(SIMULATED_DATES, start=1):
        # small and fast: a few dozen lifecycles per date, every format, through the examples' groups
        args = ["simulate", "--date", ds, "--out", str(landing_root / ds), "--config", str(config)]
        args += ["--scenario", str(ROOT / "examples" / "simulate-scenario.yaml"), "--messages", "20"]
        assert rocketmq_retry([*args, "--noise", "0.001", "--seed", str(seed), "--quiet"]) == 0
    return list(SIMULATED_DATES), config


@pytest.fixture(scope="module")
def metadata_db() -> Iterator[str]:
    """A fresh PostgreSQL database for this run's Airflow, dropped afterwards (also after a failure)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import OperationalError

    name = f"rmq_backfill_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(PG_BASE_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as exc:
        admin.dispose()
        pytest.fail(f"PostgreSQL is not reachable at {PG_BASE_URL} ({exc.orig}); make test starts it")
    try:
        yield make_url(PG_BASE_URL).set(drivername="postgresql+psycopg", database=name).render_as_string(False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def deployment_env(
    roots: dict[str, pathlib.Path], config: pathlib.Path, gx_root: pathlib.Path, metadata_db: str, parallelism: int
) -> dict[str, str]:
    """The environment every Airflow component and CLI call of a real-scheduler test shares: this checkout's DAGs
    and plugin over ``roots``, ``config``, the GE project at ``gx_root`` and the PostgreSQL ``metadata_db``."""
    async_url = metadata_db.replace("postgresql+psycopg://", "postgresql+psycopg_async://", 1)
    # The test process's own Spark and Airflow settings stay here: the components get a deployment's environment.
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYSPARK_SUBMIT_ARGS"))}
    return {
        **inherited,
        "AIRFLOW_HOME": str(roots["home"]),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": str(parallelism),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": metadata_db,
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": async_url,
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(_free_port()),
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),  # one secret for every component
        "AIRFLOW_CONN_SPARK_DEFAULT": '{"conn_type": "spark", "host": "local[2]"}',
        "ROCKETMQ_RETRY_LANDING_ROOT": str(roots["landing"]),
        "ROCKETMQ_RETRY_WAREHOUSE_ROOT": str(roots["warehouse"]),
        "ROCKETMQ_RETRY_CONFIG": str(config),
        "ROCKETMQ_RETRY_GX_ROOT": str(gx_root),
        # SparkSubmitOperator runs the bare `spark-submit`: this venv's, with this Python
        "PATH": f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }


@pytest.fixture(scope="module")
def deployment(metadata_db: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Roots, config, GE project and the environment every Airflow component and CLI call of the test shares."""
    base = tmp_path_factory.mktemp("backfill")
    roots = {name: base / name for name in ("landing", "warehouse", "config", "home", "work")}
    for path in roots.values():
        path.mkdir()
    dates, config = _estate(roots["landing"], roots["config"])
    gx_root = base / "expectations"
    shutil.copytree(ROOT / "expectations", gx_root, ignore=shutil.ignore_patterns("uncommitted"))
    env = deployment_env(roots, config, gx_root, metadata_db, PARALLELISM)
    return {**roots, "dates": dates, "config": config, "env": env, "db": metadata_db}


def _airflow(deployment: dict[str, Any], *args: str, timeout: float = 180) -> str:
    done = subprocess.run(
        [AIRFLOW, *args], env=deployment["env"], cwd=deployment["work"], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"airflow {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def services(deployment: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """api-server (the tasks' execution API), scheduler, dag-processor and triggerer, stopped at the end whatever
    happened (by the pids the script recorded: TERM to each component's process group, then KILL)."""
    script = ROOT / "scripts" / "airflow-services.sh"
    run = {"env": deployment["env"], "cwd": deployment["work"], "capture_output": True, "text": True}
    try:
        started = subprocess.run(["bash", str(script), "start"], timeout=400, **run)
        logs = deployment["home"] / "services"
        assert started.returncode == 0, f"{started.stdout}\n{started.stderr}\n{_tails(logs.glob('*.log'))}"
        yield deployment
    finally:
        stopped = subprocess.run(["bash", str(script), "stop"], timeout=120, **run)
        print(f"airflow-services.sh stop: {stopped.stdout.strip()} {stopped.stderr.strip()}")


def _tails(paths: Any, lines: int = 40) -> str:
    out = []
    for path in sorted(paths):
        text = pathlib.Path(path).read_text(errors="replace").splitlines()
        out.append(f"--- {path} (last {lines} lines)\n" + "\n".join(text[-lines:]))
    return "\n".join(out)


class Metadata:
    """Reads the metadata database directly: polling through the CLI would start Airflow every few seconds."""

    def __init__(self, url: str) -> None:
        from sqlalchemy import create_engine

        self.engine = create_engine(url)

    def rows(self, sql: str, **params: Any) -> list[dict[str, Any]]:
        from sqlalchemy import text

        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(text(sql), params)]

    def runs(self) -> list[dict[str, Any]]:
        return self.rows(
            "SELECT run_id, run_type, logical_date, state, start_date, end_date, backfill_id FROM dag_run "
            "WHERE dag_id = :d ORDER BY logical_date",
            d=DAG_ID,
        )

    def tasks(self) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for r in self.rows(
            "SELECT run_id, task_id, map_index, state FROM task_instance WHERE dag_id = :d ORDER BY run_id", d=DAG_ID
        ):
            task = r["task_id"] if r["map_index"] < 0 else f"{r['task_id']}[{r['map_index']}]"
            out.setdefault(r["run_id"], {})[task] = r["state"] or "none"
        return out


def _wait(what: str, check: Any, timeout: float, interval: float = 2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def _where(tasks: dict[str, str]) -> str:
    """A run's progress in one phrase: the tasks not yet successful, or that all are."""
    pending = {t: s for t, s in tasks.items() if s != "success"}
    return ", ".join(f"{t}={s}" for t, s in pending.items()) or f"all {len(tasks)} tasks success"


@pytest.fixture(scope="module")
def meta(deployment: dict[str, Any]) -> Iterator[Metadata]:
    reader = Metadata(deployment["db"])
    yield reader
    reader.engine.dispose()  # before the database is dropped


def test_backfill_of_three_dates_on_a_real_scheduler(services: dict[str, Any], meta: Metadata) -> None:
    deployment = services
    dates: list[str] = deployment["dates"]
    today = dt.datetime.now(dt.UTC).date()
    assert dt.date.fromisoformat(dates[-1]) < today, f"the backfilled dates {dates} must be in the past"
    t0 = time.monotonic()

    # the dag-processor has parsed the DAG (an import error would show here, not as a missing DAG)
    def parsed() -> bool:
        errors = meta.rows("SELECT filename, stacktrace FROM import_error")
        assert not errors, f"DAG import errors: {errors}"
        return bool(meta.rows("SELECT dag_id FROM serialized_dag WHERE dag_id = :d", d=DAG_ID))

    _wait("the dag-processor to serialize the DAG", parsed, timeout=180)
    _airflow(deployment, "dags", "unpause", DAG_ID)
    created = _airflow(
        deployment,
        *("backfill", "create", "--dag-id", DAG_ID, "--from-date", dates[0], "--to-date", dates[-1]),
        *("--max-active-runs", str(MAX_ACTIVE_RUNS)),
    )
    print(f"backfill created after {time.monotonic() - t0:.0f} s: {created.strip()[-300:]}")

    # every backfill run ends (bounded), with progress
    last = ""
    deadline = time.monotonic() + BUDGET_SECONDS
    while True:
        runs = [r for r in meta.runs() if r["run_type"] == "backfill"]
        tasks = meta.tasks()
        line = " | ".join(
            f"{r['logical_date']:%Y-%m-%d} {r['state']}: {_where(tasks.get(r['run_id'], {}))}" for r in runs
        )
        if line != last:
            print(f"{time.monotonic() - t0:6.0f} s  {line}", flush=True)
            last = line
        if len(runs) == len(dates) and all(r["state"] in ("success", "failed") for r in runs):
            break
        if time.monotonic() > deadline:
            logs = deployment["home"] / "logs"
            pytest.fail(
                f"backfill runs not finished after {BUDGET_SECONDS} s: {line}\n"
                + _tails((deployment["home"] / "services").glob("scheduler.log"))
                + _tails(logs.rglob("*.log"), lines=15)
            )
        time.sleep(3)
    wall = time.monotonic() - t0

    listed = _airflow(deployment, "dags", "list-runs", DAG_ID)
    print(f"\nairflow dags list-runs {DAG_ID} (backfill done {wall:.0f} s after the DAG was parsed):\n{listed}")
    for r in meta.runs():
        took = (r["end_date"] - r["start_date"]).total_seconds() if r["end_date"] and r["start_date"] else None
        print(f"  {r['run_id']:<45} {r['run_type']:<10} {r['state']:<8} {took and f'{took:.0f} s'}")

    by_date = {f"{r['logical_date']:%Y-%m-%d}": r for r in runs}
    assert sorted(by_date) == dates
    failed = {ds: _where(tasks[r["run_id"]]) for ds, r in by_date.items() if r["state"] != "success"}
    if failed:
        logs = deployment["home"] / "logs"
        bad = [p for p in logs.rglob("*.log") if any(f"run_id={by_date[ds]['run_id']}" in str(p) for ds in failed)]
        pytest.fail(f"backfill runs not successful: {failed}\n{_tails(bad, lines=30)}")

    # the warehouse holds each date's committed partitions of both jobs (the manifest names the run that
    # committed each table), and the date's report
    from rocketmq_retry.warehouse.partitions import committed, manifest

    warehouse = deployment["warehouse"]
    for ds in dates:
        for job, tables in ENGINE_TABLES.items():
            record = manifest(warehouse, job, ds)
            assert record is not None, f"no {job} commit for {ds}"
            for table in tables:
                assert table in record["tables"] and committed(warehouse, table, ds).is_dir(), (job, table, ds)
        assert any(committed(warehouse, "lifecycles", ds).glob("*.parquet")), ds
        report = json.loads((warehouse / "run_reports" / f"dt={ds}" / "summary.json").read_text())
        assert report["ds"] == ds and report["lifecycles"] > 0 and report["validation"]["success"] is True, report

    # Three runs at once still end right: each date's compensable dead letters are the estate's true ones of that
    # date (the DLQ moves the simulator made on it), although the newest date's run did not wait for the others.
    truth = ESTATE / "landing" / "_truth" / "dead_letters_by_date.csv"
    if truth.is_file() and dates != list(SIMULATED_DATES):
        with truth.open(newline="") as fh:
            true = sorted(
                (r["date"], r["consumer_group"], r["msg_id"]) for r in csv.DictReader(fh) if r["date"] in dates
            )
        got = sorted(
            (ds, r["consumer_group"], r["msg_id"])
            for ds in dates
            for r in pq.read_table(committed(warehouse, "dead_letters", ds)).to_pylist()
            if r["compensable"]
        )
        assert got == true
        print(f"dead letters: {len(got)} compensable over {len(dates)} dates, each the true one of its date")

    # The latest interval's scheduled run (created by the unpause) has no landing. Once its data is overdue its
    # sensor fails at once; before that it may wait, deferred. It must not have held the backfill up either way.
    from rocketmq_retry.airflow.operators import LandingSensor

    due = LandingSensor(task_id="probe", timeout=6 * 3600).data_due  # the DAG's sensor: UTC, 360 minutes
    for r in [r for r in meta.runs() if r["run_type"] == "scheduled"]:
        ds = f"{r['logical_date']:%Y-%m-%d}"
        overdue = dt.datetime.now(dt.UTC) >= due(ds) and not (deployment["landing"] / ds).exists()

        def ended(run_id: str = r["run_id"]) -> str | None:
            state = meta.rows("SELECT state FROM dag_run WHERE run_id = :r", r=run_id)[0]["state"]
            return state if state in ("success", "failed") else None

        state = _wait(f"scheduled run {r['run_id']} to end", ended, timeout=120) if overdue else ended() or "running"
        sensor = meta.tasks().get(r["run_id"], {}).get("wait_for_landing")
        print(f"scheduled run {r['run_id']}: {state}, wait_for_landing {sensor} (landing overdue: {overdue})")
        if overdue:
            assert state == "failed" and sensor == "failed", (r["run_id"], state, sensor)
    print(f"wall time: {wall:.0f} s from the parsed DAG to the last backfill run's end")
