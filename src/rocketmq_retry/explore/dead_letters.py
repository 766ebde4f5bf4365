"""The dead-letter page and its CSV export: the filters checked, one SQL over the partitions (joined to the
ledger when a compensation state is filtered on or exported), a page of rows or the CSV text of them all."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from rocketmq_retry import contract
from rocketmq_retry.explore.ledger import LedgerReader
from rocketmq_retry.explore.model import (
    COMPENSATION_STATES,
    DEAD_LETTER_SORTS,
    NOT_COMPENSABLE,
    NOT_REGISTERED,
    DeadLetterFilter,
    DeadLetterPage,
    DeadLetterRow,
    ExploreError,
)
from rocketmq_retry.explore.values import clean, opt_int, utc

if TYPE_CHECKING:
    from rocketmq_retry.explore.warehouse import Explorer

MAX_PAGE_SIZE = 1000
# Bounds for a ledger range left open, ordered around every partition date.
NO_FIRST, NO_LAST = "0000-00-00", "9999-99-99"
DEAD_LETTER_CSV_COLUMNS = (
    "date", "msg_id", "consumer_group", "topic", "tag", "keys", "business_key", "reconsume_times", "dlq_at",
    "dlq_inferred", "attribution", "compensable", "review_reason", "compensation_state", "attempts", "handler",
    "last_attempt_at", "last_error", "reason", "loops", "cause_fingerprint", "cause", "app_frame", "failure_kind",
    "incident_id", "redrive_advice",
)  # fmt: skip
# What a dead letter's cause adds to its row (docs/causes.md), as dead_letters/ holds it.
CAUSE_COLUMNS = (
    "cause_fingerprint",
    "cause",
    "app_frame",
    "failure_kind",
    "incident_id",
    "kind_rule",
    "redrive_advice",
)
CSV_BATCH_ROWS = 5000
# The columns a page may be sorted by, as SQL over ``letters_sql``'s output; NULLs last either way, so a row
# without a value never hides the ones that have one.
SORT_SQL = {name: name for name in DEAD_LETTER_SORTS} | {"keys": "coalesce(keys, business_key)"}
# A sort on these needs every row's ledger state before the page is cut.
LEDGER_SORTS = ("compensation_state", "attempts")
DEFAULT_ORDER = "date DESC, consumer_group, msg_id"


def _iso_sql(col: str) -> str:
    # the text ``to_dict`` gives a time (datetime.isoformat in UTC, ``Z``): no fraction when it is zero
    return (
        f"CASE WHEN {col} IS NULL THEN NULL WHEN microsecond({col}) % 1000000 = 0 "
        f"THEN strftime({col}, '%Y-%m-%dT%H:%M:%SZ') ELSE strftime({col}, '%Y-%m-%dT%H:%M:%S.%fZ') END AS {col}"
    )


# Formatted by DuckDB, so the export turns no row into Python datetimes or lists.
_CSV_SQL = {
    "dlq_at": _iso_sql("dlq_at"),
    "last_attempt_at": _iso_sql("last_attempt_at"),
    "attribution": "array_to_string(attribution, '+') AS attribution",
}


def check_filters(filters: DeadLetterFilter | None) -> DeadLetterFilter:
    f = filters or DeadLetterFilter()
    state = clean(f.compensation_state, "compensation state")
    if state is not None:
        state = state.strip().upper().replace("-", "_")
        if state not in COMPENSATION_STATES:
            raise ExploreError(
                f"compensation state {f.compensation_state!r} is not one of {', '.join(COMPENSATION_STATES)}"
            )
    attribution = clean(f.attribution, "attribution")
    if attribution is not None and attribution not in contract.ATTRIBUTIONS:
        raise ExploreError(f"attribution {attribution!r} is not one of {', '.join(contract.ATTRIBUTIONS)}")
    kind = clean(f.failure_kind, "failure kind")
    if kind is not None and kind not in contract.FAILURE_KINDS:
        raise ExploreError(f"failure kind {kind!r} is not one of {', '.join(contract.FAILURE_KINDS)}")
    advice = clean(f.redrive_advice, "re-drive advice")
    if advice is not None and advice not in contract.REDRIVE_ADVICE:
        raise ExploreError(f"re-drive advice {advice!r} is not one of {', '.join(contract.REDRIVE_ADVICE)}")
    return DeadLetterFilter(
        group=clean(f.group, "group"),
        topic=clean(f.topic, "topic"),
        tag=clean(f.tag, "tag"),
        key=clean(f.key, "key"),
        compensation_state=state,
        attribution=attribution,
        msg_id=clean(f.msg_id, "msg_id"),
        cause=clean(f.cause, "cause"),
        failure_kind=kind,
        incident_id=clean(f.incident_id, "incident"),
        redrive_advice=advice,
        reason=_reason(f.reason),
    )


def _reason(value: str | None) -> str | None:
    from rocketmq_retry.compensation.model import normalise_reason

    text = clean(value, "reason")
    if text is not None and normalise_reason(text) != text:
        raise ExploreError(f"reason {text!r} is not a reason (letters, digits and _ . : - only)")
    return text


def _state_sql(with_ledger: bool) -> str:
    if not with_ledger:
        return f"CASE WHEN coalesce(d.compensable, false) THEN '{NOT_REGISTERED}' ELSE '{NOT_COMPENSABLE}' END"
    return (
        f"CASE WHEN l.state IS NOT NULL THEN l.state WHEN coalesce(d.compensable, false) THEN '{NOT_REGISTERED}' "
        f"ELSE '{NOT_COMPENSABLE}' END"
    )


def _where(filters: DeadLetterFilter, state: str) -> tuple[list[str], list[Any]]:
    """The filters as SQL conditions with their bound values, in the order the conditions name them."""
    where: list[str] = ["d.msg_id IS NOT NULL", "d.consumer_group IS NOT NULL"]
    args: list[Any] = []
    if filters.msg_id:
        where.append("d.msg_id = ?")
        args.append(filters.msg_id)
    if filters.group:
        where.append("d.consumer_group = ?")
        args.append(filters.group)
    if filters.topic:
        where.append("d.original_topic = ?")
        args.append(filters.topic)
    if filters.tag:
        where.append("d.tags = ?")
        args.append(filters.tag)
    if filters.key:
        where.append("(contains(coalesce(d.keys, ''), ?) OR contains(coalesce(d.business_key, ''), ?))")
        args += [filters.key, filters.key]
    if filters.attribution:
        where.append("list_contains(d.attribution, ?)")
        args.append(filters.attribution)
    # the cause columns as bound values: a fingerprint, a code, a kind, an incident id or an advice
    for column, value in (
        ("cause_fingerprint", filters.cause),
        ("failure_kind", filters.failure_kind),
        ("incident_id", filters.incident_id),
        ("redrive_advice", filters.redrive_advice),
    ):
        if value:
            where.append(f"d.{column} = ?")
            args.append(value)
    if filters.compensation_state:
        where.append(f"({state}) = ?")
        args.append(filters.compensation_state)
    if filters.reason:
        where.append("l.reason = ?")
        args.append(filters.reason)
    return where, args


def letters_sql(
    ex: Explorer, dates: Sequence[str], filters: DeadLetterFilter, with_ledger: bool
) -> tuple[str, list[Any]]:
    """SQL (and its parameters) of the filtered dead letters; ``with_ledger`` joins the cursor's ``ledger_rows``."""
    dead, params = ex._scan("dead_letters", dates)
    state = _state_sql(with_ledger)
    join = (
        "LEFT JOIN ledger_rows l ON l.consumer_group = d.consumer_group AND l.msg_id = d.msg_id" if with_ledger else ""
    )
    ledger_cols = (
        "coalesce(l.attempts, 0) AS attempts, l.handler AS handler, l.last_attempt_at AS last_attempt_at, "
        "l.last_error AS last_error, l.completed_at AS completed_at, l.reason AS reason, "
        "coalesce(l.loops, 0) AS loops"
        if with_ledger
        else "0 AS attempts, NULL::VARCHAR AS handler, NULL::TIMESTAMPTZ AS last_attempt_at, "
        "NULL::VARCHAR AS last_error, NULL::TIMESTAMPTZ AS completed_at, NULL::VARCHAR AS reason, 0 AS loops"
    )
    where, args = _where(filters, state)
    sql = (
        f"SELECT d.dt AS date, d.msg_id, d.consumer_group, d.original_topic AS topic, d.tags AS tag, d.keys, "
        f"d.business_key, d.reconsume_times, d.dlq_at, d.dlq_inferred, d.attribution, "
        f"coalesce(d.compensable, false) AS compensable, d.review_reason, {state} AS compensation_state, "
        f"{', '.join('d.' + c for c in CAUSE_COLUMNS)}, {ledger_cols} "
        f"FROM ({dead}) d {join} WHERE {' AND '.join(where)}"
    )
    return sql, params + args


def letter_row(r: dict[str, Any]) -> DeadLetterRow:
    return DeadLetterRow(
        date=r["date"],
        msg_id=r["msg_id"],
        consumer_group=r["consumer_group"],
        topic=r["topic"],
        tag=r["tag"],
        keys=r["keys"],
        business_key=r["business_key"],
        reconsume_times=opt_int(r["reconsume_times"]),
        dlq_at=utc(r["dlq_at"]),
        dlq_inferred=r["dlq_inferred"],
        attribution=list(r["attribution"] or []),
        compensable=bool(r["compensable"]),
        review_reason=r["review_reason"],
        compensation_state=r["compensation_state"],
        attempts=int(r["attempts"] or 0),
        handler=r["handler"],
        last_attempt_at=utc(r["last_attempt_at"]),
        last_error=r["last_error"],
        completed_at=utc(r["completed_at"]),
        reason=r["reason"],
        loops=int(r["loops"] or 0),
        **{c: r[c] for c in CAUSE_COLUMNS},
    )


def with_states(ledger: LedgerReader, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ledger state and attempts of one page's rows, looked up by key (the ledger not loaded whole)."""
    found = ledger.states_of((r["consumer_group"], r["msg_id"]) for r in rows)
    for r in rows:
        led = found.get((r["consumer_group"], r["msg_id"]))
        if led is not None:
            r.update(
                compensation_state=led["state"],
                attempts=led["attempts"],
                handler=led["handler"],
                last_attempt_at=led["last_attempt_at"],
                last_error=led["last_error"],
                completed_at=led["completed_at"],
                reason=led["reason"],
                loops=led["loops"],
            )
    return rows


def _check_page(page: int, page_size: int) -> None:
    if not 1 <= int(page_size) <= MAX_PAGE_SIZE:
        raise ExploreError(f"page size {page_size} is not between 1 and {MAX_PAGE_SIZE}")
    if int(page) < 1:
        raise ExploreError(f"page {page} is not a page number (pages start at 1)")


def order_by(sort: str | None, descending: bool) -> str:
    """ORDER BY text for a sort the page asked for; any other name is refused, never put into SQL."""
    if sort is None:
        return DEFAULT_ORDER
    if sort not in SORT_SQL:
        raise ExploreError(f"sort {sort!r} is not one of {', '.join(DEAD_LETTER_SORTS)}")
    return f"{SORT_SQL[sort]} {'DESC' if descending else 'ASC'} NULLS LAST, {DEFAULT_ORDER}"


def dead_letter_page(
    ex: Explorer,
    date_from: object,
    date_to: object,
    filters: DeadLetterFilter | None,
    page: int,
    page_size: int,
    *,
    sort: str | None = None,
    descending: bool = False,
) -> DeadLetterPage:
    first, last = ex._range(date_from, date_to)
    f = check_filters(filters)
    _check_page(page, page_size)
    order = order_by(sort, descending)
    dates = ex._dates_in(first, last, "dead_letters")
    # Only a filter or sort on the state needs the whole range's ledger; otherwise one page's rows are looked up
    # by key.
    with_ledger = f.compensation_state is not None or f.reason is not None or sort in LEDGER_SORTS
    cur = ex._ledger_cursor(first or NO_FIRST, last or NO_LAST) if with_ledger else ex._cursor()
    try:
        sql, params = letters_sql(ex, dates, f, with_ledger)
        total = int(ex._query(f"SELECT count(*) AS n FROM ({sql})", params, cur)[0]["n"])
        rows = ex._query(
            f"{sql} ORDER BY {order} LIMIT ? OFFSET ?",
            [*params, int(page_size), (int(page) - 1) * int(page_size)],
            cur,
        )
    finally:
        cur.close()
    if not with_ledger:
        rows = with_states(ex.ledger, rows)
    return DeadLetterPage(
        date_from=first or (dates[-1] if dates else ""),
        date_to=last or (dates[0] if dates else ""),
        filters=f,
        page=int(page),
        page_size=int(page_size),
        total=total,
        rows=[letter_row(r) for r in rows],
        sort=sort,
        descending=bool(descending) if sort else False,
    )


def dead_letters_csv(
    ex: Explorer, date_from: object, date_to: object, filters: DeadLetterFilter | None
) -> Iterator[str]:
    """CSV text (header first) of every row the filters select, in chunks; quoted by the csv module."""
    first, last = ex._range(date_from, date_to)
    f = check_filters(filters)
    dates = ex._dates_in(first, last, "dead_letters")
    cur = ex._ledger_cursor(first or NO_FIRST, last or NO_LAST)
    try:
        sql, params = letters_sql(ex, dates, f, True)
        try:
            result = cur.execute(
                f"SELECT {', '.join(_CSV_SQL.get(c, c) for c in DEAD_LETTER_CSV_COLUMNS)} FROM ({sql}) "
                "ORDER BY date DESC, consumer_group, msg_id",
                params,
            )
        except duckdb.Error as exc:
            raise ExploreError(f"cannot read the warehouse {ex.warehouse}: {exc}") from None
        yield _csv_text([DEAD_LETTER_CSV_COLUMNS])
        while batch := result.fetchmany(CSV_BATCH_ROWS):
            yield _csv_text([csv_cell(v) for v in values] for values in batch)
    finally:
        cur.close()


# A spreadsheet reads a cell starting with one of these as a formula (OWASP, "CSV Injection"): a key such as
# =HYPERLINK("http://evil.example/") would become a live link. A leading apostrophe makes it text, shown as logged.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A value as a CSV cell: empty for null, a text that a spreadsheet would run as a formula prefixed with ``'``."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _csv_text(rows: Iterator[Sequence[Any]] | list[Sequence[Any]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerows(rows)
    return buf.getvalue()
