"""The ledger table as the application sees it. Its history lives in ``migrations/versions``;
``tests/test_compensation_ledger.py`` checks that the migrated database matches this definition."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import CheckConstraint, Column, DateTime, Index, Integer, MetaData, String, Table, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from rocketmq_retry.compensation.model import REASON_MAX, State

TABLE_NAME = "compensation_ledger"
# Not Alembic's default "alembic_version": the ledger may share a database with Airflow or other apps.
VERSION_TABLE = "compensation_ledger_version"
STATE_CHECK = "state IN (" + ", ".join(f"'{s.value}'" for s in State) + ")"


class UTCDateTime(TypeDecorator[dt.datetime]):
    """Aware UTC datetimes in and out. SQLite keeps them as naive UTC text, so that lease comparisons,
    which the database does on strings there, compare like with like."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("ledger timestamps must be timezone-aware")
        value = value.astimezone(dt.UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


metadata = MetaData()

ledger = Table(
    TABLE_NAME,
    metadata,
    Column("consumer_group", String(255), primary_key=True),
    Column("msg_id", String(128), primary_key=True),
    Column("state", String(16), nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("handler", String(128)),
    Column("business_key", String(512)),
    Column("first_seen", UTCDateTime, nullable=False),
    Column("last_attempt_at", UTCDateTime),
    Column("completed_at", UTCDateTime),
    Column("last_error", Text),
    Column("airflow_run_id", String(250)),
    Column("claimed_by", String(255)),
    # Fencing token: only the holder of the current claim may record its outcome.
    Column("claim_token", String(36)),
    Column("lease_expires_at", UTCDateTime),
    # Revision 0002
    Column("dlq_date", String(10)),
    Column("original_topic", String(255)),
    Column("redrives", Integer, nullable=False, server_default="0"),
    Column("result", Text),
    # Revision 0003
    Column("reason", String(REASON_MAX)),
    Column("loops", Integer, nullable=False, server_default="0"),
    CheckConstraint(STATE_CHECK, name="ck_compensation_ledger_state"),
    Index("ix_compensation_ledger_state_dlq_date", "state", "dlq_date"),
    Index("ix_compensation_ledger_dlq_date", "dlq_date"),
    Index("ix_compensation_ledger_group_business_key", "consumer_group", "business_key"),
)
