"""Literal lines -> the bindings ingest keeps (which group consumes which topic in each application instance) and
the per-minute counters it reads for reconciliation (docs/reconstruction.md, "Attribution", "Reconciliation").

One classify run for the module; each test filters its rows.
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

pytestmark = pytest.mark.spark

DS = "2026-11-21"
C4 = "2026-11-21 10:00:0{},000 INFO RocketmqClient - "
C5 = "2026-11-21 18:00:0{}.000 INFO  [4242] [RebalanceService] [o.a.r.c.i.c.RebalanceImpl#?:?] - "
CLIENT4 = [
    # RemoteBrokerOffsetStore#persistAll, every 5 s per queue (4.x and 5.x)
    C4.format(1) + "[persistAll] Group: GID_a ClientId: 10.0.1.5@4242#123 updateConsumeOffsetToBroker "
    "MessageQueue [topic=ORDERS, brokerName=broker-a, queueId=2] 17",
    C4.format(1) + "[persistAll] Group: GID_a ClientId: 10.0.1.5@4242#123 updateConsumeOffsetToBroker "
    "MessageQueue [topic=%RETRY%GID_a, brokerName=broker-a, queueId=0] 3",
    # 4.9.4 RebalanceImpl (samples client/consumers.rocketmq_client.log)
    C4.format(2) + "rebalanced result changed. allocateMessageQueueStrategyName=AVG, group=GID_b, topic=PAYMENTS, "
    "clientId=10.0.1.5@4242#123, mqAllSize=4, cidAllSize=1, rebalanceResultSize=4, rebalanceResultSet=[]",
    C4.format(2) + "doRebalance, GID_c, add a new pull request PullRequest [consumerGroup=GID_c, messageQueue="
    "MessageQueue [topic=SHIPMENTS, brokerName=broker-a, queueId=3], nextOffset=0]",
    C4.format(3) + "messageQueueChanged GID_cache CACHE_INVALIDATE [MessageQueue [topic=CACHE_INVALIDATE, "
    "brokerName=broker-a, queueId=0]] [MessageQueue [topic=CACHE_INVALIDATE, brokerName=broker-a, queueId=0]]",
    # a name RocketMQ would refuse is not evidence
    C4.format(3) + "doRebalance, GID bad, add a new mq, MessageQueue [topic=ORDERS, brokerName=broker-a, queueId=1]",
    # client counters: a zero is noise, a failure count is an event
    C4.format(4) + "[CONSUME_FAILED_TPS] [ORDERS@GID_a] Stats In One Minute, SUM: 0 TPS: 0.00 AVGPT: 0.00",
    C4.format(5) + "[CONSUME_FAILED_TPS] [%RETRY%GID_a@GID_a] Stats In One Minute, SUM: 3 TPS: 0.05 AVGPT: 1.00",
    # names are cut by byte position: a multi-byte character before them (an instance name in the client id) must
    # not shift the cut
    C4.format(6) + "[persistAll] Group: GID_a ClientId: 10.0.1.5@zürich-café#7 updateConsumeOffsetToBroker "
    "MessageQueue [topic=ORDERS, brokerName=broker-a, queueId=1] 9",
    # a rebalance line without its "group=" names no group
    C4.format(6) + "rebalanced result changed. allocateMessageQueueStrategyName=AVG, topic=PAYMENTS, "
    "clientId=10.0.1.5@4242#123, mqAllSize=4, cidAllSize=1, rebalanceResultSize=4, rebalanceResultSet=[]",
]
CLIENT5 = [C5.format(1) + "client rebalanced result changed. allocateMessageQueueStrategyName=AVG, group=GID_d, "
           "topic=POINTS, clientId=10.0.1.9@77#9, mqAllSize=4, cidAllSize=2, rebalanceResultSize=2, "
           "rebalanceResultSet=[]"]  # fmt: skip
SPRING = [
    "2026-11-21 18:00:01.000  INFO 17592 --- [           main] a.r.s.s.DefaultRocketMQListenerContainer : "
    "running container: DefaultRocketMQListenerContainer{consumerGroup='GID_mailer', namespace='', "
    "nameServer='10.0.0.5:9876', topic='INVOICES', consumeMode=CONCURRENTLY, selectorType=TAG, "
    "selectorExpression='*', messageModel=CLUSTERING', tlsEnable=false, instanceName=DEFAULT}",
    # the same line dated the day before (an application that started earlier) binds as well
    "2026-11-20 08:00:01.000  INFO 17592 --- [           main] a.r.s.s.DefaultRocketMQListenerContainer : "
    "running container: DefaultRocketMQListenerContainer{consumerGroup='GID_reminder', nameServer='10.0.0.5:9876', "
    "topic='OVERDUE', consumeMode=CONCURRENTLY, selectorType=TAG, selectorExpression='*', messageModel=CLUSTERING}",
]
GRPC = [
    "2026-11-21 18:00:01.000 INFO  [77] [main] [o.a.r.c.j.i.c.PushConsumerImpl#?:?] - Create FIFO consume service, "
    "consumerGroup=GID_fifo, clientId=host@77@0@3n5dbas8"
]
STATS = [
    "2026-11-21 18:01:00 INFO - [TOPIC_PUT_NUMS] [%DLQ%GID_osm] Stats In One Minute, SUM: 2 TPS: 0.05 AVGPT: 1.00",
    "2026-11-21 18:01:00 INFO - [TOPIC_PUT_NUMS] [ORDERS] Stats In One Minute, SUM: 9 TPS: 0.15 AVGPT: 1.00",
]


@pytest.fixture(scope="module")
def parsed(spark: Any) -> dict[str, list[Row]]:
    from rocketmq_retry.jobs.ingest import parse

    files = {
        "h1/logs/rocketmqlogs/rocketmq_client.log": ("rocketmq-client-4x", "UTC", CLIENT4),
        "h2/logs/rocketmqlogs/rocketmq_client.log": ("rocketmq-client-5x", "Etc/GMT-8", CLIENT5),
        "h3/logs/app.log": ("spring-listener", "Etc/GMT-8", SPRING),
        "h4/logs/rocketmq/rocketmq-client.log": ("rocketmq-grpc-client", "Etc/GMT-8", GRPC),
        "b/stats.log": ("broker-stats", "Etc/GMT-8", STATS),
    }
    rows = [(src, name, i + 1, line, tz, None) for name, (src, tz, lines) in files.items() for i, line in
            enumerate(lines)]  # fmt: skip
    lines = spark.createDataFrame(
        rows, "source string, source_file string, line_no long, line string, tz string, group_hint string"
    )
    instances = spark.createDataFrame(
        [(name, name.split("/")[0]) for name in files], "source_file string, instance string"
    )
    classified = parse.classify(lines, DS, day_zone="UTC").cache()
    groups = parse.line_groups(classified)
    out = {
        "bindings": parse.bindings_of(groups, instances).collect(),
        "events": parse.events_of(classified, instances).collect(),
        "lines": classified.select("source_file", "line_no", "category", "kind").collect(),
    }
    classified.unpersist()
    return out


def test_bindings_name_each_instances_groups_and_topics(parsed: dict[str, list[Row]]) -> None:
    B = Row
    assertDataFrameEqual(
        [
            Row(**{k: r[k] for k in ("instance", "kind", "consumer_group", "topic", "lines")})
            for r in parsed["bindings"]
        ],
        [
            B(instance="h1", kind="client-log", consumer_group="GID_a", topic="ORDERS", lines=2),
            B(instance="h1", kind="client-log", consumer_group="GID_a", topic="%RETRY%GID_a", lines=1),
            B(instance="h1", kind="client-log", consumer_group="GID_b", topic="PAYMENTS", lines=1),
            B(instance="h1", kind="client-log", consumer_group="GID_c", topic="SHIPMENTS", lines=1),
            B(instance="h1", kind="client-log", consumer_group="GID_cache", topic="CACHE_INVALIDATE", lines=1),
            B(instance="h2", kind="client-log", consumer_group="GID_d", topic="POINTS", lines=1),
            B(instance="h3", kind="container", consumer_group="GID_mailer", topic="INVOICES", lines=1),
            B(instance="h3", kind="container", consumer_group="GID_reminder", topic="OVERDUE", lines=1),
            B(instance="h4", kind="client-log", consumer_group="GID_fifo", topic="*", lines=1),
        ],
    )


def test_binding_lines_stay_ignored_noise_in_the_accounting(parsed: dict[str, list[Row]]) -> None:
    cats = {(r["source_file"].split("/")[0], r["line_no"]): r["category"] for r in parsed["lines"]}
    assert [cats[("h1", n)] for n in range(1, 7)] == ["ignored"] * 6
    assert cats[("h3", 1)] == "ignored" and cats[("h3", 2)] == "other_date"


def test_counters_for_reconciliation(parsed: dict[str, list[Row]]) -> None:
    got = sorted(
        (r["event_type"], r["consumer_group"], r["topic"], r["detail"], r["instance"])
        for r in parsed["events"]
        if r["event_type"] in ("CONSUME_FAILED_COUNT", "DLQ_PUT_COUNT")
    )
    assert got == [
        ("CONSUME_FAILED_COUNT", "GID_a", "%RETRY%GID_a", "3", "h1"),
        ("DLQ_PUT_COUNT", "GID_osm", "%DLQ%GID_osm", "2", "b"),
    ]
    kinds = {(r["source_file"].split("/")[0], r["line_no"]): (r["category"], r["kind"]) for r in parsed["lines"]}
    assert kinds[("h1", 7)] == ("ignored", "stats CONSUME_FAILED_TPS")  # SUM: 0
    assert kinds[("b", 2)] == ("ignored", "stats TOPIC_PUT_NUMS")
