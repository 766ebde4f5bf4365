"""The "Data Docs" button on the validate task that opens the run's validation page, and Data Docs URLs under the
api-server's ``base_url``: what needs Airflow of the product's URLs (the rest, pure, is ``rocketmq_retry/urls.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperatorLink

from rocketmq_retry import urls

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey


def docs_url(relative_page: str) -> str:
    """Absolute when [api] base_url is set (links open from e-mails too), else relative to the api-server."""
    from airflow.configuration import conf

    return urls.docs_url(relative_page, conf.get("api", "base_url", fallback="") or "")


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
        page = ti.xcom_pull(task_ids=ti.task_id, key=urls.XCOM_DOCS_PATH)
        if not page:
            paths = ti.xcom_pull(task_ids=urls.RESOLVE_TASK)
            page = urls.run_page(paths["ds"]) if isinstance(paths, dict) and paths.get("ds") else None
        return docs_url(page) if page else ""
