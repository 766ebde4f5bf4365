"""The dead-letter backlog across dates (explore/backlog.py, docs/explore.md "The backlog"): per consumer group, what
the ledger does not hold as compensated, by age up to an as-of date, the oldest, what is past the broker's retention
(this archive is then the only copy) and the group holding most of it; and its CSV export."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, StreamingResponse

from rocketmq_retry.airflow.pages.context import SECURITY_HEADERS, Pages, check_date, plain, render


def backlog_router(pages: Pages) -> APIRouter:
    router = APIRouter()

    def read(as_of: str | None) -> Any:
        from rocketmq_retry.explore.backlog import backlog

        day = check_date(as_of, "as_of")
        return pages.answer(lambda: pages.explorer().locked(lambda ex: backlog(ex, day)))

    @router.get("/backlog", dependencies=pages.read, response_class=HTMLResponse)
    def backlog_page(request: Request, as_of: Annotated[str | None, Query(max_length=10)] = None) -> HTMLResponse:
        from rocketmq_retry.explore.values import duration_text

        result = read(as_of)
        groups = [
            {
                **plain(g),
                "oldest_age": duration_text(g.oldest_age_hours * 3600) if g.oldest_age_hours is not None else "",
            }
            for g in result.groups
        ]
        return render(
            request,
            "backlog.html",
            b=plain(result),
            groups=groups,
            chosen=bool(as_of and as_of.strip()),
            bars_items=[(g.consumer_group, float(g.backlog)) for g in result.groups[:12]],
            nav="backlog",
        )

    @router.get("/backlog.csv", dependencies=pages.read)
    def backlog_csv(as_of: Annotated[str | None, Query(max_length=10)] = None) -> StreamingResponse:
        from rocketmq_retry.explore.backlog import backlog_csv as to_csv

        result = read(as_of)
        name = f"dead-letter-backlog-{result.as_of}.csv"  # the as-of date went through the date parser
        return StreamingResponse(
            to_csv(result),
            media_type="text/csv; charset=utf-8",
            headers={**SECURITY_HEADERS, "Content-Disposition": f'attachment; filename="{name}"'},
        )

    return router
