"""The compensation ledger, read only: never created, never migrated (as ``compensation list|show`` open it).

A missing SQLite ledger file means nothing was compensated with this config and warehouse yet: the read layer
then reports compensable dead letters as NOT_REGISTERED instead of failing. A ledger at another schema revision
is an error naming the migrate command (``Ledger.open(migrate=False)``).
"""

from __future__ import annotations

import datetime as dt
import pathlib
from collections.abc import Iterable
from typing import Any

from sqlalchemy import func, select, tuple_
from sqlalchemy.engine import make_url

from rocketmq_retry.compensation.database import resolve_ledger_url
from rocketmq_retry.compensation.ledger import Ledger, in_range
from rocketmq_retry.compensation.schema import ledger as ledger_table
from rocketmq_retry.config import Config
from rocketmq_retry.explore.model import CompensationRecord

# Columns the dead-letter table shows; the story reads the whole row.
STATE_COLUMNS = (
    "consumer_group", "msg_id", "state", "attempts", "handler", "last_attempt_at", "last_error", "completed_at",
    "reason", "loops",
)  # fmt: skip
_TIMES = ("last_attempt_at", "completed_at")
_CHUNK = 400


def _utc(value: Any) -> dt.datetime | None:
    if not isinstance(value, dt.datetime):
        return None
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


class LedgerReader:
    """Lazily opened on first use; ``available`` is False when there is no ledger to read."""

    def __init__(self, config: Config, warehouse: pathlib.Path) -> None:
        self._url = resolve_ledger_url(config.compensation.ledger_url, warehouse)
        self._config = config
        self._ledger: Ledger | None = None
        self._checked = False

    @property
    def url(self) -> str:
        return make_url(self._url).render_as_string(hide_password=True)

    def _open(self) -> Ledger | None:
        if self._checked:
            return self._ledger
        parsed = make_url(self._url)
        database = parsed.database or ""
        if parsed.get_backend_name() == "sqlite" and not pathlib.Path(database).is_file():
            # Connecting would create the file: looking must leave no trace.
            self._checked = True
            return None
        comp = self._config.compensation
        self._ledger = Ledger.open(
            self._url, lease_seconds=comp.lease_seconds, max_attempts=comp.max_attempts, migrate=False
        )
        self._checked = True
        return self._ledger

    @property
    def available(self) -> bool:
        return self._open() is not None

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
        self._ledger = None
        self._checked = False

    def states_in_range(self, date_from: str, date_to: str) -> dict[str, list[Any]]:
        """STATE_COLUMNS of every row whose dead-letter date is in the range, column-wise (for DuckDB)."""
        out: dict[str, list[Any]] = {c: [] for c in STATE_COLUMNS}
        ledger = self._open()
        if ledger is None:
            return out
        t = ledger_table.c
        stmt = select(*(t[c] for c in STATE_COLUMNS)).where(t.dlq_date >= date_from, t.dlq_date <= date_to)
        with ledger.engine.connect() as conn:
            for row in conn.execute(stmt):
                for name, value in zip(STATE_COLUMNS, row, strict=True):
                    out[name].append(_utc(value) if name in _TIMES else value)
        return out

    def fingerprint(self, date_from: str, date_to: str) -> tuple[Any, ...]:
        """What changes whenever a row of the range does: rows per state, attempts, re-drives and the latest
        attempt and completion (every ledger transition moves one of them). One indexed aggregate, so a caller may
        keep the rows it loaded while the fingerprint stays the same."""
        ledger = self._open()
        if ledger is None:
            return ()
        t = ledger_table.c
        stmt = (
            select(t.state, func.count(), func.sum(t.attempts), func.sum(t.redrives), func.max(t.last_attempt_at),
                   func.max(t.completed_at), func.max(t.lease_expires_at))
            .where(t.dlq_date >= date_from, t.dlq_date <= date_to)
            .group_by(t.state)
            .order_by(t.state)
        )  # fmt: skip
        with ledger.engine.connect() as conn:
            return tuple(tuple(str(v) for v in row) for row in conn.execute(stmt))

    def states_of(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """STATE_COLUMNS of the rows with these (consumer_group, msg_id) keys; absent keys are absent."""
        wanted = sorted(set(keys))
        ledger = self._open()
        if ledger is None or not wanted:
            return {}
        t = ledger_table.c
        out: dict[tuple[str, str], dict[str, Any]] = {}
        with ledger.engine.connect() as conn:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                stmt = select(*(t[c] for c in STATE_COLUMNS)).where(tuple_(t.consumer_group, t.msg_id).in_(chunk))
                for row in conn.execute(stmt).mappings():
                    record = {c: row[c] for c in STATE_COLUMNS}
                    for name in _TIMES:
                        record[name] = _utc(record[name])
                    out[(row["consumer_group"], row["msg_id"])] = record
        return out

    def reason_counts(
        self, date_from: str | None, date_to: str | None, consumer_group: str | None = None
    ) -> list[tuple[str, int]]:
        """(reason, rows) of the ledger rows whose dead-letter date is in the range (one group or all), most rows
        first; rows without an outcome yet (PENDING, CLAIMED) are left out. Empty without a ledger."""
        ledger = self._open()
        if ledger is None:
            return []
        t = ledger_table.c
        stmt = in_range(
            select(t.reason, func.count()).where(t.reason.is_not(None)).group_by(t.reason),
            date_from,
            date_to,
            consumer_group,
        )
        with ledger.engine.connect() as conn:
            counts = [(str(reason), int(n)) for reason, n in conn.execute(stmt)]
        return sorted(counts, key=lambda c: (-c[1], c[0]))

    def record(self, consumer_group: str, msg_id: str) -> CompensationRecord | None:
        ledger = self._open()
        if ledger is None:
            return None
        row = ledger.get(consumer_group, msg_id)
        if row is None:
            return None
        return CompensationRecord(
            state=row.state.value,
            attempts=row.attempts,
            redrives=row.redrives,
            handler=row.handler,
            business_key=row.business_key,
            dlq_date=row.dlq_date,
            first_seen=row.first_seen,
            last_attempt_at=row.last_attempt_at,
            completed_at=row.completed_at,
            last_error=row.last_error,
            result=row.result,
            airflow_run_id=row.airflow_run_id,
            reason=row.reason,
            loops=row.loops,
        )
