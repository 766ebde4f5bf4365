"""The groups page: every configured or seen consumer group with its settings, expected path, retries by delay
level on the last date and its daily dead-letter rate over a window of days."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import duckdb

from rocketmq_retry import contract
from rocketmq_retry.config import Config
from rocketmq_retry.contract import HopState
from rocketmq_retry.dates import partition_date
from rocketmq_retry.explore.model import DailyRate, ExploreError, GroupView, LevelCount
from rocketmq_retry.explore.values import opt_int

if TYPE_CHECKING:
    from rocketmq_retry.explore.warehouse import Explorer

MAX_DAYS = 366
# Hops that wait before the next delivery: what "a retry at a level" is in the transitions (docs/reconstruction.md
# "Hops"); the level is null for the waits that have none.
RETRY_HOPS = (HopState.SCHEDULED, HopState.LOCAL_RETRY, HopState.SUSPENDED, HopState.INVISIBLE)


def groups(ex: Explorer, date_to: object, days: int) -> list[GroupView]:
    last = partition_date(date_to, what="date")
    if not 1 <= int(days) <= MAX_DAYS:
        raise ExploreError(f"days {days} is not between 1 and {MAX_DAYS}")
    end = dt.date.fromisoformat(last)
    window = [(end - dt.timedelta(days=i)).isoformat() for i in range(int(days) - 1, -1, -1)]
    present = set(ex._dates_in(window[0], last))
    cur = ex._cursor()
    try:
        rates = daily_rates(ex, cur, sorted(present))
        levels = retries_by_level(ex, cur, [last] if last in present else [])
    finally:
        cur.close()
    seen = {r["consumer_group"] for r in rates if r["consumer_group"]}
    by_key = {(r["dt"], r["consumer_group"]): r for r in rates}
    return [group_view(ex.config, g, window, by_key, levels.get(g, [])) for g in sorted(set(ex.config.groups) | seen)]


def daily_rates(ex: Explorer, cur: duckdb.DuckDBPyConnection, dates: list[str]) -> list[dict[str, Any]]:
    """Lifecycles and dead-lettered ones per date and group."""
    life, lp = ex._scan("lifecycles", dates)
    return ex._query(
        "SELECT dt, consumer_group, count(*) AS n, count(*) FILTER (WHERE final_state = ?) AS dl "
        f"FROM ({life}) GROUP BY ALL",
        [contract.DEAD_LETTERED, *lp],
        cur,
    )


def retries_by_level(ex: Explorer, cur: duckdb.DuckDBPyConnection, dates: list[str]) -> dict[str, list[LevelCount]]:
    """Retry hops per group and delay level, the levels in order and the waits without one last."""
    trans, tp = ex._scan("transitions", dates)
    rows = ex._query(
        f"SELECT consumer_group, delay_level, count(*) AS n FROM ({trans}) "
        "WHERE list_contains(?, to_state) GROUP BY ALL ORDER BY consumer_group, delay_level NULLS LAST",
        [*tp, list(RETRY_HOPS)],
        cur,
    )
    out: dict[str, list[LevelCount]] = {}
    for r in rows:
        out.setdefault(r["consumer_group"], []).append(LevelCount(opt_int(r["delay_level"]), int(r["n"])))
    return out


def group_view(
    config: Config,
    group: str,
    window: list[str],
    by_key: dict[tuple[str, str], dict[str, Any]],
    levels: list[LevelCount],
) -> GroupView:
    from rocketmq_retry.explore.story import expected_path_of

    path = expected_path_of(config, group, None)
    trend = []
    for ds in window:
        r = by_key.get((ds, group))
        n, dl = (int(r["n"]), int(r["dl"])) if r else (0, 0)
        trend.append(DailyRate(date=ds, lifecycles=n, dead_lettered=dl, dead_letter_rate=dl / n if n else None))
    return GroupView(
        consumer_group=group,
        configured=group in config.groups,
        settings=path.settings,
        expected_path=path,
        retries_by_level=levels,
        trend=trend,
    )
