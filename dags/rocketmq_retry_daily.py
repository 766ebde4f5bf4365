"""rocketmq_retry_daily: one run per day — wait for landing data, ingest, reconstruct, validate, compensate, report.

Wiring only; the logic lives in ``rocketmq_retry.airflow`` (see docs/airflow.md).
"""

from __future__ import annotations

from airflow.sdk import DAG, task

from rocketmq_retry.airflow import dag_parts as parts
from rocketmq_retry.airflow.compensation_tasks import compensate, compensation_summary, plan_compensation
from rocketmq_retry.airflow.tasks import on_dag_failure, report, resolve_run
from rocketmq_retry.urls import RESOLVE_TASK

settings = parts.deployment_settings()

with DAG(
    dag_id=parts.DAG_ID,
    schedule=parts.timetable(settings),
    start_date=parts.START_DATE,
    catchup=False,
    max_active_runs=settings.max_active_runs,
    default_args=parts.default_args(settings),
    params=parts.params(),
    tags=parts.TAGS,
    on_failure_callback=on_dag_failure,
    doc_md=parts.DOC_MD,
) as dag:
    run = task(task_id=RESOLVE_TASK, retries=0)(resolve_run)()
    wait = parts.landing_sensor(settings)
    ingest = parts.spark_job("ingest", settings, needs_landing=True)
    reconstruct = parts.spark_job("reconstruct", settings)
    validate = parts.validate_task(settings)
    summary = task(task_id="report", outlets=parts.outlets("report", settings))(report)()
    run >> wait >> ingest >> reconstruct >> validate
    if parts.compensation_trigger() == "daily":
        # Compensation acts on dead letters only after validation passed: a critical failure blocks it.
        batches = plan_compensation(run)
        validate >> batches
        compensation_summary(compensate.expand(batch=batches)) >> summary
    else:  # compensation.trigger: asset: rocketmq_retry_compensate reacts to the dead_letters asset instead
        validate >> summary
