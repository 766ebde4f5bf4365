"""The operator's pages: run overview, dead letters (with CSV export and re-drive), message search and story,
groups. Server-rendered HTML (Jinja2, autoescape on), charts as inline SVG (``svg.py``), one stylesheet of our own:
no script and nothing loaded from another origin, so the pages work offline and a value from the logs can only
ever be text (docs/airflow.md "The operator's pages").

Every route depends on Airflow's authentication and read access to the daily DAG (``guard.require_read``); the
re-drive POST also on the trigger permission of the re-drive DAG and a CSRF token. The warehouse is the
deployment's root (``airflow.warehouse_root``): no request parameter names a path, and dates go through
``rocketmq_retry.dates``. Reads go through the DuckDB read layer (``rocketmq_retry.explore``); no request starts
Spark.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import threading
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import jinja2
from fastapi import Depends, FastAPI, Form, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from rocketmq_retry import contract
from rocketmq_retry.airflow.dag_parts import DAG_ID
from rocketmq_retry.airflow.links import DOCS_ROUTE, OPS_ROUTE, URL_PREFIX
from rocketmq_retry.airflow.pages import guard, svg
from rocketmq_retry.dates import DateError, partition_date
from rocketmq_retry.errors import UserError

PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
MAX_REDRIVE = 1000  # rows one form may re-drive; bigger re-drives go by date range in the DAG's own form
REDRIVABLE = ("FAILED", "GAVE_UP", "SKIPPED")  # ledger states the re-drive DAG reopens (never DONE)
HERE = pathlib.Path(__file__).parent

# No inline script or style anywhere, only our own stylesheet; forms post only to us; framed only by Airflow's
# own UI (its external views are same-origin iframes).
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

_templates = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_templates.globals.update(bars=svg.bars, sparkline=svg.sparkline, timeline=svg.timeline)


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


_templates.filters["percent"] = _percent


@dataclasses.dataclass(frozen=True)
class Source:
    """Where the pages read: the deployment's warehouse root and config file (never a request's choice)."""

    warehouse: pathlib.Path
    config: pathlib.Path | None


def deployment_source() -> Source:
    from rocketmq_retry.airflow.settings import load_airflow_settings

    config = os.environ.get("ROCKETMQ_RETRY_CONFIG")
    return Source(load_airflow_settings().warehouse, pathlib.Path(config) if config else None)


class _Explorers:
    """One read layer per (warehouse, config), shared by the requests; a lock because one DuckDB connection
    must not run two queries at once from the api-server's worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[str, str], Any] = {}

    def get(self, source: Source) -> Any:
        from rocketmq_retry.explore import open_warehouse

        key = (str(source.warehouse), str(source.config or ""))
        with self._lock:
            if key not in self._open:
                self._open[key] = _Locked(open_warehouse(source.warehouse, source.config))
            return self._open[key]


class _Locked:
    def __init__(self, explorer: Any) -> None:
        self._explorer, self._lock = explorer, threading.Lock()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._explorer, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return method(*args, **kwargs)

        return call


def _date(value: str | None, what: str) -> str | None:
    if value is None or value.strip() == "":
        return None
    try:
        return partition_date(value, what=what)
    except DateError as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from None


def _choice(value: str | None, allowed: tuple[str, ...], what: str) -> str | None:
    if not value:
        return None
    if value not in allowed:
        raise HTTPException(status_code=400, detail=f"{what} {value!r} is not one of {', '.join(allowed)}")
    return value


def _plain(result: Any) -> Any:
    return result.to_dict() if hasattr(result, "to_dict") else result


def create_pages_app(
    source: Callable[[], Source] = deployment_source,
    *,
    authenticate: bool = True,
    airflow_app: Callable[[], Any] | None = None,
) -> FastAPI:
    """``source`` says where to read (tests pass their own warehouse); ``airflow_app`` is the api-server's root
    ASGI app the re-drive is sent through (default: the one ``airflow api-server`` runs)."""
    app = FastAPI(title="rocketmq-retry operator's pages", docs_url=None, redoc_url=None, openapi_url=None)
    explorers = _Explorers()
    read = [Depends(guard.require_read())] if authenticate else []

    if authenticate:
        from airflow.api_fastapi.core_api.security import get_user as user_dep
    else:

        async def user_dep() -> None:
            return None

    # A default, not an Annotated[...] hint: with postponed annotations FastAPI resolves hints in the module's
    # globals, where this local dependency does not exist.
    caller = Depends(user_dep)

    def render(request: Request, template: str, status: int = 200, nav: str = "", **context: Any) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        plugin_root = root.removesuffix(OPS_ROUTE) if root.endswith(OPS_ROUTE) else URL_PREFIX
        airflow_root = plugin_root.removesuffix(URL_PREFIX)
        html = _templates.get_template(template).render(
            base=root, docs_base=plugin_root + DOCS_ROUTE, airflow_base=airflow_root, nav=nav, **context
        )
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    def explorer() -> Any:
        try:
            return explorers.get(source())
        except UserError as exc:
            raise HTTPException(status_code=503, detail=str(exc)) from None

    def answer(call: Callable[[], Any]) -> Any:
        from rocketmq_retry.explore.model import ExploreError, NotFound

        try:
            return call()
        except NotFound as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from None
        except (ExploreError, UserError) as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None

    @app.exception_handler(HTTPException)
    async def error_page(request: Request, exc: HTTPException) -> Response:
        if exc.status_code in (401, 403) or "text/html" not in request.headers.get("accept", ""):
            # API clients (and the auth refusals Airflow's own API gives) keep the JSON shape.
            return Response(
                json.dumps({"detail": exc.detail}),
                status_code=exc.status_code,
                media_type="application/json",
                headers={**SECURITY_HEADERS, **(exc.headers or {})},
            )
        return render(request, "error.html", status=exc.status_code, status_code=exc.status_code, detail=exc.detail)

    @app.get("/", dependencies=read, response_class=HTMLResponse)
    def landing(request: Request) -> HTMLResponse:
        # Before the first run the warehouse folder does not exist yet: that is "no date", not an error.
        dates = list(answer(lambda: explorer().dates())) if source().warehouse.is_dir() else []
        return render(request, "landing.html", dates=sorted(dates, reverse=True), nav="runs")

    @app.get("/static/ops.css", dependencies=read)
    def stylesheet() -> Response:
        return Response((HERE / "static" / "ops.css").read_bytes(), media_type="text/css", headers=SECURITY_HEADERS)

    @app.get("/runs/{date}", dependencies=read, response_class=HTMLResponse)
    def overview(request: Request, date: str) -> HTMLResponse:
        ds = _date(date, "date")
        result = _plain(answer(lambda: explorer().run_overview(ds)))
        rates = [(g["consumer_group"], round(100 * g["dead_letter_rate"], 1)) for g in result["groups"]]
        return render(request, "overview.html", o=result, rates=rates, nav="runs")

    @app.get("/dag-runs/{run_id}", dependencies=read)
    def dag_run(request: Request, run_id: str, dag_id: str = DAG_ID) -> RedirectResponse:
        """The daily DAG run's tab: the run's partition date is worked out the way ``resolve_run`` does.
        Airflow shows a run tab on every DAG's runs; only the daily DAG's runs have an overview."""
        if dag_id != DAG_ID:
            raise HTTPException(status_code=404, detail=f"retry lifecycles exist for {DAG_ID} runs only, not {dag_id}")
        ds = _run_date(run_id)
        return RedirectResponse(f"{request.scope.get('root_path', '').rstrip('/')}/runs/{ds}", status_code=303)

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
            compensation_state=_choice(state, COMPENSATION_STATES, "state"),
            attribution=_choice(attribution, contract.ATTRIBUTIONS, "attribution"),
        )

    def _range(date_from: str | None, date_to: str | None) -> tuple[str | None, str | None]:
        """Validated bounds; an empty bound is no bound (the read layer's convention)."""
        first, last = _date(date_from, "from"), _date(date_to, "to")
        if first and last and last < first:
            raise HTTPException(status_code=400, detail=f"date range {first}..{last} is empty")
        return first, last

    @app.get("/dead-letters", dependencies=read, response_class=HTMLResponse)
    async def dead_letters(
        request: Request,
        user: Any = caller,
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
        first, last = _range(date_from, date_to)
        filters = _filters(group, topic, tag, key, state, attribution)
        result = answer(lambda: explorer().dead_letters(first, last, filters, page, page_size))
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
        may_redrive = authenticate and guard.can_trigger_redrive(user)
        return render(
            request,
            "dead_letters.html",
            p=_plain(result),
            pages=result.pages,
            form=form,
            states=_states(),
            attributions=contract.ATTRIBUTIONS,
            redrivable=REDRIVABLE,
            may_redrive=may_redrive,
            csrf=guard.csrf_token(user.get_id()) if may_redrive else "",
            nav="dead-letters",
        )

    @app.get("/dead-letters.csv", dependencies=read)
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
        first, last = _range(date_from, date_to)
        filters = _filters(group, topic, tag, key, state, attribution)
        rows = answer(lambda: explorer().dead_letters_csv(first, last, filters))
        name = f"dead-letters-{first or 'first'}_{last or 'last'}.csv"  # built from validated dates only
        return StreamingResponse(
            _chunks(rows),
            media_type="text/csv; charset=utf-8",
            headers={**SECURITY_HEADERS, "Content-Disposition": f'attachment; filename="{name}"'},
        )

    @app.get("/messages", dependencies=read, response_class=HTMLResponse)
    def messages(
        request: Request,
        q: str = "",
        date_from: Annotated[str | None, Query(alias="from")] = None,
        date_to: Annotated[str | None, Query(alias="to")] = None,
    ) -> HTMLResponse:
        query = q.strip()
        found: list[Any] = []
        first, last = _range(date_from, date_to)
        if query:
            found = [_plain(m) for m in answer(lambda: explorer().find(query, first, last))]
        return render(
            request, "messages.html", q=query, found=found, first=first or "", last=last or "", nav="messages"
        )

    @app.get("/messages/{msg_id}", dependencies=read, response_class=HTMLResponse)
    def story(
        request: Request,
        msg_id: str,
        group: str | None = None,
        date_from: Annotated[str | None, Query(alias="from")] = None,
        date_to: Annotated[str | None, Query(alias="to")] = None,
    ) -> HTMLResponse:
        first, last = _range(date_from, date_to)
        stories = [_plain(s) for s in answer(lambda: explorer().story(msg_id, group or None, first, last))]
        if not stories:
            raise HTTPException(status_code=404, detail=f"no lifecycle of {msg_id!r}")
        return render(request, "story.html", msg_id=msg_id, stories=stories, nav="messages")

    @app.get("/groups", dependencies=read, response_class=HTMLResponse)
    def groups(
        request: Request,
        days: Annotated[int, Query(ge=1, le=366)] = 14,
        date_to: Annotated[str | None, Query(alias="to")] = None,
    ) -> HTMLResponse:
        last = _date(date_to, "to")
        if last is None:
            dates = sorted(answer(lambda: explorer().dates()))
            if not dates:
                raise HTTPException(status_code=404, detail="the warehouse holds no committed date yet")
            last = dates[-1]
        views = [_plain(g) for g in answer(lambda: explorer().groups(last, days))]
        return render(request, "groups.html", views=views, days=days, last=last, nav="groups")

    redrive_deps = [Depends(guard.require_trigger_redrive())] if authenticate else []

    @app.post("/redrive", dependencies=read + redrive_deps, response_class=HTMLResponse)
    async def redrive(
        request: Request,
        user: Any = caller,
        csrf_token: Annotated[str, Form()] = "",
        selected: Annotated[list[str] | None, Form()] = None,
    ) -> HTMLResponse:
        if not authenticate:
            raise HTTPException(status_code=403, detail="re-drive needs an authenticated Airflow user")
        guard.check_csrf(request, user.get_id(), csrf_token)
        picks = _selection(selected or [])
        token = _caller_token(request)
        runs = []
        for conf in redrive_confs(picks):
            runs.append(await _trigger(request, token, conf, airflow_app))
        return render(request, "redrive.html", runs=runs, redrive_dag=guard.REDRIVE_DAG_ID, nav="dead-letters")

    return app


def _states() -> tuple[str, ...]:
    from rocketmq_retry.explore.model import COMPENSATION_STATES

    return COMPENSATION_STATES


def _chunks(rows: Any) -> Iterator[bytes]:
    if isinstance(rows, str | bytes):
        rows = [rows]
    for chunk in rows:
        yield chunk.encode() if isinstance(chunk, str) else chunk


def _selection(values: list[str]) -> list[tuple[str, str, str]]:
    """Each checkbox carries ``[date, consumer_group, msg_id]`` as JSON (values from logs may hold any
    separator). Anything else is refused rather than half-understood."""
    if not values:
        raise HTTPException(status_code=400, detail="no dead letter selected")
    if len(values) > MAX_REDRIVE:
        raise HTTPException(
            status_code=400,
            detail=f"{len(values)} rows selected; at most {MAX_REDRIVE} per form (re-drive a date range instead)",
        )
    picks = []
    for value in values:
        try:
            item = json.loads(value)
            ds, group, msg_id = (str(x) for x in item) if isinstance(item, list) and len(item) == 3 else ((),) * 3
            picks.append((partition_date(ds), group, msg_id))
        except (ValueError, TypeError, DateError):
            raise HTTPException(status_code=400, detail="a selected row is malformed; reload the page") from None
        if not group or not msg_id:
            raise HTTPException(status_code=400, detail="a selected row has no consumer group or msg_id")
    return picks


def redrive_confs(picks: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """One run per consumer group: the DAG's ``msg_ids`` + ``consumer_group`` name exactly the rows chosen, and
    the date range (the chosen rows' own dates) keeps a msg_id of another day out."""
    by_group: dict[str, list[tuple[str, str]]] = {}
    for ds, group, msg_id in picks:
        by_group.setdefault(group, []).append((ds, msg_id))
    confs = []
    for group in sorted(by_group):
        rows = by_group[group]
        dates = sorted({d for d, _ in rows})
        confs.append(
            {
                "msg_ids": sorted({m for _, m in rows}),
                "consumer_group": group,
                "date_from": dates[0],
                "date_to": dates[-1],
            }
        )
    return confs


def _caller_token(request: Request) -> str:
    from airflow.api_fastapi.auth.managers.base_auth_manager import COOKIE_NAME_JWT_TOKEN

    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:]
    token = request.cookies.get(COOKIE_NAME_JWT_TOKEN)
    if not token:
        raise HTTPException(status_code=401, detail="Not authenticated")
    return token


def _default_airflow_app() -> Any:
    # The module `airflow api-server` serves (uvicorn and gunicorn both load it); imported at request time,
    # because this plugin is itself imported while that app is being built.
    from airflow.api_fastapi.main import app

    return app


async def _trigger(
    request: Request, token: str, conf: dict[str, Any], airflow_app: Callable[[], Any] | None
) -> dict[str, Any]:
    """``POST /api/v2/dags/rocketmq_retry_redrive/dagRuns`` on Airflow's own app, in process, as the caller:
    Airflow checks the user's permission again, records the run with ``triggering_user_name`` and writes its
    audit log entry, exactly as for a trigger from its own UI."""
    import httpx

    target = (airflow_app or _default_airflow_app)()
    body = {
        "logical_date": None,
        "conf": conf,
        "note": f"re-drive of {len(conf['msg_ids'])} dead letters of {conf['consumer_group']} "
        "chosen on the dead-letters page",
    }
    headers = {"Authorization": f"Bearer {token}", "Referer": str(request.url)}
    transport = httpx.ASGITransport(app=target)
    async with httpx.AsyncClient(transport=transport, base_url="http://api-server.internal") as client:
        response = await client.post(f"/api/v2/dags/{guard.REDRIVE_DAG_ID}/dagRuns", json=body, headers=headers)
    if response.status_code >= 300:
        try:
            detail = response.json().get("detail")
        except ValueError:
            detail = response.text[:500]
        raise HTTPException(status_code=response.status_code, detail=f"Airflow refused the re-drive: {detail}")
    run = response.json()
    return {"run_id": run.get("dag_run_id"), "state": run.get("state"), "conf": conf}


def _run_date(run_id: str) -> str:
    """The partition date of a ``rocketmq_retry_daily`` run, as its ``resolve_run`` task works it out."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from rocketmq_retry.airflow.settings import load_airflow_settings
    from rocketmq_retry.airflow.tasks import partition_date as run_partition_date

    with create_session() as session:
        run = session.scalar(select(DagRun).where(DagRun.dag_id == DAG_ID, DagRun.run_id == run_id))
        if run is None:
            raise HTTPException(status_code=404, detail=f"no {DAG_ID} run {run_id!r}")
        context = {"logical_date": run.logical_date, "dag_run": run}
        return run_partition_date(context, load_airflow_settings().schedule_timezone)
