"""The dead-letters page (filtered, paged, with the re-drive form for a user who may trigger it) and its CSV
export of the same filter."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, StreamingResponse

from rocketmq_retry import contract
from rocketmq_retry.airflow.pages import guard
from rocketmq_retry.airflow.pages.context import SECURITY_HEADERS, Pages, check_choice, check_range, plain, render
from rocketmq_retry.airflow.pages.redrive import MAX_REDRIVE, REDRIVABLE, WILL_FAIL_AGAIN, redrive_paused
from rocketmq_retry.compensation.model import State

PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
# The table's sortable columns: the read layer's sorts, and "age" (time in the DLQ), which is the DLQ time read
# the other way round (the longest in the DLQ has the earliest DLQ time).
AGE = "age"


def dead_letters_router(pages: Pages) -> APIRouter:
    router = APIRouter()

    @router.get("/dead-letters", dependencies=pages.read, response_class=HTMLResponse)
    async def dead_letters(
        request: Request,
        query: Annotated[FilterQuery, Depends()],
        user: Any = pages.caller,
        page: Annotated[int, Query(ge=1, le=10_000_000)] = 1,
        page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = PAGE_SIZE,
        sort: str | None = None,
        order: Annotated[Literal["asc", "desc"], Query(alias="dir")] = "asc",
        select: Literal["all", "none"] = "none",
    ) -> HTMLResponse:
        first, last = check_range(query.date_from, query.date_to)
        filters = query.filters()
        sort = check_choice(sort, _sorts(), "sort")
        by, descending = ("dlq_at", order == "asc") if sort == AGE else (sort, order == "desc")
        result = pages.answer(
            lambda: pages.explorer().dead_letters(first, last, filters, page, page_size, sort=by, descending=descending)
        )
        form = {"from": result.date_from, "to": result.date_to, **query.form()}
        if page_size != PAGE_SIZE:
            form["page_size"] = str(page_size)
        may_redrive = pages.authenticate and guard.can_trigger_redrive(user)
        now = dt.datetime.now(dt.UTC)
        rows = [{**plain(r), "in_dlq": in_dlq(r, now), "cause_short": short_cause(r.cause)} for r in result.rows]
        selectable = sum(1 for r in rows if r["compensation_state"] in REDRIVABLE) if may_redrive else 0
        # the ended outages' dead letters that are safe to re-drive, offered as one form each
        safe = (
            [
                plain(s)
                for s in pages.answer(
                    lambda: pages.explorer().safe_sets(first, last, filters.group, REDRIVABLE, MAX_REDRIVE)
                )
            ]
            if may_redrive
            else []
        )
        return render(
            request,
            "dead_letters.html",
            p=plain(result),
            rows=rows,
            pages=result.pages,
            form=form,
            sort=sort or "",
            order=order if sort else "",
            select_all=select == "all",
            selectable=selectable,
            now=plain_time(now),
            max_redrive=MAX_REDRIVE,
            paused=redrive_paused() if may_redrive else None,
            redrive_dag=guard.REDRIVE_DAG_ID,
            states=_states(),
            attributions=contract.ATTRIBUTIONS,
            kinds=contract.FAILURE_KINDS,
            advices=contract.REDRIVE_ADVICE,
            rule_words=contract.KIND_RULES,
            code_words=contract.CAUSE_CODES,
            poison=WILL_FAIL_AGAIN,
            safe_sets=safe,
            # the ledger's outcome reasons of the range (and group), each a link to its rows
            reasons=pages.answer(
                lambda: pages.explorer().locked(
                    lambda ex: ex.ledger.reason_counts(first or result.date_from, last or result.date_to, filters.group)
                )
            ),
            redrivable=REDRIVABLE,
            may_redrive=may_redrive,
            csrf=guard.csrf_token(user.get_id()) if may_redrive else "",
            nav="dead-letters",
        )

    @router.get("/dead-letters.csv", dependencies=pages.read)
    def dead_letters_csv(query: Annotated[FilterQuery, Depends()]) -> StreamingResponse:
        first, last = check_range(query.date_from, query.date_to)
        filters = query.filters()
        rows = pages.answer(lambda: pages.explorer().dead_letters_csv(first, last, filters))
        name = f"dead-letters-{first or 'first'}_{last or 'last'}.csv"  # built from validated dates only
        return StreamingResponse(
            _chunks(rows),
            media_type="text/csv; charset=utf-8",
            headers={**SECURITY_HEADERS, "Content-Disposition": f'attachment; filename="{name}"'},
        )

    return router


class FilterQuery:
    """The dead-letter filter as both routes read it from the query string (the page and its CSV export of the
    same rows), declared once so the two cannot drift apart."""

    def __init__(
        self,
        date_from: Annotated[str | None, Query(alias="from")] = None,
        date_to: Annotated[str | None, Query(alias="to")] = None,
        group: str | None = None,
        topic: str | None = None,
        tag: str | None = None,
        key: str | None = None,
        state: str | None = None,
        attribution: str | None = None,
        cause: str | None = None,
        kind: str | None = None,
        incident: str | None = None,
        advice: str | None = None,
        reason: str | None = None,
    ) -> None:
        self.date_from, self.date_to = date_from, date_to
        self.group, self.topic, self.tag, self.key = group, topic, tag, key
        self.state, self.attribution = state, attribution
        self.cause, self.kind, self.incident, self.advice = cause, kind, incident, advice
        self.reason = reason

    def form(self) -> dict[str, str]:
        """The values to show back in the filter form (escaped by the template)."""
        fields = (
            "group", "topic", "tag", "key", "state", "attribution", "cause", "kind", "incident", "advice", "reason",
        )  # fmt: skip
        return {name: getattr(self, name) or "" for name in fields}

    def filters(self) -> Any:
        from rocketmq_retry.explore.model import COMPENSATION_STATES, DeadLetterFilter

        return DeadLetterFilter(
            group=self.group or None,
            topic=self.topic or None,
            tag=self.tag or None,
            key=self.key or None,
            compensation_state=check_choice(self.state, COMPENSATION_STATES, "state"),
            attribution=check_choice(self.attribution, contract.ATTRIBUTIONS, "attribution"),
            cause=self.cause or None,
            failure_kind=check_choice(self.kind, contract.FAILURE_KINDS, "kind"),
            incident_id=self.incident or None,
            redrive_advice=check_choice(self.advice, tuple(contract.REDRIVE_ADVICE), "advice"),
            reason=self.reason or None,
        )


def _sorts() -> tuple[str, ...]:
    from rocketmq_retry.explore.model import DEAD_LETTER_SORTS

    return (*DEAD_LETTER_SORTS, AGE)


def plain_time(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def in_dlq(row: Any, now: dt.datetime) -> dict[str, str]:
    """How long the dead letter has waited: until its compensation was done (the ledger's completion time), or,
    while nothing has made the business whole, until now. Empty when the DLQ time is unknown."""
    from rocketmq_retry.explore.values import duration_text

    if row.dlq_at is None:
        return {"text": "", "title": "the DLQ time is unknown", "done": ""}
    if row.compensation_state == State.DONE and row.completed_at is not None:
        span = (row.completed_at - row.dlq_at).total_seconds()
        return {
            "text": duration_text(span),
            "title": f"compensated {plain_time(row.completed_at)}, {duration_text(span)} after the DLQ move",
            "done": "1",
        }
    span = (now - row.dlq_at).total_seconds()
    return {
        "text": duration_text(span),
        "title": f"in the DLQ since {plain_time(row.dlq_at)}, not compensated",
        "done": "",
    }


def short_cause(cause: str | None) -> str | None:
    """``java.net.ConnectException: refused`` as ``ConnectException: refused``: a narrow cell shows the class's
    name, its title and the row's detail the cause whole."""
    from rocketmq_retry.explore.causes import simple_class

    return simple_class(cause)


def _states() -> tuple[str, ...]:
    from rocketmq_retry.explore.model import COMPENSATION_STATES

    return COMPENSATION_STATES


def _chunks(rows: Any) -> Iterator[bytes]:
    if isinstance(rows, str | bytes):
        rows = [rows]
    for chunk in rows:
        yield chunk.encode() if isinstance(chunk, str) else chunk
