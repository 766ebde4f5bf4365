"""The message pages: search by msg_id or key, and one message's story per consumer group."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse

from rocketmq_retry import contract
from rocketmq_retry.airflow.pages.context import Pages, check_range, plain, render


def messages_router(pages: Pages) -> APIRouter:
    router = APIRouter()

    @router.get("/messages", dependencies=pages.read, response_class=HTMLResponse)
    def messages(
        request: Request,
        q: str = "",
        date_from: Annotated[str | None, Query(alias="from")] = None,
        date_to: Annotated[str | None, Query(alias="to")] = None,
    ) -> HTMLResponse:
        query = q.strip()
        found: list[Any] = []
        first, last = check_range(date_from, date_to)
        if query:
            found = [plain(m) for m in pages.answer(lambda: pages.explorer().find(query, first, last))]
        from rocketmq_retry.explore.search import MAX_FOUND

        return render(
            request,
            "messages.html",
            q=query,
            found=found,
            max_found=MAX_FOUND,
            first=first or "",
            last=last or "",
            nav="messages",
        )

    @router.get("/messages/{msg_id}", dependencies=pages.read, response_class=HTMLResponse)
    def story(
        request: Request,
        msg_id: str,
        group: str | None = None,
        date_from: Annotated[str | None, Query(alias="from")] = None,
        date_to: Annotated[str | None, Query(alias="to")] = None,
    ) -> HTMLResponse:
        first, last = check_range(date_from, date_to)
        from rocketmq_retry.explore.summary import summary

        found = pages.answer(lambda: pages.explorer().story(msg_id, group or None, first, last))
        stories = [{**plain(s), "summary": summary(s)} for s in found]
        if not stories:
            raise HTTPException(status_code=404, detail=f"no lifecycle of {msg_id!r}")
        return render(
            request,
            "story.html",
            msg_id=msg_id,
            stories=stories,
            rule_words=contract.KIND_RULES,
            advice_words=contract.REDRIVE_ADVICE,
            nav="messages",
        )

    return router
