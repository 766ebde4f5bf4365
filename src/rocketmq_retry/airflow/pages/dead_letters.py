"""The dead-letters page (filtered, paged, with the re-drive form for a user who may trigger it) and its CSV
export of the same filter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, StreamingResponse

from rocketmq_retry import contract
from rocketmq_retry.airflow.pages import guard
from rocketmq_retry.airflow.pages.context import SECURITY_HEADERS, Pages, check_choice, check_range, plain, render
from rocketmq_retry.airflow.pages.redrive import REDRIVABLE

PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000


def dead_letters_router(pages: Pages) -> APIRouter:
    router = APIRouter()

    @router.get("/dead-letters", dependencies=pages.read, response_class=HTMLResponse)
    async def dead_letters(
        request: Request,
        user: Any = pages.caller,
        date_from: Annotated[str | None, Query(alias="from")] = None,
        date_to: Annotated[str | None, Query(alias="to")] = None,
        group: str | None = None,
        topic: str | None = None,
        tag: str | None = None,
        key: str | None = None,
        state: str | None = None,
        attribution: str | None = None,
        page: Annotated[int, Query(ge=1, le=10_000_000)] = 1,
        page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = PAGE_SIZE,
    ) -> HTMLResponse:
        first, last = check_range(date_from, date_to)
        filters = _filters(group, topic, tag, key, state, attribution)
        result = pages.answer(lambda: pages.explorer().dead_letters(first, last, filters, page, page_size))
        form = {
            "from": result.date_from,
            "to": result.date_to,
            "group": group or "",
            "topic": topic or "",
            "tag": tag or "",
            "key": key or "",
            "state": state or "",
            "attribution": attribution or "",
        }
        may_redrive = pages.authenticate and guard.can_trigger_redrive(user)
        return render(
            request,
            "dead_letters.html",
            p=plain(result),
            pages=result.pages,
            form=form,
            states=_states(),
            attributions=contract.ATTRIBUTIONS,
            redrivable=REDRIVABLE,
            may_redrive=may_redrive,
            csrf=guard.csrf_token(user.get_id()) if may_redrive else "",
            nav="dead-letters",
        )

    @router.get("/dead-letters.csv", dependencies=pages.read)
    def dead_letters_csv(
        date_from: Annotated[str | None, Query(alias="from")] = None,
        date_to: Annotated[str | None, Query(alias="to")] = None,
        group: str | None = None,
        topic: str | None = None,
        tag: str | None = None,
        key: str | None = None,
        state: str | None = None,
        attribution: str | None = None,
    ) -> StreamingResponse:
        first, last = check_range(date_from, date_to)
        filters = _filters(group, topic, tag, key, state, attribution)
        rows = pages.answer(lambda: pages.explorer().dead_letters_csv(first, last, filters))
        name = f"dead-letters-{first or 'first'}_{last or 'last'}.csv"  # built from validated dates only
        return StreamingResponse(
            _chunks(rows),
            media_type="text/csv; charset=utf-8",
            headers={**SECURITY_HEADERS, "Content-Disposition": f'attachment; filename="{name}"'},
        )

    return router


def _filters(
    group: str | None,
    topic: str | None,
    tag: str | None,
    key: str | None,
    state: str | None,
    attribution: str | None,
) -> Any:
    from rocketmq_retry.explore.model import COMPENSATION_STATES, DeadLetterFilter

    return DeadLetterFilter(
        group=group or None,
        topic=topic or None,
        tag=tag or None,
        key=key or None,
        compensation_state=check_choice(state, COMPENSATION_STATES, "state"),
        attribution=check_choice(attribution, contract.ATTRIBUTIONS, "attribution"),
    )


def _states() -> tuple[str, ...]:
    from rocketmq_retry.explore.model import COMPENSATION_STATES

    return COMPENSATION_STATES


def _chunks(rows: Any) -> Iterator[bytes]:
    if isinstance(rows, str | bytes):
        rows = [rows]
    for chunk in rows:
        yield chunk.encode() if isinstance(chunk, str) else chunk
