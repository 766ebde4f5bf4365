"""The operator's pages as JSON: ``/rocketmq-retry/api/v1/…`` (docs/airflow.md "The JSON API").

Each route calls the read layer exactly as its page does (``explore``: one query, two renderings) and returns the
read layer's result as it is, so the OpenAPI document's schemas are the read layer's dataclasses. Nothing here
writes. Every route, the OpenAPI document included, needs Airflow's authentication and read access to the daily
DAG (``guard.require_read``), as the pages do; a bad parameter is a JSON 400 or 422 naming it, an unknown date or
message a 404.

Values from the logs (keys, topics, group names, exception messages) are JSON strings; the JSON is also written
with ``<``, ``>`` and ``&`` as ``\\u`` escapes, so a body opened in a browser or pasted into a page holds no
markup, and every answer carries the pages' security headers.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from rocketmq_retry import contract
from rocketmq_retry.airflow.pages import guard
from rocketmq_retry.airflow.pages.api_models import BadParameters, GroupList, Problem
from rocketmq_retry.airflow.pages.context import (
    SECURITY_HEADERS,
    Pages,
    Source,
    check_date,
    check_range,
    deployment_source,
)
from rocketmq_retry.airflow.pages.dead_letters import AGE
from rocketmq_retry.explore.model import (
    COMPENSATION_STATES,
    DEAD_LETTER_SORTS,
    CausePage,
    DeadLetterFilter,
    DeadLetterPage,
    FoundMessage,
    LifecyclePage,
    RunOverview,
    Story,
)
from rocketmq_retry.explore.runs import MAX_PAGE_SIZE as MAX_RUNS_PAGE
from rocketmq_retry.explore.runs import RunList, run_list

VERSION = "1"
PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
MAX_PAGE = 10_000_000
MAX_DAYS = 366

# The closed sets a parameter takes, from the contract the pages check them against: the OpenAPI document lists
# them, so a client (and the fuzz) sees the allowed values instead of learning them from a 400.
CompensationState = Literal[COMPENSATION_STATES]  # type: ignore[valid-type]
Attribution = Literal[contract.ATTRIBUTIONS]  # type: ignore[valid-type]
FailureKind = Literal[contract.FAILURE_KINDS]  # type: ignore[valid-type]
Advice = Literal[tuple(contract.REDRIVE_ADVICE)]  # type: ignore[valid-type]
FinalState = Literal[contract.FINAL_STATES]  # type: ignore[valid-type]
DeadLetterSort = Literal[(*DEAD_LETTER_SORTS, AGE)]  # type: ignore[valid-type]

EXAMPLE_DAY = "2026-11-20"  # the committed example day (examples/README.md)
DateFrom = Annotated[
    str | None, Query(alias="from", description="first date, YYYY-MM-DD (none: no bound)", examples=[EXAMPLE_DAY])
]
DateTo = Annotated[
    str | None, Query(alias="to", description="last date, YYYY-MM-DD (none: no bound)", examples=[EXAMPLE_DAY])
]
Page = Annotated[int, Query(ge=1, le=MAX_PAGE, description="1-based")]
DatePath = Annotated[str, Path(description="the partition date, YYYY-MM-DD", examples=[EXAMPLE_DAY])]

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": Problem, "description": "a value the read layer refuses (a bad date, an empty date range)"},
    401: {"model": Problem, "description": "no Airflow token (header `Authorization: Bearer …` or the UI's cookie)"},
    403: {"model": Problem, "description": "an invalid token, or no read access to the daily DAG"},
    404: {"model": Problem, "description": "no such date or message in the warehouse"},
    422: {"model": BadParameters, "description": "a parameter outside what this document allows"},
    503: {"model": Problem, "description": "the deployment's warehouse cannot be opened"},
}


class SafeJSON(JSONResponse):
    """JSON whose text holds no ``<``, ``>`` or ``&`` (their ``\\u`` escapes read back as the same strings), with
    the pages' security headers."""

    def __init__(self, content: Any, status_code: int = 200, headers: dict[str, str] | None = None, **kw: Any):
        super().__init__(content, status_code, {**SECURITY_HEADERS, **(headers or {})}, **kw)

    def render(self, content: Any) -> bytes:
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def create_api_app(source: Callable[[], Source] = deployment_source, *, authenticate: bool = True) -> FastAPI:
    """``source`` says where to read (tests pass their own warehouse); without ``authenticate`` (tests of the
    answers themselves) no route checks a token."""
    app = FastAPI(
        title="rocketmq-retry API",
        version=VERSION,
        summary="The operator's pages as JSON: runs, dead letters, lifecycles, groups, causes (read only).",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # served below, behind the same check as every route
        default_response_class=SafeJSON,
    )
    pages = Pages(
        source=source,
        authenticate=authenticate,
        read=[Depends(guard.require_read())] if authenticate else [],
        caller=None,
        airflow_app=None,
    )
    app.add_exception_handler(HTTPException, _refused)
    app.add_exception_handler(RequestValidationError, _bad_parameters)
    app.include_router(api_router(pages))

    @app.get("/openapi.json", dependencies=pages.read, include_in_schema=False)
    def openapi(request: Request) -> Response:
        # The paths are relative to where Airflow mounts the API; "servers" says where that is, as FastAPI's own
        # /openapi.json does, so a client generated from the document calls the right URLs.
        root = request.scope.get("root_path", "").rstrip("/")
        return SafeJSON({**app.openapi(), "servers": [{"url": root or "/"}]})

    return app


def api_router(pages: Pages) -> APIRouter:
    router = APIRouter(dependencies=[*pages.read, Depends(_known_parameters)], responses=ERRORS)

    def explorer() -> Any:
        return pages.explorer()

    @router.get("/runs", response_model=RunList, tags=["runs"])
    def runs(
        date_from: DateFrom = None,
        date_to: DateTo = None,
        page: Page = 1,
        page_size: Annotated[int, Query(ge=1, le=MAX_RUNS_PAGE)] = 31,
    ) -> Any:
        """The dates the warehouse holds, newest first, each with its status (ingested, reconstructed,
        validated or validation_failed), its counts and its validation result."""
        first, last = check_range(date_from, date_to)
        if not pages.source().warehouse.is_dir():  # before the first run: no date yet, not an error
            return RunList(first, last, page, page_size, 0, [])
        return pages.answer(lambda: explorer().locked(lambda ex: run_list(ex, first, last, page, page_size)))

    @router.get("/runs/{date}", response_model=RunOverview, tags=["runs"])
    def run(date: DatePath) -> Any:
        """One date's overview: lifecycles by final state and group, anomalies, reconciliation gaps, unattributed
        lines, what ingest read, the validation result, the top causes and open incidents."""
        ds = check_date(date, "date")
        return pages.answer(lambda: explorer().run_overview(ds))

    @router.get("/runs/{date}/lifecycles", response_model=LifecyclePage, tags=["runs"])
    def lifecycles(
        date: DatePath,
        state: FinalState | None = None,
        group: str | None = None,
        anomaly: str | None = None,
        page: Page = 1,
        page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = PAGE_SIZE,
    ) -> Any:
        """One date's lifecycles by group and msg_id, filtered by final state, consumer group and anomaly code."""
        ds = check_date(date, "date")
        return pages.answer(lambda: explorer().lifecycles(ds, state, group or None, anomaly or None, page, page_size))

    @router.get("/dead-letters", response_model=DeadLetterPage, tags=["dead letters"])
    def dead_letters(
        query: Annotated[DeadLetterQuery, Depends()],
        page: Page = 1,
        page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = PAGE_SIZE,
        sort: DeadLetterSort | None = None,
        order: Annotated[Literal["asc", "desc"], Query(alias="dir")] = "asc",
    ) -> Any:
        """The dead letters of a date range with the dead-letter page's filters (ANDed), sort and paging; each
        row with its cause, re-drive advice and compensation state. ``sort=age`` is the time in the DLQ."""
        first, last = check_range(query.date_from, query.date_to)
        by, descending = ("dlq_at", order == "asc") if sort == AGE else (sort, order == "desc")
        return pages.answer(
            lambda: explorer().dead_letters(
                first, last, query.filters(), page, page_size, sort=by, descending=descending
            )
        )

    @router.get("/messages", response_model=list[FoundMessage], tags=["messages"])
    def find(
        q: Annotated[str, Query(min_length=1, max_length=512, description="a msg_id, offset msg id or key")],
        date_from: DateFrom = None,
        date_to: DateTo = None,
    ) -> Any:
        """The lifecycles whose msg_id, offset msg id or business key is ``q``: exact matches first."""
        first, last = check_range(date_from, date_to)
        return pages.answer(lambda: explorer().find(q, first, last))

    @router.get("/messages/{msg_id}", response_model=list[Story], tags=["messages"])
    def story(
        msg_id: Annotated[str, Path(max_length=512)],
        group: str | None = None,
        date_from: DateFrom = None,
        date_to: DateTo = None,
    ) -> Any:
        """One message's lifecycle per consumer group: its hops, the log lines behind them, the engine's
        expected path, its failures and causes, its dead letter and compensation."""
        first, last = check_range(date_from, date_to)
        found = pages.answer(lambda: explorer().story(msg_id, group or None, first, last))
        if not found:
            raise HTTPException(status_code=404, detail=f"no lifecycle of {msg_id!r}")
        return found

    @router.get("/groups", response_model=GroupList, tags=["groups"])
    def groups(
        days: Annotated[int, Query(ge=1, le=MAX_DAYS)] = 14,
        date_to: Annotated[str | None, Query(alias="to", description="last date (none: the newest)")] = None,
    ) -> Any:
        """Each consumer group's settings, expected retry path, retries by delay level on the last date and its
        dead-letter rate per day."""
        last = check_date(date_to, "to") or _newest(pages)
        views = pages.answer(lambda: explorer().groups(last, days))
        first = (dt.date.fromisoformat(last) - dt.timedelta(days=days - 1)).isoformat()
        return GroupList(date_from=first, date_to=last, days=days, groups=views)

    @router.get("/causes", response_model=CausePage, tags=["causes"])
    def causes(
        date: Annotated[str | None, Query(description="YYYY-MM-DD (none: the newest)")] = None,
        group: str | None = None,
    ) -> Any:
        """A date's failures by cause, ranked by dead letters then failures, with their incidents."""
        ds = check_date(date, "date") or _newest(pages)
        return pages.answer(lambda: explorer().causes(ds, group or None))

    return router


class DeadLetterQuery:
    """The dead-letter page's filter (``pages.dead_letters.FilterQuery``: the same names, tests/test_api.py
    holds them equal), with the closed sets typed."""

    def __init__(
        self,
        date_from: DateFrom = None,
        date_to: DateTo = None,
        group: str | None = None,
        topic: str | None = None,
        tag: str | None = None,
        key: Annotated[str | None, Query(description="a substring of KEYS or of the business key")] = None,
        state: CompensationState | None = None,
        attribution: Attribution | None = None,
        cause: Annotated[str | None, Query(description="a cause fingerprint or code")] = None,
        kind: FailureKind | None = None,
        incident: str | None = None,
        advice: Advice | None = None,
        reason: Annotated[
            str | None, Query(description="the ledger's outcome reason: ok, http_5xx, handler_exception:<class>, …")
        ] = None,
    ) -> None:
        self.date_from, self.date_to = date_from, date_to
        self._filter = DeadLetterFilter(
            group=group or None,
            topic=topic or None,
            tag=tag or None,
            key=key or None,
            compensation_state=state,
            attribution=attribution,
            cause=cause or None,
            failure_kind=kind,
            incident_id=incident or None,
            redrive_advice=advice,
            reason=reason or None,
        )

    def filters(self) -> DeadLetterFilter:
        return self._filter


def _known_parameters(request: Request) -> None:
    """A query parameter the route does not take is refused (422), not ignored: ``?stat=GAVE_UP`` for ``?state=``
    would otherwise answer every dead letter as if they were the filtered ones."""
    route = request.scope.get("route")
    if route is None or not request.query_params:
        return
    known = _query_names(route)
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        raise RequestValidationError(
            [
                {"loc": ("query", name), "msg": f"unknown parameter; this route takes {', '.join(sorted(known))}"}
                for name in unknown
            ]
        )


def _query_names(route: Any) -> frozenset[str]:
    from fastapi.dependencies.utils import get_flat_dependant

    return frozenset(p.alias for p in get_flat_dependant(route.dependant).query_params)


def _newest(pages: Pages) -> str:
    dates = pages.answer(lambda: pages.explorer().dates()) if pages.source().warehouse.is_dir() else []
    if not dates:
        raise HTTPException(status_code=404, detail="the warehouse holds no committed date yet")
    return str(max(dates))


async def _refused(_request: Request, exc: HTTPException) -> Response:
    return SafeJSON({"detail": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)


async def _bad_parameters(_request: Request, exc: RequestValidationError) -> Response:
    errors = [
        {"parameter": ".".join(str(x) for x in e.get("loc", ())) or "request", "message": str(e.get("msg", ""))}
        for e in exc.errors()
    ]
    detail = "; ".join(f"{e['parameter']}: {e['message']}" for e in errors) or "bad request"
    return SafeJSON({"detail": detail, "errors": errors}, status_code=422)
