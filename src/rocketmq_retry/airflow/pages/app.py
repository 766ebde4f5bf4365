"""The operator's pages: run overview, dead letters (with CSV export and re-drive), message search and story,
groups. Server-rendered HTML (Jinja2, autoescape on), charts as inline SVG (``svg.py``), one stylesheet of our own:
no script and nothing loaded from another origin, so the pages work offline and a value from the logs can only
ever be text (docs/airflow.md "The operator's pages").

Every route depends on Airflow's authentication and read access to the daily DAG (``guard.require_read``); the
re-drive POST also on the trigger permission of the re-drive DAG and a CSRF token. The warehouse is the
deployment's root (``airflow.warehouse_root``): no request parameter names a path, and dates go through
``rocketmq_retry.dates``. Reads go through the DuckDB read layer (``rocketmq_retry.explore``); no request starts
Spark.

This module builds the app; each page's routes live in their own module (``overview``, ``causes``, ``dead_letters``,
``messages``, ``groups``, ``redrive``) and what they share in ``context``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from rocketmq_retry.airflow.pages import guard
from rocketmq_retry.airflow.pages.backlog import backlog_router
from rocketmq_retry.airflow.pages.causes import causes_router
from rocketmq_retry.airflow.pages.context import (
    SECURITY_HEADERS,
    Pages,
    Source,
    airflow_root,
    deployment_source,
    render,
)
from rocketmq_retry.airflow.pages.dead_letters import dead_letters_router
from rocketmq_retry.airflow.pages.groups import groups_router
from rocketmq_retry.airflow.pages.lifecycles import lifecycles_router
from rocketmq_retry.airflow.pages.messages import messages_router
from rocketmq_retry.airflow.pages.overview import overview_router
from rocketmq_retry.airflow.pages.redrive import redrive_confs, redrive_router
from rocketmq_retry.urls import OPS_ROUTE

# Tests and the plugin reach these through this module.
__all__ = ["OPS_ROUTE", "Source", "create_pages_app", "deployment_source", "redrive_confs"]


def create_pages_app(
    source: Callable[[], Source] = deployment_source,
    *,
    authenticate: bool = True,
    airflow_app: Callable[[], Any] | None = None,
) -> FastAPI:
    """``source`` says where to read (tests pass their own warehouse); ``airflow_app`` is the api-server's root
    ASGI app the re-drive is sent through (default: the one ``airflow api-server`` runs)."""
    app = FastAPI(title="rocketmq-retry operator's pages", docs_url=None, redoc_url=None, openapi_url=None)
    pages = Pages(
        source=source,
        authenticate=authenticate,
        read=[Depends(guard.require_read())] if authenticate else [],
        caller=Depends(_user_dependency(authenticate)),
        airflow_app=airflow_app,
    )
    # Starlette's, not only FastAPI's: the router's own 404 (an unknown path, one with a NUL byte) and 405 are
    # Starlette's HTTPException, which FastAPI's subclasses, and would answer a browser in raw JSON.
    app.add_exception_handler(StarletteHTTPException, _error_page)
    app.add_exception_handler(RequestValidationError, _bad_parameters)
    routers = (
        overview_router,
        lifecycles_router,
        causes_router,
        dead_letters_router,
        messages_router,
        groups_router,
        redrive_router,
        backlog_router,
    )
    for router in routers:
        app.include_router(router(pages))
    return app


def _user_dependency(authenticate: bool) -> Callable[..., Any]:
    if authenticate:
        from airflow.api_fastapi.core_api.security import get_user

        return get_user

    async def no_user() -> None:
        return None

    return no_user


def _wants_html(request: Request) -> bool:
    # A browser following a link or a form asks for text/html; an API client (curl, a script) does not.
    return "text/html" in request.headers.get("accept", "")


def _json(status: int, detail: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps({"detail": detail}),
        status_code=status,
        media_type="application/json",
        headers={**SECURITY_HEADERS, **(headers or {})},
    )


def login_redirect(request: Request) -> RedirectResponse:
    """To Airflow's own login route (``/api/v2/auth/login``, which asks the configured auth manager for its
    login page and checks the return path), with this page as the return path: a shared link works after
    signing in."""
    root, path = request.scope.get("root_path", "").rstrip("/"), request.scope.get("path", "")
    # Starlette's path of a mounted app already starts with the mount's root_path; a bare app's does not.
    back = quote(path if path.startswith(root + "/") else root + path, safe="/-._~%")
    if request.url.query:
        back += "?" + request.url.query
    target = f"{airflow_root(request)}/api/v2/auth/login?{urlencode({'next': back})}"
    return RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)


async def _error_page(request: Request, exc: StarletteHTTPException) -> Response:
    if not _wants_html(request):
        # API clients (and the auth refusals Airflow's own API gives) keep the JSON shape.
        return _json(exc.status_code, exc.detail, exc.headers)
    if exc.status_code == 401 and request.method in ("GET", "HEAD"):
        return login_redirect(request)
    return render(request, "error.html", status=exc.status_code, status_code=exc.status_code, detail=exc.detail)


async def _bad_parameters(request: Request, exc: RequestValidationError) -> Response:
    """A parameter FastAPI refused (a page size of 5000, a sort direction of "up"): for a browser the pages' own
    error page naming each parameter and what it must be, for an API client FastAPI's JSON."""
    errors = exc.errors()
    if not _wants_html(request):
        return _json(422, jsonable(errors))
    problems = [f"{'.'.join(str(x) for x in e.get('loc', ())[1:]) or 'request'}: {e.get('msg', '')}" for e in errors]
    return render(request, "error.html", status=422, status_code=422, detail="; ".join(problems))


def jsonable(value: Any) -> Any:
    from fastapi.encoders import jsonable_encoder

    return jsonable_encoder(value)
