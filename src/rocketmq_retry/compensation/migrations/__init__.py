"""Alembic environment of the compensation ledger (run through ``rocketmq_retry.compensation.ledger.upgrade``)."""
