"""Retry topic names read back to (group, business topic) through the dump ingest and the linking (§2.4, §5.9):
V2 ``%RETRY%<group>+<topic>`` splits exactly; a V1 ``%RETRY%<group>_<topic>`` is a POP copy only when it carries
``1ST_POP_TIME``, so a remoting send-back copy of a group whose name ends in ``_<topic>`` keeps its whole group."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.spark

DS = "2026-11-27"


def _dump(topic: str, uniq: str, properties: dict[str, str], reconsume: int = 1) -> str:
    return json.dumps(
        {
            "topic": topic,
            "queueId": 0,
            "queueOffset": 3,
            "msgId": uniq,
            "offsetMsgId": "7F00000100002A9F0000000000011EF8",
            "bornTimestamp": 1795794900000,
            "storeTimestamp": 1795794905760,
            "reconsumeTimes": reconsume,
            "properties": {"UNIQ_KEY": uniq, **properties},
            "body": "{}",
        }
    )


LINES = [
    # 1: a V2 POP retry copy (enableRetryTopicV2): group and topic split on '+'
    _dump("%RETRY%GID_push_inventory+ORDER_EVENTS", "01AA", {"1ST_POP_TIME": "1795794901583", "PGROUP": "x"}),
    # 2: a V1 POP retry copy whose group is not configured: RETRY_TOPIC is absent on pop copies (§2.6)
    _dump("%RETRY%GID_ledger_PAYMENT_EVENTS", "01BB", {"1ST_POP_TIME": "1795794901583"}),
    # 3: a V1 POP retry copy that kept RETRY_TOPIC (a remoting POP consumer's message that was sent back before)
    _dump("%RETRY%GID_x_ORDERS", "01CC", {"1ST_POP_TIME": "1795794901583", "RETRY_TOPIC": "ORDERS"}),
    # 4: a remoting send-back copy of group GID_ORDERS consuming ORDERS: %RETRY%GID_ORDERS, RETRY_TOPIC=ORDERS
    _dump("%RETRY%GID_ORDERS", "01DD", {"RETRY_TOPIC": "ORDERS", "DELAY": "3", "REAL_TOPIC": "%RETRY%GID_ORDERS"}),
]


@pytest.fixture(scope="module")
def linked(spark: Any) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from rocketmq_retry.jobs.ingest import parse
    from rocketmq_retry.jobs.reconstruct.events import conform, link_identities

    rows = [("message-dump", "d.jsonl", i + 1, line, "UTC", None) for i, line in enumerate(LINES)]
    lines = spark.createDataFrame(
        rows, "source string, source_file string, line_no long, line string, tz string, group_hint string"
    )
    events = parse.events_of(parse.classify(lines, DS, day_zone="UTC")).withColumn("dt", F.lit(DS))
    ev = {r["msg_id"]: r for r in events.collect()}
    out = link_identities(conform(events, "UTC"), known_groups=()).collect()
    return {"events": ev, "linked": {r["msg_id"]: r for r in out}}


def test_the_dump_reads_a_v2_name_exactly(linked: dict[str, Any]) -> None:
    v2 = linked["events"]["01AA"]
    assert (v2["consumer_group"], v2["original_topic"], v2["queue_offset"]) == (
        "GID_push_inventory",
        "ORDER_EVENTS",
        3,
    )
    assert v2["detail"] == "1ST_POP_TIME=1795794901583"


def test_linking_strips_the_topic_of_pop_copies_only(linked: dict[str, Any]) -> None:
    got = {m: (r["consumer_group"], r["original_topic"]) for m, r in linked["linked"].items()}
    assert got["01AA"] == ("GID_push_inventory", "ORDER_EVENTS")
    assert got["01CC"] == ("GID_x", "ORDERS")  # a pop copy with RETRY_TOPIC: the topic suffix is stripped
    assert got["01DD"] == ("GID_ORDERS", "ORDERS")  # no 1ST_POP_TIME: a send-back copy, its group is whole
    # no RETRY_TOPIC and no configured group: the name cannot be split (KeyBuilder#parseGroup returns it whole)
    assert got["01BB"] == ("GID_ledger_PAYMENT_EVENTS", None)
