"""The operator's pages inside the Airflow UI (``app.create_pages_app``), mounted by the plugin under
``/rocketmq-retry/ops``."""

from __future__ import annotations

from rocketmq_retry.airflow.pages.app import OPS_ROUTE, create_pages_app

__all__ = ["OPS_ROUTE", "create_pages_app"]
