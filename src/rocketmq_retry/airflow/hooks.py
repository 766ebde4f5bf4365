"""Hooks: the one place the DAG's operators reach Great Expectations and the warehouse."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook

if TYPE_CHECKING:
    from rocketmq_retry.config import Config
    from rocketmq_retry.validation.run import ValidationSummary


class ValidationHook(BaseHook):
    """Runs ``rocketmq_retry.validation.run`` (the same code as ``rocketmq-retry validate``) in the worker.

    Uses a local Spark session: validation reads one partition, and GE needs the DataFrames in this process.
    """

    conn_name_attr = "none"
    hook_name = "RocketMQ retry validation"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def get_conn(self) -> None:
        return None

    def validate(self, ds: str, warehouse: str, config: Config | str | None) -> ValidationSummary:
        from rocketmq_retry.validation.run import run

        return run(ds, warehouse, config)
