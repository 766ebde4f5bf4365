"""Python callables of the DAG's ``@task`` steps and its failure callbacks.

The partition a run owns is its logical date as a calendar date in the schedule's time zone: for scheduled
and backfill runs that is the start of the data interval (a whole day in that zone); for a manual run or
``airflow dags test <date>`` it is the date given. No param can move a run to another partition.
"""

from __future__ import annotations

import json
import logging
import pathlib
from collections import Counter
from typing import Any

from rocketmq_retry.airflow.assets import REPORT_TABLE, emit_partitions
from rocketmq_retry.urls import RESOLVE_TASK

log = logging.getLogger(__name__)


def partition_date(context: dict[str, Any], timezone: str) -> str:
    import pendulum

    moment = context.get("logical_date") or context["dag_run"].run_after
    return pendulum.instance(moment).in_timezone(timezone).to_date_string()


def resolve_run(**context: Any) -> dict[str, str]:
    """Validate the run's params against the deployment's roots; every later task reads the result."""
    from airflow.sdk.exceptions import AirflowFailException

    from rocketmq_retry.airflow.settings import load_airflow_settings, resolve_run_paths
    from rocketmq_retry.errors import UserError

    try:
        settings = load_airflow_settings()
        ds = partition_date(context, settings.schedule_timezone)
        paths = resolve_run_paths(settings, dict(context["params"]), ds)
        if paths.config:
            from rocketmq_retry.config import load_config

            load_config(paths.config)  # a bad config fails here, once, instead of in every Spark job
    except UserError as exc:
        # Bad params or config are not transient: fail now, without retries.
        raise AirflowFailException(str(exc)) from None
    log.info("run partition dt=%s: landing=%s warehouse=%s config=%s", ds, paths.landing, paths.warehouse, paths.config)
    return {k: str(v) for k, v in paths.as_dict().items()}


def _read_columns(path: pathlib.Path, columns: list[str]) -> list[dict[str, Any]]:
    import pyarrow.dataset as pads

    if not path.is_dir():
        return []
    dataset = pads.dataset(str(path), format="parquet")
    present = [c for c in columns if c in dataset.schema.names]
    return dataset.to_table(columns=present).to_pylist()


def build_report(
    ds: str, warehouse: str, validation: dict[str, Any] | None, compensation: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What a run found: lifecycles by final state, dead letters, anomalies, validation and compensation results.

    Sorted keys, no timestamps, and compensation as ledger totals (done now + done before) rather than what this
    run executed: the same partition always gives the same report, however often it is re-run.
    """
    from rocketmq_retry.warehouse.partitions import committed

    lifecycles = _read_columns(committed(warehouse, "lifecycles", ds), ["final_state", "anomalies"])
    dead = _read_columns(committed(warehouse, "dead_letters", ds), ["consumer_group", "compensable", "attribution"])
    unplaced = _read_columns(committed(warehouse, "unattributed", ds), ["source_file", "reason", "fix", "lines"])
    by_fix: Counter[tuple[str, str, str]] = Counter()
    for row in unplaced:
        key = (row.get("source_file") or "?", row.get("reason") or "?", row.get("fix") or "?")
        by_fix[key] += row.get("lines") or 0
    anomalies: Counter[str] = Counter()
    for row in lifecycles:
        anomalies.update(row.get("anomalies") or [])
    validation = validation or {}
    c = compensation or {}
    return {
        "ds": ds,
        "lifecycles": len(lifecycles),
        "lifecycles_by_final_state": dict(sorted(Counter(r.get("final_state") for r in lifecycles).items())),
        "dead_letters": len(dead),
        "dead_letters_by_group": dict(sorted(Counter(r.get("consumer_group") for r in dead).items())),
        "dead_letters_held_for_review": sum(1 for r in dead if not r.get("compensable")),
        "dead_letters_by_attribution": dict(
            sorted(Counter("+".join(r.get("attribution") or ["?"]) for r in dead).items())
        ),
        "unattributed_lines": sum(by_fix.values()),
        "unattributed": [
            {"source_file": f, "reason": reason, "fix": fix, "lines": n}
            for (f, reason, fix), n in sorted(by_fix.items())
        ],
        "anomalies": dict(sorted(anomalies.items())),
        "validation": {
            "success": validation.get("success"),
            "evaluated": validation.get("evaluated"),
            "critical_failures": validation.get("critical_failures", []),
            "warning_failures": validation.get("warning_failures", []),
            "data_docs": validation.get("docs_page"),
        },
        "compensation": {
            "dead_letters": c.get("dead_letters"),
            "settled": c.get("done", 0) + c.get("already_done", 0),
            "gave_up": c.get("gave_up", 0) + c.get("already_gave_up", 0),
            "skipped": c.get("skipped", 0) + c.get("already_skipped", 0),
            "failed_for_now": c.get("failed", 0),
        }
        if compensation is not None
        else None,
    }


def _validation_status(v: dict[str, Any]) -> str:
    """The words the Data Docs and the validate task use (validation/status.py); none before validate ran."""
    from rocketmq_retry.validation.status import status

    if v.get("success") is None:
        return "not recorded"
    return status(len(v.get("critical_failures") or []), len(v.get("warning_failures") or []))


def render_report(report: dict[str, Any]) -> str:
    v = report["validation"]
    lines = [
        f"rocketmq_retry_daily dt={report['ds']}",
        f"  lifecycles: {report['lifecycles']}",
        *(f"    {state:<14} {n}" for state, n in report["lifecycles_by_final_state"].items()),
        f"  dead letters: {report['dead_letters']} ({report['dead_letters_held_for_review']} held for review, "
        "not compensated)",
        *(f"    {group:<28} {n}" for group, n in report["dead_letters_by_group"].items()),
        "    groups established by: "
        + (", ".join(f"{how} {n}" for how, n in report["dead_letters_by_attribution"].items()) or "-"),
        f"  consumer lines without an established group: {report['unattributed_lines']}",
        *(f"    {u['source_file']}: {u['lines']} ({u['reason']}; set {u['fix']})" for u in report["unattributed"]),
        f"  anomalies: {sum(report['anomalies'].values())}",
        *(f"    {code:<22} {n}" for code, n in report["anomalies"].items()),
        f"  validation: {_validation_status(v)} ({v['evaluated']} expectations; "
        f"critical failures: {', '.join(v['critical_failures']) or 'none'}; "
        f"warnings: {', '.join(v['warning_failures']) or 'none'})",
        f"  Data Docs: {v['data_docs']}",
    ]
    c = report.get("compensation")
    if c:
        lines.insert(
            -1,
            f"  compensation: {c['dead_letters']} dead letters; settled {c['settled']}, skipped {c['skipped']}, "
            f"gave up {c['gave_up']}, failed (will retry) {c['failed_for_now']}",
        )
    return "\n".join(lines)


def report(**context: Any) -> dict[str, Any]:
    """Summarise the run and write it to ``<warehouse>/run_reports/dt=D/summary.json`` (replaced on re-run)."""
    paths = context["ti"].xcom_pull(task_ids=RESOLVE_TASK)
    validation = context["ti"].xcom_pull(task_ids="validate")
    compensation = context["ti"].xcom_pull(task_ids="compensation_summary")
    if compensation:
        from rocketmq_retry.compensation.batches import summary_line

        log.info("compensation in this run: %s", summary_line(compensation))
    result = build_report(paths["ds"], paths["warehouse"], validation, compensation)
    from rocketmq_retry.contract import partition_dir

    out = partition_dir(paths["warehouse"], REPORT_TABLE, paths["ds"])
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".summary.json.tmp"
    tmp.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(out / "summary.json")
    emit_partitions(context, paths)
    text = render_report(result)
    log.info("\n%s", text)
    print(text)  # also on stdout: `airflow dags test` shows it without log-level configuration
    return result


def on_task_failure(context: dict[str, Any]) -> None:
    """Task failure callback: one greppable line with what failed, for which partition, and where its log is."""
    ti = context.get("ti") or context.get("task_instance")
    paths: dict[str, Any] = {}
    try:
        if ti is not None:
            paths = ti.xcom_pull(task_ids=RESOLVE_TASK) or {}
    except Exception:  # a callback must never raise; no XCom is normal when resolve_run itself failed
        paths = {}
    log.error(
        "rocketmq_retry task failed: dag=%s task=%s run=%s partition=%s try=%s error=%s log=%s",
        getattr(ti, "dag_id", "?"),
        getattr(ti, "task_id", "?"),
        getattr(ti, "run_id", "?"),
        paths.get("ds", "?"),
        getattr(ti, "try_number", "?"),
        context.get("exception"),
        getattr(ti, "log_url", "?"),
    )


def on_dag_failure(context: dict[str, Any]) -> None:
    """DAG-run failure callback (runs in the dag-processor): names the run and its failed tasks."""
    dag_run = context.get("dag_run")
    log.error(
        "rocketmq_retry_daily run failed: run=%s logical_date=%s reason=%s",
        getattr(dag_run, "run_id", "?"),
        getattr(dag_run, "logical_date", "?"),
        context.get("reason"),
    )
