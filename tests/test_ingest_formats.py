"""Literal lines of every format -> exactly the expected event/quarantine rows (§6, §7, §11, §12).

All literal lines go through ONE classify run (a module fixture): compiling the parser's generated code is
the expensive part of a Spark action here, so each test only filters the collected rows.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

pytestmark = pytest.mark.spark

DS = "2026-11-21"
UTC = dt.UTC

# Real 4.9.4 client lines (tests/data/rocketmq-4.9.4/client/consumers.rocketmq_client.log), trimmed bodies kept
# byte-exact.
L_C1 = (
    "2026-11-21 23:25:06,245 WARN RocketmqClient - consumeMessage exception: java.lang.IllegalStateException: "
    "ledger db unavailable for paymentId=PAY-2001, Consumers.lambda$main$2(Consumers.java:65) Group: "
    "GID_ledger_writer Msgs: [MessageExt [brokerName=broker-a, queueId=3, storeSize=261, queueOffset=0, sysFlag=0, "
    "bornTimestamp=1795303506209, bornHost=/127.0.0.1:49294, storeTimestamp=1795303506212, "
    "storeHost=/127.0.0.1:10911, msgId=7F00000100002A9F0000000000000618, commitLogOffset=1560, bodyCRC=623173234, "
    "reconsumeTimes=0, preparedTransactionOffset=0, toString()=Message{topic='PAYMENT_CAPTURED', flag=0, "
    "properties={MIN_OFFSET=0, MAX_OFFSET=1, KEYS=PAY-2001, CONSUME_START_TIME=1795303506243, "
    "UNIQ_KEY=7F0000013EA75FFD2B276C0599210006, CLUSTER=DefaultCluster, TAGS=captured}, body=[123, 34, 112, 97, "
    "121, 34, 58, 49, 125], transactionId='null'}]] MQ: MessageQueue [topic=PAYMENT_CAPTURED, brokerName=broker-a, "
    "queueId=3]"
)
STACK = [
    "java.lang.IllegalStateException: ledger db unavailable for paymentId=PAY-2001",
    "\tat Consumers.lambda$main$2(Consumers.java:65)",
]
RETRY_EXT = (
    "MessageExt [brokerName=broker-a, queueId=0, storeSize=400, queueOffset=2, sysFlag=0, "
    "bornTimestamp=1795303505739, bornHost=/127.0.0.1:49294, storeTimestamp=1795303509082, "
    "storeHost=/127.0.0.1:10911, msgId=7F00000100002A9F00000000000079D3, commitLogOffset=31187, bodyCRC=1, "
    "reconsumeTimes=1, preparedTransactionOffset=0, toString()=Message{topic='ORDER_CREATED', flag=0, "
    "properties={MIN_OFFSET=0, REAL_TOPIC=%RETRY%GID_x, ORIGIN_MESSAGE_ID=7F00000100002A9F0000000000000000, "
    "RETRY_TOPIC=ORDER_CREATED, KEYS=ORD-1001, UNIQ_KEY=7F0000013EA75FFD2B276C05973E0000, "
    "CLUSTER=DefaultCluster, DELAY=3, TAGS=created, REAL_QID=0}, body=[-1, 65], transactionId='null'}]"
)
L_C2_BATCH = (
    "2026-11-21 23:25:09,100 WARN RocketmqClient - consumeMessage return null, Group: GID_x Msgs: ["
    + RETRY_EXT
    + ", "
    + RETRY_EXT.replace("queueOffset=2", "queueOffset=3").replace(
        "UNIQ_KEY=7F0000013EA75FFD2B276C05973E0000", "UNIQ_KEY=7F0000013EA75FFD2B276C0598A70002"
    )
    + "] MQ: MessageQueue [topic=%RETRY%GID_x, brokerName=broker-a, queueId=0]"
)
L_C4 = (
    "2026-11-21 23:25:06,775 WARN RocketmqClient - BROADCASTING, the message consume failed, drop it, "
    + RETRY_EXT.replace("reconsumeTimes=1", "reconsumeTimes=0")
)
L_P1 = (
    "2026-11-21 23:26:10,006 WARN RocketmqClient - sendKernelImpl exception, resend at once, InvokeID: "
    "4346942797859209429, RT: 4ms, Broker: MessageQueue [topic=CHECKOUT_SUBMITTED, brokerName=broker-a, queueId=0]"
)
L_P1_MSG = (
    "2026-11-21 23:26:10,006 WARN RocketmqClient - Message{topic='CHECKOUT_SUBMITTED', flag=0, "
    "properties={KEYS=CHK-13007, UNIQ_KEY=7F00000141765FFD2B276C0692520012, WAIT=true, TAGS=submit}, "
    "body=[123, 125], transactionId='null'}"
)
NOISE_4X = "2026-11-21 23:26:10,006 INFO RocketmqRemoting - NETTY CLIENT PIPELINE: CLOSE 127.0.0.1:10911"

CLIENT4 = [
    L_C1,
    *STACK,
    L_C2_BATCH,
    L_C4,
    L_P1,
    "org.apache.rocketmq.remoting.exception.RemotingConnectException: x",
    NOISE_4X,
    L_P1_MSG,
    "2026-11-21 23:26:1",
    L_C1.replace(" MQ: MessageQueue [topic=PAYMENT_CAPTURED, brokerName=broker-a, queueId=3]", ""),
    # the periodic offset flush (tests/data/rocketmq-4.9.4/README.md): bracketed, but not a stats line
    "2026-11-21 23:26:15,000 INFO RocketmqClient - [persistAll] Group: GID_x ClientId: 10.0.0.1@1 "
    "updateConsumeOffsetToBroker MessageQueue [topic=T1, brokerName=broker-a, queueId=0] 42",
]
BROKER = [
    "2026-11-22 07:24:59 INFO AdminBrokerThread_1 - create new topic TopicConfig [topicName=%DLQ%GID_x, "
    "readQueueNums=1, writeQueueNums=1, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false]",
    "2026-11-22 07:23:43 INFO main - rocketmqHome=/opt/rocketmq",
    # 5.x L-B7, the statement of docs/rocketmq-rules.md §6.3 with values
    "2026-11-22 07:26:27 INFO SendMessageThread_1 - send msg to DLQ %DLQ%GID_y, owner=null, originalTopic=T1, "
    "consumerId=GID_y, msgUniqKey=AC11000100002A9F0000000000000001, storeTimestamp=1708593987000",
    "The broker[broker-a, 127.0.0.1:10911] boot success. serializeType=JSON and name server is 127.0.0.1:9876",
]
STATS = [
    "2026-11-22 07:26:00 INFO - [SNDBCK_PUT_NUMS] [ORDER_CREATED@GID_inventory_reserve] Stats In One Minute, "
    "SUM: 12 TPS: 0.24 AVGPT: 1.00",
    "2026-11-22 07:00:00 INFO - [SNDBCK_PUT_NUMS] [ORDER_CREATED@GID_inventory_reserve] Stats In One Hour, "
    "SUM: 12 TPS: 0.00 AVGPT: 1.00",
    "2026-11-22 07:26:00 INFO - [GROUP_GET_NUMS] [ORDER_CREATED@GID_inventory_reserve] Stats In One Minute, "
    "SUM: 3 TPS: 0.05 AVGPT: 1.00",
]
CLIENT5 = [
    "2026-11-22 07:25:06.245 WARN  [4242] [ConsumeMessageThread_GID_z_1] "
    "[o.a.r.c.i.c.ConsumeMessageConcurrentlyService#?:?] - consumeMessage Orderly return not OK, Group: GID_z "
    "Msgs: [" + RETRY_EXT + "] MQ: MessageQueue [topic=ORDER_CREATED, brokerName=broker-a, queueId=0]",
]
SPRING = [
    "2026-11-21T23:25:07.000Z  WARN 12345 --- [app] [ConsumeMessageThread_1] "
    "o.a.r.s.s.DefaultRocketMQListenerContainer : consume message failed. "
    "messageId:7F0000013EA75FFD2B276C05973E0000, topic:ORDER_CREATED, reconsumeTimes:2",
]
GRPC = [
    "2026-11-22 07:25:08.000 ERROR [77] [rocketmq-consumption-1] [o.a.r.c.j.i.c.ConsumeService#?:?] - Message "
    "listener raised an exception while consuming messages, clientId=c1, mq=q1, messageId=01ABCDEF",
]
P, S, A, K = "\u0001", "\u0002", "SubAfter", "SubBefore"
TRACE = [
    P.join(
        [
            "Pub",
            "1795303505730",
            "DefaultRegion",
            "PID_order_service",
            "ORDER_CREATED",
            "7F0000013EA75FFD2B276C05973E0000",
            "created",
            "ORD-1001",
            "127.0.0.1:10911",
            "53",
            "163",
            "0",
            "7F00000100002A9F0000000000000000",
            "true",
        ]
    )
    + S
    + P.join(
        [
            K,
            "1795303506049",
            "null",
            "GID_inventory_reserve",
            "REQ1",
            "7F0000013EA75FFD2B276C05973E0000",
            "0",
            "ORD-1001",
        ]
    )
    + S
    + P.join(
        [
            A,
            "REQ1",
            "7F0000013EA75FFD2B276C05973E0000",
            "3",
            "false",
            "ORD-1001",
            "4",
            "1795303506052",
            "GID_inventory_reserve",
        ]
    )
    + S,
    P.join([A, "REQ2", "MSG2", "1", "false", "K", "2"]) + S + "Bogus" + P + "1" + S,
    "",
]
DUMPS = [
    '{"dumpTopic":"%DLQ%GID_inventory_reserve","topic":"%DLQ%GID_inventory_reserve","queueId":0,"queueOffset":0,'
    '"msgId":"7F0000013EA75FFD2B276C05973E0000","offsetMsgId":"7F00000100002A9F0000000000011739",'
    '"uniqKey":"7F0000013EA75FFD2B276C05973E0000","bornTimestamp":1795303505739,"bornHost":"/127.0.0.1:49294",'
    '"storeTimestamp":1795303518310,"storeHost":"/127.0.0.1:10911","commitLogOffset":71481,"reconsumeTimes":4,'
    '"sysFlag":0,"flag":0,"properties":{"CLUSTER":"DefaultCluster","DELAY":"0","KEYS":"ORD-1001",'
    '"ORIGIN_MESSAGE_ID":"7F00000100002A9F0000000000000000","REAL_QID":"0","REAL_TOPIC":"%RETRY%GID_inventory_reserve",'
    '"RETRY_TOPIC":"ORDER_CREATED","TAGS":"created","UNIQ_KEY":"7F0000013EA75FFD2B276C05973E0000","WAIT":"false"},'
    '"body":"{\\"orderId\\":\\"ORD-1001\\"}"}',
    '{"topic":"SCHEDULE_TOPIC_XXXX","queueId":1,"msgId":"M2","storeTimestamp":1795303506689,"reconsumeTimes":1,'
    '"properties":{"REAL_TOPIC":"%RETRY%GID_coupon_audit","RETRY_TOPIC":"COUPON_APPLIED","UNIQ_KEY":"M2"},'
    '"body":"b"}',
    '{"topic":"RMQ_SYS_TRACE_TOPIC","msgId":"T1","storeTimestamp":1795303506493,"body":"'
    + (P.join([A, "REQ9", "M9", "2", "true", "K9", "0"]) + S).replace(P, "\\u0001").replace(S, "\\u0002")
    + '"}',
    "{not json",
    '{"topic":"ORDER_CREATED","msgId":"M3","storeTimestamp":1690000000000}',
]


def _rows(files: dict[str, tuple[str, str, list[str]]]) -> list[tuple[Any, ...]]:
    out = []
    for name, (source, tz, lines) in files.items():
        out += [(source, name, i + 1, line, tz, None) for i, line in enumerate(lines)]
    return out


@pytest.fixture(scope="module")
def parsed(spark: Any) -> dict[str, list[Row]]:
    from rocketmq_retry.jobs.ingest import parse

    files = {
        "c4.log": ("rocketmq-client-4x", "UTC", CLIENT4),
        "broker.log": ("broker", "Etc/GMT-8", BROKER),
        "stats.log": ("broker-stats", "Etc/GMT-8", STATS),
        "c5.log": ("rocketmq-client-5x", "Etc/GMT-8", CLIENT5),
        "app.log": ("spring-listener", "UTC", SPRING),
        "grpc.log": ("rocketmq-grpc-client", "Etc/GMT-8", GRPC),
        "t.trace": ("trace", "UTC", TRACE),
        "d.jsonl": ("message-dump", "UTC", DUMPS),
    }
    lines = spark.createDataFrame(
        _rows(files), "source string, source_file string, line_no long, line string, tz string, group_hint string"
    )
    classified = parse.classify(lines, DS, day_zone="UTC").cache()
    out = {
        "events": parse.events_of(classified).collect(),
        "quarantine": parse.quarantine_of(classified).collect(),
        "lines": classified.select("source_file", "line_no", "category", "kind", "reason").collect(),
        "report": parse.report_of(classified).collect(),
    }
    classified.unpersist()
    return out


EV = (
    "source_file",
    "line_no",
    "event_type",
    "event_time",
    "consumer_group",
    "msg_id",
    "offset_msg_id",
    "topic",
    "original_topic",
    "reconsume_times",
    "delay_level",
    "keys",
    "tags",
    "status_code",
)


def _ev(parsed: dict[str, list[Row]], file: str, cols: tuple[str, ...] = EV) -> list[Row]:
    return [Row(**{c: r[c] for c in cols}) for r in parsed["events"] if r["source_file"] == file]


def _cat(parsed: dict[str, list[Row]], file: str) -> list[tuple[int, str]]:
    return sorted((r["line_no"], r["category"]) for r in parsed["lines"] if r["source_file"] == file)


def t(s: str) -> dt.datetime:
    return dt.datetime.fromisoformat(s).replace(tzinfo=None)


def test_client4x_statements(parsed: dict[str, list[Row]]) -> None:
    # §6.2 L-C1, L-C2 (batch of two: one event per MessageExt), L-C4, L-P1 + its Message{} line (§12)
    expected = [
        Row(
            source_file="c4.log",
            line_no=1,
            event_type="CONSUME_FAILED",
            event_time=t("2026-11-21 23:25:06.245"),
            consumer_group="GID_ledger_writer",
            msg_id="7F0000013EA75FFD2B276C0599210006",
            offset_msg_id="7F00000100002A9F0000000000000618",
            topic="PAYMENT_CAPTURED",
            original_topic="PAYMENT_CAPTURED",
            reconsume_times=0,
            delay_level=None,
            keys="PAY-2001",
            tags="captured",
            status_code="EXCEPTION",
        ),
        *[
            Row(
                source_file="c4.log",
                line_no=4,
                event_type="CONSUME_FAILED",
                event_time=t("2026-11-21 23:25:09.100"),
                consumer_group="GID_x",
                msg_id=mid,
                offset_msg_id="7F00000100002A9F00000000000079D3",
                topic="ORDER_CREATED",
                original_topic="ORDER_CREATED",
                reconsume_times=1,
                delay_level=3,
                keys="ORD-1001",
                tags="created",
                status_code="RETURNNULL",
            )
            for mid in ("7F0000013EA75FFD2B276C05973E0000", "7F0000013EA75FFD2B276C0598A70002")
        ],
        Row(
            source_file="c4.log",
            line_no=5,
            event_type="BROADCAST_DROPPED",
            event_time=t("2026-11-21 23:25:06.775"),
            consumer_group=None,
            msg_id="7F0000013EA75FFD2B276C05973E0000",
            offset_msg_id="7F00000100002A9F00000000000079D3",
            topic="ORDER_CREATED",
            original_topic="ORDER_CREATED",
            reconsume_times=0,
            delay_level=3,
            keys="ORD-1001",
            tags="created",
            status_code=None,
        ),
        Row(
            source_file="c4.log",
            line_no=9,
            event_type="PUBLISH_RETRY",
            event_time=t("2026-11-21 23:26:10.006"),
            consumer_group=None,
            msg_id="7F00000141765FFD2B276C0692520012",
            offset_msg_id=None,
            topic="CHECKOUT_SUBMITTED",
            original_topic="CHECKOUT_SUBMITTED",
            reconsume_times=None,
            delay_level=None,
            keys="CHK-13007",
            tags="submit",
            status_code=None,
        ),
    ]
    assertDataFrameEqual(_ev(parsed, "c4.log"), expected)


def test_client4x_accounting(parsed: dict[str, list[Row]]) -> None:
    assert _cat(parsed, "c4.log") == [
        (1, "event"),
        (2, "continuation"),
        (3, "continuation"),
        (4, "event"),
        (5, "event"),
        (6, "ignored"),  # L-P1: its event is on line 9
        (7, "continuation"),
        (8, "ignored"),
        (9, "event"),
        (10, "quarantined"),  # cut inside the timestamp
        (11, "quarantined"),  # L-C1 without "MQ: ..." (truncated)
        (12, "ignored"),
    ]
    kinds = {r["source_file"]: r["ignored_by_kind"] for r in parsed["report"]}
    assert kinds["c4.log"] == {
        "RocketmqClient INFO": 1,  # [persistAll], named by its logger like other noise, not "stats ?"
        "RocketmqRemoting INFO": 1,
        "L-P1 line (event recorded on the Message{...} line after it)": 1,
    }
    reasons = {r["line_no"]: r["reason"] for r in parsed["quarantine"] if r["source_file"] == "c4.log"}
    assert reasons == {
        10: "malformed head line (timestamp, level or layout)",
        11: "truncated or malformed L-C1 statement",
    }


def test_body_bytes_decoded_only_when_utf8(parsed: dict[str, list[Row]]) -> None:
    bodies = {(r["line_no"], r["msg_id"]): r["body"] for r in parsed["events"] if r["source_file"] == "c4.log"}
    assert bodies[(1, "7F0000013EA75FFD2B276C0599210006")] == '{"pay":1}'
    assert bodies[(5, "7F0000013EA75FFD2B276C05973E0000")] is None  # [-1, 65] is not UTF-8


def test_broker_and_stats(parsed: dict[str, list[Row]]) -> None:
    cols = ("line_no", "event_type", "event_time", "consumer_group", "msg_id", "topic", "original_topic")
    assertDataFrameEqual(
        _ev(parsed, "broker.log", cols),
        [
            Row(
                line_no=1,
                event_type="TOPIC_CREATED",
                event_time=t("2026-11-21 23:24:59"),
                consumer_group=None,
                msg_id=None,
                topic="%DLQ%GID_x",
                original_topic=None,
            ),
            Row(
                line_no=3,
                event_type="DEAD_LETTERED",
                event_time=t("2026-11-21 23:26:27"),
                consumer_group="GID_y",
                msg_id="AC11000100002A9F0000000000000001",
                topic="%DLQ%GID_y",
                original_topic="T1",
            ),
        ],
    )
    assert _cat(parsed, "broker.log") == [(1, "event"), (2, "ignored"), (3, "event"), (4, "ignored")]
    stats = [
        (r["event_type"], r["topic"], r["consumer_group"], r["detail"])
        for r in parsed["events"]
        if r["source_file"] == "stats.log"
    ]
    assert stats == [("SEND_BACK_COUNT", "ORDER_CREATED", "GID_inventory_reserve", "12")]


def test_client5x_spring_grpc(parsed: dict[str, list[Row]]) -> None:
    cols = ("source_file", "event_type", "event_time", "consumer_group", "msg_id", "topic", "reconsume_times", "thread")
    got = [
        Row(**{c: r[c] for c in cols})
        for r in parsed["events"]
        if r["source_file"] in ("c5.log", "app.log", "grpc.log")
    ]
    assertDataFrameEqual(
        got,
        [
            Row(
                source_file="c5.log",
                event_type="ORDERLY_SUSPENDED",
                event_time=t("2026-11-21 23:25:06.245"),
                consumer_group="GID_z",
                msg_id="7F0000013EA75FFD2B276C05973E0000",
                topic="ORDER_CREATED",
                reconsume_times=1,
                thread="ConsumeMessageThread_GID_z_1",
            ),
            Row(
                source_file="app.log",
                event_type="CONSUME_FAILED",
                event_time=t("2026-11-21 23:25:07"),
                consumer_group=None,
                msg_id="7F0000013EA75FFD2B276C05973E0000",
                topic="ORDER_CREATED",
                reconsume_times=2,  # S-1 prints reconsumeTimes itself (§6.4)
                thread="ConsumeMessageThread_1",
            ),
            Row(
                source_file="grpc.log",
                event_type="CONSUME_FAILED",
                event_time=t("2026-11-21 23:25:08"),
                consumer_group=None,
                msg_id="01ABCDEF",
                topic=None,
                reconsume_times=None,
                thread="rocketmq-consumption-1",
            ),
        ],
    )


def test_trace_records_split(parsed: dict[str, list[Row]]) -> None:
    cols = (
        "line_no",
        "event_type",
        "event_time",
        "consumer_group",
        "producer_group",
        "msg_id",
        "reconsume_times",
        "status_code",
        "cost_ms",
        "detail",
    )
    mid = "7F0000013EA75FFD2B276C05973E0000"
    assertDataFrameEqual(
        _ev(parsed, "t.trace", cols),
        [
            Row(
                line_no=1,
                event_type="PUBLISHED",
                event_time=t("2026-11-21 23:25:05.730"),
                consumer_group=None,
                producer_group="PID_order_service",
                msg_id=mid,
                reconsume_times=None,
                status_code="true",
                cost_ms=163,
                detail=None,
            ),
            Row(
                line_no=1,
                event_type="DELIVERED",
                event_time=t("2026-11-21 23:25:06.049"),
                consumer_group="GID_inventory_reserve",
                producer_group=None,
                msg_id=mid,
                reconsume_times=0,
                status_code=None,
                cost_ms=None,
                detail="requestId=REQ1",
            ),
            Row(
                line_no=1,
                event_type="CONSUME_FAILED",
                event_time=t("2026-11-21 23:25:06.052"),
                consumer_group="GID_inventory_reserve",
                producer_group=None,
                msg_id=mid,
                reconsume_times=None,
                status_code="FAILED",
                cost_ms=3,
                detail="requestId=REQ1",
            ),
        ],
    )
    # line 2: a 7-field (CLOUD) SubAfter has no time of its own in a plain trace file, and a bogus record
    assert _cat(parsed, "t.trace") == [(1, "event"), (2, "quarantined"), (3, "ignored")]


def test_trace_record_branches(spark: Any) -> None:
    """Every branch of the record parser (§7.2): Pub of 13/14/15 fields, skipped types, each bad-record reason."""
    from rocketmq_retry.jobs.ingest import parse

    def pub(*tail: str) -> str:
        head = ["Pub", "1795303505730", "R", "PID_p", "T", "M1", "tg", "K1", "b:10911", "53", "7", "0"]
        return P.join(head + list(tail))

    before = P.join([K, "1795303506049", "null", "GID_g", "REQ1", "M1", "2", "K1"])
    records = [
        # line 1: 13 fields (success flag at 13), 14 (offset id, then the flag), 15 (and clientHost); a skipped
        # EndTransaction record between them
        pub("false") + S + pub("OFF1", "true") + S + P.join(["EndTransaction", "x"]) + S + pub("OFF2", "true", "h:1"),
        # line 2: good SubBefore, then one bad record of each kind
        before
        + S
        + P.join(["Pub", "not-ms", "R", "PID_p", "T", "M2", "tg", "K", "b", "1", "2", "0"])
        + S
        + P.join([K, "1795303506049", "null", "GID_g", "REQ2", "", "0", "K"])
        + S
        + P.join(["", "1795303506049", "null", "GID_g", "REQ3", "M3", "0", "K"])
        + S
        + P.join(["SubBefore", "1"])
        + S,
        # line 3: nothing but a skipped record
        P.join(["Recall", "1795303506049"]) + S,
    ]
    lines = spark.createDataFrame(
        [("trace", "b.trace", i + 1, r, "UTC", None) for i, r in enumerate(records)],
        "source string, source_file string, line_no long, line string, tz string, group_hint string",
    )
    classified = parse.classify_trace_lines(lines, DS, "UTC")
    cols = ("line_no", "event_type", "msg_id", "offset_msg_id", "status_code", "client_host", "reconsume_times")
    assertDataFrameEqual(
        parse.events_of(classified).select(*cols),
        [
            Row(line_no=1, event_type="PUBLISH_FAILED", msg_id="M1", offset_msg_id=None, status_code="false",
                client_host=None, reconsume_times=None),
            Row(line_no=1, event_type="PUBLISHED", msg_id="M1", offset_msg_id="OFF1", status_code="true",
                client_host=None, reconsume_times=None),
            Row(line_no=1, event_type="PUBLISHED", msg_id="M1", offset_msg_id="OFF2", status_code="true",
                client_host="h:1", reconsume_times=None),
            Row(line_no=2, event_type="DELIVERED", msg_id="M1", offset_msg_id=None, status_code=None,
                client_host=None, reconsume_times=2),
        ],
    )  # fmt: skip
    assertDataFrameEqual(
        parse.quarantine_of(classified).select("line_no", "reason"),
        [
            Row(line_no=2, reason="trace record #1: trace record without a valid timestamp"),
            Row(line_no=2, reason="trace record #2: trace record without msgId"),
            Row(line_no=2, reason="trace record #3: unknown trace record type or field count:  with 8 fields"),
            Row(line_no=2, reason="trace record #4: unknown trace record type or field count: SubBefore with 2 fields"),
        ],
    )
    assert [(r.line_no, r.category, r.kind) for r in classified.orderBy("line_no").collect()] == [
        (1, "event", None),
        (2, "event", None),
        (3, "ignored", "no event records"),
    ]


def test_utc_day_range() -> None:
    from rocketmq_retry.jobs.ingest.parse import utc_day_range

    assert utc_day_range("2026-11-20", "Asia/Shanghai") == (1795104000000, 1795104000000 + 86_400_000)
    assert utc_day_range("2026-11-21", "Europe/Berlin") == (1795215600000, 1795215600000 + 86_400_000)
    # a DST switch on the day (a 23-hour day) or the day after, and zones outside the tz database: no range
    assert utc_day_range("2026-03-29", "Europe/Berlin") is None
    assert utc_day_range("2026-03-28", "Europe/Berlin") is None
    assert utc_day_range("2026-11-20", "+08:00") is None


@pytest.mark.parametrize(
    ("ds", "lines", "expected"),
    [
        # Berlin is UTC+1 on 2026-11-21, broker lines GMT+8: the day runs from 07:00 to 07:00 broker time
        (
            "2026-11-21",
            ["2026-11-21 06:59:59", "2026-11-21 07:00:00", "2026-11-22 06:59:59", "2026-11-22 07:00:00"],
            ["other_date", "ignored", "ignored", "other_date"],
        ),
        # 2026-03-29 has 23 hours in Berlin (CET -> CEST): the day ends at 06:00 broker time, not 07:00
        (
            "2026-03-29",
            ["2026-03-29 06:59:59", "2026-03-29 07:00:00", "2026-03-30 05:59:59", "2026-03-30 06:00:00"],
            ["other_date", "ignored", "ignored", "other_date"],
        ),
    ],
)
def test_noise_lines_dated_in_the_days_zone(spark: Any, ds: str, lines: list[str], expected: list[str]) -> None:
    from rocketmq_retry.jobs.ingest import parse

    rows = [
        ("broker", "b.log", i + 1, f"{ts} INFO main - rocketmqHome=/opt", "Etc/GMT-8", None)
        for i, ts in enumerate(lines)
    ]
    df = spark.createDataFrame(
        rows, "source string, source_file string, line_no long, line string, tz string, group_hint string"
    )
    quiet, _ = parse.log_parts(df, ds, "Europe/Berlin", ("Etc/GMT-8",))
    got = [(r.category, r.kind) for r in quiet.orderBy("line_no").collect()]
    assert got == [(c, "b.log INFO" if c == "ignored" else None) for c in expected]


def test_message_dumps(parsed: dict[str, list[Row]]) -> None:
    cols = (
        "line_no",
        "source",
        "event_type",
        "event_time",
        "consumer_group",
        "msg_id",
        "topic",
        "original_topic",
        "reconsume_times",
        "delay_level",
        "body",
    )
    assertDataFrameEqual(
        _ev(parsed, "d.jsonl", cols),
        [
            Row(
                line_no=1,
                source="message-dump",
                event_type="DEAD_LETTERED",
                event_time=t("2026-11-21 23:25:18.310"),
                consumer_group="GID_inventory_reserve",
                msg_id="7F0000013EA75FFD2B276C05973E0000",
                topic="%DLQ%GID_inventory_reserve",
                original_topic="ORDER_CREATED",
                reconsume_times=4,
                delay_level=0,
                body='{"orderId":"ORD-1001"}',
            ),
            Row(
                line_no=2,
                source="message-dump",
                event_type="SEND_BACK",
                event_time=t("2026-11-21 23:25:06.689"),
                consumer_group="GID_coupon_audit",
                msg_id="M2",
                topic="SCHEDULE_TOPIC_XXXX",
                original_topic="COUPON_APPLIED",
                reconsume_times=1,
                delay_level=2,
                body="b",
            ),
            # a dump of the trace topic is read as trace; a CLOUD SubAfter takes the stored message's time
            Row(
                line_no=3,
                source="trace",
                event_type="CONSUME_OK",
                event_time=t("2026-11-21 23:25:06.493"),
                consumer_group=None,
                msg_id="M9",
                topic=None,
                original_topic=None,
                reconsume_times=None,
                delay_level=None,
                body=None,
            ),
        ],
    )
    assert _cat(parsed, "d.jsonl") == [(1, "event"), (2, "event"), (3, "event"), (4, "quarantined"), (5, "other_date")]


def test_report_balances(parsed: dict[str, list[Row]]) -> None:
    for r in parsed["report"]:
        assert r["lines_read"] == r["events"] + r["ignored"] + r["continuation"] + r["quarantined"], r
    by_file = {r["source_file"]: r for r in parsed["report"]}
    assert by_file["c4.log"]["event_rows"] == 5
    assert by_file["c4.log"]["unattributed_events"] == 1  # the broadcast drop names no group (§6.2 L-C4)
    assert by_file["stats.log"]["ignored_by_kind"] == {
        "stats GROUP_GET_NUMS": 1,
        "stats hour/day roll-up (repeats the minute lines)": 1,
    }
