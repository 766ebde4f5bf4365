"""Why messages failed (docs/causes.md), read for the operator: the "Failures by cause" page of a date, the
overview's top causes and open incidents, each failed delivery of a message's story, the "safe to re-drive" sets
of ended outages and the advice of dead letters chosen for a re-drive.

Every value comes from ``failures/``, ``failure_causes/``, ``incidents/`` and the cause columns of
``dead_letters/`` as ``contract.py`` declares them; a date written before those existed reads as "no cause
recorded" (the read layer fills the missing columns with NULL), never as an error. Words for codes, rules,
evidence and advice are the contract's.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from rocketmq_retry import contract
from rocketmq_retry.dates import partition_date
from rocketmq_retry.explore.model import (
    CausePage,
    CauseSummary,
    DeadLetterFilter,
    FailedAttempt,
    Incident,
    NotFound,
    SafeSet,
)
from rocketmq_retry.explore.values import clean, opt_int, utc
from rocketmq_retry.logformats.timefmt import day_bounds_ms

if TYPE_CHECKING:
    from rocketmq_retry.explore.warehouse import Explorer

# The contract's enumerations by name.
SAFE, OUTAGE_OPEN, WILL_FAIL_AGAIN, REVIEW = (
    contract.SAFE,
    contract.OUTAGE_OPEN,
    contract.WILL_FAIL_AGAIN,
    contract.REVIEW,
)
OPEN, ENDED = contract.OPEN, contract.ENDED
UNKNOWN_CAUSE = contract.CauseCode.UNKNOWN

TOP_CAUSES = 5  # causes the overview leads with
MAX_SAFE_SETS = 5  # ended outages offered for a re-drive on one dead-letter page
# java.lang.IllegalStateException -> IllegalStateException: the page names the class, the detail keeps it whole
_PACKAGE = re.compile(r"^(?:[a-z_][\w$]*\.)+(?=[A-Z])")


def simple_class(name: str | None) -> str | None:
    return None if not name else _PACKAGE.sub("", name)


def cause_label(fingerprint: str | None, root_class: str | None, message: str | None) -> str | None:
    """The cause as one line: the code, or ``RootCauseClass: message`` (simple class name)."""
    if fingerprint is None:
        return None
    if fingerprint in contract.CAUSE_CODES:
        return fingerprint
    name = simple_class(root_class)
    if name and message:
        return f"{name}: {message}"
    return name or message or fingerprint


def code_text(fingerprint: str | None) -> str | None:
    return contract.CAUSE_CODES.get(fingerprint or "")


def rule_text(rule: str | None) -> str | None:
    return contract.KIND_RULES.get(rule or "")


def _incident(r: dict[str, Any], labels: dict[tuple[str, str], str | None]) -> Incident:
    return Incident(
        date=r["dt"],
        consumer_group=r["consumer_group"],
        incident_id=r["incident_id"],
        fingerprint=r["fingerprint"],
        cause_label=labels.get((r["consumer_group"], r["fingerprint"] or ""))
        or cause_label(r["fingerprint"], None, None),
        started_at=utc(r["started_at"]),
        last_failure_at=utc(r["last_failure_at"]),
        ended_at=utc(r["ended_at"]),
        state=r["state"],
        failures=int(r["failures"] or 0),
        messages=int(r["messages"] or 0),
        dead_letters=int(r["dead_letters"] or 0),
        recovered=int(r["recovered"] or 0),
        failure_share=None if r["failure_share"] is None else float(r["failure_share"]),
        rule=r["rule"],
        rule_text=rule_text(r["rule"]),
    )


def _day(ex: Explorer, ds: str) -> tuple[int, int]:
    return day_bounds_ms(dt.date.fromisoformat(ds), ex.config.timezone)


def _cause_rows(ex: Explorer, cur: duckdb.DuckDBPyConnection, ds: str, group: str | None) -> list[dict[str, Any]]:
    """failure_causes/ of the date, ranked (dead letters, then failures), with one failing message each: the
    example line's when the failures hold it, else the first to fail."""
    causes, cp = ex._scan("failure_causes", [ds])
    fails, fp = ex._scan("failures", [ds])
    where, args = ["c.fingerprint IS NOT NULL", "c.consumer_group IS NOT NULL"], []
    if group:
        where.append("c.consumer_group = ?")
        args.append(group)
    sql = (
        f"WITH c AS ({causes}), f AS ({fails}), ex AS ("
        "SELECT f.consumer_group, f.cause, list(f.msg_id ORDER BY (f.event_id IS NOT DISTINCT FROM c.example_event_id) "
        "DESC, f.failed_at NULLS LAST, f.msg_id)[1] AS example_msg_id FROM f JOIN c "
        "ON f.consumer_group = c.consumer_group AND f.cause = c.fingerprint WHERE f.msg_id IS NOT NULL GROUP BY ALL) "
        "SELECT c.*, ex.example_msg_id FROM c LEFT JOIN ex ON ex.consumer_group = c.consumer_group "
        f"AND ex.cause = c.fingerprint WHERE {' AND '.join(where)} "
        "ORDER BY coalesce(c.dead_letters, 0) DESC, coalesce(c.failures, 0) DESC, c.consumer_group, c.fingerprint"
    )
    return ex._query(sql, [*cp, *fp, *args], cur)


def _per_minute(
    ex: Explorer, cur: duckdb.DuckDBPyConnection, ds: str, group: str | None
) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """Failures per minute of the day (minutes from the day's start in the config's zone) per group and cause."""
    fails, fp = ex._scan("failures", [ds])
    start, end = _day(ex, ds)
    where, args = ["failed_at IS NOT NULL", "cause IS NOT NULL"], []
    if group:
        where.append("consumer_group = ?")
        args.append(group)
    rows = ex._query(
        "SELECT consumer_group, cause, CAST((epoch_ms(failed_at) - ?) // 60000 AS BIGINT) AS m, count(*) AS n "
        f"FROM ({fails}) WHERE {' AND '.join(where)} AND epoch_ms(failed_at) >= ? AND epoch_ms(failed_at) < ? "
        "GROUP BY ALL ORDER BY consumer_group, cause, m",
        [start, *fp, *args, start, end],
        cur,
    )
    out: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for r in rows:
        out.setdefault((r["consumer_group"], r["cause"]), []).append((int(r["m"]), int(r["n"])))
    return out


def _incident_rows(
    ex: Explorer, cur: duckdb.DuckDBPyConnection, dates: Sequence[str], group: str | None, open_only: bool = False
) -> list[dict[str, Any]]:
    """incidents/ over ``dates``, one row per incident (the newest date's), open first, then by start."""
    inc, ip = ex._scan("incidents", dates)
    where, args = ["incident_id IS NOT NULL"], []
    if group:
        where.append("consumer_group = ?")
        args.append(group)
    if open_only:
        where.append("state = ?")
        args.append(OPEN)
    return ex._query(
        f"SELECT * FROM ({inc}) WHERE {' AND '.join(where)} "
        "QUALIFY row_number() OVER (PARTITION BY consumer_group, incident_id ORDER BY dt DESC) = 1 "
        "ORDER BY (state = ?) DESC NULLS LAST, started_at NULLS LAST, consumer_group, incident_id",
        [*ip, *args, OPEN],
        cur,
    )


def _summary(
    ds: str, r: dict[str, Any], incidents: dict[str, Incident], minutes: dict[tuple[str, str], list[tuple[int, int]]]
) -> CauseSummary:
    fp = r["fingerprint"]
    return CauseSummary(
        date=ds,
        consumer_group=r["consumer_group"],
        fingerprint=fp,
        label=cause_label(fp, r["root_cause_class"] or r["exception_class"], r["normalised_message"]) or fp,
        code_text=code_text(fp),
        exception_class=r["exception_class"],
        root_cause_class=r["root_cause_class"],
        normalised_message=r["normalised_message"],
        app_frame=r["app_frame"],
        example_message=r["example_message"],
        example_event_id=r["example_event_id"],
        example_source_file=r["example_source_file"],
        example_line_no=opt_int(r["example_line_no"]),
        example_msg_id=r["example_msg_id"],
        failures=int(r["failures"] or 0),
        messages=int(r["messages"] or 0),
        dead_letters=int(r["dead_letters"] or 0),
        recovered=int(r["recovered"] or 0),
        first_failure=utc(r["first_failure"]),
        last_failure=utc(r["last_failure"]),
        failure_kind=r["failure_kind"],
        kind_rule=r["kind_rule"],
        rule_text=rule_text(r["kind_rule"]),
        incidents=[incidents[i] for i in (r["incidents"] or []) if i in incidents],
        per_minute=minutes.get((r["consumer_group"], fp), []),
    )


def _labels(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, str], str | None]:
    return {
        (r["consumer_group"], r["fingerprint"]): cause_label(
            r["fingerprint"], r["root_cause_class"] or r["exception_class"], r["normalised_message"]
        )
        for r in rows
    }


def cause_page(ex: Explorer, date: object, group: str | None = None) -> CausePage:
    ds = partition_date(date, what="date")
    group = clean(group, "group")
    if ex._partition("lifecycles", ds) is None:
        raise NotFound(f"no lifecycles for {ds}: the date was not reconstructed (run `rocketmq-retry reconstruct`)")
    start, end = _day(ex, ds)
    cur = ex._cursor()
    try:
        rows = _cause_rows(ex, cur, ds, group)
        labels = _labels(rows)
        incidents = {r["incident_id"]: _incident(r, labels) for r in _incident_rows(ex, cur, [ds], group)}
        minutes = _per_minute(ex, cur, ds, group)
        fails, fp = ex._scan("failures", [ds])
        counts = ex._query(
            f"SELECT count(*) AS n, count(*) FILTER (WHERE cause = ?) AS unknown FROM ({fails}) "
            "WHERE consumer_group = ? OR CAST(? AS VARCHAR) IS NULL",
            [UNKNOWN_CAUSE, *fp, group, group],
            cur,
        )[0]
        unknown = ex._query(
            f"SELECT coalesce(cause_evidence, 'not said') AS why, count(*) AS n FROM ({fails}) "
            "WHERE cause = ? AND (consumer_group = ? OR CAST(? AS VARCHAR) IS NULL) GROUP BY ALL ORDER BY n DESC, why",
            [*fp, UNKNOWN_CAUSE, group, group],
            cur,
        )
        all_groups, gp = ex._scan("failures", [ds])
        groups = [
            r["consumer_group"]
            for r in ex._query(
                f"SELECT DISTINCT consumer_group FROM ({all_groups}) WHERE consumer_group IS NOT NULL "
                "ORDER BY consumer_group",
                gp,
                cur,
            )
        ]
    finally:
        cur.close()
    return CausePage(
        date=ds,
        group=group,
        groups=groups,
        day_start=dt.datetime.fromtimestamp(start / 1000, dt.UTC),
        day_end=dt.datetime.fromtimestamp(end / 1000, dt.UTC),
        failures=int(counts["n"] or 0),
        unknown={r["why"]: int(r["n"]) for r in unknown},
        causes=[_summary(ds, r, incidents, minutes) for r in rows],
        incidents=list(incidents.values()),
        written=ex._partition("failure_causes", ds) is not None,
    )


def overview_causes(
    ex: Explorer, cur: duckdb.DuckDBPyConnection, ds: str
) -> tuple[list[CauseSummary], list[Incident], int]:
    """The overview's lead: the date's first causes as the causes page ranks them, its open incidents, and its
    failed deliveries."""
    rows = _cause_rows(ex, cur, ds, None)[:TOP_CAUSES]
    labels = _labels(rows)
    incidents = {r["incident_id"]: _incident(r, labels) for r in _incident_rows(ex, cur, [ds], None)}
    fails, fp = ex._scan("failures", [ds])
    n = int(ex._query(f"SELECT count(*) AS n FROM ({fails})", fp, cur)[0]["n"])
    open_ones = [i for i in incidents.values() if i.state == OPEN]
    return [_summary(ds, r, incidents, {}) for r in rows], open_ones, n


def failed_attempts(
    ex: Explorer, cur: duckdb.DuckDBPyConnection, dates: Sequence[str], group: str, msg_id: str, event_dates: list[str]
) -> list[FailedAttempt]:
    """Each failed delivery of one lifecycle, from the failures of its dates (a delivery read by two dates once,
    the newest date's row), with its cause's words and the line that gave the cause (file and line number from
    events/ of ``event_dates``)."""
    fails, fp = ex._scan("failures", dates)
    causes, cp = ex._scan("failure_causes", dates)
    events, ep = ex._scan("events", event_dates)
    rows = ex._query(
        f"WITH f AS (SELECT * FROM ({fails}) WHERE consumer_group = ? AND msg_id = ? "
        "QUALIFY row_number() OVER (PARTITION BY reconsume_times, failed_at, cause ORDER BY dt DESC) = 1), "
        f"c AS (SELECT * FROM ({causes}) WHERE consumer_group = ? "
        "QUALIFY row_number() OVER (PARTITION BY fingerprint ORDER BY dt DESC) = 1), "
        # a line is joined on its date and its id, never its id alone (ids repeat across dates: story.py
        # _evidence_rows): the failure's own date's line, else the nearest date before it
        f"e AS (SELECT dt AS line_dt, event_id, source_file, line_no FROM ({events}) "
        "WHERE event_id IN (SELECT event_id FROM f)) "
        "SELECT f.*, c.root_cause_class, c.exception_class, c.normalised_message, c.app_frame, "
        "e.source_file, e.line_no FROM f LEFT JOIN c ON c.fingerprint = f.cause "
        "LEFT JOIN e ON e.event_id = f.event_id AND e.line_dt <= f.dt "
        "QUALIFY row_number() OVER (PARTITION BY f.dt, f.reconsume_times, f.failed_at, f.cause "
        "ORDER BY e.line_dt DESC NULLS LAST, e.source_file, e.line_no) = 1 "
        "ORDER BY f.failed_at NULLS LAST, f.reconsume_times",
        [*fp, group, msg_id, *cp, group, *ep],
        cur,
    )
    return [
        FailedAttempt(
            date=r["dt"],
            reconsume_times=opt_int(r["reconsume_times"]),
            failed_at=utc(r["failed_at"]),
            cause=r["cause"],
            label=cause_label(r["cause"], r["root_cause_class"] or r["exception_class"], r["normalised_message"]),
            code_text=code_text(r["cause"]),
            app_frame=r["app_frame"],
            cause_evidence=r["cause_evidence"],
            evidence_text=contract.CAUSE_EVIDENCE.get(r["cause_evidence"] or ""),
            source=r["source"],
            event_id=r["event_id"],
            source_file=r["source_file"],
            line_no=opt_int(r["line_no"]),
            failure_kind=r["failure_kind"],
            incident_id=r["incident_id"],
            kind_rule=r["kind_rule"],
            rule_text=rule_text(r["kind_rule"]),
        )
        for r in rows
    ]


def safe_sets(
    ex: Explorer, date_from: object, date_to: object, group: str | None, redrivable: Sequence[str], limit: int
) -> list[SafeSet]:
    """Per ended outage of the range (the largest first, at most ``MAX_SAFE_SETS``): its dead letters marked
    ``safe`` and, of those, the ones whose ledger state a re-drive reopens (``redrivable``), up to ``limit``."""
    from rocketmq_retry.explore.dead_letters import NO_FIRST, NO_LAST, letters_sql

    first, last = ex._range(date_from, date_to)
    dates = ex._dates_in(first, last, "dead_letters")
    cur = ex._ledger_cursor(first or NO_FIRST, last or NO_LAST)
    try:
        sql, params = letters_sql(ex, dates, DeadLetterFilter(group=clean(group, "group"), redrive_advice=SAFE), True)
        rows = ex._query(
            "SELECT incident_id, consumer_group, count(*) AS safe, "
            "list([date, consumer_group, msg_id] ORDER BY date, msg_id) "
            "FILTER (WHERE list_contains(?, compensation_state)) AS picks "
            f"FROM ({sql}) WHERE incident_id IS NOT NULL GROUP BY ALL ORDER BY safe DESC, consumer_group, incident_id "
            "LIMIT ?",
            [list(redrivable), *params, MAX_SAFE_SETS],
            cur,
        )
        wanted = sorted({r["consumer_group"] for r in rows})
        found = {
            (i["consumer_group"], i["incident_id"]): i
            for g in wanted
            for i in _incident_rows(ex, cur, ex._dates_in(first, last, "incidents"), g)
        }
        cause_rows = _cause_rows_of(ex, cur, ex._dates_in(first, last, "failure_causes"), wanted)
    finally:
        cur.close()
    labels = _labels(cause_rows)
    out = []
    for r in rows:
        inc = found.get((r["consumer_group"], r["incident_id"]))
        picks = [tuple(p) for p in (r["picks"] or [])]
        fp = inc["fingerprint"] if inc else None
        out.append(
            SafeSet(
                incident_id=r["incident_id"],
                consumer_group=r["consumer_group"],
                cause_label=labels.get((r["consumer_group"], fp or "")) or cause_label(fp, None, None),
                started_at=utc(inc["started_at"]) if inc else None,
                ended_at=utc(inc["ended_at"]) if inc else None,
                safe=int(r["safe"]),
                picks=picks[:limit],  # type: ignore[misc]
                more=len(picks) > limit,
            )
        )
    return out


def _cause_rows_of(
    ex: Explorer, cur: duckdb.DuckDBPyConnection, dates: Sequence[str], groups: list[str]
) -> list[dict[str, Any]]:
    if not groups:
        return []
    causes, cp = ex._scan("failure_causes", dates)
    return ex._query(
        f"SELECT * FROM ({causes}) WHERE list_contains(?, consumer_group) "
        "QUALIFY row_number() OVER (PARTITION BY consumer_group, fingerprint ORDER BY dt DESC) = 1",
        [*cp, groups],
        cur,
    )


def advice_of(ex: Explorer, picks: Sequence[tuple[str, str, str]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The re-drive advice and cause of each chosen (date, group, msg_id), read from its dead letter (a row the
    warehouse does not hold, or a date before the causes, has none)."""
    dates = sorted({partition_date(d) for d, _, _ in picks})
    dead, dp = ex._scan("dead_letters", dates)
    rows = ex._query(
        f"SELECT dt, consumer_group, msg_id, redrive_advice, cause, failure_kind FROM ({dead}) "
        "WHERE list_contains(?, msg_id)",
        [*dp, sorted({m for _, _, m in picks})],
    )
    wanted = set(picks)
    return {key: r for r in rows if (key := (r["dt"], r["consumer_group"], r["msg_id"])) in wanted}
