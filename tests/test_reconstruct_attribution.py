"""Lines that do not name their consumer group: literal events and bindings in, exact lifecycles, dead letters and
unattributed rows out, one topology per test (docs/reconstruction.md, "Attribution").

Every group subscribed to a topic gets its own copy of each message, so a group-less line is placed only by its own
application instance's evidence; what stays unplaced is counted, never put in another group's lifecycle.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pyspark.sql import Row
from pyspark.sql import types as T
from pyspark.testing import assertDataFrameEqual

from rocketmq_retry.config import parse_config
from rocketmq_retry.jobs.reconstruct.attribution import glob_regex
from rocketmq_retry.jobs.reconstruct.events import EVENTS_SCHEMA
from rocketmq_retry.jobs.reconstruct.job import reconstruct

pytestmark = pytest.mark.spark

D = "2026-11-21"
T0 = dt.datetime(2026, 11, 21, 10, 0, 0)
FAST = "1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 11s 12s 13s 14s 15s 16s 17s 18s"
CONFIG = parse_config(
    {
        "timezone": "UTC",
        "brokers": {"default": {"message_delay_level": FAST}, "five": {"version": "5.2.0"}},
        "groups": {
            "GS": {"max_reconsume_times": 2},
            "GP": {"max_reconsume_times": 2},
            "GA_svc": {},
            "GB_svc": {},
            "GR1": {"broker": "five", "protocol": "grpc", "topics": ["T3"]},
            "GR2": {"broker": "five", "protocol": "grpc", "topics": ["T4"]},
            "BC": {"message_model": "broadcasting"},
            "GC1": {},
            "GC2": {},
        },
        "sources": [
            {"format": "spring-listener", "path": "app-*/logs/app.log*"},
            {"format": "rocketmq-client-4x", "path": "*/logs/rocketmqlogs/rocketmq_client*.log*"},
            {"format": "rocketmq-grpc-client", "path": "*/logs/rocketmq/rocketmq-client*.log*"},
        ],
    }
)
FILES = {
    "spring-listener": "{}/logs/app.log",
    "rocketmq-client-4x": "{}/logs/rocketmqlogs/rocketmq_client.log",
    "rocketmq-grpc-client": "{}/logs/rocketmq/rocketmq-client.log",
    "broker": "broker/logs/rocketmqlogs/broker_default.log",
    "trace": "trace/RMQ_SYS_TRACE_TOPIC.trace",
}
BINDINGS = [
    ("app-s", "container", "GS", "T1"),  # the Spring application of the shared topic
    ("app-p", "client-log", "GP", "T1"),  # the plain client on the same topic
    ("app-m", "container", "GA_svc", "T2"),  # two containers of one application on one topic
    ("app-m", "container", "GB_svc", "T2"),
    ("g2", "client-log", "GR2", "*"),  # the gRPC SDK's consume-service line: every topic of the instance
    ("b1", "client-log", "BC", "TB"),  # broadcasting instances (rebalance lines)
    ("b2", "client-log", "BC", "TB"),
    ("app-c", "container", "GC1", "T6"),
]


class Events:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, event_type: str, sec: float, group: str | None, msg: str, r: int | None, **kw: Any) -> None:
        row: dict[str, Any] = {f.name: None for f in EVENTS_SCHEMA.fields}
        source = kw.pop("source")
        instance = kw.pop("instance", None)
        n = len(self.rows) + 1
        row.update(
            event_id=f"e{n:03d}",
            event_time=T0 + dt.timedelta(seconds=sec),
            source=source,
            source_file=FILES[source].format(instance),
            line_no=n,
            event_type=event_type,
            consumer_group=group,
            msg_id=msg,
            reconsume_times=r,
            instance=instance,
            dt=D,
        )
        row.update(kw)
        self.rows.append(row)

    def spring_failure(self, sec: float, instance: str, msg: str, r: int, topic: str, thread: str | None) -> None:
        """rocketmq-spring's WARN ``consume message failed. messageId:…, topic:…, reconsumeTimes:…`` (S-1)."""
        self.add("CONSUME_FAILED", sec, None, msg, r, source="spring-listener", instance=instance, topic=topic,
                 original_topic=topic, thread=thread, status_code="EXCEPTION")  # fmt: skip


def cut(thread: str) -> str:
    """Spring Boot's console pattern ``[%15.15t]``: the thread name's last 15 characters."""
    return thread[-15:]


def topology_events() -> Events:
    e = Events()
    # 1. Shared topic T1: a Spring group (GS, max 2) that fails M1 three times, and a plain client group (GP) on
    # another host that recovers at its second delivery. The Spring lines name no group; GS's container names T1.
    for r in range(3):
        e.spring_failure(r * 3.0, "app-s", "M1", r, "T1", None)
    e.add("CONSUME_FAILED", 0.5, "GP", "M1", 0, source="rocketmq-client-4x", instance="app-p", topic="T1",
          original_topic="T1", status_code="EXCEPTION")  # fmt: skip
    e.add("DELIVERED", 4.0, "GP", "M1", 1, source="trace")
    e.add("CONSUME_OK", 4.01, "GP", "M1", None, source="trace")
    # The same, on a Spring host whose start-up lines were not collected: nothing tells its lines' group.
    for r in range(3):
        e.spring_failure(r * 3.0, "app-x", "M1b", r, "T1", None)
    e.add("DELIVERED", 0.2, "GP", "M1b", 0, source="trace")
    e.add("CONSUME_OK", 0.21, "GP", "M1b", None, source="trace")
    # 2. Two containers on T2 in one application: a cut thread name tells them apart, a legacy one does not.
    e.spring_failure(0, "app-m", "M2a", 0, "T2", cut("ConsumeMessageThread_GA_svc_7"))
    e.spring_failure(0, "app-m", "M2b", 0, "T2", "ConsumeMessageThread_GB_svc_2")
    e.spring_failure(0, "app-m", "M2c", 0, "T2", cut("ConsumeMessageThread_12"))
    # 3. gRPC listener exceptions: T3 is listed by one gRPC group only; T5 by none of the two declared; host g2's
    # SDK named its group at start-up.
    e.add("CONSUME_FAILED", 0, None, "M3", None, source="rocketmq-grpc-client", instance="g1", topic="T3")
    e.add("CONSUME_FAILED", 0, None, "M5", None, source="rocketmq-grpc-client", instance="g1", topic="T5")
    e.add("CONSUME_FAILED", 0, None, "M9", None, source="rocketmq-grpc-client", instance="g2", topic="T9")
    # 4. Broadcasting, no trace: each instance logs its drop (L-C4, no group): one delivery each.
    for inst in ("b1", "b2"):
        e.add("BROADCAST_DROPPED", 0, None, "M4", 0, source="rocketmq-client-4x", instance=inst, topic="TB",
              original_topic="TB")  # fmt: skip
    # 5. The container names GC1 for T6, the full thread name GC2: the evidence disagrees.
    e.spring_failure(0, "app-c", "M6", 0, "T6", "ConsumeMessageThread_GC2_1")
    # 6. A gRPC dead letter whose broker line names the revived copy's pop retry topic (%RETRY%<group>_<topic>).
    e.add("DEAD_LETTERED", 30, "GR1", "M7", None, source="broker", topic="%DLQ%GR1", original_topic="%RETRY%GR1_T3")
    # 7. Messages published and then never heard of again: consumed at the first delivery by the groups whose
    # subscription is established (GR1 declares T3; GC1's container names T6), by nobody on a topic that only a
    # gRPC SDK line's every-topic binding could cover (T9).
    for msg, topic in (("M8", "T3"), ("M10", "T6"), ("M11", "T9")):
        # early in the window: a later trace line would move how far the trace is known to reach
        e.add("PUBLISHED", 1, None, msg, None, source="trace", topic=topic, original_topic=topic)
    return e


@pytest.fixture(scope="module")
def outputs(spark: Any) -> dict[str, list[Row]]:
    e = topology_events()
    schema = T.StructType([*EVENTS_SCHEMA.fields, T.StructField("dt", T.StringType())])
    events = spark.createDataFrame(e.rows, schema)
    bindings = spark.createDataFrame(BINDINGS, "instance string, kind string, consumer_group string, topic string")
    out = reconstruct(spark, events, CONFIG, D, bindings=bindings)
    try:
        return {
            "lifecycles": out.lifecycles.collect(),
            "dead_letters": out.dead_letters.collect(),
            "unattributed": out.unattributed.collect(),
        }
    finally:
        out.release()


LIFE = ("consumer_group", "msg_id", "deliveries", "final_state", "attribution", "instances")


def lifecycles(outputs: dict[str, list[Row]], *msgs: str) -> list[Row]:
    return [Row(**{c: r[c] for c in LIFE}) for r in outputs["lifecycles"] if r["msg_id"] in msgs]


def unattributed(outputs: dict[str, list[Row]], topic: str) -> list[Row]:
    cols = ("source_file", "event_type", "topic", "reason", "candidates", "fix", "lines")
    return [Row(**{c: r[c] for c in cols}) for r in outputs["unattributed"] if r["topic"] == topic]


def test_shared_topic_spring_lines_go_to_the_container_group(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(
        lifecycles(outputs, "M1"),
        [
            Row(consumer_group="GP", msg_id="M1", deliveries=2, final_state="CONSUMED", attribution=["line"],
                instances=["app-p"]),
            Row(consumer_group="GS", msg_id="M1", deliveries=3, final_state="DEAD_LETTERED",
                attribution=["container"], instances=["app-s"]),
        ],
    )  # fmt: skip
    dead = [(r["consumer_group"], r["msg_id"], r["attribution"], r["compensable"], r["review_reason"])
            for r in outputs["dead_letters"] if r["msg_id"] == "M1"]  # fmt: skip
    assert dead == [("GS", "M1", ["container"], True, None)]


def test_without_evidence_the_spring_lines_are_counted_not_placed(outputs: dict[str, list[Row]]) -> None:
    # the plain group's lifecycle stands alone: no Spring failure leaks into it, and no dead letter is invented
    assertDataFrameEqual(
        lifecycles(outputs, "M1b"),
        [Row(consumer_group="GP", msg_id="M1b", deliveries=1, final_state="CONSUMED", attribution=["line"],
             instances=[])],
    )  # fmt: skip
    assert not [r for r in outputs["dead_letters"] if r["msg_id"] == "M1b"]
    assert [r for r in unattributed(outputs, "T1")] == [
        Row(source_file="app-x/logs/app.log", event_type="CONSUME_FAILED", topic="T1", reason="no-evidence",
            candidates=[], fix="sources[0].consumer_group", lines=3)
    ]  # fmt: skip


def test_two_containers_on_one_topic_are_told_apart_by_the_thread(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(
        lifecycles(outputs, "M2a", "M2b", "M2c"),
        [
            Row(consumer_group="GA_svc", msg_id="M2a", deliveries=1, final_state="IN_RETRY", attribution=["thread"],
                instances=["app-m"]),
            Row(consumer_group="GB_svc", msg_id="M2b", deliveries=1, final_state="IN_RETRY", attribution=["thread"],
                instances=["app-m"]),
        ],
    )  # fmt: skip
    # a thread name without the group (clients before 4.9.3) leaves both containers possible
    assert unattributed(outputs, "T2") == [
        Row(source_file="app-m/logs/app.log", event_type="CONSUME_FAILED", topic="T2", reason="ambiguous",
            candidates=["GA_svc", "GB_svc"],
            fix="sources[0].consumer_group (if this file holds one candidate group's lines only)", lines=1)
    ]  # fmt: skip


def test_grpc_lines_take_the_one_group_listing_their_topic_or_the_sdk_line(outputs: dict[str, list[Row]]) -> None:
    got = {(r["consumer_group"], r["msg_id"]): r["attribution"] for r in outputs["lifecycles"]
           if r["msg_id"] in ("M3", "M5", "M9")}  # fmt: skip
    assert got == {("GR1", "M3"): ["single-group"], ("GR2", "M9"): ["client-log"]}
    assert unattributed(outputs, "T5") == [
        Row(source_file="g1/logs/rocketmq/rocketmq-client.log", event_type="CONSUME_FAILED", topic="T5",
            reason="grpc-groups", candidates=[],
            fix="sources[2].consumer_group (or groups.<group>.topics for the gRPC groups)", lines=1)
    ]  # fmt: skip


def test_broadcasting_counts_one_delivery_per_instance(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(
        lifecycles(outputs, "M4"),
        [Row(consumer_group="BC", msg_id="M4", deliveries=2, final_state="DROPPED", attribution=["client-log"],
             instances=["b1", "b2"])],
    )  # fmt: skip


def test_disagreeing_evidence_is_not_resolved(outputs: dict[str, list[Row]]) -> None:
    assert lifecycles(outputs, "M6") == []
    assert [(r.reason, r.candidates) for r in unattributed(outputs, "T6")] == [("conflict", [])]


def test_pop_retry_topic_of_a_dead_letter_reads_as_its_business_topic(outputs: dict[str, list[Row]]) -> None:
    [dead] = [r for r in outputs["dead_letters"] if r["msg_id"] == "M7"]
    assert (dead["consumer_group"], dead["original_topic"], dead["compensable"]) == ("GR1", "T3", True)


def test_silent_messages_are_consumed_by_the_established_subscribers_only(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(
        lifecycles(outputs, "M8", "M10", "M11"),
        [
            Row(consumer_group="GR1", msg_id="M8", deliveries=1, final_state="CONSUMED",
                attribution=["subscription"], instances=[]),
            Row(consumer_group="GC1", msg_id="M10", deliveries=1, final_state="CONSUMED",
                attribution=["subscription"], instances=[]),
        ],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("app-*/logs/app.log*", "app-s/logs/app.log.2026-11-20.0.gz", True),
        ("app-*/logs/app.log*", "app-s/x/logs/app.log", False),  # '*' stays within one folder
        ("**/rocketmq_client*.log*", "h/logs/rocketmqlogs/rocketmq_client.log", True),
        ("**/rocketmq_client*.log*", "rocketmq_client.log", True),  # '**/' may match no folder
        ("v5-risk-[0-9]*/x.log", "v5-risk-01/x.log", True),
        ("v5-risk-[!0-9]*/x.log", "v5-risk-01/x.log", False),
        ("logs/{ds}/*.log", "logs/2026-11-21/a.log", True),
    ],
)
def test_glob_regex_reads_a_source_glob_as_ingest_does(pattern: str, path: str, matches: bool) -> None:
    import re

    assert bool(re.match(glob_regex(pattern), path)) is matches
