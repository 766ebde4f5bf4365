"""The ledger as issue 7 first specified it: key, state, attempts, handler, business key, times, lease.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from rocketmq_retry.compensation.schema import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_STATES = "state IN ('PENDING', 'CLAIMED', 'DONE', 'FAILED', 'GAVE_UP', 'SKIPPED')"


def upgrade() -> None:
    op.create_table(
        "compensation_ledger",
        sa.Column("consumer_group", sa.String(255), primary_key=True),
        sa.Column("msg_id", sa.String(128), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("handler", sa.String(128)),
        sa.Column("business_key", sa.String(512)),
        sa.Column("first_seen", UTCDateTime, nullable=False),
        sa.Column("last_attempt_at", UTCDateTime),
        sa.Column("completed_at", UTCDateTime),
        sa.Column("last_error", sa.Text),
        sa.Column("airflow_run_id", sa.String(250)),
        sa.Column("claimed_by", sa.String(255)),
        sa.Column("claim_token", sa.String(36)),
        sa.Column("lease_expires_at", UTCDateTime),
        sa.CheckConstraint(_STATES, name="ck_compensation_ledger_state"),
    )


def downgrade() -> None:
    op.drop_table("compensation_ledger")
