"""URLs of the plugin's pages, and the "Data Docs" button on the validate task that opens the run's validation page.

One place for these paths: the plugin's routes, the operator's pages and the Data Docs renderer
(``validation/docs_site.py``) all build their links here.
"""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey

URL_PREFIX = "/rocketmq-retry"
DOCS_ROUTE = "/data-docs"
OPS_ROUTE = "/ops"
XCOM_DOCS_PATH = "data_docs_path"  # path of the run's page relative to the Data Docs site
RESOLVE_TASK = "resolve_run"  # whose XCom names the run's partition date (airflow/operators.py)


def run_page(ds: str) -> str:
    """The run's validation page, relative to the Data Docs site (what ``validation/run.py`` writes)."""
    return f"runs/dt={ds}.html"


def run_url(ds: str) -> str:
    """The operator's overview of one date (the plugin's pages)."""
    return f"{URL_PREFIX}{OPS_ROUTE}/runs/{urllib.parse.quote(ds, safe='')}"


def message_url(msg_id: str, group: str | None = None) -> str:
    """The operator's page of one message; msg_id and group come from logs, so both are percent-encoded."""
    url = f"{URL_PREFIX}{OPS_ROUTE}/messages/{urllib.parse.quote(msg_id, safe='')}"
    return f"{url}?{urllib.parse.urlencode({'group': group})}" if group else url


def docs_url(relative_page: str) -> str:
    """Absolute when [api] base_url is set (links open from e-mails too), else relative to the api-server."""
    from airflow.configuration import conf

    base = (conf.get("api", "base_url", fallback="") or "").rstrip("/")
    return f"{base}{URL_PREFIX}{DOCS_ROUTE}/{relative_page.lstrip('/')}"


class DataDocsLink(BaseOperatorLink):
    """Evaluated by the worker when the task finishes, whatever its state (Airflow 3's task runner stores the result
    as the XCom ``_link_DataDocsLink``; the api-server only reads that XCom, and the UI hides a link whose value is
    empty). The page path the task pushes is preferred; when the task failed before pushing it (an error in GX or
    Spark, a missing partition), the run's date from ``resolve_run`` still names the page, and the plugin serves a
    page there saying the date has no validation yet, instead of the button disappearing."""

    name = "Data Docs"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        ti: Any = ti_key  # in Airflow 3 the worker passes its RuntimeTaskInstance here
        if not hasattr(ti, "xcom_pull"):
            return ""
        page = ti.xcom_pull(task_ids=ti.task_id, key=XCOM_DOCS_PATH)
        if not page:
            paths = ti.xcom_pull(task_ids=RESOLVE_TASK)
            page = run_page(paths["ds"]) if isinstance(paths, dict) and paths.get("ds") else None
        return docs_url(page) if page else ""
