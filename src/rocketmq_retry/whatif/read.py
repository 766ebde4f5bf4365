"""What the warehouse holds of one group's failures over a date range, read through the read layer's ``Explorer``
(DuckDB over the committed partitions, every value a bound parameter; docs/explore.md "How it reads")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rocketmq_retry.contract import OPEN
from rocketmq_retry.dates import partition_date
from rocketmq_retry.explore.causes import cause_label
from rocketmq_retry.explore.model import ExploreError, NotFound
from rocketmq_retry.explore.values import opt_int, utc
from rocketmq_retry.whatif.model import CurrentIncident, Incident, Observation, ObservedFailure, ObservedMessage

if TYPE_CHECKING:
    from rocketmq_retry.explore.warehouse import Explorer

# The newest row of each key: a lifecycle the look-back carries into a later date is settled there.
_NEWEST = "row_number() OVER (PARTITION BY {key} ORDER BY dt DESC) = 1"


def observe(ex: Explorer, group: str, date_from: object, date_to: object) -> Observation:
    """The group's failed lifecycles (newest row each), their failures, dead letters and the incidents of the
    range. ``NotFound`` when the range has no reconstructed partition, lacks the ``failures`` table, or the group
    is neither configured nor seen."""
    first = partition_date(date_from, what="--from date")
    last = partition_date(date_to, what="--to date")
    if last < first:
        raise ExploreError(f"date range {first}..{last} is empty: the last date comes before the first")
    dates = sorted(ex._dates_in(first, last, "lifecycles"))
    if not dates:
        known = sorted(ex.dates("lifecycles"))
        there = f"reconstructed dates there: {', '.join(known)}" if known else "it holds no lifecycles partition"
        raise NotFound(f"no reconstructed partition between {first} and {last} in {ex.warehouse} ({there})")
    with_failures = set(ex._dates_in(first, last, "failures"))
    missing = [d for d in dates if d not in with_failures]
    if missing:
        raise NotFound(
            f"no failures partition for {', '.join(missing)} in {ex.warehouse}: those dates were reconstructed "
            "before the failures table existed; run reconstruct for them again"
        )
    cur = ex._cursor()
    try:
        life, lp = ex._scan("lifecycles", dates)
        seen = ex._query(
            f"SELECT count(*) FILTER (WHERE consumer_group = ?) AS n, max(last_seen) AS observed_end FROM ({life})",
            [group, *lp],
            cur,
        )[0]
        configured = group in ex.config.groups
        if not configured and not seen["n"]:
            groups = ex._query(f"SELECT DISTINCT consumer_group FROM ({life}) ORDER BY 1", lp, cur)
            names = ", ".join(str(g["consumer_group"]) for g in groups) or "none"
            raise NotFound(
                f"consumer group {group!r} is not in the config and has no lifecycle in {first}..{last} "
                f"(groups there: {names})"
            )
        failures = _failures(ex, cur, group, dates)
        rows = _lifecycles(ex, cur, group, dates, sorted(failures))
        dlq = _dead_letters(ex, cur, group, dates)
        incidents = _incidents(ex, cur, group, dates)
    finally:
        cur.close()
    messages = tuple(
        ObservedMessage(
            msg_id=m,
            original_topic=r.get("original_topic"),
            first_seen=utc(r.get("first_seen")),
            last_seen=utc(r.get("last_seen")),
            deliveries=opt_int(r.get("deliveries")),
            final_state=r.get("final_state"),
            failure_kind=r.get("failure_kind"),
            incident_id=r.get("incident_id"),
            dlq_at=dlq.get(m),
            failures=failures[m],
        )
        for m in sorted(failures)
        for r in [rows.get(m, {})]
    )
    return Observation(
        group=group,
        date_from=first,
        date_to=last,
        dates=tuple(dates),
        observed_end=utc(seen["observed_end"]),
        messages=messages,
        incidents=incidents,
        configured=configured,
    )


def _failures(ex: Explorer, cur: Any, group: str, dates: list[str]) -> dict[str, tuple[ObservedFailure, ...]]:
    sql, params = ex._scan("failures", dates)
    rows = ex._query(
        f"SELECT msg_id, reconsume_times, failed_at, cause FROM ({sql}) WHERE consumer_group = ? "
        f"QUALIFY {_NEWEST.format(key='msg_id, reconsume_times')} ORDER BY msg_id, reconsume_times",
        [*params, group],
        cur,
    )
    out: dict[str, list[ObservedFailure]] = {}
    for r in rows:
        failed_at = utc(r["failed_at"])
        if r["msg_id"] is None or r["reconsume_times"] is None or failed_at is None:
            continue  # the contract's suites refuse such a row; a replay cannot place it
        out.setdefault(r["msg_id"], []).append(ObservedFailure(int(r["reconsume_times"]), failed_at, r["cause"]))
    return {m: tuple(f) for m, f in out.items()}


def _lifecycles(ex: Explorer, cur: Any, group: str, dates: list[str], msg_ids: list[str]) -> dict[str, dict[str, Any]]:
    sql, params = ex._scan("lifecycles", dates)
    rows = ex._query(
        "SELECT msg_id, original_topic, first_seen, last_seen, deliveries, final_state, failure_kind, incident_id "
        f"FROM ({sql}) WHERE consumer_group = ? AND list_contains(?, msg_id) QUALIFY {_NEWEST.format(key='msg_id')}",
        [*params, group, msg_ids],
        cur,
    )
    return {r["msg_id"]: r for r in rows}


def _dead_letters(ex: Explorer, cur: Any, group: str, dates: list[str]) -> dict[str, Any]:
    sql, params = ex._scan("dead_letters", dates)
    rows = ex._query(
        f"SELECT msg_id, dlq_at FROM ({sql}) WHERE consumer_group = ? QUALIFY {_NEWEST.format(key='msg_id')}",
        [*params, group],
        cur,
    )
    return {r["msg_id"]: utc(r["dlq_at"]) for r in rows}


def _incidents(ex: Explorer, cur: Any, group: str, dates: list[str]) -> dict[str, Incident]:
    # The same outage has the same id on every date that reads it; the newest date knows most about its end.
    sql, params = ex._scan("incidents", dates)
    rows = ex._query(
        f"SELECT incident_id, started_at, ended_at FROM ({sql}) WHERE consumer_group = ? "
        f"QUALIFY {_NEWEST.format(key='incident_id')}",
        [*params, group],
        cur,
    )
    return {
        r["incident_id"]: Incident(r["incident_id"], utc(r["started_at"]), utc(r["ended_at"]))
        for r in rows
        if r["incident_id"] is not None
    }


def current_incidents(ex: Explorer, first: str, last: str) -> dict[str, CurrentIncident]:
    """Each group's current incident over ``first..last``: the one still open (the latest to start when several
    are), else the one that ended last; from the newest row of each incident in the range, with the first and last
    date it has a row on there (the dates of its failures) and its cause as the causes page names it."""
    dates = sorted(ex._dates_in(first, last, "incidents"))
    if not dates:
        return {}
    cur = ex._cursor()
    try:
        sql, params = ex._scan("incidents", dates)
        rows = ex._query(
            "SELECT consumer_group, incident_id, fingerprint, started_at, last_failure_at, ended_at, state, "
            "min(dt) OVER key AS first_date, max(dt) OVER key AS last_date "
            f"FROM ({sql}) WHERE consumer_group IS NOT NULL AND incident_id IS NOT NULL "
            "WINDOW key AS (PARTITION BY consumer_group, incident_id) "
            f"QUALIFY {_NEWEST.format(key='consumer_group, incident_id')} "
            "ORDER BY consumer_group, (state = ?) DESC, coalesce(ended_at, started_at) DESC NULLS LAST, "
            "started_at DESC NULLS LAST, incident_id",
            [*params, OPEN],
            cur,
        )
        causes, cp = ex._scan("failure_causes", sorted(ex._dates_in(first, last, "failure_causes")))
        labels = {
            (r["consumer_group"], r["fingerprint"]): cause_label(
                r["fingerprint"], r["root_cause_class"], r["normalised_message"]
            )
            for r in ex._query(
                f"SELECT consumer_group, fingerprint, root_cause_class, normalised_message FROM ({causes}) "
                f"QUALIFY {_NEWEST.format(key='consumer_group, fingerprint')}",
                cp,
                cur,
            )
        }
    finally:
        cur.close()
    out: dict[str, CurrentIncident] = {}
    for r in rows:
        if r["consumer_group"] in out:
            continue  # ordered: the open one, else the latest to end, comes first
        out[r["consumer_group"]] = CurrentIncident(
            consumer_group=r["consumer_group"],
            incident_id=r["incident_id"],
            fingerprint=r["fingerprint"],
            cause_label=labels.get((r["consumer_group"], r["fingerprint"]))
            or cause_label(r["fingerprint"], None, None),
            started_at=utc(r["started_at"]),
            last_failure_at=utc(r["last_failure_at"]),
            ended_at=utc(r["ended_at"]),
            state=r["state"],
            first_date=r["first_date"],
            last_date=r["last_date"],
        )
    return out
