"""Registers what ``rocketmq_retry.airflow.plugin`` provides (Data Docs pages, the Data Docs extra link)."""

from __future__ import annotations

from rocketmq_retry.airflow.plugin import RocketMQRetryPlugin

__all__ = ["RocketMQRetryPlugin"]
