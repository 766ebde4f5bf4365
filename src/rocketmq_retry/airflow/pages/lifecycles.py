"""A date's lifecycles as a list, filtered by final state, consumer group and anomaly: where the overview's
cards and counts lead."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from rocketmq_retry import contract
from rocketmq_retry.airflow.pages.context import Pages, check_choice, check_date, plain, render

PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000


def lifecycles_router(pages: Pages) -> APIRouter:
    router = APIRouter()

    @router.get("/runs/{date}/lifecycles", dependencies=pages.read, response_class=HTMLResponse)
    def lifecycles(
        request: Request,
        date: str,
        state: str | None = None,
        group: str | None = None,
        anomaly: str | None = None,
        page: Annotated[int, Query(ge=1, le=10_000_000)] = 1,
        page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = PAGE_SIZE,
    ) -> HTMLResponse:
        ds = check_date(date, "date")
        final_state = check_choice(state, contract.FINAL_STATES, "state")
        result = pages.answer(
            lambda: pages.explorer().lifecycles(ds, final_state, group or None, anomaly or None, page, page_size)
        )
        form = {"state": final_state or "", "group": group or "", "anomaly": anomaly or ""}
        if page_size != PAGE_SIZE:
            form["page_size"] = str(page_size)
        return render(request, "lifecycles.html", p=plain(result), pages=result.pages, form=form, nav="runs")

    return router
