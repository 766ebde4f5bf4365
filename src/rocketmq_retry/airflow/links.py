"""The "Data Docs" button on the validate task: opens that run's validation page, served by the plugin."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey

URL_PREFIX = "/rocketmq-retry"
DOCS_ROUTE = "/data-docs"
XCOM_DOCS_PATH = "data_docs_path"  # path of the run's page relative to the Data Docs site


def docs_url(relative_page: str) -> str:
    """Absolute when [api] base_url is set (links open from e-mails too), else relative to the api-server."""
    from airflow.configuration import conf

    base = (conf.get("api", "base_url", fallback="") or "").rstrip("/")
    return f"{base}{URL_PREFIX}{DOCS_ROUTE}/{relative_page.lstrip('/')}"


class DataDocsLink(BaseOperatorLink):
    """Evaluated by the worker when the task finishes (Airflow 3 stores the result as an XCom), so a run that
    failed validation still links to the page that says why."""

    name = "Data Docs"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        ti: Any = ti_key  # in Airflow 3 the worker passes its RuntimeTaskInstance here
        page = ti.xcom_pull(task_ids=ti.task_id, key=XCOM_DOCS_PATH) if hasattr(ti, "xcom_pull") else None
        return docs_url(page) if page else ""
