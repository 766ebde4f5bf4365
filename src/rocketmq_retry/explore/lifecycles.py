"""One date's lifecycles as a list: what the overview's cards and per-group counts stand for (a card of 12
DEAD_LETTERED links here with that state), filtered by final state, consumer group and anomaly code."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rocketmq_retry import contract
from rocketmq_retry.explore.model import ExploreError, LifecyclePage, LifecycleRow, NotFound
from rocketmq_retry.explore.values import clean, opt_int, utc

if TYPE_CHECKING:
    from rocketmq_retry.explore.warehouse import Explorer

MAX_PAGE_SIZE = 1000


def lifecycle_page(
    ex: Explorer,
    date: object,
    final_state: str | None,
    group: str | None,
    anomaly: str | None,
    page: int,
    page_size: int,
) -> LifecyclePage:
    ds, _ = ex._range(date, date)
    if ds is None:
        raise ExploreError("no date given")
    if final_state is not None and final_state not in contract.FINAL_STATES:
        raise ExploreError(f"final state {final_state!r} is not one of {', '.join(contract.FINAL_STATES)}")
    if not 1 <= int(page_size) <= MAX_PAGE_SIZE or int(page) < 1:
        raise ExploreError(f"page {page} of size {page_size}: pages start at 1, sizes are 1..{MAX_PAGE_SIZE}")
    group, anomaly = clean(group, "group"), clean(anomaly, "anomaly")
    if ds not in ex._dates_in(ds, ds):
        raise NotFound(f"no committed lifecycles for {ds} under {ex.warehouse}")
    life, params = ex._scan("lifecycles", [ds])
    where, args = ["msg_id IS NOT NULL", "consumer_group IS NOT NULL"], []
    for sql, value in (("final_state = ?", final_state), ("consumer_group = ?", group),
                       ("list_contains(anomalies, ?)", anomaly)):  # fmt: skip
        if value is not None:
            where.append(sql)
            args.append(value)
    base = f"SELECT * FROM ({life}) WHERE {' AND '.join(where)}"
    total = int(ex._query(f"SELECT count(*) AS n FROM ({base})", [*params, *args])[0]["n"])
    rows = ex._query(
        f"{base} ORDER BY consumer_group, msg_id LIMIT ? OFFSET ?",
        [*params, *args, int(page_size), (int(page) - 1) * int(page_size)],
    )
    return LifecyclePage(
        date=ds,
        final_state=final_state,
        group=group,
        anomaly=anomaly,
        page=int(page),
        page_size=int(page_size),
        total=total,
        rows=[_row(ds, r) for r in rows],
    )


def _row(ds: str, r: dict[str, Any]) -> LifecycleRow:
    return LifecycleRow(
        date=ds,
        consumer_group=r["consumer_group"],
        msg_id=r["msg_id"],
        original_topic=r["original_topic"],
        keys=r["keys"],
        business_key=r["business_key"],
        first_seen=utc(r["first_seen"]),
        last_seen=utc(r["last_seen"]),
        deliveries=opt_int(r["deliveries"]),
        final_state=r["final_state"],
        expected_final_state=r["expected_final_state"],
        anomalies=list(r["anomalies"] or []),
    )
