"""Manual re-drive of dead letters through the compensation ledger (issue 7).

Trigger with params: either ``msg_ids`` (optionally with ``consumer_group``) to re-drive chosen dead letters,
or a ``date_from``..``date_to`` range to re-drive every ledger row in ``states`` (default FAILED) of those
dead-letter dates. FAILED, GAVE_UP, SKIPPED and HELD_FOR_REVIEW (re-drive loops) rows are reopened with a fresh
attempt budget; DONE rows are never re-driven (their effect already happened) and are listed in the summary's
notes. The work is split into at most ``max_batches`` mapped ``compensate`` instances, each recording every
outcome in the ledger.

A re-drive of more than ``compensation.approval_threshold`` dead letters waits for an approval first (Browse →
Required Actions): ``preview_redrive`` counts what would be re-driven without changing the ledger, and
``approve_redrive`` shows it (count per consumer group and handler, the first rows). Approve: the run goes on, and
the approver is recorded in the run's summary and in each reopened row's ledger note. Reject: nothing is done.

Unpaused when Airflow first sees it: with no schedule it never starts a run by itself, and a trigger (which needs
permission to trigger this DAG) should run rather than sit queued. Pause it to hold re-drives: triggered runs
then wait, queued, until it is unpaused.
"""

from __future__ import annotations

from airflow.sdk import Param, dag

from rocketmq_retry.airflow import dag_parts as parts
from rocketmq_retry.airflow.compensation_tasks import (
    approve_redrive,
    compensate,
    compensation_summary,
    plan_redrive_from_params,
    preview_redrive_from_params,
)
from rocketmq_retry.airflow.tasks import on_dag_failure

settings = parts.deployment_settings()

_DATE = {"type": "string", "pattern": r"^(\d{4}-\d{2}-\d{2})?$"}


@dag(
    dag_id=parts.REDRIVE_DAG_ID,
    schedule=None,
    # Triggered only (the dead-letter page, the trigger form): a paused DAG would queue those runs for ever.
    is_paused_upon_creation=False,
    start_date=parts.START_DATE,
    catchup=False,
    max_active_runs=1,
    # Retrying a batch is safe (the ledger lets each effect happen once); a bad param fails without retries.
    default_args=parts.default_args(settings),
    on_failure_callback=on_dag_failure,
    tags=[*parts.COMMON_TAGS, "compensation"],
    doc_md=__doc__,
    params={
        "date_from": Param("", **_DATE, description="First dead-letter date (YYYY-MM-DD) of a re-drive by state."),
        "date_to": Param("", **_DATE, description="Last dead-letter date (inclusive)."),
        "msg_ids": Param([], type="array", items={"type": "string"}, description="Chosen msg_ids (UNIQ_KEY)."),
        "consumer_group": Param("", type="string", description="Only this consumer group (optional)."),
        "states": Param(
            ["FAILED"],
            type="array",
            items={"type": "string", "enum": ["FAILED", "GAVE_UP", "SKIPPED", "HELD_FOR_REVIEW"]},
            description="Ledger states re-driven by a date-range run.",
        ),
        "warehouse": Param("", type="string", description="Warehouse under the deployment's root; empty = the root."),
        "config": Param("", type="string", description="Config file; empty = $ROCKETMQ_RETRY_CONFIG."),
        "max_batches": Param(8, type="integer", minimum=1, maximum=64, description="Upper bound on mapped tasks."),
    },
)
def rocketmq_retry_redrive() -> None:
    # More than compensation.approval_threshold dead letters: the preview asks approve_redrive to wait for an
    # approval (Browse -> Required Actions); fewer: approve_redrive is skipped and the plan runs at once.
    batches = plan_redrive_from_params()
    preview_redrive_from_params() >> approve_redrive() >> batches
    compensation_summary(compensate.expand(batch=batches))


rocketmq_retry_redrive()
