"""Reading ``<warehouse>/dead_letters/dt=D/`` (DESIGN §4) without Spark: it is small, and the compensation
tasks must run on any Airflow worker."""

from __future__ import annotations

import datetime as dt
import os
import pathlib
from typing import Any

from rocketmq_retry import contract
from rocketmq_retry.compensation.model import DeadLetter
from rocketmq_retry.dates import partition_date
from rocketmq_retry.errors import InputError
from rocketmq_retry.warehouse.partitions import committed

REQUIRED = contract.KEY


def check_date(value: str) -> str:
    return partition_date(value)


def partition_path(warehouse: str | os.PathLike[str], date: str) -> pathlib.Path:
    """The committed ``dead_letters`` partition: never one half-swapped by a reconstruct run that died mid-commit
    (it is rolled forward or refused first, warehouse/partitions.py)."""
    return committed(warehouse, "dead_letters", check_date(date))


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _utc(value: Any) -> dt.datetime | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
    return None


def _table(warehouse: str | os.PathLike[str], date: str) -> Any:
    import pyarrow.parquet as pq

    path = partition_path(warehouse, date)
    if not path.is_dir():
        raise InputError(f"no dead_letters partition at {path} (run `rocketmq-retry reconstruct --date {date}` first)")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for unreadable files
        raise InputError(f"cannot read dead letters in {path}: {exc}") from None
    missing = [c for c in REQUIRED if c not in table.column_names]
    if missing and table.num_rows:
        raise InputError(f"{path}: dead_letters has no column {', '.join(missing)} (DESIGN §4)")
    return table


def read_dead_letters(warehouse: str | os.PathLike[str], date: str) -> list[DeadLetter]:
    """Every dead letter of the partition that compensation may act on, one per (consumer_group, msg_id), in a
    stable order. A row the reconstruction did not mark ``compensable`` (its DLQ arrival was neither observed nor
    reached by its group's threshold after an observed failure) is held for review (``held_for_review``)."""
    return [letter for letter, reason in _letters(warehouse, date) if reason is None]


def held_for_review(warehouse: str | os.PathLike[str], date: str) -> list[tuple[DeadLetter, str]]:
    """The partition's dead letters that compensation leaves alone, each with the reason it is held."""
    return [(letter, reason) for letter, reason in _letters(warehouse, date) if reason is not None]


def _letters(warehouse: str | os.PathLike[str], date: str) -> list[tuple[DeadLetter, str | None]]:
    table = _table(warehouse, date)
    if table.num_rows and "compensable" not in table.column_names:
        # Written before dead letters said whether their group and DLQ arrival were established: acting on them
        # could compensate the wrong group (a wrong compensation is worse than a missed one).
        raise InputError(
            f"{partition_path(warehouse, date)}: dead_letters has no column compensable; re-run "
            f"`rocketmq-retry reconstruct --date {date}` before compensating this date"
        )
    seen: dict[tuple[str, str], tuple[DeadLetter, str | None]] = {}
    for row in table.to_pylist():
        group, msg_id = _text(row.get("consumer_group")), _text(row.get("msg_id"))
        if not group or not msg_id:
            continue  # cannot be keyed in the ledger; the validation suite flags such rows
        reconsume = row.get("reconsume_times")
        letter = DeadLetter(
            consumer_group=group,
            msg_id=msg_id,
            dlq_date=date,
            original_topic=_text(row.get("original_topic")),
            dlq_at=_utc(row.get("dlq_at")),
            reconsume_times=None if reconsume is None else int(reconsume),
            keys=_text(row.get("keys")),
            tags=_text(row.get("tags")),
            business_key=_text(row.get("business_key")),
            body=_text(row.get("body")),
        )
        reason = None if row.get("compensable") else (_text(row.get("review_reason")) or "not established")
        # The contract promises one row per key; should a writer break it, keep the earliest DLQ arrival.
        key = (group, msg_id)
        previous = seen.get(key)
        if previous is None or (letter.dlq_at and previous[0].dlq_at and letter.dlq_at < previous[0].dlq_at):
            seen[key] = (letter, reason)
    return [seen[k] for k in sorted(seen)]
