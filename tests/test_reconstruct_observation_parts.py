"""The observations in two stored parts (``reconstruct.events.observation_parts``): the publications no group is
named on apart, every other row through the r-filling windows. Together the parts are the observations, row for
row (the same as every row through the windows), and a publication that names its group stays with its
lifecycle."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from rocketmq_retry.jobs.reconstruct import events
from rocketmq_retry.jobs.reconstruct.events import linked_events, observation_parts

DAY = "2026-11-20"
T0 = dt.datetime(2026, 11, 20, 8, 0)
COLUMNS = "event_id string, event_type string, event_time timestamp, source string, consumer_group string, "
COLUMNS += "msg_id string, topic string, reconsume_times int, detail string, dt string"
ROWS = [
    # a publication, twice, from two sources; one names a group (none of the formats does today: it must still
    # stay with its lifecycle)
    ("p1", "PUBLISHED", T0, "trace", None, "M1", "ORDERS", None, None, DAY),
    ("p2", "PUBLISHED", T0, "message-dump", None, "M1", "ORDERS", None, None, DAY),
    ("p3", "PUBLISHED", T0, "trace", "GID_a", "M2", "ORDERS", None, None, DAY),
    # a delivery and its outcome without r (a trace SubAfter): the windows fill it
    ("d1", "DELIVERED", T0 + dt.timedelta(seconds=1), "trace", "GID_a", "M1", "ORDERS", 0, "requestId=R1", DAY),
    ("o1", "CONSUME_FAILED", T0 + dt.timedelta(seconds=2), "trace", "GID_a", "M1", None, None, "requestId=R1", DAY),
    # a retry copy of M1 (the next delivery's r) and a dead letter
    ("r1", "RETRY_ENQUEUED", T0 + dt.timedelta(seconds=12), "message-dump", None, "M1", "%RETRY%GID_a", 1, None, DAY),
    ("q1", "PUBLISHED", T0 + dt.timedelta(seconds=40), "message-dump", None, "M1", "%DLQ%GID_a", 1, None, DAY),
]


def test_the_parts_are_the_observations(spark: Any) -> None:
    linked = linked_events(spark.createDataFrame(ROWS, COLUMNS), "UTC", ("GID_a",))
    about, published = observation_parts(linked, DAY)
    assert sorted(r.event_id for r in published.collect()) == ["p1", "p2"]
    assert sorted(r.event_id for r in about.collect()) == ["d1", "o1", "p3", "q1", "r1"]
    assert about.columns == published.columns
    # every row through the windows, as before the split: the same rows, the same values
    every_row = events._classified(linked, DAY, (), None, None, windows=True)
    assertDataFrameEqual(about.unionByName(published), every_row)
    # the windows still fill the outcome's r from its delivery
    filled = about.where(F.col("event_id") == "o1").select("kind", "reconsume_times", "attempt").collect()
    assert [tuple(r) for r in filled] == [("FAIL", 0, 0)]
