"""Alembic environment of the compensation ledger (run through ``rocketmq_retry.compensation.database.upgrade``)."""
