"""The revive log's checkpoints and acks as evidence (docs/reconstruction.md "POP checkpoints"): a checkpoint no ack
answers failed at its reviveTime (SimpleConsumer), one a change of invisible time replaced at the new checkpoint's
reviveTime, an acked one was consumed. Literal events (as ingest writes them) through the whole reconstruction."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from rocketmq_retry.config import parse_config
from rocketmq_retry.contract import CauseCode, EventType
from rocketmq_retry.jobs.reconstruct.events import EVENTS_SCHEMA

pytestmark = pytest.mark.spark

D = "2026-11-27"
T0 = dt.datetime(2026, 11, 27, 15, 0, 0)
T0_MS = int(T0.replace(tzinfo=dt.UTC).timestamp() * 1000)
G, TOPIC = "GID_s", "PAY"
RETRY = f"%RETRY%{G}_{TOPIC}"
CONFIG = parse_config(
    {
        "timezone": "UTC",
        "brokers": {"default": {"version": "5.2.0"}},
        "groups": {
            G: {"protocol": "grpc", "consume_mode": "simple", "retry_max_times": 2, "invisible_duration_ms": 10000}
        },
    }
)


def _at(s: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=s)


def _ev(eid: str, et: str, s: float, **kw: Any) -> dict[str, Any]:
    row = {f.name: None for f in EVENTS_SCHEMA.fields}
    row.update(event_id=eid, event_type=et, event_time=_at(s), source="message-dump", line_no=1, **kw)
    return row


def _copy(eid: str, msg: str, s: float, offset: int, r: int = 0) -> dict[str, Any]:
    if r == 0:
        return _ev(
            eid,
            EventType.PUBLISHED,
            s,
            msg_id=msg,
            topic=TOPIC,
            original_topic=TOPIC,
            queue_id=0,
            queue_offset=offset,
            reconsume_times=0,
        )
    return _ev(
        eid,
        EventType.RETRY_ENQUEUED,
        s,
        msg_id=msg,
        topic=RETRY,
        original_topic=TOPIC,
        queue_id=0,
        queue_offset=offset,
        reconsume_times=r,
    )


def _ck(eid: str, s: float, offset: int, it_s: float, topic: str = TOPIC) -> dict[str, Any]:
    pt = T0_MS + int(s * 1000)
    return _ev(
        eid,
        EventType.POP_CHECKPOINT,
        s,
        consumer_group=G,
        topic=topic,
        queue_id=0,
        queue_offset=offset,
        detail=f"it={int(it_s * 1000)};reviveTime={pt + int(it_s * 1000)};so={offset}",
    )


def _ack(eid: str, s: float, offset: int, pt_s: float, topic: str = TOPIC) -> dict[str, Any]:
    return _ev(
        eid,
        EventType.POP_ACK,
        s,
        consumer_group=G,
        topic=topic,
        queue_id=0,
        queue_offset=offset,
        detail=f"pt={T0_MS + int(pt_s * 1000)};so={offset}",
    )


EVENTS = [
    # m1: popped at 1 s, never acked: revived at 11 s (copy r=1 stored at 13 s), popped again at 20 s and acked
    _copy("p1", "m1", 0.5, 0),
    _ck("c1", 1, 0, 10),
    _copy("r1", "m1", 13, 0, r=1),
    _ck("c1b", 20, 0, 10, topic=RETRY),
    _ack("a1b", 20.5, 0, 20, topic=RETRY),
    # m2: popped at 2 s, its invisible time changed to 2 s at 3 s (the old checkpoint acked, a new one written),
    # revived at 5 s (copy r=1 at 7 s), popped again at 25 s and acked
    _copy("p2", "m2", 0.6, 1),
    _ck("c2", 2, 1, 10),
    _ck("c2n", 3, 1, 2),
    _ack("a2", 3, 1, 2),
    _copy("r2", "m2", 7, 1, r=1),
    _ck("c2b", 25, 1, 10, topic=RETRY),
    _ack("a2b", 25.4, 1, 25, topic=RETRY),
    # m3: popped at 4 s and acked at 4.2 s
    _copy("p3", "m3", 0.7, 2),
    _ck("c3", 4, 2, 10),
    _ack("a3", 4.2, 2, 4),
]


def test_checkpoints_time_the_deliveries_and_failures(spark: Any) -> None:
    from rocketmq_retry.jobs.reconstruct.job import reconstruct

    spark.conf.set("spark.sql.session.timeZone", "UTC")
    events = spark.createDataFrame(EVENTS, EVENTS_SCHEMA)
    out = reconstruct(spark, events, CONFIG, D)
    failures = sorted(
        (r["msg_id"], r["reconsume_times"], r["failed_at"], r["cause"])
        for r in out.failures.select("msg_id", "reconsume_times", "failed_at", "cause").collect()
    )
    assert failures == [
        ("m1", 0, _at(11), CauseCode.INVISIBLE_TIME_EXPIRED),  # the unacked checkpoint's reviveTime
        ("m2", 0, _at(5), CauseCode.INVISIBLE_TIME_EXPIRED),  # the replacing checkpoint's reviveTime (3 s + 2 s)
    ]
    lifecycles = sorted(tuple(r) for r in out.lifecycles.select("msg_id", "final_state", "deliveries").collect())
    assert lifecycles == [("m1", "CONSUMED", 2), ("m2", "CONSUMED", 2), ("m3", "CONSUMED", 1)]
    delivered = sorted(
        (r["msg_id"], r["reconsume_times"], r["observed_at"], r["inferred"])
        for r in out.transitions.where("to_state = 'DELIVERED'").collect()
    )
    assert delivered == [
        ("m1", 0, _at(1), False),
        ("m1", 1, _at(20), False),
        ("m2", 0, _at(2), False),  # the pop, not the change of invisible time
        ("m2", 1, _at(25), False),
        ("m3", 0, _at(4), False),
    ]
    out.release()
