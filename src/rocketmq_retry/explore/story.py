"""One message's story per consumer group: its hops with observed and expected times, the log lines behind them,
the engine's expected path for the group (the ``schedule`` command's, not a second copy), its dead letter and
its ledger row. Several groups give several stories, never one merged timeline (docs/reconstruction.md).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import duckdb

from rocketmq_retry import schedule
from rocketmq_retry.config import Config
from rocketmq_retry.explore.causes import failed_attempts
from rocketmq_retry.explore.model import (
    DeadLetterFilter,
    DeadLetterRow,
    EvidenceLine,
    ExpectedPath,
    ExpectedStep,
    ExploreError,
    Hop,
    NotFound,
    Story,
)
from rocketmq_retry.explore.values import opt_int, utc

if TYPE_CHECKING:
    from rocketmq_retry.explore.warehouse import Explorer

# Retries listed in a story's expected path; the schedule table's own default.
PATH_LIMIT = 64
# Events of a lifecycle that began before its date lie in earlier partitions: the reconstruction's look-back is
# the longest always-failing schedule (about 4h46m on default brokers, jobs/lifecycle_schedule.py), so the day
# before the first_seen date reaches every one.
EVIDENCE_DAYS_BEFORE = 1


def expected_path_of(config: Config, group: str, topic: str | None) -> ExpectedPath:
    """What ``rocketmq-retry schedule --group G --topic T`` prints, as data (schedule.schedule_rows/_settings)."""
    from rocketmq_retry.engine import FailedDelivery, expected_path

    policy = config.group_policy(group)
    path = expected_path(
        policy,
        failure=FailedDelivery(reconsume_times=0, original_topic=topic or "<topic>"),
        limit=schedule.FOREVER_PROBE,
    )
    rows, final = schedule.schedule_rows(path, PATH_LIMIT)
    return ExpectedPath(
        settings=[tuple(kv) for kv in schedule.schedule_settings(policy)],  # type: ignore[misc]
        steps=[
            ExpectedStep(
                hop=int(r["hop"]),  # type: ignore[call-overload]
                reconsume_times=int(r["reconsume_times"]),  # type: ignore[call-overload]
                delay_level=None if r["delay_level"] is None else int(r["delay_level"]),  # type: ignore[call-overload]
                delay_ms=int(r["delay_ms"]),  # type: ignore[call-overload]
                cumulative_ms=int(r["cumulative_ms"]),  # type: ignore[call-overload]
                topic=None if r["topic"] is None else str(r["topic"]),
            )
            for r in rows
        ],
        final=str(final["final"]),
        final_topic=None if final["topic"] is None else str(final["topic"]),
        deliveries=int(final["deliveries"]),  # type: ignore[call-overload]
        text=schedule.render_schedule_table(path, policy, PATH_LIMIT),
    )


def _resolve(ex: Explorer, query: str, dates: list[str]) -> set[tuple[str, str]]:
    """The (group, msg_id) lifecycles a query that is no lifecycle's msg_id stands for, through an offset msg id."""
    return {
        (f.consumer_group, f.msg_id) for f in ex.find(query, dates[-1], dates[0]) if f.matched_by == "offset_msg_id"
    }


def stories(ex: Explorer, msg_id: str, group: str | None, date_from: object, date_to: object) -> list[Story]:
    query = (msg_id or "").strip()
    if not query:
        raise ExploreError("no msg_id given")
    if len(query) > 512:
        raise ExploreError(f"msg_id is {len(query)} characters long; no msg_id is that long")
    first, last = ex._range(date_from, date_to)
    dates = ex._dates_in(first, last)
    scope = ex._scope(first, last)
    if not dates:
        raise NotFound(f"no reconstructed dates ({scope}) under {ex.warehouse / 'lifecycles'}")
    group = (group or "").strip() or None
    rows = _lifecycles(ex, [query], group, dates)
    if not rows:
        pairs = _resolve(ex, query, dates)
        rows = _lifecycles(ex, sorted({m for _, m in pairs}), group, dates) if pairs else []
        rows = [r for r in rows if (r["consumer_group"], r["msg_id"]) in pairs]
    if not rows:
        where = f" for group {group!r}" if group else ""
        raise NotFound(
            f"msg_id {query!r} not found{where} in lifecycles of {scope} under {ex.warehouse} "
            f"(searched {len(dates)} date(s): {dates[-1]}..{dates[0]}; also as an offset msg id)"
        )
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    seen_on: dict[tuple[str, str], list[str]] = {}
    for r in rows:  # newest date first
        key = (r["consumer_group"], r["msg_id"])
        if same_lifecycle(newest.setdefault(key, r), r):
            seen_on.setdefault(key, []).append(r["dt"])
    return [_story(ex, newest[k], sorted(seen_on[k], reverse=True)) for k in sorted(newest)]


def same_lifecycle(newest: dict[str, Any], row: dict[str, Any]) -> bool:
    """Whether an earlier date's row of the msg_id is the newest row's lifecycle, written again by the date it
    carried on to (its first_seen is the same: docs/reconstruction.md "Dates and look-back"), or another
    lifecycle of the same msg_id (dead-lettered, re-sent and consumed again days later), whose hops, dead letter
    and failures are not this story's. Without a first_seen on either row nothing tells them apart: the same."""
    first, other = newest["first_seen"], row["first_seen"]
    return first is None or other is None or first == other


def _lifecycles(ex: Explorer, msg_ids: list[str], group: str | None, dates: list[str]) -> list[dict[str, Any]]:
    life, lp = ex._scan("lifecycles", dates)
    sql = f"SELECT * FROM ({life}) WHERE list_contains(?, msg_id)"
    params: list[Any] = [*lp, msg_ids]
    if group:
        sql += " AND consumer_group = ?"
        params.append(group)
    return ex._query(sql + " ORDER BY dt DESC, consumer_group", params)


def _story(ex: Explorer, life: dict[str, Any], dates: list[str]) -> Story:
    ds, group, msg_id = life["dt"], life["consumer_group"], life["msg_id"]
    cur = ex._cursor()
    try:
        hops = _hop_rows(ex, cur, ds, group, msg_id)
        # A lifecycle spanning dates is written by each (docs/reconstruction.md "Dates and look-back"); its dead
        # letter is in the partition of the DLQ move, which need not be the newest of them.
        letters = _letter_rows(ex, cur, dates, group, msg_id)
        # Each id is read with the date of the row that cites it: the hops are the lifecycle's date's, the dead
        # letter its own date's (another date's letter of the same msg_id is another dead-lettering).
        cited = [(ds, e) for h in hops for e in (h["evidence"] or [])]
        if letters:
            cited += [(letters[0]["dt"], e) for e in (letters[0]["evidence"] or [])]
        event_dates = _event_dates(ex, life)
        evidence = _evidence_rows(ex, cur, event_dates, cited) if cited else []
        # the lifecycle's failed deliveries with their causes, from every date that holds the lifecycle
        failures = failed_attempts(ex, cur, dates, group, msg_id, sorted({*event_dates, *dates}))
    finally:
        cur.close()
    dead_letter = _dead_letter(ex, letters[0]["dt"], group, msg_id) if letters else None
    return Story(
        date=ds,
        dates=dates,
        consumer_group=group,
        msg_id=msg_id,
        original_topic=life["original_topic"],
        keys=life["keys"],
        tags=life["tags"],
        business_key=life["business_key"],
        first_seen=utc(life["first_seen"]),
        last_seen=utc(life["last_seen"]),
        deliveries=opt_int(life["deliveries"]),
        final_state=life["final_state"],
        expected_final_state=life["expected_final_state"],
        max_reconsume_times=opt_int(life["max_reconsume_times"]),
        anomalies=list(life["anomalies"] or []),
        evidence_class=life["evidence_class"],
        attribution=list(life["attribution"] or []),
        instances=list(life["instances"] or []),
        hops=[_hop(h) for h in hops],
        evidence=_evidence_lines(evidence),
        expected_path=expected_path_of(ex.config, group, life["original_topic"]),
        dead_letter=dead_letter,
        compensation=ex.ledger.record(group, msg_id),
        failures=failures,
        causes=list(life.get("causes") or []),
        last_cause=life.get("last_cause"),
        failure_kind=life.get("failure_kind"),
        incident_id=life.get("incident_id"),
        kind_rule=life.get("kind_rule"),
    )


def _hop_rows(ex: Explorer, cur: duckdb.DuckDBPyConnection, ds: str, group: str, msg_id: str) -> list[dict[str, Any]]:
    trans, tp = ex._scan("transitions", [ds])
    return ex._query(
        f"SELECT * FROM ({trans}) WHERE consumer_group = ? AND msg_id = ? ORDER BY hop", [*tp, group, msg_id], cur
    )


def _letter_rows(
    ex: Explorer, cur: duckdb.DuckDBPyConnection, dates: list[str], group: str, msg_id: str
) -> list[dict[str, Any]]:
    dead, dp = ex._scan("dead_letters", dates)
    sql = f"SELECT * FROM ({dead}) WHERE consumer_group = ? AND msg_id = ? ORDER BY dt DESC"
    return ex._query(sql, [*dp, group, msg_id], cur)


def _event_dates(ex: Explorer, life: dict[str, Any]) -> list[str]:
    """The lifecycle's date and the days its first line may lie before it, with an events partition (newest
    first; the lifecycle's own date when none has one)."""
    ds = life["dt"]
    start = utc(life["first_seen"])
    lo = (start.date() if start else dt.date.fromisoformat(ds)) - dt.timedelta(days=EVIDENCE_DAYS_BEFORE)
    return ex._dates_in(min(lo.isoformat(), ds), ds, "events") or [ds]


def _evidence_rows(
    ex: Explorer, cur: duckdb.DuckDBPyConnection, event_dates: list[str], cited: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    """The log lines ``cited`` names as (date of the citing row, event_id), each from ``event_dates``, in time order.

    A line is joined on its date partition and its id, never on the id alone: ids written before ``event_id``
    hashed a file's content repeat across dates (the same path and line number), and the same line collected
    into two dates' folders is read twice. Of the partitions that hold an id, the citing row's own date wins,
    else the nearest date before it (a lifecycle's first lines may lie in the day before, ``_event_dates``); a
    partition after the citing row's date is never its evidence.
    """
    events, ep = ex._scan("events", event_dates)
    rows = ex._query(
        "SELECT dt, event_id, event_time, event_type, source, source_file, line_no, topic, reconsume_times, "
        f"delay_level, thread, client_host, broker, detail FROM ({events}) WHERE list_contains(?, event_id)",
        [*ep, sorted({e for _, e in cited})],
        cur,
    )
    by_id: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_id.setdefault(r["event_id"], []).append(r)
    chosen: dict[tuple[str, str], dict[str, Any]] = {}
    for ds, event_id in cited:
        candidates = [r for r in by_id.get(event_id, []) if r["dt"] <= ds]
        if candidates:
            best = max(candidates, key=lambda r: r["dt"])
            chosen[(best["dt"], event_id)] = best
    return sorted(
        chosen.values(),
        key=lambda r: (r["event_time"] is None, r["event_time"] or dt.datetime.min, r["source_file"] or "",
                       r["line_no"] or 0),
    )  # fmt: skip


def _evidence_lines(rows: list[dict[str, Any]]) -> list[EvidenceLine]:
    """One line per (date, event id), in time order."""
    return [
        EvidenceLine(
            event_id=e["event_id"],
            event_time=utc(e["event_time"]),
            event_type=e["event_type"],
            source=e["source"],
            source_file=e["source_file"],
            line_no=opt_int(e["line_no"]),
            topic=e["topic"],
            reconsume_times=opt_int(e["reconsume_times"]),
            delay_level=opt_int(e["delay_level"]),
            thread=e["thread"],
            client_host=e["client_host"],
            broker=e["broker"],
            detail=e["detail"],
            date=e["dt"],
        )
        for e in rows
    ]


def _hop(h: dict[str, Any]) -> Hop:
    return Hop(
        hop=int(h["hop"]),
        from_state=h["from_state"],
        to_state=h["to_state"],
        physical_topic=h["physical_topic"],
        queue_id=opt_int(h["queue_id"]),
        delay_level=opt_int(h["delay_level"]),
        reconsume_times=opt_int(h["reconsume_times"]),
        observed_at=utc(h["observed_at"]),
        expected_at=utc(h["expected_at"]),
        drift_ms=opt_int(h["drift_ms"]),
        inferred=bool(h["inferred"]),
        evidence=list(h["evidence"] or []),
    )


def _dead_letter(ex: Explorer, ds: str, group: str, msg_id: str) -> DeadLetterRow | None:
    # through the dead-letter page, so the story shows the row (and its ledger state) exactly as that page does
    page = ex.dead_letters(ds, ds, DeadLetterFilter(group=group, msg_id=msg_id), 1, 1)
    return next((r for r in page.rows if r.msg_id == msg_id), None)
