"""The run overview of one date, one function per section: lifecycles by state and group, anomalies,
reconciliation gaps, unattributed lines, ingest accounting and the validation result."""

from __future__ import annotations

import datetime as dt
import json
import pathlib
from typing import TYPE_CHECKING, Any

import duckdb

from rocketmq_retry import contract
from rocketmq_retry.dates import partition_date
from rocketmq_retry.explore.causes import overview_causes
from rocketmq_retry.explore.groups import daily_rates
from rocketmq_retry.explore.model import (
    AnomalyExample,
    AnomalySummary,
    DailyRate,
    FileNotRead,
    GroupStates,
    IngestAccounting,
    NotFound,
    ReconciliationGap,
    RunOverview,
    UnattributedLines,
    ValidationStatus,
)
from rocketmq_retry.explore.values import opt_int, utc
from rocketmq_retry.urls import run_file, run_page
from rocketmq_retry.validation.status import status

if TYPE_CHECKING:
    from rocketmq_retry.explore.warehouse import Explorer

CAUSES = contract.RECONCILIATION_CAUSES
EXAMPLES_PER_ANOMALY = 5
TREND_DAYS = 14  # the overview's comparison with earlier days: the last two weeks of each group


def run_overview(ex: Explorer, date: object) -> RunOverview:
    ds = partition_date(date, what="date")
    if ex._partition("lifecycles", ds) is None:
        raise NotFound(
            f"no lifecycles for {ds}: {contract.partition_dir(ex.warehouse, 'lifecycles', ds)} does not exist "
            f"(run `rocketmq-retry reconstruct --date {ds}`)"
        )
    cur = ex._cursor()
    try:
        groups = group_states(ex, cur, ds)
        anomalies = anomaly_summaries(ex, cur, ds)
        gaps = reconciliation_gaps(ex, cur, ds)
        unplaced = unattributed(ex, cur, ds)
        ingest = ingest_accounting(ex, cur, ds)
        top_causes, open_incidents, failures = overview_causes(ex, cur, ds)
        trends = group_trends(ex, cur, ds, [g.consumer_group for g in groups])
    finally:
        cur.close()
    totals = {s: sum(g.final_states[s] for g in groups) for s in contract.FINAL_STATES}
    return RunOverview(
        date=ds,
        lifecycles=sum(totals.values()),
        final_states=totals,
        groups=groups,
        dead_letters=sum(g.dead_letters for g in groups),
        held_for_review=sum(g.held_for_review for g in groups),
        anomalies=anomalies,
        reconciliation_gaps=gaps,
        unattributed=unplaced,
        unattributed_lines=sum(u.lines for u in unplaced),
        ingest=ingest,
        validation=validation(ex, ds),
        top_causes=top_causes,
        open_incidents=open_incidents,
        failures=failures,
        trends=trends,
    )


def group_trends(
    ex: Explorer, cur: duckdb.DuckDBPyConnection, ds: str, groups: list[str]
) -> dict[str, list[DailyRate]]:
    """Each of ``groups``' lifecycles and dead letters on the TREND_DAYS days up to ``ds``, from the committed
    lifecycles partitions of those days (the groups page's counts)."""
    end = dt.date.fromisoformat(ds)
    window = [(end - dt.timedelta(days=i)).isoformat() for i in range(TREND_DAYS - 1, -1, -1)]
    present = ex._dates_in(window[0], ds)
    counts = {(r["dt"], r["consumer_group"]): r for r in daily_rates(ex, cur, sorted(present))}
    out: dict[str, list[DailyRate]] = {}
    for group in groups:
        days = []
        for day in window:
            r = counts.get((day, group))
            n, dl = (int(r["n"]), int(r["dl"])) if r else (0, 0)
            days.append(DailyRate(date=day, lifecycles=n, dead_lettered=dl, dead_letter_rate=dl / n if n else None))
        out[group] = days
    return out


def group_states(ex: Explorer, cur: duckdb.DuckDBPyConnection, ds: str) -> list[GroupStates]:
    """Final states and dead letters per group; a group with dead letters but no lifecycle is listed too."""
    life, lp = ex._scan("lifecycles", [ds])
    dead, dp = ex._scan("dead_letters", [ds])
    states = ex._query(f"SELECT consumer_group, final_state, count(*) AS n FROM ({life}) GROUP BY ALL", lp, cur)
    letters = {
        r["consumer_group"]: r
        for r in ex._query(
            "SELECT consumer_group, count(*) AS n, count(*) FILTER (WHERE NOT coalesce(compensable, false)) "
            f"AS held FROM ({dead}) GROUP BY ALL",
            dp,
            cur,
        )
    }
    by_group: dict[str, dict[str, int]] = {}
    for r in states:
        counts = by_group.setdefault(r["consumer_group"], dict.fromkeys(contract.FINAL_STATES, 0))
        counts[r["final_state"] or contract.UNKNOWN] += int(r["n"])
    groups = []
    for g in sorted(set(by_group) | set(letters), key=str):
        counts = by_group.get(g, dict.fromkeys(contract.FINAL_STATES, 0))
        total = sum(counts.values())
        dl = counts[contract.DEAD_LETTERED]
        groups.append(
            GroupStates(
                consumer_group=g,
                lifecycles=total,
                final_states=counts,
                dead_lettered=dl,
                dead_letter_rate=dl / total if total else 0.0,
                dead_letters=int(letters.get(g, {}).get("n", 0)),
                held_for_review=int(letters.get(g, {}).get("held", 0)),
            )
        )
    return groups


def anomaly_summaries(ex: Explorer, cur: duckdb.DuckDBPyConnection, ds: str) -> list[AnomalySummary]:
    life, lp = ex._scan("lifecycles", [ds])
    rows = ex._query(
        "SELECT code, count(*) AS n, "
        "list({'g': consumer_group, 'm': msg_id} ORDER BY consumer_group, msg_id) AS ex FROM "
        f"(SELECT unnest(anomalies) AS code, consumer_group, msg_id FROM ({life})) GROUP BY code ORDER BY code",
        lp,
        cur,
    )
    return [
        AnomalySummary(
            code=r["code"],
            lifecycles=int(r["n"]),
            examples=[AnomalyExample(e["g"], e["m"]) for e in r["ex"][:EXAMPLES_PER_ANOMALY]],
        )
        for r in rows
    ]


def reconciliation_gaps(ex: Explorer, cur: duckdb.DuckDBPyConnection, ds: str) -> list[ReconciliationGap]:
    recon, rp = ex._scan("reconciliation", [ds])
    rows = ex._query(f"SELECT * FROM ({recon}) WHERE cause IS NOT NULL ORDER BY consumer_group, minute", rp, cur)
    return [
        ReconciliationGap(
            consumer_group=r["consumer_group"],
            minute=utc(r["minute"]),  # type: ignore[arg-type]
            **{k: opt_int(r.get(k)) for k in contract.columns("reconciliation")[2:-1]},
            cause=r["cause"],
            cause_text=CAUSES.get(r["cause"]),
        )
        for r in rows
    ]


def unattributed(ex: Explorer, cur: duckdb.DuckDBPyConnection, ds: str) -> list[UnattributedLines]:
    unat, up = ex._scan("unattributed", [ds])
    rows = ex._query(f"SELECT * FROM ({unat}) ORDER BY source_file, event_type, topic, reason", up, cur)
    return [
        UnattributedLines(
            source=r["source"],
            source_file=r["source_file"],
            instance=r["instance"],
            event_type=r["event_type"],
            topic=r["topic"],
            reason=r["reason"],
            reason_text=contract.UNATTRIBUTED_REASONS.get(r["reason"] or ""),
            candidates=list(r["candidates"] or []),
            fix=r["fix"],
            lines=int(r["lines"] or 0),
            example_line_no=opt_int(r["example_line_no"]),
        )
        for r in rows
    ]


def ingest_accounting(ex: Explorer, cur: duckdb.DuckDBPyConnection, ds: str) -> IngestAccounting | None:
    if ex._partition("ingest_report", ds) is None:
        return None
    rep, params = ex._scan("ingest_report", [ds])
    rows = ex._query(f"SELECT * FROM ({rep}) ORDER BY source_file", params, cur)

    def total(col: str) -> int:
        return sum(int(r.get(col) or 0) for r in rows)

    return IngestAccounting(
        files=len(rows),
        lines_read=total("lines_read"),
        events=total("events"),
        event_rows=total("event_rows"),
        ignored=total("ignored"),
        continuation=total("continuation"),
        quarantined=total("quarantined"),
        other_date=total("other_date"),
        quarantined_by_reason=_merged(rows, "quarantined_by_reason"),
        ignored_by_kind=_merged(rows, "ignored_by_kind"),
        files_not_read=[
            FileNotRead(r["source_file"], r["file_status"], r.get("file_reason"))
            for r in rows
            if (r.get("file_status") or "read") != "read"
        ],
    )


def _merged(rows: list[dict[str, Any]], col: str) -> dict[str, int]:
    """The per-file count maps of ``col`` summed into one, keys sorted."""
    out: dict[str, int] = {}
    for r in rows:
        for k, v in (r.get(col) or {}).items():
            out[k] = out.get(k, 0) + int(v or 0)
    return dict(sorted(out.items()))


def validation(ex: Explorer, ds: str) -> ValidationStatus | None:
    site = ex.config.validation.docs_dir
    result = site / run_file(ds, ".json")
    try:
        data = json.loads(result.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    warehouse = data.get("warehouse")
    if not warehouse or pathlib.Path(str(warehouse)).resolve() != ex.warehouse.resolve():
        return None  # that date was validated in another warehouse
    success = data.get("success")
    critical = list(data.get("critical_failures") or [])
    warnings = list(data.get("warning_failures") or [])
    # a failed result that names no critical check is still failed
    outcome = None if success is None else status(len(critical) or (0 if success else 1), len(warnings))
    return ValidationStatus(
        success=success,
        evaluated=data.get("evaluated"),
        critical_failures=critical,
        warning_failures=warnings,
        docs_page=run_page(ds),
        docs_root=str(site),
        status=outcome,
    )
