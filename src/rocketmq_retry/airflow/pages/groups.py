"""The groups page: each consumer group's days up to a date (the newest committed one by default), and for a group
with an incident in those days the what-if of it: the policy that would have outlasted it, replayed
(docs/causes.md "What if", "The incident's what-if")."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse

from rocketmq_retry.airflow.pages.context import Pages, check_date, plain, render
from rocketmq_retry.engine.model import SCHEDULE_TOPIC
from rocketmq_retry.errors import UserError
from rocketmq_retry.whatif.replay import NOT_REPLAYED


def groups_router(pages: Pages) -> APIRouter:
    router = APIRouter()

    @router.get("/groups", dependencies=pages.read, response_class=HTMLResponse)
    def groups(
        request: Request,
        days: Annotated[int, Query(ge=1, le=366)] = 14,
        date_to: Annotated[str | None, Query(alias="to")] = None,
    ) -> HTMLResponse:
        last = check_date(date_to, "to")
        if last is None:
            dates = sorted(pages.answer(lambda: pages.explorer().dates()))
            if not dates:
                raise HTTPException(status_code=404, detail="the warehouse holds no committed date yet")
            last = dates[-1]
        views = [plain(g) for g in pages.answer(lambda: pages.explorer().groups(last, days))]
        first = (dt.date.fromisoformat(last) - dt.timedelta(days=days - 1)).isoformat()
        whatifs, whatif_error = incident_whatifs(pages, first, last)
        return render(
            request,
            "groups.html",
            views=views,
            days=days,
            first=first,
            last=last,
            whatifs=whatifs,
            whatif_error=whatif_error,
            schedule_topic=SCHEDULE_TOPIC,
            not_replayed_words=NOT_REPLAYED,
            nav="groups",
        )

    return router


def incident_whatifs(pages: Pages, first: str, last: str) -> tuple[dict[str, Any], str | None]:
    """Group -> the what-if of its current incident (as a dict), only for the groups with one in first..last; a
    read that fails for all of them is a sentence on the page, not an error page (the rest of the page stands)."""
    from rocketmq_retry.whatif import incident_what_ifs

    try:
        found = pages.explorer().locked(lambda ex: incident_what_ifs(ex, first, last))
    except UserError as exc:
        return {}, f"The incidents of {first}..{last} could not be read, so no what-if is shown: {exc}"
    return {g: w.as_dict() for g, w in found.items()}, None
