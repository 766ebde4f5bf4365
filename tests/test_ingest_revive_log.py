"""The revive log topic's records (docs/ingest.md "POP checkpoints"): a dump line of ``rmq_sys_REVIVE_LOG_<cluster>``
becomes one POP_CHECKPOINT per offset its checkpoint covers or one POP_ACK per acked offset; a body that is no such
record quarantines its line with the reason. Lines shaped as the 5.2.0 sample's (PopCheckPoint / AckMsg JSON)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from rocketmq_retry.contract import EventType

DS = "2026-11-27"
TOPIC = "rmq_sys_REVIVE_LOG_DefaultCluster"


def _line(tag: str, body: str, offset: int, born: int, store: int) -> str:
    return json.dumps(
        {
            "dumpTopic": TOPIC,
            "topic": TOPIC,
            "queueId": 1,
            "queueOffset": offset,
            "msgId": f"x@{offset}@{tag}",
            "uniqKey": f"x@{offset}@{tag}",
            "bornTimestamp": born,
            "storeTimestamp": store,
            "storeHost": "/127.0.0.1:10911",
            "reconsumeTimes": 0,
            "tags": tag,
            "properties": {"TAGS": tag, "UNIQ_KEY": f"x@{offset}@{tag}"},
            "body": body,
        }
    )


CK = json.dumps(
    {
        "bm": 0,
        "bn": "broker-a",
        "c": "GID_simple_ledger",
        "d": [0, 3],
        "it": 10000,
        "n": 2,
        "pt": 1795794899910,
        "q": 2,
        "reviveTime": 1795794909910,
        "ro": 0,
        "so": 5,
        "t": "PAYMENT_EVENTS",
    }
)
ACK = json.dumps(
    {"ao": 8, "bn": "broker-a", "c": "GID_simple_ledger", "pt": 1795794899910, "q": 2, "so": 5, "t": "PAYMENT_EVENTS"}
)
LINES = [
    _line("ck", CK, 0, 1795794899911, 1795794909075),
    _line("ack", ACK, 1, 1795794899923, 1795794910079),
    _line("ck", "1-17", 2, 1795794899930, 1795794910080),  # not a PopCheckPoint
    _line(
        "ck",
        json.dumps({"c": "G", "t": "T", "q": 0, "pt": 1795794899910, "so": 1, "it": 1000, "n": 0}),
        3,
        1795794899931,
        1795794910081,
    ),
    _line("ackx", ACK, 4, 1795794899923, 1795794910079),
]


def _ts(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).replace(tzinfo=None)


@pytest.mark.spark
def test_revive_log_lines_become_checkpoint_and_ack_events(spark: Any) -> None:
    from rocketmq_retry.jobs.ingest import parse

    spark.conf.set("spark.sql.session.timeZone", "UTC")
    df = spark.createDataFrame(
        [("message-dump", "dumps/revive.jsonl", i, line, "UTC", None) for i, line in enumerate(LINES, 1)],
        "source string, source_file string, line_no long, line string, tz string, group_hint string",
    )
    classified = parse.classify(df, DS, day_zone="UTC").cache()
    lines = {r["line_no"]: (r["category"], r["reason"]) for r in classified.collect()}
    assert lines == {
        1: ("event", None),
        2: ("event", None),
        3: ("quarantined", "revive-log record: body is not a JSON object"),
        4: ("quarantined", "revive-log ck record without so, it or n >= 1"),
        5: ("quarantined", "revive-log record with tag ackx (not ck, ack or bAck)"),
    }
    cols = (
        "line_no",
        "event_type",
        "event_time",
        "consumer_group",
        "msg_id",
        "topic",
        "queue_id",
        "queue_offset",
        "tags",
        "broker",
        "detail",
    )
    got = sorted(tuple(r) for r in parse.events_of(classified).select(*cols).collect())
    ck = (EventType.POP_CHECKPOINT, _ts(1795794899910), "GID_simple_ledger", None, "PAYMENT_EVENTS", 2)
    ck_detail = "it=10000;reviveTime=1795794909910;so=5"
    assert got == [
        (1, *ck, 5, "ck", "broker-a", ck_detail),
        (1, *ck, 8, "ck", "broker-a", ck_detail),
        # the ack's own time is when the broker wrote it (bornTimestamp); pt names the checkpoint it answers
        (
            2,
            EventType.POP_ACK,
            _ts(1795794899923),
            "GID_simple_ledger",
            None,
            "PAYMENT_EVENTS",
            2,
            8,
            "ack",
            "broker-a",
            "pt=1795794899910;so=5",
        ),
    ]
    # two events of one line have two ids
    assert parse.events_of(classified).select("event_id").distinct().count() == 3


@pytest.mark.spark
def test_a_business_dump_line_keeps_its_queue_offset(spark: Any) -> None:
    from rocketmq_retry.jobs.ingest import parse

    line = json.dumps(
        {
            "topic": "PAYMENT_EVENTS",
            "queueId": 2,
            "queueOffset": 8,
            "msgId": "01C31BD72CF06C63030B1B41D100000001",
            "storeTimestamp": 1795794899000,
            "reconsumeTimes": 0,
            "properties": {"UNIQ_KEY": "01C31BD72CF06C63030B1B41D100000001"},
            "body": "{}",
        }
    )
    df = spark.createDataFrame(
        [("message-dump", "dumps/business.jsonl", 1, line, "UTC", None)],
        "source string, source_file string, line_no long, line string, tz string, group_hint string",
    )
    got = parse.events_of(parse.classify(df, DS, day_zone="UTC")).select("event_type", "queue_id", "queue_offset")
    assert [tuple(r) for r in got.collect()] == [(EventType.PUBLISHED, 2, 8)]
