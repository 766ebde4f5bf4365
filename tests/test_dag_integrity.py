"""DAG integrity: the DAG file imports cleanly and cheaply, and is wired, scheduled and guarded as documented."""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from conftest import ROOT

DAG_ID = "rocketmq_retry_daily"


@pytest.fixture(scope="module")
def dagbag() -> Any:
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(ROOT / "dags"))


@pytest.fixture(scope="module")
def dag(dagbag: Any) -> Any:
    return dagbag.dags[DAG_ID]  # not get_dag(): that reads the metadata DB


def test_imports_without_errors_or_warnings(dagbag: Any) -> None:
    assert dagbag.import_errors == {}
    assert dagbag.captured_warnings == {}
    assert DAG_ID in dagbag.dags


def test_graph(dag: Any) -> None:
    downstream = {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks}
    assert downstream == {
        "resolve_run": ["plan_compensation", "wait_for_landing"],
        "wait_for_landing": ["ingest"],
        "ingest": ["reconstruct"],
        "reconstruct": ["validate"],
        "validate": ["plan_compensation"],  # a critical validation failure blocks compensation
        "plan_compensation": ["compensate"],
        "compensate": ["compensation_summary"],
        "compensation_summary": ["report"],
        "report": [],
    }


def test_schedule_and_run_limits(dag: Any) -> None:
    from airflow.sdk import CronDataIntervalTimetable

    assert isinstance(dag.timetable, CronDataIntervalTimetable)
    assert dag.timetable.expression == "0 0 * * *"
    assert str(getattr(dag.timetable.timezone, "name", dag.timetable.timezone)) == "UTC"
    assert dag.catchup is False
    # one scheduled run waiting for its landing plus one that works: a triggered run never queues behind a wait
    assert dag.max_active_runs == 2
    assert set(dag.tags) >= {"rocketmq", "spark", "great-expectations"}
    assert set(dag.params) == {"landing", "warehouse", "config"}
    assert dag.on_failure_callback


def test_retries_backoff_and_callbacks(dag: Any) -> None:
    for task_id in ("ingest", "reconstruct", "validate", "plan_compensation", "compensate", "report"):
        task = dag.get_task(task_id)
        assert task.retries == 3, task_id
        assert task.retry_exponential_backoff == 2.0
        assert task.retry_delay == dt.timedelta(seconds=60)
        assert task.max_retry_delay == dt.timedelta(hours=1)
        assert task.on_failure_callback, task_id
    # Not retried on purpose: bad params never fix themselves; the sensor's timeout is its budget.
    assert dag.get_task("resolve_run").retries == 0
    assert dag.get_task("wait_for_landing").retries == 0


def test_spark_tasks_and_sensor(dag: Any) -> None:
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    for job in ("ingest", "reconstruct"):
        task = dag.get_task(job)
        assert isinstance(task, SparkSubmitOperator)
        assert task._conn_id == "spark_default"
        assert task.application == str(ROOT / "spark" / f"{job}.py")
        assert pathlib.Path(task.application).is_file()
    sensor = dag.get_task("wait_for_landing")
    assert sensor.deferrable and sensor.timeout == 6 * 3600 and sensor.schedule_timezone == "UTC"
    assert [link.name for link in dag.get_task("validate").operator_extra_links] == ["Data Docs"]


class _Paths:
    """A task instance whose resolve_run XCom is ``paths`` (what every operator reads first)."""

    def __init__(self, paths: dict[str, str]) -> None:
        self.paths = paths

    def xcom_pull(self, task_ids: str) -> dict[str, str]:
        return self.paths


def test_sensor_fails_at_once_on_a_missing_overdue_date_and_waits_for_one_filling(tmp_path: pathlib.Path) -> None:
    """A date whose folder does not exist once its data was due (its end + the timeout) cannot be waited for:
    the run fails in seconds instead of holding an active run for hours (a new deployment's first scheduled
    run, a gap in a backfill's range). A folder that exists is still filling, and one not due yet may appear."""
    from airflow.sdk.exceptions import AirflowFailException

    from rocketmq_retry.airflow.operators import LandingSensor

    sensor = LandingSensor(task_id="wait", timeout=6 * 3600, schedule_timezone="Asia/Shanghai")
    assert sensor.data_due("2026-11-20") == dt.datetime(2026, 11, 20, 22, tzinfo=dt.UTC)  # 11-21 00:00 +08 + 6 h

    def context(ds: str) -> dict[str, Any]:
        return {"ti": _Paths({"ds": ds, "landing": str(tmp_path / ds)})}

    with pytest.raises(AirflowFailException, match=r"no landing folder for 2026-11-20 at .*waiting cannot bring it"):
        sensor.poke(context("2026-11-20"))
    (tmp_path / "2026-11-20").mkdir()
    assert sensor.poke(context("2026-11-20")) is False  # exists, empty: still filling
    (tmp_path / "2026-11-20" / "broker.log").write_text("x\n")
    assert sensor.poke(context("2026-11-20")) is True
    tomorrow = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).date().isoformat()
    assert sensor.poke(context(tomorrow)) is False  # not due yet: waits

    marked = LandingSensor(task_id="wait", timeout=60, ready_marker="_READY_{ds}")
    assert marked.poke(context("2026-11-20")) is False
    (tmp_path / "2026-11-20" / "_READY_2026-11-20").write_text("")
    assert marked.poke(context("2026-11-20")) is True


PARSE_PROBE = """
import json, sys, time
from airflow.dag_processing.dagbag import DagBag
t = time.perf_counter()
bag = DagBag(dag_folder=sys.argv[1])
dag = bag.dags["rocketmq_retry_daily"]
heavy = sorted(m for m in ("pyspark", "great_expectations", "pandas", "py4j") if m in sys.modules)
tz = str(getattr(dag.timetable.timezone, "name", dag.timetable.timezone))
print(json.dumps({"heavy": heavy, "errors": list(bag.import_errors), "seconds": time.perf_counter() - t,
                  "tz": tz, "max_active_runs": dag.max_active_runs}))
"""


def test_nothing_heavy_at_parse_time_and_settings_from_environment(tmp_path: pathlib.Path) -> None:
    """A fresh interpreter parses the DAG folder: no Spark, GE or pandas gets imported, and the deployment's
    environment sets the schedule's time zone."""
    env = {
        **os.environ,
        "ROCKETMQ_RETRY_SCHEDULE_TIMEZONE": "Asia/Shanghai",
        "ROCKETMQ_RETRY_MAX_ACTIVE_RUNS": "3",
        "AIRFLOW_HOME": str(tmp_path),
    }
    out = subprocess.run(
        [sys.executable, "-c", PARSE_PROBE, str(ROOT / "dags")], env=env, capture_output=True, text=True, check=True
    )
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    assert probe["errors"] == [] and probe["heavy"] == []
    assert probe["tz"] == "Asia/Shanghai" and probe["max_active_runs"] == 3


def test_partition_date_is_the_logical_day_in_the_schedule_zone() -> None:
    import pendulum

    from rocketmq_retry.airflow.tasks import partition_date

    # Scheduled run of 2026-11-20 in Shanghai: its data interval starts at 2026-11-19T16:00Z.
    assert (
        partition_date({"logical_date": pendulum.datetime(2026, 11, 19, 16, tz="UTC")}, "Asia/Shanghai") == "2026-11-20"
    )
    assert partition_date({"logical_date": pendulum.datetime(2026, 11, 20, tz="UTC")}, "UTC") == "2026-11-20"


def _settings(tmp_path: pathlib.Path) -> Any:
    from rocketmq_retry.airflow.settings import AirflowSettings

    for name in ("landing", "warehouse", "config"):
        (tmp_path / name).mkdir(exist_ok=True)
    (tmp_path / "config" / "site.yaml").write_text("{}\n")
    return AirflowSettings(
        landing_root=str(tmp_path / "landing"),
        warehouse_root=str(tmp_path / "warehouse"),
        config_root=str(tmp_path / "config"),
    )


def test_params_resolve_inside_their_roots(tmp_path: pathlib.Path) -> None:
    from rocketmq_retry.airflow.settings import resolve_run_paths

    settings = _settings(tmp_path)
    default = resolve_run_paths(settings, {"landing": "", "warehouse": "", "config": ""}, "2026-11-20")
    assert default.landing == str(tmp_path / "landing" / "2026-11-20")
    assert default.warehouse == str(tmp_path / "warehouse")
    chosen = resolve_run_paths(
        settings,
        {"landing": f"{tmp_path}/landing/site-a/{{ds}}", "warehouse": "team-a", "config": "site.yaml"},
        "2026-11-20",
    )
    assert chosen.landing == str(tmp_path / "landing" / "site-a" / "2026-11-20")
    assert chosen.warehouse == str(tmp_path / "warehouse" / "team-a")
    assert chosen.config == str(tmp_path / "config" / "site.yaml")


def test_landing_template_keeps_ds_and_is_checked_like_the_date(tmp_path: pathlib.Path) -> None:
    """Ingest gets the landing with ``{ds}`` kept (to catch up earlier dates), under the root like D's own folder;
    a landing without ``{ds}`` (one folder for every date, ``{ds}`` in the sources' globs) has no template."""
    from rocketmq_retry.airflow.settings import PathOutsideRootError, resolve_run_paths

    settings = _settings(tmp_path)
    root = tmp_path / "landing"
    default = resolve_run_paths(settings, {}, "2026-11-20")
    assert default.landing_template == f"{root}/{{ds}}"
    assert default.as_dict()["landing_template"] == f"{root}/{{ds}}"
    assert default.landing_template.replace("{ds}", "2026-11-20") == default.landing
    site = resolve_run_paths(settings, {"landing": f"{root}/site-a/{{ds}}/logs"}, "2026-11-20")
    assert site.landing_template == f"{root}/site-a/{{ds}}/logs"
    assert site.landing == str(root / "site-a" / "2026-11-20" / "logs")
    flat = resolve_run_paths(settings, {"landing": "all-dates"}, "2026-11-20")
    assert flat.landing_template is None and flat.as_dict()["landing_template"] == ""
    with pytest.raises(PathOutsideRootError, match="outside the configured landing root"):
        resolve_run_paths(settings, {"landing": "../{ds}"}, "2026-11-20")


def test_ingest_gets_the_landing_template_and_the_date_folder() -> None:
    """``--landing`` stays D's folder (what the sensor waited for); ``--landing-template`` is added only when the
    run's landing has ``{ds}``; reconstruct gets neither."""
    from rocketmq_retry.airflow.operators import RocketMQSparkJobOperator

    paths = {"ds": "2026-11-20", "landing": "/l/2026-11-20", "landing_template": "/l/{ds}", "warehouse": "/w"}
    ingest = RocketMQSparkJobOperator(task_id="ingest", job="ingest", apps_dir="/apps", needs_landing=True)
    reconstruct = RocketMQSparkJobOperator(task_id="reconstruct", job="reconstruct", apps_dir="/apps")
    common = ["--date", "2026-11-20", "--warehouse", "/w"]
    assert ingest.job_args({**paths, "config": "/c.yaml"}) == [
        *common, "--landing", "/l/2026-11-20", "--landing-template", "/l/{ds}", "--config", "/c.yaml"
    ]  # fmt: skip
    assert ingest.job_args({**paths, "landing_template": "", "config": ""}) == [*common, "--landing", "/l/2026-11-20"]
    old_xcom = {k: v for k, v in paths.items() if k != "landing_template"}  # a run resolved before the template
    assert ingest.job_args({**old_xcom, "config": ""}) == [*common, "--landing", "/l/2026-11-20"]
    assert reconstruct.job_args({**paths, "config": ""}) == common


@pytest.mark.parametrize(
    ("param", "value", "message"),
    [
        ("warehouse", "../landing", "outside the configured warehouse root"),
        ("landing", "/etc", "outside the configured landing root"),
        ("config", "/etc/passwd", "outside the configured config root"),
        ("config", "missing.yaml", "no such file"),
        ("landing", "escape", "outside the configured landing root"),
    ],
)
def test_params_outside_roots_are_refused(tmp_path: pathlib.Path, param: str, value: str, message: str) -> None:
    from rocketmq_retry.airflow.settings import PathOutsideRootError, resolve_run_paths

    settings = _settings(tmp_path)
    (tmp_path / "landing" / "escape").symlink_to(tmp_path / "warehouse")  # a symlink out of the root
    with pytest.raises(PathOutsideRootError, match=message):
        resolve_run_paths(settings, {param: value}, "2026-11-20")


def test_bad_airflow_settings_name_the_key(tmp_path: pathlib.Path) -> None:
    from rocketmq_retry.airflow.settings import load_airflow_settings
    from rocketmq_retry.errors import ConfigError

    cfg = tmp_path / "c.yaml"
    cfg.write_text("airflow:\n  schedule_timezone: Mars/Olympus\n  retrys: 2\n")
    with pytest.raises(ConfigError) as err:
        load_airflow_settings(cfg)
    assert "airflow.schedule_timezone: unknown time zone 'Mars/Olympus'" in str(err.value)
    assert "airflow.retrys: unknown key" in str(err.value)


def test_plugin_loads_and_serves_data_docs_safely(tmp_path: pathlib.Path) -> None:
    from airflow import plugins_manager
    from fastapi.testclient import TestClient

    from rocketmq_retry.airflow.plugin import create_app

    plugins, errors = plugins_manager._get_plugins()
    assert errors == {}
    plugin = next(p for p in plugins if p.name == "rocketmq_retry")
    assert plugin.fastapi_apps[0]["url_prefix"] == "/rocketmq-retry"
    assert [link.name for link in plugin.operator_extra_links] == ["Data Docs"]

    docs = tmp_path / "docs"
    (docs / "runs").mkdir(parents=True)
    (docs / "runs" / "dt=2026-11-20.html").write_text("<h1>ok</h1>")
    (tmp_path / "secret.txt").write_text("no")
    client = TestClient(create_app(docs, authenticate=False))
    page = client.get("/data-docs/runs/dt=2026-11-20.html")
    assert page.text == "<h1>ok</h1>"
    csp = page.headers["content-security-policy"]
    assert "script-src 'self';" in csp and "sandbox allow-scripts" in csp and "allow-same-origin" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert client.get("/data-docs/..%2Fsecret.txt").status_code == 404
    assert client.get("/data-docs/index.html%00").status_code == 404  # was a 500: "embedded null byte"
    assert client.get("/data-docs/runs/dt=2026-11-20.html%00.txt").status_code == 404
    assert client.get("/data-docs/runs/missing.html").status_code == 404
    # With authentication (as registered): no Airflow token, no page.
    assert TestClient(create_app(docs)).get("/data-docs/runs/dt=2026-11-20.html").status_code in (401, 403)


def test_package_zip_is_reproducible(tmp_path: pathlib.Path) -> None:
    import zipfile

    from rocketmq_retry.airflow.package import build_package_zip

    first = build_package_zip(tmp_path)
    second = build_package_zip(tmp_path)
    assert first == second and first.read_bytes() == second.read_bytes()
    names = zipfile.ZipFile(first).namelist()
    assert "rocketmq_retry/jobs/ingest/job.py" in names and not any("__pycache__" in n for n in names)


def test_each_table_is_an_asset_of_the_task_that_commits_it(dag: Any) -> None:
    """Every table of the data contract, and the run reports, is the outlet of exactly one task: the one that
    commits it. Names are stable; the URI is the table's folder under the deployment's warehouse root."""
    from airflow.sdk import Asset

    from rocketmq_retry.airflow.settings import load_airflow_settings
    from rocketmq_retry.contract import SCHEMAS

    outlets = {t.task_id: sorted(o.name for o in t.outlets) for t in dag.tasks if t.outlets}
    assert outlets == {
        "ingest": sorted(f"rocketmq_retry.{t}" for t in ("events", "quarantine", "ingest_report", "bindings")),
        "reconstruct": sorted(
            f"rocketmq_retry.{t}"
            for t in (
                "transitions",
                "lifecycles",
                "dead_letters",
                "reconciliation",
                "unattributed",
                "failures",
                "failure_causes",
                "incidents",
            )
        ),
        "report": ["rocketmq_retry.run_reports"],
    }
    named = sorted(name.removeprefix("rocketmq_retry.") for names in outlets.values() for name in names)
    assert named == sorted([*SCHEMAS, "run_reports"])
    warehouse = load_airflow_settings().warehouse
    dead = next(o for o in dag.get_task("reconstruct").outlets if o.name == "rocketmq_retry.dead_letters")
    assert isinstance(dead, Asset) and dead.group == "rocketmq-retry"
    assert dead.uri == f"file://{warehouse}/dead_letters"


COMPENSATE_DAG_ID = "rocketmq_retry_compensate"
COMPENSATE_GRAPH = {
    "resolve_compensation": ["plan_compensation", "wait_for_validation"],
    "wait_for_validation": ["plan_compensation"],
    "plan_compensation": ["compensate"],
    "compensate": ["compensation_summary"],
    "compensation_summary": [],
}


def test_compensate_dag_is_manual_only_by_default(dagbag: Any) -> None:
    """compensation.trigger: daily (the default): compensation stays inside the daily DAG (test_graph) and
    rocketmq_retry_compensate is there to compensate one date by hand, never scheduled."""
    dag = dagbag.dags[COMPENSATE_DAG_ID]
    assert type(dag.timetable).__name__ == "NullTimetable"
    assert {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks} == COMPENSATE_GRAPH
    assert dag.is_paused_upon_creation is False  # a paused DAG would collect asset events and run none
    assert set(dag.params) == {"date", "warehouse", "config"}
    assert dag.get_task("wait_for_validation").mode == "reschedule"


def test_compensation_trigger_asset_moves_compensation_onto_the_dead_letters_asset(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.dag_processing.dagbag import DagBag

    config = tmp_path / "rocketmq-retry.yaml"
    config.write_text("compensation:\n  trigger: asset\n", encoding="utf-8")
    monkeypatch.setenv("ROCKETMQ_RETRY_CONFIG", str(config))
    monkeypatch.setenv("ROCKETMQ_RETRY_WAREHOUSE_ROOT", str(tmp_path / "wh"))
    bag = DagBag(dag_folder=str(ROOT / "dags"))
    assert bag.import_errors == {}
    daily = bag.dags[DAG_ID]
    assert {t.task_id for t in daily.tasks} == {
        "resolve_run",
        "wait_for_landing",
        "ingest",
        "reconstruct",
        "validate",
        "report",
    }
    assert daily.get_task("validate").downstream_task_ids == {"report"}
    dag = bag.dags[COMPENSATE_DAG_ID]
    assert type(dag.timetable).__name__ == "AssetTriggeredTimetable"
    assets = list(dag.timetable.asset_condition.objects)
    assert [(a.name, a.uri) for a in assets] == [
        ("rocketmq_retry.dead_letters", f"file://{(tmp_path / 'wh').resolve()}/dead_letters")
    ]
    # the same asset the daily DAG's reconstruct emits
    emitted = next(o for o in daily.get_task("reconstruct").outlets if o.name == "rocketmq_retry.dead_letters")
    assert emitted.uri == assets[0].uri
    assert {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks} == COMPENSATE_GRAPH


def test_dead_letters_events_are_checked_against_the_roots(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An event's extra is data (the REST API lets users with asset permissions create events): its warehouse
    must lie under the warehouse root and its config be the deployment's own or one under the config root."""
    from rocketmq_retry.airflow.compensation_tasks import event_runs
    from rocketmq_retry.errors import UserError

    root = (tmp_path / "wh").resolve()
    (root / "prod").mkdir(parents=True)
    deployment = tmp_path / "deploy" / "rocketmq-retry.yaml"
    deployment.parent.mkdir()
    deployment.write_text("{}\n", encoding="utf-8")
    monkeypatch.setenv("ROCKETMQ_RETRY_WAREHOUSE_ROOT", str(root))
    monkeypatch.setenv("ROCKETMQ_RETRY_CONFIG", str(deployment))
    monkeypatch.setenv("ROCKETMQ_RETRY_CONFIG_ROOT", str(tmp_path / "configs"))
    event = {"ds": "2026-11-20", "warehouse": str(root / "prod"), "config": str(deployment)}
    twice = event_runs([event, dict(event), {**event, "ds": "2026-11-19"}], {})
    assert twice == [
        {"ds": "2026-11-19", "warehouse": str(root / "prod"), "config": str(deployment)},
        {"ds": "2026-11-20", "warehouse": str(root / "prod"), "config": str(deployment)},
    ]
    assert event_runs([{"ds": "2026-11-20", "warehouse": "", "config": None}], {})[0]["warehouse"] == str(root)
    assert event_runs([], {"date": "2026-11-18"}) == [
        {"ds": "2026-11-18", "warehouse": str(root), "config": str(deployment)}
    ]
    other = tmp_path / "elsewhere.yaml"
    other.write_text("compensation:\n  routes: [{handler: log-only}]\n", encoding="utf-8")
    for bad, message in [
        ({**event, "warehouse": str(tmp_path / "other")}, "outside the configured warehouse root"),
        ({**event, "config": str(other)}, "outside the configured config root"),
        ({**event, "ds": "20/11/2026"}, "dead_letters event ds"),
        ({**event, "ds": None}, "without a date"),
    ]:
        with pytest.raises(UserError, match=message):
            event_runs([bad], {})
    with pytest.raises(UserError, match="no dead_letters asset event and no date param"):
        event_runs([], {})


def test_the_redrive_dag_offers_every_state_the_ledger_reopens(dagbag: Any) -> None:
    # a state the ledger reopens but the DAG's form refuses can only be re-driven by msg_id (HELD_FOR_REVIEW, the
    # re-drive loops, was missing when the loops came)
    from rocketmq_retry.compensation.model import REOPENABLE

    states = dagbag.dags["rocketmq_retry_redrive"].params.get_param("states")
    assert set(states.schema["items"]["enum"]) == {s.value for s in REOPENABLE}
