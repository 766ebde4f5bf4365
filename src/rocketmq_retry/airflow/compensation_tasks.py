"""The compensation steps as Airflow tasks, for ``rocketmq_retry_daily`` and ``rocketmq_retry_redrive``.

Importing this module defines tasks, it reads nothing: every connection, file and database is touched when a
task runs. The mapped ``compensate`` task gets one *batch* per instance (at most ``max_batches``, never one
per message); each instance records every outcome in the ledger and returns its counts, and
``compensation_summary`` adds them up and pushes the run's summary to XCom.

Daily DAG wiring (``paths`` is the run's resolved ``{"ds", "warehouse", "config", ...}``)::

    from rocketmq_retry.airflow.compensation_tasks import compensate, compensation_summary, plan_compensation

    batches = plan_compensation(paths)
    summary = compensation_summary(compensate.expand(batch=batches))
    validate_task >> batches
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import get_current_context, task

if TYPE_CHECKING:
    from rocketmq_retry.compensation.batches import Batch

MAX_PARALLEL_BATCHES = 4  # instances of one run's mapped task that execute at the same time


@task(task_id="plan_compensation")
def plan_compensation(
    paths: dict[str, Any], max_batches: int | None = None, batch_size: int | None = None
) -> list[dict[str, Any]]:
    from rocketmq_retry.compensation.batches import plan_batches

    config = paths.get("config") or None
    return [dict(b) for b in plan_batches(paths["ds"], paths["warehouse"], config, max_batches, batch_size)]


@task(task_id="compensate", max_active_tis_per_dagrun=MAX_PARALLEL_BATCHES)
def compensate(batch: dict[str, Any]) -> dict[str, Any]:
    from rocketmq_retry.airflow.connections import airflow_connection
    from rocketmq_retry.compensation.batches import compensate_batch

    return compensate_batch(batch, str(get_current_context()["run_id"]), connections=airflow_connection)


@task(task_id="compensation_summary")
def compensation_summary(summaries: Any) -> dict[str, Any]:
    from rocketmq_retry.compensation.batches import summarize

    return summarize(list(summaries))


@task(task_id="plan_redrive")
def plan_redrive_from_params() -> list[dict[str, Any]]:
    """Reads the run's params (see ``dags/rocketmq_retry_redrive.py``)."""
    from airflow.sdk.exceptions import AirflowFailException

    from rocketmq_retry.errors import UserError

    try:
        return [dict(b) for b in plan_redrive_params(dict(get_current_context()["params"]))]
    except UserError as exc:
        # A param outside its root, a bad date or a bad config is not transient: fail once, no retries.
        raise AirflowFailException(str(exc)) from None


def plan_redrive_params(params: dict[str, Any]) -> list[Batch]:
    """``plan_redrive`` from the DAG's params, resolved by the same rules as the daily DAG's (the deployment's
    ``airflow:`` roots, ``inside`` checks, one date parser): a trigger form must not be a way to point the ledger at
    arbitrary files or to load a config, with its handlers and callables, from outside the config root."""
    from rocketmq_retry.airflow.settings import load_airflow_settings, run_config, run_warehouse
    from rocketmq_retry.compensation.batches import plan_redrive
    from rocketmq_retry.compensation.model import State
    from rocketmq_retry.dates import optional_date

    settings = load_airflow_settings()
    warehouse = run_warehouse(settings, params)
    config = run_config(settings, params)
    msg_ids = [m.strip() for m in params.get("msg_ids") or [] if m and m.strip()]
    return plan_redrive(
        str(warehouse),
        str(config) if config else None,
        date_from=optional_date(params.get("date_from"), what="param date_from"),
        date_to=optional_date(params.get("date_to"), what="param date_to"),
        msg_ids=msg_ids,
        consumer_group=str(params.get("consumer_group") or "") or None,
        states=list(params.get("states") or [State.FAILED.value]),
        max_batches=int(params["max_batches"]) if params.get("max_batches") else None,
    )
