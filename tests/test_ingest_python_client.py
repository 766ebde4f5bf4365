"""Literal lines of the Python SDK's log (format ``rocketmq-python-client``, §5.7) -> exactly the expected events,
ignored kinds, quarantine and bindings. The lines are the real 5.2.0 proxy sample's (tests/data/rocketmq-5.2.0-proxy)
where it has the statement, else the SDK 5.1.2 f-string filled with the sample's values."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pyspark.sql import Row

pytestmark = pytest.mark.spark

DS = "2026-11-27"
ID = "01C31BD72CF06C63030B1B41D000000000"
CID = "vm@25128@0@dn645ntkahk6"
LINES = [
    # 1: route update of a push consumer: binds its group to the topic
    f"2026-11-27 15:54:42,468 [INFO] PUSH_CONSUMER:GID_push_inventory, client_id:{CID} update topic:ORDER_EVENTS "
    "route, route info: message_queues:(broker-a.ORDER_EVENTS.0, broker-a.ORDER_EVENTS.1)",
    # 2: heartbeat: binds the group to the instance's every topic
    f"2026-11-27 15:54:43,529 [INFO] PUSH_CONSUMER:GID_push_inventory, client_id:{CID} send heartbeat to "
    "127.0.0.1:8081 success.",
    # 3: PY-C1, the sample's line
    f"2026-11-27 15:54:57,055 [ERROR] message listener raised an exception while consuming messages, topic: "
    f"ORDER_EVENTS, message_id: {ID}, downstream unavailable for key=THROW-ORD1006",
    # 4-5: PY-C1 whose str(e) holds a line break: the second line continues the record
    f"2026-11-27 15:54:58,001 [ERROR] message listener raised an exception while consuming messages, topic: "
    f"ORDER_EVENTS, message_id: {ID}, Expecting value: line 1 column 1 (char 0)",
    "  while decoding order ORD-1007",
    # 6: PY-C2
    f"2026-11-27 15:54:58,100 [ERROR] message is corrupted for consumption, prepare to discard it, topic: "
    f"ORDER_EVENTS, message_id: {ID}",
    # 7: PY-C4
    f"2026-11-27 15:54:58,200 [ERROR] [BUG]consume fifo raise exception, topic: ORDER_STATUS_FIFO, message_id: "
    f"{ID}, boom",
    # 8: PY-C5, the sample's line
    "2026-11-27 15:55:07,245 [INFO] forward message to dead letter queue successfully, consumerGroup: "
    "GID_fifo_state_machine, topic: ORDER_STATUS_FIFO, message_id: 01C31BD72CF06C63030B1B41D500000014",
    # 9: PY-C6
    f"2026-11-27 15:55:07,300 [ERROR] discard message raise exception, topic: ORDER_STATUS_FIFO, message_id: {ID}, "
    "<AioRpcError of RPC that terminated with: status = StatusCode.UNAVAILABLE>",
    # 10: PY-P1 after the producer's __str__
    "2026-11-27 15:55:08,000 [ERROR] PRODUCER client_id:vm@25347@0@dn645p2 failed to send message to "
    f"127.0.0.1:8081, because of run out of attempt times, topic:ORDER_EVENTS, message_id:{ID},  message_type:1, "
    "attempt:4",
    # 11: PY-C1 cut short (a file collected while written): the statement's prefix, not its pattern
    "2026-11-27 15:55:09,000 [ERROR] message listener raised an exception while consuming messages, topic: ORD",
    # 12: the FIFO listener's exception names no message: noise, counted under its kind
    "2026-11-27 15:55:10,000 [ERROR] consume message in fifo raise exception, boom",
    # 13: the sample's network-namespace noise
    "2026-11-27 15:55:11,000 [ERROR] get local ip exception: [Errno 101] Network is unreachable",
    # 14: logging's WARNING level
    "2026-11-27 15:55:12,000 [WARNING] PUSH_CONSUMER:GID_push_inventory, client_id:x is not running, can't shutdown",
    # 15: a damaged head: a timestamp without its level
    "2026-11-27 15:55:13,000 message listener raised",
]


@pytest.fixture(scope="module")
def parsed(spark: Any) -> dict[str, list[Row]]:
    from rocketmq_retry.jobs.ingest import parse

    rows = [("rocketmq-python-client", "py.log", i + 1, line, "UTC", None) for i, line in enumerate(LINES)]
    lines = spark.createDataFrame(
        rows, "source string, source_file string, line_no long, line string, tz string, group_hint string"
    )
    classified = parse.classify(lines, DS, day_zone="UTC").cache()
    groups = parse.line_groups(classified)
    out = {
        "events": parse.events_of(classified).collect(),
        "lines": classified.select("line_no", "category", "kind", "reason").collect(),
        "bindings": parse.bindings_of(groups).collect(),
    }
    classified.unpersist()
    return out


def t(s: str) -> dt.datetime:
    return dt.datetime.fromisoformat(s)


def test_python_statements_are_events(parsed: dict[str, list[Row]]) -> None:
    cols = ("line_no", "event_type", "event_time", "consumer_group", "msg_id", "topic", "status_code", "detail")
    got = sorted(tuple(r[c] for c in cols) for r in parsed["events"])
    assert got == [
        (3, "CONSUME_FAILED", t("2026-11-27 15:54:57.055"), None, ID, "ORDER_EVENTS", "EXCEPTION", None),
        (4, "CONSUME_FAILED", t("2026-11-27 15:54:58.001"), None, ID, "ORDER_EVENTS", "EXCEPTION", None),
        (6, "CONSUME_FAILED", t("2026-11-27 15:54:58.100"), None, ID, "ORDER_EVENTS", None, "corrupted"),
        (7, "CONSUME_FAILED", t("2026-11-27 15:54:58.200"), None, ID, "ORDER_STATUS_FIFO", "EXCEPTION", None),
        (
            8,
            "DEAD_LETTERED",
            t("2026-11-27 15:55:07.245"),
            "GID_fifo_state_machine",
            "01C31BD72CF06C63030B1B41D500000014",
            "ORDER_STATUS_FIFO",
            None,
            None,
        ),
        (
            9,
            "SEND_BACK_FAILED",
            t("2026-11-27 15:55:07.300"),
            None,
            ID,
            "ORDER_STATUS_FIFO",
            None,
            "<AioRpcError of RPC that terminated with: status = StatusCode.UNAVAILABLE>",
        ),
        (10, "PUBLISH_FAILED", t("2026-11-27 15:55:08"), None, ID, "ORDER_EVENTS", None, "run out of attempt times"),
    ]


def test_the_exception_message_is_the_cause(parsed: dict[str, list[Row]]) -> None:
    by_line = {r["line_no"]: r for r in parsed["events"]}
    three, four, seven = by_line[3], by_line[4], by_line[7]
    assert (three["exception_class"], three["exception_message"], three["root_cause_message"], three["app_frame"]) == (
        None,
        "downstream unavailable for key=THROW-ORD1006",
        "downstream unavailable for key=THROW-ORD1006",
        None,
    )
    assert four["exception_message"] == "Expecting value: line 1 column 1 (char 0)"
    assert seven["exception_message"] == "boom"
    # one fingerprint per masked message: another order's key is the same cause, another message is not
    assert three["fingerprint"] and len(three["fingerprint"]) == 32
    assert three["fingerprint"] != four["fingerprint"]
    assert by_line[6]["fingerprint"] is None  # a corrupted body raised nothing


def test_every_other_line_is_counted(parsed: dict[str, list[Row]]) -> None:
    lines = {r["line_no"]: (r["category"], r["kind"], r["reason"]) for r in parsed["lines"]}
    assert lines[5] == ("continuation", None, None)
    assert lines[11] == ("quarantined", None, "truncated or malformed PY-C1 statement")
    assert lines[15] == ("quarantined", None, "malformed head line (timestamp, level or layout)")
    assert {lines[n] for n in (1, 2, 12, 13)} == {("ignored", "py.log INFO", None), ("ignored", "py.log ERROR", None)}
    assert lines[14] == ("ignored", "py.log WARNING", None)


def test_the_consumer_lines_bind_the_instance_to_its_group(parsed: dict[str, list[Row]]) -> None:
    got = sorted((r["kind"], r["consumer_group"], r["topic"], r["lines"]) for r in parsed["bindings"])
    assert got == [
        ("client-log", "GID_push_inventory", "*", 2),  # the heartbeat and the WARNING line
        ("client-log", "GID_push_inventory", "ORDER_EVENTS", 1),
    ]
