"""Alembic env for the ledger: always online, on the connection that ``database.upgrade`` passes in."""

from __future__ import annotations

from alembic import context

from rocketmq_retry.compensation.schema import VERSION_TABLE, metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only database.upgrade() drives these migrations
    raise RuntimeError("run ledger migrations through rocketmq_retry.compensation.database.upgrade()")

context.configure(
    connection=connection,
    target_metadata=metadata,
    version_table=VERSION_TABLE,
    # SQLite cannot ALTER most things; batch mode rebuilds the table when a revision needs it.
    render_as_batch=True,
)
with context.begin_transaction():
    context.run_migrations()
