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

Re-drive DAG wiring: ``preview_redrive`` (read-only) decides whether the re-drive needs an approval
(``compensation.approval_threshold``); above it, ``approve_redrive`` (Airflow's ApprovalOperator, Browse → Required
Actions) shows the preview and waits; ``plan_redrive`` only then reopens rows. A rejection skips everything after it.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from airflow.sdk import get_current_context, task

if TYPE_CHECKING:
    from rocketmq_retry.compensation.batches import Batch
    from rocketmq_retry.compensation.ledger import Ledger
    from rocketmq_retry.compensation.model import LedgerRow
    from rocketmq_retry.config import Config

MAX_PARALLEL_BATCHES = 4  # instances of one run's mapped task that execute at the same time
PREVIEW_TASK = "preview_redrive"
APPROVAL_TASK = "approve_redrive"
PREVIEW_KEY = "preview"  # the preview's XCom key (the task's return value is the short-circuit condition)
DECISION_KEY = "decision"  # approve_redrive's XCom key: the answer, Approve or Reject
PREVIEW_ROWS = 10  # the first rows the approver sees
# How long a re-drive waits for its approver. Then the approval task fails and nothing is re-driven: a run that
# waited for ever would hold the DAG's only active run and queue every later re-drive behind it.
APPROVAL_TIMEOUT = dt.timedelta(hours=24)


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


@task.short_circuit(task_id=PREVIEW_TASK, ignore_downstream_trigger_rules=False)
def preview_redrive_from_params() -> bool:
    """What the run's params would re-drive, read from the ledger without changing it (XCom ``preview``).

    Returns whether it needs an approval: False skips ``approve_redrive`` (its direct downstream only, so that
    ``plan_redrive``, whose trigger rule accepts a skipped approval, runs as before the approval step existed).
    """
    from airflow.sdk.exceptions import AirflowFailException

    from rocketmq_retry.errors import UserError

    context = get_current_context()
    try:
        preview = redrive_preview_params(dict(context["params"]))
    except UserError as exc:
        # A param outside its root, a bad date or a bad config is not transient: fail once, no retries.
        raise AirflowFailException(str(exc)) from None
    dag_run = context["dag_run"]
    preview["body"] = approval_body(
        preview, str(dag_run.run_id), getattr(dag_run, "triggering_user_name", None) or "unknown"
    )
    context["ti"].xcom_push(key=PREVIEW_KEY, value=preview)
    return bool(preview["needs_approval"])


@task(task_id="plan_redrive", trigger_rule="none_failed")
def plan_redrive_from_params() -> list[dict[str, Any]]:
    """Reads the run's params (see ``dags/rocketmq_retry_redrive.py``) and the approval, if one was needed.

    Runs after ``approve_redrive`` approved, or was skipped because the preview was under the threshold; a
    rejection skips this task (and so everything after it). The selection is counted again first: a ledger that
    grew past what was approved (or past the threshold, when no approval was asked) fails the run with nothing
    reopened, rather than re-drive rows nobody looked at.
    """
    from airflow.sdk.exceptions import AirflowFailException

    from rocketmq_retry.errors import UserError

    context = get_current_context()
    params = dict(context["params"])
    ti = context["ti"]
    try:
        preview = ti.xcom_pull(task_ids=PREVIEW_TASK, key=PREVIEW_KEY) or {}
        decision = approval_decision(
            ti.xcom_pull(task_ids=APPROVAL_TASK, key=DECISION_KEY), preview, str(context["run_id"])
        )
        now = redrive_preview_params(params)
        allowed = preview.get("count", 0) if decision["approved"] else now["threshold"]
        if now["count"] > allowed:
            raise AirflowFailException(
                f"the ledger changed since the preview: {now['count']} dead letters would be re-driven now, "
                f"{'approved' if decision['approved'] else 'threshold'}: {allowed}; nothing was reopened. "
                "Trigger the re-drive again to review the new selection"
            )
        batches = [dict(b) for b in plan_redrive_params(params, note=decision["ledger_note"])]
    except UserError as exc:
        raise AirflowFailException(str(exc)) from None
    # The decision travels with the run's summary (compensation_summary's notes), next to what it did.
    batches[0]["notes"] = [decision["summary_note"], *batches[0]["notes"]]
    return batches


def approval_decision(approval: dict[str, Any] | None, preview: dict[str, Any], run_id: str) -> dict[str, Any]:
    """The approver and decision as the ledger and the run's summary record them.

    ``approval``: ``approve_redrive``'s ``decision`` XCom (``decision_record``), None when the approval was not
    needed (skipped)."""
    from rocketmq_retry.errors import UserError

    count, threshold = preview.get("count"), preview.get("threshold")
    if not approval:
        if preview.get("needs_approval"):
            # only a run whose approval task was marked skipped by hand gets here: refuse, never guess
            raise UserError(f"{count} dead letters need an approval (threshold {threshold}) and none was recorded")
        return {
            "approved": False,
            "ledger_note": f"re-driven by operator in run {run_id} (no approval needed: {count} <= {threshold})",
            "summary_note": f"approval: not needed ({count} dead letter(s), threshold {threshold})",
        }
    chosen = list(approval.get("chosen_options") or [])
    if chosen != ["Approve"]:
        raise UserError(f"approval task answered {chosen}, not Approve: nothing is re-driven")
    user = approval.get("responded_by_user") or {}
    who = f"{user.get('name') or '?'} (id {user.get('id') or '?'})"
    when = approval.get("responded_at") or "?"
    return {
        "approved": True,
        "ledger_note": f"re-driven by operator in run {run_id}, approved by {who} at {when}",
        "summary_note": f"approval: {count} dead letter(s) approved by {who} at {when} (threshold {threshold})",
    }


def plan_redrive_params(params: dict[str, Any], note: str = "re-driven by operator") -> list[Batch]:
    """``plan_redrive`` from the DAG's params, resolved by the same rules as the daily DAG's (the deployment's
    ``airflow:`` roots, ``inside`` checks, one date parser): a trigger form must not be a way to point the ledger at
    arbitrary files or to load a config, with its handlers and callables, from outside the config root."""
    from rocketmq_retry.compensation.batches import plan_redrive

    sel = _selection(params)
    return plan_redrive(
        sel["warehouse"],
        sel["config"],
        date_from=sel["date_from"],
        date_to=sel["date_to"],
        msg_ids=sel["msg_ids"],
        consumer_group=sel["consumer_group"],
        states=sel["states"],
        max_batches=int(params["max_batches"]) if params.get("max_batches") else None,
        note=note,
    )


def _selection(params: dict[str, Any]) -> dict[str, Any]:
    from rocketmq_retry.airflow.settings import load_airflow_settings, run_config, run_warehouse
    from rocketmq_retry.compensation.model import State
    from rocketmq_retry.dates import optional_date

    settings = load_airflow_settings()
    config = run_config(settings, params)
    return {
        "warehouse": str(run_warehouse(settings, params)),
        "config": str(config) if config else None,
        "date_from": optional_date(params.get("date_from"), what="param date_from"),
        "date_to": optional_date(params.get("date_to"), what="param date_to"),
        "msg_ids": [m.strip() for m in params.get("msg_ids") or [] if m and m.strip()],
        "consumer_group": str(params.get("consumer_group") or "") or None,
        "states": [s.upper() for s in params.get("states") or [State.FAILED.value]],
    }


def redrive_preview_params(params: dict[str, Any]) -> dict[str, Any]:
    """``redrive_preview`` for the DAG's params (the same checks as ``plan_redrive_params``)."""
    from rocketmq_retry.compensation.batches import open_ledger
    from rocketmq_retry.config import load_config

    sel = _selection(params)
    cfg = load_config(sel["config"])
    with open_ledger(cfg, sel["warehouse"]) as ledger:
        return redrive_preview(ledger, cfg, **{k: v for k, v in sel.items() if k not in ("warehouse", "config")})


def redrive_preview(
    ledger: Ledger,
    cfg: Config,
    *,
    date_from: str | None,
    date_to: str | None,
    msg_ids: list[str],
    consumer_group: str | None,
    states: list[str],
) -> dict[str, Any]:
    """The rows ``plan_redrive`` would select, counted by consumer group and the handler the routes in force give
    them (what ``compensate`` will call), and the first ``PREVIEW_ROWS``; nothing is written.

    The same selection as ``plan_redrive``: the chosen msg_ids, or every row in ``states`` of the date range;
    DONE rows and rows claimed by a live worker are left out (plan_redrive notes them and re-drives neither)."""
    from rocketmq_retry.compensation.model import State
    from rocketmq_retry.errors import UserError
    from rocketmq_retry.routing import handler_for

    if msg_ids:
        rows = ledger.rows(msg_ids=msg_ids, consumer_group=consumer_group, date_from=date_from, date_to=date_to)
    else:
        if not (date_from and date_to):
            raise UserError("re-driving by state needs a date range (date_from and date_to)")
        wanted = [State(s) for s in states]
        rows = ledger.rows(states=wanted, consumer_group=consumer_group, date_from=date_from, date_to=date_to)
    now = ledger.now()
    selected: list[LedgerRow] = [
        r for r in rows if r.state != State.DONE and not (r.state == State.CLAIMED and not ledger.is_claimable(r, now))
    ]
    by_group_handler: Counter[tuple[str, str]] = Counter()
    handlers: dict[tuple[str, str], str] = {}
    for r in selected:
        handler, _ = handler_for(cfg.compensation, r.original_topic, r.consumer_group)
        handlers[(r.consumer_group, r.msg_id)] = handler or "(no route: SKIPPED)"
        by_group_handler[(r.consumer_group, handlers[(r.consumer_group, r.msg_id)])] += 1
    threshold = cfg.compensation.approval_threshold
    return {
        "count": len(selected),
        "threshold": threshold,
        "needs_approval": len(selected) > threshold,
        "selection": {
            "date_from": date_from,
            "date_to": date_to,
            "msg_ids": len(msg_ids),
            "consumer_group": consumer_group,
            "states": [] if msg_ids else states,
        },
        "by_group_handler": [
            {"consumer_group": g, "handler": h, "dead_letters": n} for (g, h), n in sorted(by_group_handler.items())
        ],
        "first_rows": [
            {
                "dlq_date": r.dlq_date,
                "consumer_group": r.consumer_group,
                "msg_id": r.msg_id,
                "state": r.state.value,
                "attempts": r.attempts,
                "handler": handlers[(r.consumer_group, r.msg_id)],
                "last_error": (r.last_error or "")[:120],
            }
            for r in selected[:PREVIEW_ROWS]
        ],
    }


# CommonMark's backslash escapes, for the ASCII punctuation that could start markup; < > & go through html.escape.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~=:^$])")


def md(value: object) -> str:
    """A value from the logs or the ledger as literal text in the approval's Markdown body (a table cell): no
    markup, no HTML, no line break can come from a group name, a msg_id or an error message."""
    text = " ".join(str("" if value is None else value).split())
    return html.escape(_MARKDOWN_SPECIAL.sub(r"\\\1", text), quote=True)


def approval_body(preview: dict[str, Any], run_id: str, triggered_by: str) -> str:
    """The approval's Markdown body (Browse → Required Actions): what will be re-driven."""
    sel = preview["selection"]
    if sel["msg_ids"]:
        what = f"{sel['msg_ids']} chosen msg_id(s)"
    else:
        what = f"states {', '.join(sel['states'])} of dead-letter dates {sel['date_from']} to {sel['date_to']}"
    lines = [
        f"**{preview['count']} dead letters** would be re-driven, more than "
        f"`compensation.approval_threshold` ({preview['threshold']}).",
        "",
        f"Run {md(run_id)}, triggered by {md(triggered_by)}: {md(what)}"
        + (f", consumer group {md(sel['consumer_group'])}" if sel["consumer_group"] else "")
        + ".",
        "",
        "| consumer group | handler | dead letters |",
        "| --- | --- | ---: |",
        *(
            f"| {md(r['consumer_group'])} | {md(r['handler'])} | {r['dead_letters']} |"
            for r in preview["by_group_handler"]
        ),
        "",
        f"First {len(preview['first_rows'])} of {preview['count']}:",
        "",
        "| dead-letter date | consumer group | msg_id | state | attempts | handler | last error |",
        "| --- | --- | --- | --- | ---: | --- | --- |",
        *(
            f"| {md(r['dlq_date'])} | {md(r['consumer_group'])} | {md(r['msg_id'])} | {md(r['state'])} | "
            f"{r['attempts']} | {md(r['handler'])} | {md(r['last_error'])} |"
            for r in preview["first_rows"]
        ),
        "",
        "**Approve** reopens these rows and calls their handlers (each effect at most once, through the ledger); "
        "**Reject** ends the run with nothing done.",
    ]
    return "\n".join(lines)


def approve_redrive() -> Any:
    """Airflow's ApprovalOperator over the preview: subject and body are rendered from its XCom when the task runs.

    Reject skips its direct downstream (``plan_redrive``), and with it everything after; no retries (an answer is
    final; a timeout fails the task and nothing is re-driven)."""
    from airflow.providers.standard.operators.hitl import ApprovalOperator

    class RedriveApprovalOperator(ApprovalOperator):
        """Records the answer in the run's XCom (``decision``) whatever it is: Airflow pushes the operator's
        return value on Approve only (Reject skips downstream by raising, and nothing is pushed)."""

        def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
            try:
                return super().execute_complete(context, event)
            finally:
                if "error" not in event:
                    context["ti"].xcom_push(key=DECISION_KEY, value=decision_record(event))

    preview = f"ti.xcom_pull(task_ids='{PREVIEW_TASK}', key='{PREVIEW_KEY}')"
    return RedriveApprovalOperator(
        task_id=APPROVAL_TASK,
        subject="Re-drive {{ " + preview + "['count'] }} dead letters?",
        body="{{ " + preview + "['body'] }}",
        response_timeout=APPROVAL_TIMEOUT,
        retries=0,
    )


def decision_record(event: dict[str, Any]) -> dict[str, Any]:
    """Airflow's HITL answer as plain JSON: chosen options, who answered (id and name) and when (ISO 8601)."""
    user = event.get("responded_by_user") or {}
    at = event.get("responded_at")
    return {
        "chosen_options": list(event.get("chosen_options") or []),
        "responded_by_user": {"id": str(user.get("id") or ""), "name": str(user.get("name") or "")},
        "responded_at": at.isoformat() if isinstance(at, dt.datetime) else str(at or ""),
    }


# --- rocketmq_retry_compensate: compensation on the dead_letters asset (compensation.trigger: asset) -------------

VALIDATE_TASK = "validate"  # the daily DAG's task whose success lets a date's dead letters be compensated
VALIDATION_WAIT = dt.timedelta(hours=6)  # how long a date's compensation waits for its validation to finish
_NOT_PASSED = {"failed", "upstream_failed", "skipped", "removed"}


def dead_letter_events(context: Any) -> list[Any]:
    """The run's triggering events of the ``dead_letters`` asset (none for a run triggered by hand)."""
    from rocketmq_retry.airflow.assets import asset_name

    events = context.get("triggering_asset_events") or {}
    return [e for asset in events if getattr(asset, "name", "") == asset_name("dead_letters") for e in events[asset]]


def event_runs(extras: list[dict[str, Any]], params: dict[str, Any]) -> list[dict[str, str]]:
    """One ``{"ds", "warehouse", "config"}`` per distinct date and warehouse of the events' extras (or of the
    params ``date``, ``warehouse``, ``config`` when there is no event), each checked against the deployment's roots as
    a run's params are: an extra is data anyone with asset permissions can write, never authority."""
    from rocketmq_retry.airflow.settings import load_airflow_settings, run_config, run_warehouse
    from rocketmq_retry.dates import optional_date
    from rocketmq_retry.errors import UserError

    settings = load_airflow_settings()
    if not extras:
        if not params.get("date"):
            raise UserError("no dead_letters asset event and no date param: nothing to compensate")
        extras = [{"ds": params["date"], "warehouse": params.get("warehouse"), "config": params.get("config")}]
    deployment = run_config(settings, {})
    runs: dict[tuple[str, str, str], dict[str, str]] = {}
    for extra in extras:
        ds = optional_date(str(extra.get("ds") or ""), what="dead_letters event ds")
        if not ds:
            raise UserError(f"a dead_letters asset event without a date: {extra!r}")
        warehouse = str(run_warehouse(settings, {"warehouse": extra.get("warehouse") or ""}))
        named = str(extra.get("config") or "")
        # the daily run's own config is the deployment's file (wherever it is) or one under the config root
        same = bool(named) and deployment is not None and str(deployment) == named
        config = str(deployment if same or not named else run_config(settings, {"config": named}) or "")
        runs[(ds, warehouse, config)] = {"ds": ds, "warehouse": warehouse, "config": config}
    return [runs[key] for key in sorted(runs)]


@task(task_id="resolve_compensation", retries=0)
def resolve_compensation_runs() -> list[dict[str, str]]:
    """The dates (and warehouses) this run compensates, from its dead_letters events or its params."""
    from airflow.sdk.exceptions import AirflowFailException

    from rocketmq_retry.errors import UserError

    context = get_current_context()
    try:
        return event_runs([dict(e.extra or {}) for e in dead_letter_events(context)], dict(context["params"]))
    except UserError as exc:
        raise AirflowFailException(str(exc)) from None


def wait_for_validation() -> Any:
    """Compensation acts on a date's dead letters only once its validation passed, as inside the daily DAG:
    ``reconstruct`` emits the dead_letters event before ``validate`` has run, so each event's source run is
    waited for here (rescheduled: no worker slot held between pokes). Its ``validate`` failing (a critical
    expectation) fails this task and nothing is compensated; an event not from the daily DAG's run (one created
    through the REST API) is refused: no validation is known. A run triggered by hand (no event) is the operator's
    word for the date and is not checked."""
    from airflow.sdk import BaseSensorOperator

    class ValidationPassedSensor(BaseSensorOperator):
        def poke(self, context: Any) -> bool:
            return validation_passed(context)

    return ValidationPassedSensor(
        task_id="wait_for_validation",
        mode="reschedule",
        poke_interval=60,
        timeout=VALIDATION_WAIT.total_seconds(),
        retries=0,
    )


def validation_passed(context: Any) -> bool:
    """True once every triggering event's daily run passed ``validate``; fails the task if one did not."""
    from airflow.sdk.exceptions import AirflowFailException

    from rocketmq_retry.airflow.dag_parts import DAG_ID

    pending = []
    for event in dead_letter_events(context):
        if event.source_dag_id != DAG_ID or not event.source_run_id:
            raise AirflowFailException(
                f"a dead_letters event not from a {DAG_ID} run (source {event.source_dag_id!r}): its validation "
                "is unknown, nothing is compensated; compensate the date by hand (trigger with a date param)"
            )
        states = context["ti"].get_task_states(dag_id=DAG_ID, task_ids=[VALIDATE_TASK], run_ids=[event.source_run_id])
        state = str((states.get(event.source_run_id) or {}).get(VALIDATE_TASK) or "")
        if state in _NOT_PASSED:
            raise AirflowFailException(
                f"validate of {event.source_run_id} ended {state}: its dead letters are not compensated "
                "(fix the data, re-run the date; its new dead_letters event starts another compensation)"
            )
        if state != "success":
            pending.append(event.source_run_id)
    if pending:
        context["ti"].log.info("waiting for validate of %s", ", ".join(pending))
    return not pending


@task(task_id="plan_compensation")
def plan_compensation_runs(runs: list[dict[str, str]]) -> list[dict[str, Any]]:
    """``plan_batches`` for each date of the run, all batches in one list for the mapped ``compensate``."""
    from rocketmq_retry.compensation.batches import plan_batches

    batches: list[dict[str, Any]] = []
    for paths in runs:
        batches += [dict(b) for b in plan_batches(paths["ds"], paths["warehouse"], paths["config"] or None)]
    return batches
