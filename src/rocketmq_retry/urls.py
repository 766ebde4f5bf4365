"""The product's URLs and Data Docs paths, and the names by which the daily DAG's tasks find each other's XComs:
one place for them, below every room that builds a link (the plugin's routes and pages, the Data Docs renderer,
the validation run, the explorer). No Airflow here: ``airflow/links.py`` adds what needs Airflow (the "Data Docs"
button, the api-server's ``base_url``)."""

from __future__ import annotations

import re
import urllib.parse

URL_PREFIX = "/rocketmq-retry"
DOCS_ROUTE = "/data-docs"
OPS_ROUTE = "/ops"
API_ROUTE = "/api/v1"  # the pages as JSON (airflow/pages/api.py)
XCOM_DOCS_PATH = "data_docs_path"  # path of the run's page relative to the Data Docs site
RESOLVE_TASK = "resolve_run"  # the daily DAG's task whose XCom names the run's partition date and paths
RUNS_DIR = "runs"  # the Data Docs site's folder of per-date run pages (and their JSON results)
RUN_PAGE_RE = re.compile(rf"{RUNS_DIR}/dt=(\d{{4}}-\d{{2}}-\d{{2}})\.html")


def run_file(ds: str, suffix: str = ".html") -> str:
    """A date's file in the site's runs folder: its page (``.html``) or its result (``.json``)."""
    return f"{RUNS_DIR}/dt={ds}{suffix}"


def run_page(ds: str) -> str:
    """The run's validation page, relative to the Data Docs site (what ``validation/run.py`` writes)."""
    return run_file(ds)


def run_url(ds: str) -> str:
    """The operator's overview of one date (the plugin's pages)."""
    return f"{URL_PREFIX}{OPS_ROUTE}/runs/{urllib.parse.quote(ds, safe='')}"


def message_url(msg_id: str, group: str | None = None) -> str:
    """The operator's page of one message; msg_id and group come from logs, so both are percent-encoded."""
    url = f"{URL_PREFIX}{OPS_ROUTE}/messages/{urllib.parse.quote(msg_id, safe='')}"
    return f"{url}?{urllib.parse.urlencode({'group': group})}" if group else url


def docs_url(relative_page: str, base_url: str = "") -> str:
    """A Data Docs page's URL: absolute under ``base_url`` (the api-server's [api] base_url), else relative."""
    return f"{base_url.rstrip('/')}{URL_PREFIX}{DOCS_ROUTE}/{relative_page.lstrip('/')}"
