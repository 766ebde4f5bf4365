"""Lifecycles that span dates: the run of D carries the look-back's lifecycles still open when the run before it
looked, settles them by D's evidence and horizon, and writes them in D's partition (docs/reconstruction.md, "Dates
and look-back"). Literal events over two UTC days; each date is reconstructed from the events it would read."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pyspark.sql import Row
from pyspark.sql import types as T
from pyspark.testing import assertDataFrameEqual

from rocketmq_retry.config import parse_config
from rocketmq_retry.jobs.reconstruct.events import EVENTS_SCHEMA
from rocketmq_retry.jobs.reconstruct.job import reconstruct

pytestmark = pytest.mark.spark

D1, D2 = "2026-11-19", "2026-11-20"
DAY1 = dt.datetime(2026, 11, 19)
DAY2 = dt.datetime(2026, 11, 20)
LONG = "1s 10s 1m 10m 1h 2h"  # levels 3.. = 1m, 10m, 1h, 2h, then clamped at 2h (§3.1)

CONFIG = parse_config(
    {
        "timezone": "UTC",
        "brokers": {"default": {}, "long": {"message_delay_level": LONG}},
        "groups": {
            g: {"broker": "long", "max_reconsume_times": 16}
            for g in ("silent_cross", "silent_late", "silent_early", "seen_late", "open_at_end", "clock")
        },
    }
)


class Events:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, event_type: str, at: dt.datetime, group: str, msg: str, r: int | None, **kw: Any) -> None:
        row: dict[str, Any] = {f.name: None for f in EVENTS_SCHEMA.fields}
        n = len(self.rows) + 1
        row.update(event_id=f"e{n:03d}", event_time=at, source="trace", source_file="f", line_no=n,
                   event_type=event_type, consumer_group=group, msg_id=msg, reconsume_times=r,
                   dt=at.strftime("%Y-%m-%d"))  # fmt: skip
        row.update(kw)
        self.rows.append(row)

    def spring_failures(self, start: dt.datetime, group: str, msg: str, failures: int) -> dt.datetime:
        """``failures`` failed deliveries that only a Spring WARN line and the topic dumps record (no trace: a
        success leaves no line), each redelivered after its level's delay; returns the last failure's time."""
        at = start
        for r in range(failures):
            level = min(3 + r, 6)
            delay = {3: 60, 4: 600, 5: 3600, 6: 7200}[level]
            self.add("CONSUME_FAILED", at, group, msg, r, source="spring-listener")
            self.add("SEND_BACK", at + dt.timedelta(milliseconds=5), group, msg, r + 1, source="message-dump",
                     topic="SCHEDULE_TOPIC_XXXX", delay_level=level, queue_id=level - 1,
                     detail=f"REAL_TOPIC=%RETRY%{group}")  # fmt: skip
            at = at + dt.timedelta(seconds=delay, milliseconds=5)
            self.add("RETRY_ENQUEUED", at, group, msg, r + 1, source="message-dump", topic=f"%RETRY%{group}",
                     delay_level=level, queue_id=0, detail=f"REAL_TOPIC=%RETRY%{group}")  # fmt: skip
            at = at + dt.timedelta(milliseconds=20)
        return at

    def trace(self, at: dt.datetime, group: str, msg: str, r: int, ok: bool) -> None:
        self.add("DELIVERED", at, group, msg, r)
        self.add("CONSUME_OK" if ok else "CONSUME_FAILED", at + dt.timedelta(milliseconds=10), group, msg, None)


def estate() -> Events:
    e = Events()
    # Four failures (levels 1m, 10m, 1h, 2h); the redelivery due at 23:59:10 on D1, its %RETRY% copy stored
    # then, is consumed without a line. The rule settles it when it is overdue (a minute later, --settle-after):
    # after D1's end of observation, so D1 cannot know; D2, which has no event of it at all, does.
    e.spring_failures(DAY1.replace(hour=20, minute=48, second=10), "silent_cross", "M-cross", 4)
    # The same, due at 00:30 on D2: the %RETRY% copy is D2's, the consumption silent.
    e.spring_failures(DAY1.replace(hour=21, minute=19), "silent_late", "M-late", 4)
    # The same path earlier in the day: due at 12:11 on D1, overdue a minute later, settled by D1 itself.
    e.spring_failures(DAY1.replace(hour=9), "silent_early", "M-early", 4)
    # Failed at 23:40 and consumed at 23:41 on D1, both traced: settled on D1.
    e.trace(DAY1.replace(hour=23, minute=40), "seen_late", "M-seen", 0, ok=False)
    e.trace(DAY1.replace(hour=23, minute=41), "seen_late", "M-seen", 1, ok=True)
    # Redelivery due at 00:11 on the day after D2: still retrying when D2's observation ends.
    e.spring_failures(DAY2.replace(hour=21), "open_at_end", "M-open", 4)
    # Each day's last event: the end of observation of each run.
    e.trace(DAY1.replace(hour=23, minute=59), "clock", "M-clock1", 0, ok=True)
    e.trace(DAY2.replace(hour=23, minute=59), "clock", "M-clock2", 0, ok=True)
    return e


def run(spark: Any, day: str) -> dict[str, list[Row]]:
    """Reconstruct ``day`` from the events its run reads: its own partition and the earlier one (the look-back)."""
    rows = [r for r in estate().rows if r["dt"] <= day]
    schema = T.StructType([*EVENTS_SCHEMA.fields, T.StructField("dt", T.StringType())])
    out = reconstruct(spark, spark.createDataFrame(rows, schema), CONFIG, day)
    try:
        return {
            "lifecycles": out.lifecycles.collect(),
            "transitions": out.transitions.collect(),
            "dead_letters": out.dead_letters.collect(),
        }
    finally:
        out.release()


@pytest.fixture(scope="module")
def days(spark: Any) -> dict[str, dict[str, list[Row]]]:
    return {D1: run(spark, D1), D2: run(spark, D2)}


def states(out: dict[str, list[Row]]) -> list[Row]:
    return [
        Row(consumer_group=r["consumer_group"], deliveries=r["deliveries"], final_state=r["final_state"])
        for r in out["lifecycles"]
        if r["consumer_group"] != "clock"
    ]


def test_the_first_date_leaves_the_silent_redelivery_in_retry(days: dict[str, dict[str, list[Row]]]) -> None:
    assertDataFrameEqual(
        states(days[D1]),
        [
            Row(consumer_group="silent_cross", deliveries=4, final_state="IN_RETRY"),
            Row(consumer_group="silent_late", deliveries=4, final_state="IN_RETRY"),
            Row(consumer_group="silent_early", deliveries=5, final_state="CONSUMED"),
            Row(consumer_group="seen_late", deliveries=2, final_state="CONSUMED"),
        ],
    )


def test_the_next_date_carries_and_settles_it_and_only_it(days: dict[str, dict[str, list[Row]]]) -> None:
    # silent_early and seen_late were settled on D1 and have no event on D2: D2 does not write them again
    assertDataFrameEqual(
        states(days[D2]),
        [
            Row(consumer_group="silent_cross", deliveries=5, final_state="CONSUMED"),
            Row(consumer_group="silent_late", deliveries=5, final_state="CONSUMED"),
            Row(consumer_group="open_at_end", deliveries=4, final_state="IN_RETRY"),
        ],
    )
    [cross] = [r for r in days[D2]["lifecycles"] if r["consumer_group"] == "silent_cross"]
    # the whole lifecycle, read through the look-back
    assert cross["first_seen"] == DAY1.replace(hour=20, minute=48, second=10)


def test_a_carried_lifecycle_brings_all_its_hops(days: dict[str, dict[str, list[Row]]]) -> None:
    def path(day: str) -> list[tuple[int, str]]:
        rows = (r for r in days[day]["transitions"] if r["consumer_group"] == "silent_cross")
        return sorted((r["hop"], r["to_state"]) for r in rows)

    retry = ["FAILED", "SENT_BACK", "SCHEDULED", "READY"]
    # published -> delivered, then per failure its four hops and the redelivery; the silent redelivery that
    # settles the lifecycle is counted but not drawn (nothing shows when it happened)
    expected = list(enumerate(["DELIVERED", *[*retry, "DELIVERED"] * 3, *retry]))
    assert path(D1) == path(D2) == expected


def test_no_dead_letter_is_written_twice(days: dict[str, dict[str, list[Row]]]) -> None:
    assert days[D1]["dead_letters"] == days[D2]["dead_letters"] == []


def test_without_the_look_back_nothing_is_carried(spark: Any) -> None:
    rows = [r for r in estate().rows if r["dt"] == D2]
    schema = T.StructType([*EVENTS_SCHEMA.fields, T.StructField("dt", T.StringType())])
    out = reconstruct(spark, spark.createDataFrame(rows, schema), CONFIG, D2)
    try:
        # silent_late's %RETRY% copy is on D2: only the lifecycle without any event on D2 is lost
        groups = sorted(r["consumer_group"] for r in out.lifecycles.collect())
        assert groups == ["clock", "open_at_end", "silent_late"]
    finally:
        out.release()
