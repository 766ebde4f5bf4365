"""Outcome reasons and re-drive loops: each row's last outcome as a normalised ``reason`` beside ``last_error``,
the count of earlier dates on which its business key was compensated (``loops``), the state HELD_FOR_REVIEW
for a key that looped compensation.max_loops times, and the index the loop lookup reads.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_CHECK = "ck_compensation_ledger_state"
_STATES = ("PENDING", "CLAIMED", "DONE", "FAILED", "GAVE_UP", "SKIPPED")


def _states(*extra: str) -> str:
    return "state IN (" + ", ".join(f"'{s}'" for s in (*_STATES, *extra)) + ")"


def upgrade() -> None:
    with op.batch_alter_table("compensation_ledger") as batch:
        batch.add_column(sa.Column("reason", sa.String(128)))
        batch.add_column(sa.Column("loops", sa.Integer, nullable=False, server_default="0"))
        batch.drop_constraint(_CHECK, type_="check")
        batch.create_check_constraint(_CHECK, sa.text(_states("HELD_FOR_REVIEW")))
    op.create_index(
        "ix_compensation_ledger_group_business_key", "compensation_ledger", ["consumer_group", "business_key"]
    )


def downgrade() -> None:
    op.drop_index("ix_compensation_ledger_group_business_key", "compensation_ledger")
    with op.batch_alter_table("compensation_ledger") as batch:
        batch.drop_constraint(_CHECK, type_="check")
        batch.create_check_constraint(_CHECK, sa.text(_states()))
        batch.drop_column("loops")
        batch.drop_column("reason")
