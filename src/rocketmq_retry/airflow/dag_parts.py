"""The parse-time pieces of ``dags/rocketmq_retry_daily.py``: schedule, params, default args, operators.

Everything here is cheap: the deployment's settings come from env and one small YAML file; no Spark, GE,
Variable or Connection is touched until a task runs.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from airflow.sdk import Asset, CronDataIntervalTimetable, Param

from rocketmq_retry.airflow.settings import AirflowSettings, load_airflow_settings

DAG_ID = "rocketmq_retry_daily"
REDRIVE_DAG_ID = "rocketmq_retry_redrive"
COMPENSATE_DAG_ID = "rocketmq_retry_compensate"
COMMON_TAGS = ["rocketmq-retry"]  # every DAG of the project: one filter in the UI finds them all
TAGS = [*COMMON_TAGS, "rocketmq", "retry", "spark", "great-expectations"]
START_DATE = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

DOC_MD = """
### RocketMQ retry lifecycles, one day at a time

One run per calendar day of the schedule's time zone (`airflow.schedule_timezone`, default UTC):
wait for the day's landing data → **ingest** (Spark) → **reconstruct** (Spark) → **validate** (Great
Expectations; the *Data Docs* button opens the run's page) → **report**.

Params (empty = the deployment's default; relative paths are taken under the configured root, and a path that
leaves its root is refused):
`landing` (default `airflow.landing_subdir`, `{ds}` = the run's date), `warehouse`, `config`.

Backfill: *Trigger* → *Backfill* (or `airflow backfill create --dag-id rocketmq_retry_daily --from-date 2026-11-18
--to-date 2026-11-20 --max-active-runs 3`; needs a running scheduler and the DAG unpaused). Dates run in any order
and in parallel with the same result; each run replaces only its own `dt=<date>` partitions, so *All Runs*
recomputes a range safely. A date with no landing folder once its data is overdue fails at `wait_for_landing` at
once. Field by field: docs/airflow.md, "Backfilling".
"""


def deployment_settings() -> AirflowSettings:
    return load_airflow_settings()


def compensation_trigger() -> str:
    """``compensation.trigger`` of the deployment's config: ``daily`` (compensation inside the daily DAG) or
    ``asset`` (``rocketmq_retry_compensate`` scheduled on the ``dead_letters`` asset instead)."""
    from rocketmq_retry.config import load_config

    return load_config().compensation.trigger


def compensate_schedule(settings: AirflowSettings, trigger: str) -> list[Asset] | None:
    """On the ``dead_letters`` asset when the config says so; else triggered by hand only (a date param)."""
    if trigger != "asset":
        return None
    from rocketmq_retry.airflow.assets import table_asset

    return [table_asset("dead_letters", str(settings.warehouse))]


def timetable(settings: AirflowSettings) -> CronDataIntervalTimetable:
    # Data intervals (not trigger times): each run covers [day, day + 1) in the configured zone and starts
    # once that day is over; its logical date is the day it owns.
    return CronDataIntervalTimetable("0 0 * * *", timezone=settings.schedule_timezone)


def params() -> dict[str, Param]:
    path = {"type": "string", "maxLength": 4096}
    return {
        "landing": Param(
            "",
            description="Landing folder for this run, under the landing root ({ds} = run date). Empty: default.",
            **path,
        ),
        "warehouse": Param("", description="Warehouse, under the warehouse root. Empty: the root itself.", **path),
        "config": Param("", description="Config file, under the config root. Empty: the deployment's.", **path),
    }


def default_args(settings: AirflowSettings) -> dict[str, Any]:
    from rocketmq_retry.airflow.tasks import on_task_failure

    return {
        "owner": "rocketmq-ops",
        "retries": settings.retries,
        "retry_delay": dt.timedelta(seconds=settings.retry_delay_seconds),
        "retry_exponential_backoff": settings.retry_backoff,
        "max_retry_delay": dt.timedelta(seconds=settings.max_retry_delay_seconds),
        "on_failure_callback": on_task_failure,
        "depends_on_past": False,
    }


def landing_sensor(settings: AirflowSettings) -> Any:
    from rocketmq_retry.airflow.operators import LandingSensor

    return LandingSensor(
        task_id="wait_for_landing",
        ready_marker=settings.ready_marker,
        deferrable=settings.deferrable,
        schedule_timezone=settings.schedule_timezone,  # a date's end, from which its data is due
        timeout=settings.sensor_timeout_minutes * 60,
        poke_interval=settings.sensor_poke_seconds,
        mode="reschedule",  # when not deferrable, free the worker slot between pokes
        retries=0,  # the timeout is the waiting budget; retrying would silently multiply it
    )


def outlets(task_id: str, settings: AirflowSettings) -> list[Asset]:
    """The table Assets ``task_id`` commits (``rocketmq_retry.airflow.assets``)."""
    from rocketmq_retry.airflow.assets import task_outlets

    return task_outlets(task_id, str(settings.warehouse))


def spark_job(job: str, settings: AirflowSettings, *, needs_landing: bool = False) -> Any:
    from rocketmq_retry.airflow.operators import RocketMQSparkJobOperator

    return RocketMQSparkJobOperator(
        task_id=job,
        job=job,
        apps_dir=str(settings.spark_apps),
        conn_id=settings.spark_conn_id,
        extra_conf=settings.spark_conf,
        needs_landing=needs_landing,
        outlets=outlets(job, settings),
        verbose=False,
    )


def validate_task(settings: AirflowSettings) -> Any:
    from rocketmq_retry.airflow.operators import ValidatePartitionOperator

    return ValidatePartitionOperator(task_id="validate", conn_id=settings.spark_conn_id)
