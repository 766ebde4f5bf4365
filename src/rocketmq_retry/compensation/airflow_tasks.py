"""The compensation steps as Airflow tasks, for ``rocketmq_retry_daily`` and ``rocketmq_retry_redrive``.

Importing this module defines tasks, it reads nothing: every connection, file and database is touched when a
task runs. The mapped ``compensate`` task gets one *batch* per instance (at most ``max_batches``, never one
per message); each instance records every outcome in the ledger and returns its counts, and
``compensation_summary`` adds them up and pushes the run's summary to XCom.

Daily DAG wiring (``paths`` is the run's resolved ``{"ds", "warehouse", "config", ...}``)::

    from rocketmq_retry.compensation.airflow_tasks import compensate, compensation_summary, plan_compensation

    batches = plan_compensation(paths)
    summary = compensation_summary(compensate.expand(batch=batches))
    validate_task >> batches
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import get_current_context, task

MAX_PARALLEL_BATCHES = 4  # instances of one run's mapped task that execute at the same time


@task(task_id="plan_compensation")
def plan_compensation(
    paths: dict[str, Any], max_batches: int | None = None, batch_size: int | None = None
) -> list[dict[str, Any]]:
    from rocketmq_retry.compensation.tasks import plan_batches

    config = paths.get("config") or None
    return [dict(b) for b in plan_batches(paths["ds"], paths["warehouse"], config, max_batches, batch_size)]


@task(task_id="compensate", max_active_tis_per_dagrun=MAX_PARALLEL_BATCHES)
def compensate(batch: dict[str, Any]) -> dict[str, Any]:
    from rocketmq_retry.compensation.tasks import compensate_batch

    return compensate_batch(batch, str(get_current_context()["run_id"]))


@task(task_id="compensation_summary")
def compensation_summary(summaries: Any) -> dict[str, Any]:
    from rocketmq_retry.compensation.tasks import summarize

    return summarize(list(summaries))


@task(task_id="plan_redrive")
def plan_redrive_from_params() -> list[dict[str, Any]]:
    """Reads the run's params (see ``dags/rocketmq_retry_redrive.py``)."""
    from airflow.sdk.exceptions import AirflowFailException

    from rocketmq_retry.compensation.tasks import plan_redrive_params
    from rocketmq_retry.errors import UserError

    try:
        return [dict(b) for b in plan_redrive_params(dict(get_current_context()["params"]))]
    except UserError as exc:
        # A param outside its root, a bad date or a bad config is not transient: fail once, no retries.
        raise AirflowFailException(str(exc)) from None
