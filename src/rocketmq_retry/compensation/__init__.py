"""Compensation of dead-lettered business messages (DESIGN §2, §6, §8): a ledger that makes every
handler effect happen at most once per (consumer_group, msg_id), however runs are retried, backfilled or raced.

Modules: ``model`` (dead letters, states, outcomes, the ledger's records), ``schema`` + ``migrations`` (the ledger
table and its Alembic history), ``database`` (the ledger URL, engine, database clock and migration runs), ``ledger``
(registration, atomic claims with leases, outcomes), ``routing`` (the one rule that routes a dead letter to its
handler, also evaluated by the reconstruction job), ``handlers`` (python, http, sql), ``ratelimit``, ``redact``,
``heartbeat`` (renewing the leases a batch holds), ``deadletters`` (reading ``dead_letters/dt=D``), ``batches``
(plan, compensate one batch, summarize: what the Airflow DAGs map and the CLI loops over), ``run`` and ``cli``
(the command line).
"""

from __future__ import annotations
