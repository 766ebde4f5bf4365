"""The dead-letter backlog across dates (docs/explore.md "The backlog"): per consumer group, the dead letters of every
committed ``dead_letters`` partition up to an as-of date that the ledger does not hold as compensated (``DONE``), by
age, the oldest, those past the broker's retention, and which group holds most of it.

**Age is measured from the end of the as-of date** (midnight after it in the config's ``timezone``, the day a
``dt=D`` partition holds, docs/DESIGN.md): the as-of date is the newest committed ``dead_letters`` date unless one is
chosen, so the same warehouse always gives the same answer whatever the clock says, and a past date shows the backlog
as it stood then (its ledger states are today's). A dead letter's age starts at its ``dlq_at``; one without it is aged
from the end of its partition's day, the youngest it can be, and counted as ``undated``.

**Past retention**: older than its broker's ``file_reserved_time_hours`` (RocketMQ
``MessageStoreConfig#fileReservedTime``, 72 h by default). The broker's ``CleanCommitLogService`` deletes a commitlog
file once its last write is older than that (at ``deleteWhen``, 04 h by default, or sooner when the disk fills), so
such a dead letter may already be gone from the broker's ``%DLQ%`` queue, and this product's archive is then its only
copy. A commitlog file can outlive the limit until the next ``deleteWhen`` and holds messages written before its last
write, so "past retention" says the broker may have deleted it, not that it did: what the logs cannot establish is not
claimed.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
import zoneinfo
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rocketmq_retry.compensation.model import State
from rocketmq_retry.explore.dead_letters import NO_FIRST, csv_cell
from rocketmq_retry.explore.model import NotFound, _Result
from rocketmq_retry.explore.values import utc

if TYPE_CHECKING:
    from rocketmq_retry.explore.warehouse import Explorer

# (label, lower bound in hours inclusive, upper bound exclusive or None)
AGE_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("< 1 d", 0, 24),
    ("1–3 d", 24, 72),
    ("3–7 d", 72, 168),
    ("> 7 d", 168, None),
)
BACKLOG_CSV_COLUMNS = (
    "consumer_group", "broker", "dead_letters", "compensated", "backlog", "age_lt_1d", "age_1_3d", "age_3_7d",
    "age_gt_7d", "oldest_dlq_at", "oldest_age_hours", "past_retention", "retention_hours", "undated",
    "share_of_backlog",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class BacklogGroup(_Result):
    consumer_group: str
    broker: str
    retention_hours: int  # the broker's file_reserved_time_hours
    dead_letters: int  # every dead letter of the dates, compensated or not
    compensated: int  # DONE in the ledger
    backlog: int  # dead_letters - compensated
    by_age: tuple[int, ...]  # backlog per AGE_BUCKETS
    oldest_dlq_at: dt.datetime | None  # of the backlog
    oldest_age_hours: int | None
    past_retention: int  # backlog older than retention_hours
    undated: int  # backlog without a dlq_at, aged from the end of their partition's day
    share: float | None  # of the whole backlog


@dataclasses.dataclass(frozen=True)
class Backlog(_Result):
    as_of: str  # the as-of date
    as_of_end: dt.datetime  # the instant ages are measured from (UTC)
    first_date: str | None  # the oldest committed dead_letters date read
    dates: int  # partitions read
    ledger_available: bool  # False: no ledger yet, nothing counts as compensated
    buckets: tuple[str, ...]
    groups: list[BacklogGroup]  # most backlog first
    total_dead_letters: int
    total_backlog: int
    total_by_age: tuple[int, ...]
    total_past_retention: int
    oldest_dlq_at: dt.datetime | None
    concentration: str | None  # the group holding the most backlog (None when there is none)
    concentration_share: float | None


def as_of_end(as_of: str, timezone: str) -> dt.datetime:
    """The end of day ``as_of`` in ``timezone`` (the next midnight there), as UTC."""
    day = dt.date.fromisoformat(as_of) + dt.timedelta(days=1)
    local = dt.datetime.combine(day, dt.time(0), tzinfo=zoneinfo.ZoneInfo(timezone))
    return local.astimezone(dt.UTC)


def _bucket(age_hours: int) -> int:
    for i, (_, low, high) in enumerate(AGE_BUCKETS):
        if age_hours >= low and (high is None or age_hours < high):
            return i
    raise AssertionError(age_hours)  # pragma: no cover - the buckets cover every non-negative age


def backlog(ex: Explorer, as_of: object = None) -> Backlog:
    """The backlog of every committed dead_letters date up to ``as_of`` (default: the newest one)."""
    _, chosen = ex._range(None, as_of)
    dates = ex._dates_in(None, chosen, "dead_letters")
    if not dates:
        where = f" up to {chosen}" if chosen else ""
        raise NotFound(f"no committed dead_letters partition{where} under {ex.warehouse}")
    day = chosen or dates[0]
    zone = ex.config.timezone
    end = as_of_end(day, zone)
    import pyarrow as pa

    day_ends = pa.table(
        {
            "dt": pa.array(dates, pa.string()),
            "day_end": pa.array([as_of_end(d, zone) for d in dates], pa.timestamp("us", tz="UTC")),
        }
    )
    dead, params = ex._scan("dead_letters", dates)
    cur = ex._ledger_cursor(NO_FIRST, day)
    try:
        cur.register("day_ends", day_ends)
        # One row per (group, dated, age in whole hours, compensated): few enough to finish in Python, where each
        # group's broker retention is known.
        rows = ex._query(
            "SELECT d.consumer_group AS grp, d.dlq_at IS NULL AS undated, "
            "greatest(0, floor(epoch(CAST(? AS TIMESTAMPTZ) - coalesce(d.dlq_at, e.day_end)) / 3600))::BIGINT "
            "AS age_h, "
            f"coalesce(l.state = '{State.DONE.value}', false) AS done, count(*) AS n, "
            "min(coalesce(d.dlq_at, e.day_end)) AS oldest "
            f"FROM ({dead}) d JOIN day_ends e ON e.dt = d.dt "
            "LEFT JOIN ledger_rows l ON l.consumer_group = d.consumer_group AND l.msg_id = d.msg_id "
            "WHERE d.msg_id IS NOT NULL AND d.consumer_group IS NOT NULL "
            "GROUP BY ALL",
            [end, *params],
            cur,
        )
    finally:
        cur.close()
    return _summarise(ex, day, end, dates, rows)


def _summarise(ex: Explorer, day: str, end: dt.datetime, dates: list[str], rows: list[dict[str, Any]]) -> Backlog:
    acc: dict[str, dict[str, Any]] = {}
    for r in rows:
        g = acc.setdefault(
            r["grp"],
            {"dead": 0, "done": 0, "ages": [0] * len(AGE_BUCKETS), "oldest": None, "hours": [], "undated": 0},
        )
        n = int(r["n"])
        g["dead"] += n
        if r["done"]:
            g["done"] += n
            continue
        g["ages"][_bucket(int(r["age_h"]))] += n
        g["hours"].append((int(r["age_h"]), n))
        if r["undated"]:
            g["undated"] += n
        oldest = utc(r["oldest"])
        if oldest is not None and (g["oldest"] is None or oldest < g["oldest"]):
            g["oldest"] = oldest
    total_backlog = sum(g["dead"] - g["done"] for g in acc.values())
    groups = []
    for name, g in acc.items():
        settings = ex.config.groups.get(name)
        broker = settings.broker if settings is not None else "default"
        retention = ex.config.brokers[broker].file_reserved_time_hours
        backlog_n = g["dead"] - g["done"]
        oldest = g["oldest"]
        groups.append(
            BacklogGroup(
                consumer_group=name,
                broker=broker,
                retention_hours=retention,
                dead_letters=g["dead"],
                compensated=g["done"],
                backlog=backlog_n,
                by_age=tuple(g["ages"]),
                oldest_dlq_at=oldest,
                oldest_age_hours=int(max(0.0, (end - oldest).total_seconds()) // 3600) if oldest else None,
                past_retention=sum(n for hours, n in g["hours"] if hours >= retention),
                undated=g["undated"],
                share=backlog_n / total_backlog if total_backlog else None,
            )
        )
    groups.sort(key=lambda x: (-x.backlog, -(x.oldest_age_hours or 0), x.consumer_group))
    top = groups[0] if groups and groups[0].backlog else None
    oldest_all = [x.oldest_dlq_at for x in groups if x.oldest_dlq_at is not None]
    return Backlog(
        as_of=day,
        as_of_end=end,
        first_date=dates[-1],
        dates=len(dates),
        ledger_available=ex.ledger.available,
        buckets=tuple(label for label, _, _ in AGE_BUCKETS),
        groups=groups,
        total_dead_letters=sum(x.dead_letters for x in groups),
        total_backlog=total_backlog,
        total_by_age=tuple(sum(x.by_age[i] for x in groups) for i in range(len(AGE_BUCKETS))),
        total_past_retention=sum(x.past_retention for x in groups),
        oldest_dlq_at=min(oldest_all) if oldest_all else None,
        concentration=top.consumer_group if top else None,
        concentration_share=top.share if top else None,
    )


def _iso(value: dt.datetime | None) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else None


def backlog_csv(result: Backlog) -> Iterator[str]:
    """CSV text of the backlog, one row per group (header first). Every text cell goes through ``csv_cell``, so a
    group name a spreadsheet would run as a formula is written as text."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow(BACKLOG_CSV_COLUMNS)
    for g in result.groups:
        values = (
            g.consumer_group, g.broker, g.dead_letters, g.compensated, g.backlog, *g.by_age, _iso(g.oldest_dlq_at),
            g.oldest_age_hours, g.past_retention, g.retention_hours, g.undated,
            None if g.share is None else f"{g.share:.4f}",
        )  # fmt: skip
        writer.writerow([csv_cell(v) for v in values])
    yield buf.getvalue()
