"""Ground truth per date of a run over several dates (``<out>/_truth/``), derived from the lifecycle and hop truth
(:mod:`rocketmq_retry.simulate.truth`), so that what a date's reconstruction should say can be checked date by date.

- ``lifecycles_by_date.csv``: for each date ``d`` of the run and each lifecycle (consumer group, instance, message)
  with a true event on ``d`` (its business copy stored, a delivery, an engine hop, its final state) or still open at
  ``d``'s start, its state at the end of ``d``:

  ``date`` (YYYY-MM-DD in the config's timezone), ``lifecycle_id``, ``consumer_group``, ``instance``, ``msg_id``,
  ``topic``; ``opened_at``/``opened_at_ms`` (the business copy stored, where the lifecycle begins);
  ``open_at_start`` (``true`` when it began before ``d`` and had not ended by ``d``'s start); ``state`` (the data
  contract's vocabulary: ``CONSUMED``, ``DEAD_LETTERED``, ``DROPPED`` when it reached that state before ``d``'s end,
  else ``IN_RETRY``: still open, whether waiting for a redelivery or for its first); ``state_at``/``state_at_ms``
  (when it reached a final state; blank while ``IN_RETRY``); ``deliveries`` (deliveries begun before ``d``'s end),
  ``deliveries_on_date`` (of them, on ``d``), ``last_delivery_at``, ``last_reconsume_times`` (the last of them);
- ``dead_letters_by_date.csv``: one row per dead letter, under the date of its move to ``%DLQ%``:
  ``date``, ``lifecycle_id``, ``consumer_group``, ``msg_id``, ``topic``, ``dlq_topic``, ``dlq_offset_msg_id``,
  ``dlq_reconsume_times``, ``dead_lettered_at``/``dead_lettered_at_ms`` (the DLQ copy's store time),
  ``deliveries``, ``opened_date``.

A delivery counts on the date it began (its hop row's ``at``); a lifecycle is consumed when its successful delivery
returned (``final_at``), so a delivery begun at 23:59:59.990 that returns after midnight is consumed on the next date.
"""

from __future__ import annotations

import datetime as _dt
import pathlib
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rocketmq_retry.contract import DEAD_LETTERED, IN_RETRY
from rocketmq_retry.simulate.truth import HOP_COLUMNS, LIFECYCLE_COLUMNS, Truth, iso, write_csv

LIFECYCLE_BY_DATE_COLUMNS = (
    "date", "lifecycle_id", "consumer_group", "instance", "msg_id", "topic", "opened_at", "opened_at_ms",
    "open_at_start", "state", "state_at", "state_at_ms", "deliveries", "deliveries_on_date", "last_delivery_at",
    "last_reconsume_times",
)  # fmt: skip
DEAD_LETTER_BY_DATE_COLUMNS = (
    "date", "lifecycle_id", "consumer_group", "msg_id", "topic", "dlq_topic", "dlq_offset_msg_id",
    "dlq_reconsume_times", "dead_lettered_at", "dead_lettered_at_ms", "deliveries", "opened_date",
)  # fmt: skip

Day = tuple[_dt.date, int, int]  # a date and its [start, end) in epoch ms
_L = {name: i for i, name in enumerate(LIFECYCLE_COLUMNS)}
_H = {name: i for i, name in enumerate(HOP_COLUMNS)}


def write(folder: pathlib.Path, truth: Truth, days: Sequence[Day]) -> list[pathlib.Path]:
    by_date = lifecycles_by_date(truth.lifecycles, truth.hops, truth.opened, days)
    dead = dead_letters_by_date(truth.lifecycles, truth.opened, days)
    return [
        write_csv(folder / "lifecycles_by_date.csv", LIFECYCLE_BY_DATE_COLUMNS, by_date),
        write_csv(folder / "dead_letters_by_date.csv", DEAD_LETTER_BY_DATE_COLUMNS, dead),
    ]


def date_of(ms: int, days: Sequence[Day]) -> _dt.date | None:
    """The run's date holding ``ms``, or None outside the dates."""
    return next((day for day, start, end in days if start <= ms < end), None)


def lifecycles_by_date(
    lifecycles: Sequence[tuple[Any, ...]], hops: Sequence[tuple[Any, ...]], opened: dict[int, int], days: Sequence[Day]
) -> list[tuple[Any, ...]]:
    """Rows of ``lifecycles_by_date.csv``, by date then lifecycle id."""
    deliveries = _deliveries(hops)
    touched = _event_times(hops)
    out = []
    for day, start, end in days:
        for row in lifecycles:
            lid = row[_L["lifecycle_id"]]
            opened_at = opened[lid]
            final_at = row[_L["final_at_ms"]]
            final_at = None if final_at == "" else int(final_at)
            if opened_at >= end or (final_at is not None and final_at < start):
                continue  # not begun yet, or over before the date
            events = [opened_at, *touched[lid], *([final_at] if final_at is not None else [])]
            open_at_start = opened_at < start
            if not open_at_start and not any(start <= t < end for t in events):
                continue
            out.append(_row(day, start, end, row, opened_at, final_at, open_at_start, deliveries[lid]))
    return out


def _row(
    day: _dt.date,
    start: int,
    end: int,
    row: tuple[Any, ...],
    opened_at: int,
    final_at: int | None,
    open_at_start: bool,
    deliveries: list[tuple[int, int]],
) -> tuple[Any, ...]:
    done = final_at is not None and final_at < end
    state = row[_L["final_state"]] if done else IN_RETRY
    so_far = [d for d in deliveries if d[0] < end]
    return (
        day.isoformat(), row[_L["lifecycle_id"]], row[_L["consumer_group"]], row[_L["instance"]], row[_L["msg_id"]],
        row[_L["topic"]], iso(opened_at), opened_at, "true" if open_at_start else "false", state,
        iso(final_at) if done else "", final_at if done else "", len(so_far),
        sum(1 for at, _ in so_far if at >= start), iso(so_far[-1][0]) if so_far else "",
        so_far[-1][1] if so_far else "",
    )  # fmt: skip


def dead_letters_by_date(
    lifecycles: Sequence[tuple[Any, ...]], opened: dict[int, int], days: Sequence[Day]
) -> list[tuple[Any, ...]]:
    """Rows of ``dead_letters_by_date.csv``: dead letters moved within the run's dates, by date then lifecycle."""
    out = []
    for row in lifecycles:
        if row[_L["final_state"]] != DEAD_LETTERED:
            continue
        at = int(row[_L["final_at_ms"]])
        day = date_of(at, days)
        if day is None:
            continue  # moved after the last date (in the horizon's tail)
        lid = row[_L["lifecycle_id"]]
        opened_day = date_of(opened[lid], days)
        out.append(
            (
                day.isoformat(), lid, row[_L["consumer_group"]], row[_L["msg_id"]], row[_L["topic"]],
                row[_L["dlq_topic"]], row[_L["dlq_offset_msg_id"]], row[_L["dlq_reconsume_times"]], iso(at), at,
                row[_L["deliveries"]], opened_day.isoformat() if opened_day else "",
            )
        )  # fmt: skip
    out.sort(key=lambda r: (r[0], r[1]))
    return out


def _deliveries(hops: Sequence[tuple[Any, ...]]) -> dict[int, list[tuple[int, int]]]:
    """Per lifecycle, its deliveries (begun at, reconsumeTimes) in time order."""
    out: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for h in hops:
        if h[_H["kind"]] == "DELIVERY":
            out[h[_H["lifecycle_id"]]].append((h[_H["at_ms"]], h[_H["reconsume_times"]]))
    return out


def _event_times(hops: Sequence[tuple[Any, ...]]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for h in hops:
        out[h[_H["lifecycle_id"]]].append(h[_H["at_ms"]])
    return out
