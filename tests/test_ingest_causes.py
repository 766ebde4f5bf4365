"""Literal failure lines with the stack traces after them -> exactly the events' cause columns (docs/ingest.md
"Causes"), one file per format, while every trace line stays a continuation line in the accounting.

All files go through ONE classify run (a module fixture), as in test_ingest_formats.
"""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_retry.contract import EventType

pytestmark = pytest.mark.spark

DS = "2026-11-21"
CAUSE = ("exception_class", "exception_message", "root_cause_class", "root_cause_message", "app_frame")

SPRING_HEAD = "o.a.r.s.s.DefaultRocketMQListenerContainer : consume message failed. messageId:{}, topic:ORDER_PAID, "
# Spring Boot 2's file pattern (%wEx: a blank line before and after the trace), a Caused by chain of two with
# logback's packaging data and "... N common frames omitted"
BOOT2 = [
    "2026-11-21 23:25:07.000  WARN 4242 --- [ConsumeMessageThread_3] "
    + SPRING_HEAD.format("AAA1")
    + "reconsumeTimes:0",
    "",
    "org.springframework.messaging.MessageHandlingException: failed to handle order ORD-1001",
    "\tat org.springframework.messaging.handler.invocation.InvocableHandlerMethod.invoke(InvocableHandlerMethod.java:"
    "61) ~[spring-messaging-5.3.20.jar:5.3.20]",
    "\tat com.example.orders.PaymentListener.onMessage(PaymentListener.java:41) ~[classes/:na]",
    "\tat org.apache.rocketmq.spring.support.DefaultRocketMQListenerContainer.handleMessage("
    "DefaultRocketMQListenerContainer.java:399) ~[rocketmq-spring-boot-2.2.3.jar:2.2.3]",
    "\tat java.base/java.lang.Thread.run(Thread.java:840) ~[na:na]",
    "Caused by: org.springframework.dao.DataAccessResourceFailureException: ledger write failed",
    "\tat com.example.orders.LedgerDao.write(LedgerDao.java:88) ~[classes/:na]",
    "\t... 3 common frames omitted",
    "Caused by: java.sql.SQLTransientConnectionException: HikariPool-1 - Connection is not available, request "
    "timed out after 30000ms.",
    "\tat com.zaxxer.hikari.pool.HikariPool.createTimeoutException(HikariPool.java:696) ~[HikariCP-4.0.3.jar:na]",
    "\t... 4 common frames omitted",
    "",
    "2026-11-21 23:25:08.000  INFO 4242 --- [main] c.e.orders.Heartbeat                     : still alive",
]
# Spring Boot 3's file pattern, an exception without a cause: the root cause is the exception itself
BOOT3 = [
    "2026-11-21T23:25:07.000Z  WARN 4242 --- [ConsumeMessageThread_8] "
    + SPRING_HEAD.format("AAA2")
    + "reconsumeTimes:1",
    "",
    'java.lang.NullPointerException: Cannot invoke "String.length()" because "sku" is null',
    "\tat com.example.invoicemailer.InvoiceReminderListener.onMessage(InvoiceReminderListener.java:57)",
    "\tat org.apache.rocketmq.spring.support.DefaultRocketMQListenerContainer.handleMessage("
    "DefaultRocketMQListenerContainer.java:399)",
    "\tat java.base/java.lang.Thread.run(Thread.java:840)",
    "",
    "2026-11-21T23:25:08.000Z  WARN 4242 --- [ConsumeMessageThread_8] "
    + SPRING_HEAD.format("AAA3")
    + "reconsumeTimes:0",
    "",
    'java.lang.NullPointerException: Cannot invoke "String.length()" because "customer" is null',
    "\tat com.example.invoicemailer.InvoiceReminderListener.onMessage(InvoiceReminderListener.java:57)",
    "\tat java.base/java.lang.Thread.run(Thread.java:840)",
    "",
    # a failure whose exception printed no trace at all, then a later failure's trace that is not its own
    "2026-11-21T23:25:09.000Z  WARN 4242 --- [ConsumeMessageThread_8] "
    + SPRING_HEAD.format("AAA4")
    + "reconsumeTimes:0",
    "2026-11-21T23:25:09.500Z ERROR 4242 --- [main] c.e.orders.Scheduler                     : job failed",
    "",
    "java.lang.IllegalStateException: not a consume failure",
    "\tat com.example.orders.Scheduler.run(Scheduler.java:12)",
    "",
]
# Real 4.9.4 client lines (tests/data/rocketmq-4.9.4/client/consumers.rocketmq_client.log), bodies trimmed: the
# L-C1 line and its trace with the blank line the 4.x client prints after it, then L-C2 (no trace of its own)
MSGS = (
    "Group: GID_ledger_writer Msgs: [MessageExt [brokerName=broker-a, queueId=3, storeSize=261, queueOffset=0, "
    "sysFlag=0, bornTimestamp=1795303506209, bornHost=/127.0.0.1:49294, storeTimestamp=1795303506212, "
    "storeHost=/127.0.0.1:10911, msgId=7F00000100002A9F0000000000000618, commitLogOffset=1560, bodyCRC=623173234, "
    "reconsumeTimes=0, preparedTransactionOffset=0, toString()=Message{topic='PAYMENT_CAPTURED', flag=0, "
    "properties={MIN_OFFSET=0, MAX_OFFSET=1, KEYS=PAY-2001, CONSUME_START_TIME=1795303506243, "
    "UNIQ_KEY=7F0000013EA75FFD2B276C0599210006, CLUSTER=DefaultCluster, TAGS=captured}, body=[123, 125], "
    "transactionId='null'}]] MQ: MessageQueue [topic=PAYMENT_CAPTURED, brokerName=broker-a, queueId=3]"
)
CLIENT4 = [
    "2026-11-21 23:25:06,245 WARN RocketmqClient - consumeMessage exception: java.lang.IllegalStateException: "
    "ledger db unavailable for paymentId=PAY-2001, Consumers.lambda$main$2(Consumers.java:65) " + MSGS,
    "java.lang.IllegalStateException: ledger db unavailable for paymentId=PAY-2001",
    "\tat Consumers.lambda$main$2(Consumers.java:65)",
    "\tat Consumers.lambda$concurrent$0(Consumers.java:38)",
    "\tat org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService$ConsumeRequest.run("
    "ConsumeMessageConcurrentlyService.java:402)",
    "\tat java.base/java.util.concurrent.Executors$RunnableAdapter.call(Executors.java:539)",
    "\tat java.base/java.lang.Thread.run(Thread.java:840)",
    "",
    "2026-11-21 23:25:06,245 WARN RocketmqClient - consumeMessage return null, " + MSGS,
    # the send-back failed (L-C5 4.x): a trace, but not a consume failure's
    "2026-11-21 23:25:06,300 ERROR RocketmqClient - sendMessageBack Exception, GID_ledger_writer",
    "org.apache.rocketmq.remoting.exception.RemotingConnectException: connect to 127.0.0.1:10911 failed",
    "\tat org.apache.rocketmq.remoting.netty.NettyRemotingClient.invokeSync(NettyRemotingClient.java:394)",
    "",
]
# The 5.x remoting client's orderly service (L-C1 from ConsumeMessageOrderlyService): an exception whose class is
# not named *Exception (a wrapped-text line by its shape) and whose message runs over three lines
CLIENT5 = [
    "2026-11-22 07:25:06.245 WARN  [4242] [ConsumeMessageThread_GID_z_1] "
    "[o.a.r.c.i.c.ConsumeMessageOrderlyService#?:?] - consumeMessage exception: com.example.OrderRejected: order "
    "ORD-7 is invalid:, com.example.OrderValidator.check(OrderValidator.java:30) " + MSGS.replace("0] MQ", "0] MQ"),
    "com.example.OrderRejected: order ORD-7 is invalid:",
    "  - amount -5 must be positive",
    "  - currency 'XYZ' is unknown",
    "\tat com.example.OrderValidator.check(OrderValidator.java:30)",
    "\tat org.apache.rocketmq.client.impl.consumer.ConsumeMessageOrderlyService$ConsumeRequest.run("
    "ConsumeMessageOrderlyService.java:482)",
    "2026-11-22 07:25:07.000 INFO  [4242] [main] [o.a.r.c.i.f.MQClientInstance#?:?] - heartbeat",
]
# The gRPC SDK's listener exception (G-C1): no blank lines; the cause names an address. A line follows the last
# trace: at the end of the file it could have been cut (see CUT)
GRPC = [
    "2026-11-22 07:25:08.000 ERROR [77] [RocketmqMessageConsumption-0-1] [o.a.r.c.j.i.c.ConsumeTask#?:?] - Message "
    "listener raised an exception while consuming messages, clientId=c1, mq=broker-a.POINTS_EARNED.0, "
    "messageId=01ABCDEF",
    "java.util.concurrent.CompletionException: java.net.ConnectException: Connection refused: /10.1.2.3:6379",
    "\tat java.base/java.util.concurrent.CompletableFuture.encodeThrowable(CompletableFuture.java:315)",
    "\tat app//com.example.points.PointsListener.consume(PointsListener.java:25)",
    "\tat org.apache.rocketmq.client.java.impl.consumer.ConsumeTask.call(ConsumeTask.java:62)",
    "Caused by: java.net.ConnectException: Connection refused: /10.1.2.3:6379",
    "\tat io.netty.channel.unix.Errors.newConnectException0(Errors.java:166)",
    "\t... 3 more",
    "2026-11-22 07:25:09.000 ERROR [77] [RocketmqMessageConsumption-0-2] [o.a.r.c.j.i.c.ConsumeTask#?:?] - Message "
    "listener raised an exception while consuming messages, clientId=c1, mq=broker-a.POINTS_EARNED.0, "
    "messageId=01ABCDF0",
    "java.util.concurrent.CompletionException: java.net.ConnectException: Connection refused: /10.1.2.4:6379",
    "\tat java.base/java.util.concurrent.CompletableFuture.encodeThrowable(CompletableFuture.java:315)",
    "\tat app//com.example.points.PointsListener.consume(PointsListener.java:25)",
    "Caused by: java.net.ConnectException: Connection refused: /10.1.2.4:6379",
    "\tat io.netty.channel.unix.Errors.newConnectException0(Errors.java:166)",
    "\t... 2 more",
    "2026-11-22 07:25:09.100 INFO  [77] [main] [o.a.r.c.j.i.c.PushConsumerImpl#?:?] - heartbeat",
]
# Traces cut by the end of the file (collected while written): the root cause is not known; the exception is
# when a line follows its own, and so is an app frame read up to its ")"
G_C1 = (
    "2026-11-22 07:25:10.000 ERROR [77] [RocketmqMessageConsumption-0-3] [o.a.r.c.j.i.c.ConsumeTask#?:?] - Message "
    "listener raised an exception while consuming messages, clientId=c1, mq=broker-a.POINTS_EARNED.0, "
    "messageId=01ABCDF1"
)
CUT = [
    G_C1,
    "java.lang.IllegalStateException: Order 123 not found",
    "\tat org.apache.rocketmq.client.java.impl.consumer.ConsumeTask.call(ConsumeTask.java:62)",
    "\tat com.example.points.PointsListener.consume(PointsListener.java:25)",
    "\tat java.base/java.util.concurrent.Executors$Runnab",
]
CUT_AT_EXCEPTION = [G_C1, "java.lang.IllegalStateException: Order 12"]
# MySQL Connector/J's CommunicationsException holds a blank line in its message (its second paragraph says when the
# last packet went): the paragraph is part of the message, as logged, not damage
MYSQL = [
    "2026-11-21T23:26:00.000Z  WARN 4242 --- [ConsumeMessageThread_9] "
    + SPRING_HEAD.format("AAA5")
    + "reconsumeTimes:0",
    "",
    "org.springframework.jdbc.CannotGetJdbcConnectionException: Failed to obtain JDBC Connection",
    "\tat com.example.invoices.InvoiceDao.save(InvoiceDao.java:31)",
    "Caused by: com.mysql.cj.jdbc.exceptions.CommunicationsException: Communications link failure",
    "",
    "The last packet sent successfully to the server was 0 milliseconds ago.",
    "\tat com.mysql.cj.jdbc.exceptions.SQLError.createCommunicationsException(SQLError.java:174)",
    "\t... 1 more",
    "",
    "2026-11-21T23:26:01.000Z  INFO 4242 --- [main] c.e.orders.Heartbeat                     : still alive",
]
FILES = {  # name: (format, zone, lines); the 5.x and gRPC layouts are GMT+8 (§6.1)
    "boot2.log": ("spring-listener", "UTC", BOOT2),
    "boot3.log": ("spring-listener", "UTC", BOOT3),
    "c4.log": ("rocketmq-client-4x", "UTC", CLIENT4),
    "c5.log": ("rocketmq-client-5x", "Etc/GMT-8", CLIENT5),
    "grpc.log": ("rocketmq-grpc-client", "Etc/GMT-8", GRPC),
    "cut.log": ("rocketmq-grpc-client", "Etc/GMT-8", CUT),
    "cut2.log": ("rocketmq-grpc-client", "Etc/GMT-8", CUT_AT_EXCEPTION),
    "mysql.log": ("spring-listener", "UTC", MYSQL),
}


@pytest.fixture(scope="module")
def parsed(spark: Any) -> dict[str, Any]:
    from rocketmq_retry.jobs.ingest import parse

    rows = [
        (source, name, i, line, zone, None)
        for name, (source, zone, lines) in FILES.items()
        for i, line in enumerate(lines, 1)
    ]
    lines = spark.createDataFrame(
        rows, "source string, source_file string, line_no long, line string, tz string, group_hint string"
    )
    classified = parse.classify(lines, DS, day_zone="UTC").cache()
    out = {
        "events": parse.events_of(classified).collect(),
        "lines": classified.select("source_file", "line_no", "category").collect(),
        "report": parse.report_of(classified).collect(),
    }
    classified.unpersist()
    return out


def _causes(parsed: dict[str, Any], file: str) -> list[tuple[Any, ...]]:
    return sorted(
        (r["line_no"], r["event_type"], *(r[c] for c in CAUSE)) for r in parsed["events"] if r["source_file"] == file
    )


def _fingerprints(parsed: dict[str, Any], file: str) -> dict[int, str | None]:
    return {r["line_no"]: r["fingerprint"] for r in parsed["events"] if r["source_file"] == file}


def test_spring_boot2_caused_by_chain(parsed: dict[str, Any]) -> None:
    assert _causes(parsed, "boot2.log") == [
        (
            1,
            EventType.CONSUME_FAILED,
            "org.springframework.messaging.MessageHandlingException",
            "failed to handle order ORD-1001",
            "java.sql.SQLTransientConnectionException",  # the last Caused by, not the first
            "HikariPool-1 - Connection is not available, request timed out after 30000ms.",
            "com.example.orders.PaymentListener.onMessage(PaymentListener.java:41)",  # no packaging data
        )
    ]


def test_spring_boot3_with_the_blank_lines(parsed: dict[str, Any]) -> None:
    npe = "java.lang.NullPointerException"
    frame = "com.example.invoicemailer.InvoiceReminderListener.onMessage(InvoiceReminderListener.java:57)"
    sku = 'Cannot invoke "String.length()" because "sku" is null'
    customer = 'Cannot invoke "String.length()" because "customer" is null'
    assert _causes(parsed, "boot3.log") == [
        (1, EventType.CONSUME_FAILED, npe, sku, npe, sku, frame),
        (8, EventType.CONSUME_FAILED, npe, customer, npe, customer, frame),
        # no trace after it: the ERROR line's trace below is another record's
        (14, EventType.CONSUME_FAILED, None, None, None, None, None),
    ]
    fp = _fingerprints(parsed, "boot3.log")
    # quoted values are masked: one cause for both messages
    assert fp[1] == fp[8] and len(fp[1] or "") == 32
    assert fp[14] is None


def test_client4x_consume_message_exception(parsed: dict[str, Any]) -> None:
    ise = "java.lang.IllegalStateException"
    msg = "ledger db unavailable for paymentId=PAY-2001"
    assert _causes(parsed, "c4.log") == [
        # the app's classes are in the default package: the first frame outside the framework packages
        (1, EventType.CONSUME_FAILED, ise, msg, ise, msg, "Consumers.lambda$main$2(Consumers.java:65)"),
        # L-C2 follows a throw (§12) and prints no exception; L-C5 is no consume failure
        (9, EventType.CONSUME_FAILED, None, None, None, None, None),
        (10, EventType.SEND_BACK_FAILED, None, None, None, None, None),
    ]


def test_client5x_orderly_multi_line_message(parsed: dict[str, Any]) -> None:
    msg = "order ORD-7 is invalid:\n  - amount -5 must be positive\n  - currency 'XYZ' is unknown"
    assert _causes(parsed, "c5.log") == [
        (
            1,
            EventType.CONSUME_FAILED,
            "com.example.OrderRejected",
            msg,
            "com.example.OrderRejected",
            msg,
            "com.example.OrderValidator.check(OrderValidator.java:30)",
        )
    ]


def test_grpc_listener_exception(parsed: dict[str, Any]) -> None:
    cex, con = "java.util.concurrent.CompletionException", "java.net.ConnectException"
    frame = "com.example.points.PointsListener.consume(PointsListener.java:25)"  # "app//" is no part of the class
    assert _causes(parsed, "grpc.log") == [
        (1, EventType.CONSUME_FAILED, cex, f"{con}: Connection refused: /10.1.2.3:6379", con,
         "Connection refused: /10.1.2.3:6379", frame),
        (9, EventType.CONSUME_FAILED, cex, f"{con}: Connection refused: /10.1.2.4:6379", con,
         "Connection refused: /10.1.2.4:6379", frame),
    ]  # fmt: skip
    fp = _fingerprints(parsed, "grpc.log")
    assert fp[1] == fp[9]  # the address is masked


def test_trace_cut_by_the_end_of_the_file(parsed: dict[str, Any]) -> None:
    frame = "com.example.points.PointsListener.consume(PointsListener.java:25)"
    assert _causes(parsed, "cut.log") == [
        (1, EventType.CONSUME_FAILED, "java.lang.IllegalStateException", "Order 123 not found", None, None, frame)
    ]
    assert _fingerprints(parsed, "cut.log") == {1: None}
    # the exception line is the file's last: its message may be cut short
    assert _causes(parsed, "cut2.log") == [(1, EventType.CONSUME_FAILED, None, None, None, None, None)]


HEADS = {  # every other line of a file is a continuation line
    "boot2.log": {1: "event", 15: "ignored"},
    "boot3.log": {1: "event", 8: "event", 14: "event", 15: "ignored"},
    "c4.log": {1: "event", 9: "event", 10: "event"},
    "c5.log": {1: "event", 7: "ignored"},
    "grpc.log": {1: "event", 9: "event", 16: "ignored"},
    "mysql.log": {1: "event", 11: "ignored"},
    "cut.log": {1: "event"},
    "cut2.log": {1: "event"},
}


def test_trace_lines_stay_continuations(parsed: dict[str, Any]) -> None:
    report = {r["source_file"]: r for r in parsed["report"]}
    for name, (_, _, lines) in FILES.items():
        got = sorted((r["line_no"], r["category"]) for r in parsed["lines"] if r["source_file"] == name)
        assert got == [(n, HEADS[name].get(n, "continuation")) for n in range(1, len(lines) + 1)], name
        r = report[name]
        assert (r["lines_read"], r["continuation"], r["quarantined"]) == (len(lines), len(lines) - len(HEADS[name]), 0)


def test_normalised_messages(spark: Any) -> None:
    from rocketmq_retry.jobs.ingest.causes import normalised_sql

    cases = {
        "Order 123 not found": "Order <num> not found",
        "Order 456 not found": "Order <num> not found",
        "user 3f2b8c1e-9d4a-4b7e-8f00-1a2b3c4d5e6f missing": "user <uuid> missing",
        "mail to jane.doe+x@example.co.uk bounced": "mail to <email> bounced",
        "connect to /10.1.2.3:6379 refused": "connect to /<ip> refused",
        "can't find 'ORD-1' in \"orders\"": "can't find '<str>' in \"<str>\"",
        "msg 7F0000013EA75FFD2B276C0599210006 at 0x1f": "msg <hex> at <hex>",
        "took 30000ms, retry 3 of 16": "took <num>ms, retry <num> of <num>",
    }
    df = spark.createDataFrame([(m,) for m in cases], "m string")
    assert {r["m"]: r["n"] for r in df.selectExpr("m", f"{normalised_sql('m')} AS n").collect()} == cases


def test_framework_packages_are_configurable(spark: Any) -> None:
    from rocketmq_retry.config import FRAMEWORK_PACKAGES, parse_config
    from rocketmq_retry.jobs.ingest import parse

    # what the job hands the classifier: the config's list, each entry a package ending in "."
    packages = tuple(parse_config({"causes": {"framework_packages": [*FRAMEWORK_PACKAGES, "com.example.lib"]}})
                     .causes.framework_packages)  # fmt: skip
    assert packages[-1] == "com.example.lib."
    lines = [
        G_C1,
        "java.lang.IllegalStateException: boom",
        "\tat com.example.lib.Retry.call(Retry.java:10)",
        "\tat com.example.library.Cache.get(Cache.java:20)",  # another package: not a prefix match
        "",
    ]
    df = spark.createDataFrame(
        [("rocketmq-grpc-client", "g.log", i, line, "Etc/GMT-8", None) for i, line in enumerate(lines, 1)],
        "source string, source_file string, line_no long, line string, tz string, group_hint string",
    )
    events = parse.events_of(parse.classify(df, DS, day_zone="UTC", frameworks=packages)).collect()
    assert [r["app_frame"] for r in events] == ["com.example.library.Cache.get(Cache.java:20)"]


def test_a_blank_line_inside_a_message(parsed: dict[str, Any]) -> None:
    assert _causes(parsed, "mysql.log") == [
        (
            1,
            EventType.CONSUME_FAILED,
            "org.springframework.jdbc.CannotGetJdbcConnectionException",
            "Failed to obtain JDBC Connection",
            "com.mysql.cj.jdbc.exceptions.CommunicationsException",
            "Communications link failure\n\nThe last packet sent successfully to the server was 0 milliseconds ago.",
            "com.example.invoices.InvoiceDao.save(InvoiceDao.java:31)",
        )
    ]
