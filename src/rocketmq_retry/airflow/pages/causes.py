"""The "Failures by cause" page (docs/causes.md): one date's causes of one group or all, ranked by dead letters
then failures, each with its incidents' timeline, its kind and the rule that set it, one example and the links
to its failing message and its dead letters."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse

from rocketmq_retry import contract
from rocketmq_retry.airflow.pages.context import Pages, check_date, plain, render


def causes_router(pages: Pages) -> APIRouter:
    router = APIRouter()

    @router.get("/causes", dependencies=pages.read, response_class=HTMLResponse)
    def causes(
        request: Request,
        date: Annotated[str | None, Query()] = None,
        group: str | None = None,
    ) -> HTMLResponse:
        ds = check_date(date, "date")
        if ds is None:
            dates = pages.answer(lambda: pages.explorer().dates())
            if not dates:
                raise HTTPException(status_code=404, detail="the warehouse holds no committed date yet")
            ds = max(dates)
        result = plain(pages.answer(lambda: pages.explorer().causes(ds, group or None)))
        return render(
            request,
            "causes.html",
            p=result,
            dates=pages.answer(lambda: pages.explorer().dates()),
            code_words=contract.CAUSE_CODES,
            evidence_words=contract.CAUSE_EVIDENCE,
            advice_words=contract.REDRIVE_ADVICE,
            nav="causes",
        )

    return router
