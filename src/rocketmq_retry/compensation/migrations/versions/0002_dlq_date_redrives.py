"""Remember which partition a dead letter came from (re-drive by date range needs it), its topic,
how often operators re-drove it and what the handler answered.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("compensation_ledger") as batch:
        batch.add_column(sa.Column("dlq_date", sa.String(10)))
        batch.add_column(sa.Column("original_topic", sa.String(255)))
        batch.add_column(sa.Column("redrives", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("result", sa.Text))
    op.create_index("ix_compensation_ledger_state_dlq_date", "compensation_ledger", ["state", "dlq_date"])
    op.create_index("ix_compensation_ledger_dlq_date", "compensation_ledger", ["dlq_date"])


def downgrade() -> None:
    op.drop_index("ix_compensation_ledger_dlq_date", "compensation_ledger")
    op.drop_index("ix_compensation_ledger_state_dlq_date", "compensation_ledger")
    with op.batch_alter_table("compensation_ledger") as batch:
        batch.drop_column("result")
        batch.drop_column("redrives")
        batch.drop_column("original_topic")
        batch.drop_column("dlq_date")
