"""Finding a message: lifecycles whose msg_id, business key or one of whose KEYS starts with the query (msg ids in
any case, keys case-insensitively: an operator types what a ticket or a customer said), or one of whose log lines
carries it as the offset msg id (exactly: that id is only ever copied, never typed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb

from rocketmq_retry.explore.model import ExploreError, FoundMessage
from rocketmq_retry.explore.values import clean

if TYPE_CHECKING:
    from rocketmq_retry.explore.warehouse import Explorer

# (date, consumer group, msg_id) of one lifecycle
Key = tuple[str, str, str]
# A short prefix can match a whole warehouse; the page lists this many (exact matches first) and says so.
MAX_FOUND = 500


def find(ex: Explorer, query: str, date_from: object, date_to: object) -> list[FoundMessage]:
    q = clean(query, "search text")
    if q is None:
        raise ExploreError("nothing to search for: give a msg_id, an offset msg id or a business key")
    q = q.strip()
    first, last = ex._range(date_from, date_to)
    dates = ex._dates_in(first, last)
    if not dates:
        return []
    cur = ex._cursor()
    try:
        found = by_id_or_key(ex, cur, q, dates)
        for key in by_offset_msg_id(ex, cur, q, dates):
            found.setdefault(key, "offset_msg_id")
        states = final_states(ex, cur, dates, found) if found else {}
    finally:
        cur.close()
    out = [
        FoundMessage(date=d, consumer_group=g, msg_id=m, final_state=states.get((d, g, m)), matched_by=how)
        for (d, g, m), how in found.items()
    ]
    out.sort(key=lambda x: (x.msg_id, x.consumer_group))
    out.sort(key=lambda x: x.date, reverse=True)
    return out


def by_id_or_key(ex: Explorer, cur: duckdb.DuckDBPyConnection, q: str, dates: list[str]) -> dict[Key, str]:
    """Lifecycles whose msg_id, business key or one of whose keys starts with ``q`` (case-insensitively), with
    which of them matched; exact matches first, at most MAX_FOUND."""
    life, lp = ex._scan("lifecycles", dates)
    low = q.lower()
    # starts_with on lower() of both sides: the query is a bound parameter, so % and _ stay ordinary characters
    key_hit = "len(list_filter(string_split(lower(coalesce(keys, '')), ' '), lambda k: starts_with(k, ?))) > 0"
    hits = ex._query(
        "SELECT dt, consumer_group, msg_id, how FROM (SELECT dt, consumer_group, msg_id, "
        "CASE WHEN starts_with(lower(msg_id), ?) THEN 'msg_id' "
        "WHEN starts_with(lower(coalesce(business_key, '')), ?) THEN 'business_key' ELSE 'keys' END AS how, "
        "(lower(msg_id) = ? OR lower(coalesce(business_key, '')) = ? "
        "OR list_contains(string_split(lower(coalesce(keys, '')), ' '), ?)) AS exact "
        f"FROM ({life}) WHERE starts_with(lower(msg_id), ?) OR starts_with(lower(coalesce(business_key, '')), ?) "
        f"OR {key_hit}) ORDER BY exact DESC, dt DESC, consumer_group, msg_id LIMIT {MAX_FOUND}",
        [low, low, low, low, low, *lp, low, low, low],
        cur,
    )
    return {(h["dt"], h["consumer_group"], h["msg_id"]): h["how"] for h in hits}


def by_offset_msg_id(ex: Explorer, cur: duckdb.DuckDBPyConnection, q: str, dates: list[str]) -> set[Key]:
    """Lifecycles one of whose log lines has ``q`` as its offset msg id.

    A hop cites a line by its id within the dates its reconstruction read: the line of its own date, else of the
    nearest date before it that holds the id (story.py ``_evidence_rows``). A hop is linked to the line with
    ``q`` only when that line is the one it resolves to, never by the id alone: ids repeat across dates."""
    events, ep = ex._scan("events", dates)
    lines = ex._query(f"SELECT DISTINCT dt, event_id, msg_id FROM ({events}) WHERE offset_msg_id = ?", [*ep, q], cur)
    if not lines:
        return set()
    ids = sorted({r["event_id"] for r in lines})
    trans, tp = ex._scan("transitions", dates)
    linked = ex._query(
        f"WITH t AS (SELECT DISTINCT dt, consumer_group, msg_id, e FROM (SELECT dt, consumer_group, msg_id, "
        f"unnest(evidence) AS e FROM ({trans}) WHERE list_has_any(evidence, ?)) WHERE list_contains(?, e)), "
        f"l AS (SELECT DISTINCT dt AS line_dt, event_id FROM ({events}) WHERE list_contains(?, event_id)) "
        "SELECT t.dt, t.consumer_group, t.msg_id, t.e, max(l.line_dt) AS line_dt FROM t "
        "JOIN l ON l.event_id = t.e AND l.line_dt <= t.dt GROUP BY ALL",
        [*tp, ids, ids, *ep, ids],
        cur,
    )
    with_q = {(r["dt"], r["event_id"]) for r in lines}
    linked = [r for r in linked if (r["line_dt"], r["e"]) in with_q]
    keys = {(r["dt"], r["consumer_group"], r["msg_id"]) for r in linked}
    # A line no hop cites (the business topic's stored copy, the publish) is every group's message;
    # a copy in a group's retry or DLQ topic is cited by that group's hops only.
    cited = {(r["line_dt"], r["e"]) for r in linked}
    msg_ids = sorted({r["msg_id"] for r in lines if r["msg_id"] and (r["dt"], r["event_id"]) not in cited})
    if msg_ids:
        life, lp = ex._scan("lifecycles", dates)
        keys |= {
            (r["dt"], r["consumer_group"], r["msg_id"])
            for r in ex._query(
                f"SELECT dt, consumer_group, msg_id FROM ({life}) WHERE list_contains(?, msg_id)",
                [*lp, msg_ids],
                cur,
            )
        }
    return keys


def final_states(
    ex: Explorer, cur: duckdb.DuckDBPyConnection, dates: list[str], found: dict[Key, str]
) -> dict[Key, str | None]:
    life, lp = ex._scan("lifecycles", dates)
    return {
        (r["dt"], r["consumer_group"], r["msg_id"]): r["final_state"]
        for r in ex._query(
            f"SELECT dt, consumer_group, msg_id, final_state FROM ({life}) WHERE list_contains(?, msg_id)",
            [*lp, sorted({k[2] for k in found})],
            cur,
        )
    }
