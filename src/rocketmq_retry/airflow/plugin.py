"""The Airflow plugin: one app on the api-server with the Data Docs and the operator's pages (``airflow/pages/``),
their entries in the UI (Browse menu, a tab on each daily run) and the Data Docs button on the validate task.

Plugin FastAPI apps are not behind Airflow's authentication, and both show values from logs (message keys,
topics), so every request must carry an Airflow session (the UI's cookie or a bearer token) of
a user allowed to read the DAG.
"""

from __future__ import annotations

import html
import pathlib
from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from rocketmq_retry.airflow.dag_parts import DAG_ID
from rocketmq_retry.airflow.links import DataDocsLink
from rocketmq_retry.urls import API_ROUTE, DOCS_ROUTE, RUN_PAGE_RE, URL_PREFIX, run_url
from rocketmq_retry.validation.docs_safety import SECURITY_HEADERS


def _docs_dir() -> pathlib.Path:
    from rocketmq_retry.validation.settings import load_validation_settings

    return load_validation_settings().docs_dir


def _require_dag_read() -> Any:
    from airflow.api_fastapi.core_api.security import requires_access_dag

    return requires_access_dag("GET", param_dag_id=DAG_ID)


def _not_yet_page(root: pathlib.Path, ds: str | None) -> str:
    """What the Browse entry (before any run) or a run's button (before its validation wrote a page) opens instead of
    a bare 404: what to run, and where the pages will be. Every value is escaped (the folder comes from config)."""
    esc = html.escape
    what = (
        f"The date {esc(ds)} has no validation pages yet: its <code>validate</code> task has not finished, or it "
        "failed before writing them (its log says why). Clear the task to run it again."
        if ds
        else "No validation has run yet in this deployment, so there are no Data Docs to show."
    )
    overview = f'<p><a href="{esc(run_url(ds), quote=True)}">Run overview of {esc(ds)}</a></p>' if ds else ""
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>RocketMQ retry Data Docs</title></head><body>"
        f"<h1>RocketMQ retry Data Docs</h1><p>{what}</p>"
        "<h2>How to get them</h2><ul>"
        "<li>From a checkout: <code>make demo</code> runs ingest, reconstruct and validate on the committed example "
        "day.</li>"
        "<li>In Airflow: trigger the DAG <code>rocketmq_retry_daily</code> (or backfill a date range); its "
        "<code>validate</code> task writes the pages and its <b>Data Docs</b> button opens the run's page.</li>"
        "<li>Without Airflow: <code>rocketmq-retry validate --date YYYY-MM-DD --warehouse WH</code>.</li></ul>"
        f"<h2>Where they appear</h2><p>This page, once written: <code>index.html</code> in the Data Docs folder "
        f"<code>{esc(str(root))}</code> (the <code>validation.context_root</code> setting, "
        "<code>$ROCKETMQ_RETRY_GX_ROOT</code>), one page per date under <code>runs/</code>.</p>"
        f"{overview}</body></html>"
    )


def create_app(docs_dir: pathlib.Path | None = None, *, authenticate: bool = True) -> FastAPI:
    app = FastAPI(title="rocketmq-retry", docs_url=None, redoc_url=None, openapi_url=None)
    dependencies = [Depends(_require_dag_read())] if authenticate else []

    @app.get(DOCS_ROUTE, dependencies=dependencies)
    def docs_root() -> RedirectResponse:
        return RedirectResponse(f"{URL_PREFIX}{DOCS_ROUTE}/index.html")

    @app.get(DOCS_ROUTE + "/{page:path}", dependencies=dependencies)
    def docs_page(page: str) -> Response:
        root = (docs_dir or _docs_dir()).resolve()
        if "\x00" in page:  # no file name holds a NUL byte, and the path functions refuse it with a ValueError
            raise HTTPException(status_code=404, detail="not found")
        target = (root / page).resolve()
        # resolve() then a parent check: neither '..' nor a symlink may leave the Data Docs folder.
        if root not in target.parents or not target.is_file():
            run_page = RUN_PAGE_RE.fullmatch(page)
            if page == "index.html" or run_page:
                return HTMLResponse(
                    _not_yet_page(root, run_page.group(1) if run_page else None), headers=SECURITY_HEADERS
                )
            raise HTTPException(status_code=404, detail="not found")
        # The pages show values from logs: CSP sandbox + no foreign or inline script (validation/docs_safety.py).
        return FileResponse(target, headers=SECURITY_HEADERS)

    return app


def create_plugin_app() -> FastAPI:
    """The Data Docs routes, the operator's pages (``airflow/pages/``) and their JSON API in one app under
    URL_PREFIX: Airflow mounts each plugin app at its own prefix and the first matching mount wins, so a second
    app at ``/rocketmq-retry/ops`` (or ``/rocketmq-retry/api/v1``) next to this one would never be reached."""
    from rocketmq_retry.airflow.pages import OPS_ROUTE, create_pages_app
    from rocketmq_retry.airflow.pages.api import create_api_app

    app = create_app()
    app.mount(OPS_ROUTE, create_pages_app())
    app.mount(API_ROUTE, create_api_app())
    return app


def _operator_views() -> list[dict[str, Any]]:
    """The pages in Airflow's UI: a navigation entry, and a tab on each daily run that opens that run's
    overview (the UI fills in {RUN_ID}; the page works the run's partition date out server-side)."""
    from rocketmq_retry.airflow.pages import OPS_ROUTE

    return [
        {
            "name": "RocketMQ retry lifecycles",
            "href": f"{URL_PREFIX}{OPS_ROUTE}/",
            "destination": "nav",
            "category": "browse",
            "url_route": "rocketmq-retry-lifecycles",
        },
        {
            "name": "Retry lifecycles",
            "href": f"{URL_PREFIX}{OPS_ROUTE}/dag-runs/{{RUN_ID}}?dag_id={{DAG_ID}}",
            "destination": "dag_run",
            "url_route": "rocketmq-retry-run-lifecycles",
        },
    ]


class RocketMQRetryPlugin(AirflowPlugin):
    name = "rocketmq_retry"
    fastapi_apps: ClassVar[list[dict[str, Any]]] = [
        {"app": create_plugin_app(), "url_prefix": URL_PREFIX, "name": "rocketmq-retry Data Docs"}
    ]
    external_views: ClassVar[list[dict[str, Any]]] = [
        {
            "name": "RocketMQ retry Data Docs",
            "href": f"{URL_PREFIX}{DOCS_ROUTE}/index.html",
            "destination": "nav",
            "category": "browse",
        },
        *_operator_views(),
    ]
    operator_extra_links: ClassVar[list[Any]] = [DataDocsLink()]
