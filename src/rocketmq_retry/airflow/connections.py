"""Airflow's connections for the compensation handlers: the lookup ``compensation.handlers.build_handler`` is handed
(a handler's ``conn_id``), so that only this package imports Airflow (DESIGN §3)."""

from __future__ import annotations

from rocketmq_retry.compensation.handlers import Connection
from rocketmq_retry.errors import ConfigError


def airflow_connection(conn_id: str) -> Connection:
    """The connection as the task's process sees it (metadata database, secrets backend, ``AIRFLOW_CONN_*``)."""
    from airflow.sdk import BaseHook

    try:
        return BaseHook.get_connection(conn_id)
    except Exception as exc:  # AirflowNotFoundException and friends: a config problem, not a transient one
        raise ConfigError(f"Airflow connection {conn_id!r}: {exc}") from None
