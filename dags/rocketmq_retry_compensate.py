"""rocketmq_retry_compensate: the compensation of a date's dead letters, on the ``dead_letters`` asset.

With ``compensation.trigger: asset`` in the deployment's config, the daily DAG stops after ``validate`` and
``report``, and this DAG runs each time the daily DAG's ``reconstruct`` commits a date's ``dead_letters``: it
reads the date (and warehouse, config) from the asset event's extra, checked against the deployment's roots, waits
for that run's ``validate`` to pass (a critical failure means nothing is compensated), then plans, compensates
(mapped batches, the same ledger and handlers as the daily DAG) and sums up. Another team's DAG can react to the
same asset. With ``compensation.trigger: daily`` (the default) it is not scheduled; trigger it with a ``date`` to
compensate one date by hand. docs/airflow.md "Compensation on the dead_letters asset".

Unpaused when Airflow first sees it: a paused DAG would collect the asset's events and run none of them.
"""

from __future__ import annotations

from airflow.sdk import DAG, Param

from rocketmq_retry.airflow import dag_parts as parts
from rocketmq_retry.airflow.compensation_tasks import (
    compensate,
    compensation_summary,
    plan_compensation_runs,
    resolve_compensation_runs,
    wait_for_validation,
)
from rocketmq_retry.airflow.tasks import on_dag_failure

settings = parts.deployment_settings()

with DAG(
    dag_id=parts.COMPENSATE_DAG_ID,
    schedule=parts.compensate_schedule(settings, parts.compensation_trigger()),
    is_paused_upon_creation=False,
    start_date=parts.START_DATE,
    catchup=False,
    max_active_runs=settings.max_active_runs,
    default_args=parts.default_args(settings),
    on_failure_callback=on_dag_failure,
    tags=[*parts.COMMON_TAGS, "compensation"],
    doc_md=__doc__,
    params={
        "date": Param("", type="string", pattern=r"^(\d{4}-\d{2}-\d{2})?$", description="Run by hand: the date."),
        "warehouse": Param("", type="string", description="Warehouse under the deployment's root; empty = the root."),
        "config": Param("", type="string", description="Config file; empty = $ROCKETMQ_RETRY_CONFIG."),
    },
) as dag:
    runs = resolve_compensation_runs()
    batches = plan_compensation_runs(runs)
    runs >> wait_for_validation() >> batches
    compensation_summary(compensate.expand(batch=batches))
