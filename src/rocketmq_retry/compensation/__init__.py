"""Compensation of dead-lettered business messages (DESIGN §2, §6, §8): a ledger that makes every
handler effect happen at most once per (consumer_group, msg_id), however runs are retried, backfilled or raced.

Modules: ``model`` (dead letters, states, outcomes), ``schema`` + ``migrations`` (the ledger table and its
Alembic history), ``ledger`` (registration, atomic claims with leases, outcomes), ``routing`` (handler routes
and business keys), ``handlers`` (python, http, sql), ``ratelimit``, ``deadletters`` (reading
``dead_letters/dt=D``), ``tasks`` (what the Airflow DAGs map), ``run`` and ``cli`` (the command line).
"""

from __future__ import annotations
