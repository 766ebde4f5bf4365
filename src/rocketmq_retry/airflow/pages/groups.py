"""The groups page: each consumer group's days up to a date (the newest committed one by default)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse

from rocketmq_retry.airflow.pages.context import Pages, check_date, plain, render


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
        # group -> the what-if of its current incident: filled by the what-if replay (issue #30 part 4, whatif/)
        whatifs: dict[str, object] = {}
        return render(request, "groups.html", views=views, days=days, last=last, whatifs=whatifs, nav="groups")

    return router
