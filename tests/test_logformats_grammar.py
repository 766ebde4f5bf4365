"""Each format's grammar against literal lines from docs/rocketmq-rules.md and the real 4.9.4 sample files."""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from rocketmq_retry.logformats import java, layouts, statements, stats, timefmt, trace
from rocketmq_retry.logformats.dump import DUMP_KEYS, REQUIRED_DUMP_KEYS, dump_line


def _sample_lines(samples: pathlib.Path, rel: str) -> list[str]:
    return (samples / rel).read_bytes().decode("utf-8").splitlines(keepends=True)


# --- trace (§9 TraceDataEncoderTest, §7.2) -----------------------------------------------------------------------


def test_pub_record_matches_trace_data_encoder_test() -> None:
    expected = (
        "Pub\u0001time\u0001DefaultRegion\u0001PID-test\u0001topic-test\u0001AC1415116D1418B4AAC217FE1B4E0000"
        "\u0001Tags\u0001Keys\u0001127.0.0.1:10911\u000126\u0001245\u00010\u00010A9A002600002A9F0000000000002329"
        "\u0001true\u0002"
    )
    got = trace.pub_record(
        "time",  # type: ignore[arg-type]  # the upstream test uses the literal "time"
        "DefaultRegion",
        "PID-test",
        "topic-test",
        "AC1415116D1418B4AAC217FE1B4E0000",
        "Tags",
        "Keys",
        "127.0.0.1:10911",
        26,
        245,
        0,
        "0A9A002600002A9F0000000000002329",
        True,
    )
    assert got == expected
    (record,) = trace.decode_body(got)
    assert len(record.fields) == 14  # testPubTraceDataFormatTest
    assert record.get("offsetMsgId") == "0A9A002600002A9F0000000000002329"


def test_sub_records_reproduce_sample_trace_body(samples_dir: pathlib.Path) -> None:
    records = [
        r
        for line in _sample_lines(samples_dir, "dumps/trace-topic.jsonl")
        for r in json.loads(line)["body"].split(trace.FIELD_SPLITOR)
    ]
    before = next(r for r in records if r.startswith("SubBefore")).split(trace.CONTENT_SPLITOR)
    after = next(r for r in records if r.startswith("SubAfter")).split(trace.CONTENT_SPLITOR)
    assert len(before) == 8 and len(after) == 9
    assert trace.sub_before_record(
        int(before[1]), before[2], before[3], before[4], before[5], int(before[6]), before[7]
    ) == (trace.CONTENT_SPLITOR.join(before) + trace.FIELD_SPLITOR)
    assert trace.sub_after_record(
        after[1], after[2], int(after[3]), after[4] == "true", after[5], int(after[6]), int(after[7]), after[8]
    ) == (trace.CONTENT_SPLITOR.join(after) + trace.FIELD_SPLITOR)
    assert before[2] == trace.REGION_NULL  # 4.9.4 writes "null" as the SubBefore region (§12)
    pub = next(r for r in records if r.startswith("Pub")).split(trace.CONTENT_SPLITOR)
    assert len(pub) == len(trace.PUB_FIELDS)


# --- Java renderings (samples client log) -------------------------------------------------------------------------


def test_client_4x_consume_exception_entry_is_byte_identical(samples_dir: pathlib.Path) -> None:
    lines = _sample_lines(samples_dir, "client/consumers.rocketmq_client.log")
    start = next(
        i for i, line in enumerate(lines) if "consumeMessage exception: java.lang.IllegalStateException" in line
    )
    real_entry = "".join(lines[start : start + 11])
    props = {  # deliberately sorted: the order in the line must come from java.hashmap_order
        "CLUSTER": "DefaultCluster",
        "CONSUME_START_TIME": "1795303506243",
        "KEYS": "PAY-2001",
        "MAX_OFFSET": "1",
        "MIN_OFFSET": "0",
        "TAGS": "captured",
        "UNIQ_KEY": "7F0000013EA75FFD2B276C0599210006",
    }
    body = b'{"paymentId":"PAY-2001","orderId":"ORD-1001","currency":"EUR"}'
    ext = java.message_ext_to_string(
        broker_name="broker-a",
        queue_id=3,
        store_size=261,
        queue_offset=0,
        born_timestamp=1795303506209,
        born_host="/127.0.0.1:49294",
        store_timestamp=1795303506212,
        store_host="/127.0.0.1:10911",
        msg_id=java.offset_msg_id("127.0.0.1", 10911, 1560),
        commit_log_offset=1560,
        body_crc=java.java_crc32(body),
        reconsume_times=0,
        topic="PAYMENT_CAPTURED",
        properties=props,
        body=body,
    )
    exc = "java.lang.IllegalStateException: ledger db unavailable for paymentId=PAY-2001"
    frames = [
        "Consumers.lambda$main$2(Consumers.java:65)",
        "Consumers.lambda$concurrent$0(Consumers.java:38)",
        "org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService$ConsumeRequest.run("
        "ConsumeMessageConcurrentlyService.java:402)",
        "java.base/java.util.concurrent.Executors$RunnableAdapter.call(Executors.java:539)",
        "java.base/java.util.concurrent.FutureTask.run(FutureTask.java:264)",
        "java.base/java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1136)",
        "java.base/java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:635)",
        "java.base/java.lang.Thread.run(Thread.java:840)",
    ]
    msg = statements.fill(
        statements.L_C1.template,
        f"{exc}, {frames[0]}",
        "GID_ledger_writer",
        java.message_list_to_string([ext]),
        java.message_queue_to_string("PAYMENT_CAPTURED", "broker-a", 3),
    )
    clock = timefmt.Clock(timefmt.CLIENT_4X_TS, "UTC")
    got = layouts.render_client_4x(
        clock.format(1795303506245), "WARN", "RocketmqClient", msg, layouts.java_stack(exc, frames)
    )
    assert got == real_entry
    assert re.match(layouts.CLIENT_4X_LINE_RE, lines[start])
    assert not re.match(layouts.CLIENT_4X_LINE_RE, lines[start + 1])


def test_hashmap_order_matches_every_sample_property_map(samples_dir: pathlib.Path) -> None:
    text = (samples_dir / "client/consumers.rocketmq_client.log").read_text(encoding="utf-8")
    maps = set(re.findall(r"properties=\{([^}]*)\}", text))
    assert len(maps) > 10
    for rendered in maps:
        keys = [kv.split("=", 1)[0] for kv in rendered.split(", ")]
        assert java.property_order(sorted(keys)) == keys, rendered


def test_logger_abbreviation() -> None:
    assert (
        java.abbreviate_logger("org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService", 12)
        == "o.a.r.c.i.c.ConsumeMessageConcurrentlyService"
    )
    assert layouts.spring_logger_field(layouts.SPRING_CONTAINER_LOGGER) == "a.r.s.s.DefaultRocketMQListenerContainer"


# --- 5.x client (§6.1, §12) -------------------------------------------------------------------------------------------


def test_client_5x_line_shape() -> None:
    clock = timefmt.Clock(timefmt.CLIENT_5X_TS, timefmt.GMT8)
    line = layouts.render_client_5x(
        clock.format(1795303506245),
        "WARN",
        4242,
        "ConsumeMessageThread_GID_x_1",
        statements.L_C2.logger,
        "consumeMessage return null, Group: GID_x Msgs: [] MQ: x",
    )
    assert line == (
        "2026-11-22 07:25:06.245 WARN  [4242] [ConsumeMessageThread_GID_x_1] "
        "[o.a.r.c.i.c.ConsumeMessageConcurrentlyService#?:?] - "
        "consumeMessage return null, Group: GID_x Msgs: [] MQ: x\n"
    )
    assert re.match(layouts.CLIENT_5X_LINE_RE, line.rstrip("\n"))
    # The reference's other shape (caller data available) must parse too.
    assert re.match(
        layouts.CLIENT_5X_LINE_RE,
        "2024-02-22 17:26:27.001 INFO  [1] [t] "
        "[o.a.r.c.i.c.ConsumeMessageConcurrentlyService#processConsumeResult:275] - x",
    )


# --- broker and stats (§6.1, §6.3, the sample broker/) ---------------------------------------------------------------


def test_broker_line_matches_sample(samples_dir: pathlib.Path) -> None:
    real = next(
        line
        for line in _sample_lines(samples_dir, "broker/broker.log")
        if "create new topic TopicConfig [topicName=%RETRY%" in line
    )
    clock = timefmt.Clock(timefmt.BROKER_TS, timefmt.GMT8)
    topic_config = java.topic_config_to_string("%RETRY%GID_inventory_reserve", with_attributes=False)
    # 23:24:40Z is 07:24:40 in GMT+8 on the next day: broker files are GMT+8 whatever the host zone.
    ms = 1795303480000
    got = layouts.render_broker(
        clock.format(ms), "INFO", "HeartbeatThread_1", statements.fill(statements.L_B1.template, topic_config)
    )
    assert got == real
    assert re.match(layouts.BROKER_LINE_RE, real.rstrip("\n"))


def test_topic_config_rendering() -> None:
    # §6.3 L-B1, 5.x form quoted in docs/rocketmq-rules.md
    assert java.topic_config_to_string("%DLQ%g") == (
        "TopicConfig [topicName=%DLQ%g, readQueueNums=1, writeQueueNums=1, perm=RW-, topicFilterType=SINGLE_TAG, "
        "topicSysFlag=0, order=false, attributes={}]"
    )


def test_broker_dlq_line_l_b7() -> None:
    clock = timefmt.Clock(timefmt.BROKER_TS, timefmt.GMT8)
    msg = statements.fill(statements.L_B7.template, "%DLQ%G", None, "T", "G", "UK", 1708593987000)
    assert layouts.render_broker(clock.format(1708593987000), "INFO", "SendMessageThread_1", msg) == (
        "2024-02-22 17:26:27 INFO SendMessageThread_1 - send msg to DLQ %DLQ%G, owner=null, originalTopic=T, "
        "consumerId=G, msgUniqKey=UK, storeTimestamp=1708593987000\n"
    )


def test_stats_line_matches_sample(samples_dir: pathlib.Path) -> None:
    real = next(
        line for line in _sample_lines(samples_dir, "broker/stats.log") if "[SNDBCK_PUT_NUMS] [ORDER_CREATED@" in line
    )
    clock = timefmt.Clock(timefmt.BROKER_TS, timefmt.GMT8)
    print_ms = 1795303560000  # 07:26:00 GMT+8
    start, end = stats.minute_window(print_ms, first_event_ms=1795303506049)
    msg = stats.minute_line(
        statements.SNDBCK_PUT_NUMS, stats.stats_key("ORDER_CREATED", "GID_inventory_reserve"), 12, end - start
    )
    assert layouts.render_stats(clock.format(print_ms), msg) == real
    assert re.match(layouts.STATS_LINE_RE, real.rstrip("\n"))


def test_parser_broker_head_reads_every_stats_and_broker_line_alike(samples_dir: pathlib.Path) -> None:
    """One grammar for the broker files: the parser's BROKER_HEAD reads each line the simulator-side regexes accept
    (the real sample's broker.log and stats.log, and the simulator's own renderings) to the same fields."""
    from rocketmq_retry.jobs.ingest.screen import RX_BROKER

    assert layouts.BROKER_HEAD.removesuffix(" - (.*)$") + "$" == RX_BROKER
    assert re.sub(r"\(\?P<\w+>", "(", layouts.BROKER_LINE_RE) == layouts.BROKER_HEAD
    clock = timefmt.Clock(timefmt.BROKER_TS, timefmt.GMT8)
    stats_lines = [*_sample_lines(samples_dir, "broker/stats.log"), layouts.render_stats(clock.format(0), "[X] [y]")]
    broker_lines = [
        *_sample_lines(samples_dir, "broker/broker.log"),
        layouts.render_broker(clock.format(0), "WARN", "T_1", "m"),
    ]
    checked = 0
    for pattern, lines in ((layouts.STATS_LINE_RE, stats_lines), (layouts.BROKER_LINE_RE, broker_lines)):
        for line in lines:
            line = line.rstrip("\n")
            m = re.match(pattern, line)
            if m is None:
                continue
            head = re.match(layouts.BROKER_HEAD, line)
            assert head is not None, line
            fields = m.groupdict()
            assert head.groups() == (fields["ts"], fields["level"], fields.get("thread"), fields["msg"]), line
            # the screen cuts the head at the first " - " and matches RX_BROKER there
            cut = re.match(RX_BROKER, line.partition(" - ")[0])
            assert cut is not None and cut.groups() == head.groups()[:3], line
            checked += 1
    assert checked > 100


# --- spring (§6.4) ----------------------------------------------------------------------------------------------------


def test_spring_consume_failed_entry() -> None:
    clock = timefmt.Clock(timefmt.SPRING_TS, "Asia/Shanghai")
    msg = statements.fill(
        statements.S_CONSUME_FAILED.template, "7F0000013EA75FFD2B276C0599210006", "PAYMENT_CAPTURED", 2
    )
    got = layouts.render_spring(
        clock.format(1795303506245),
        "WARN",
        1234,
        "ConsumeMessageThread_1",
        layouts.SPRING_CONTAINER_LOGGER,
        msg,
        layouts.java_stack("java.lang.RuntimeException: boom", ["a.B.c(B.java:1)"]),
    )
    assert got == (
        "2026-11-22T07:25:06.245+08:00  WARN 1234 --- [ConsumeMessageThread_1] "
        "a.r.s.s.DefaultRocketMQListenerContainer : consume message failed. "
        "messageId:7F0000013EA75FFD2B276C0599210006, topic:PAYMENT_CAPTURED, reconsumeTimes:2\n"
        "\njava.lang.RuntimeException: boom\n\tat a.B.c(B.java:1)\n\n"
    )
    assert re.match(layouts.SPRING_LINE_RE, got.split("\n", 1)[0])


def test_statement_regex_round_trip() -> None:
    text = statements.fill(statements.S_CONSUME_FAILED.template, "ID", "TOPIC", 3)
    m = re.fullmatch(statements.template_regex(statements.S_CONSUME_FAILED.template), text)
    assert m is not None and m.groups() == ("ID", "TOPIC", "3")
    with pytest.raises(ValueError):
        statements.fill(statements.L_C2.template, "only one")


# --- message dump (DESIGN §6) ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["dlq-topics.jsonl", "retry-topics.jsonl", "schedule-topic.jsonl", "trace-topic.jsonl"]
)
def test_dump_line_is_byte_identical_to_sample(name: str, samples_dir: pathlib.Path) -> None:
    for real in _sample_lines(samples_dir, f"dumps/{name}")[:5]:
        d = json.loads(real)
        assert tuple(d) == DUMP_KEYS
        assert set(REQUIRED_DUMP_KEYS) <= set(d)
        got = dump_line(
            dump_topic=d["dumpTopic"],
            topic=d["topic"],
            queue_id=d["queueId"],
            queue_offset=d["queueOffset"],
            msg_id=d["msgId"],
            offset_msg_id=d["offsetMsgId"],
            born_timestamp=d["bornTimestamp"],
            born_host=d["bornHost"],
            store_timestamp=d["storeTimestamp"],
            store_host=d["storeHost"],
            commit_log_offset=d["commitLogOffset"],
            reconsume_times=d["reconsumeTimes"],
            properties=dict(reversed(list(d["properties"].items()))),
            body=d["body"],
        )
        assert got == real


def test_ids_round_trip() -> None:
    assert java.decode_offset_msg_id("0A9A002600002A9F0000000000002329") == ("10.154.0.38", 10911, 9001)
    prefix = java.uniq_key_prefix("127.0.0.1", 0x3EA7, 0x5FFD2B27)
    assert java.uniq_key(prefix, 0x6C05973E, 0) == "7F0000013EA75FFD2B276C05973E0000"
    assert java.render_body("é".encode()) == "[-61, -87]"


_EXT = re.compile(
    r"MessageExt \[brokerName=(?P<broker>[^,]+), queueId=(?P<qid>\d+), storeSize=(?P<size>\d+), "
    r"queueOffset=(?P<qoff>\d+), sysFlag=0, bornTimestamp=(?P<born>\d+), bornHost=(?P<bhost>[^,]+), "
    r"storeTimestamp=(?P<store>\d+), storeHost=(?P<shost>[^,]+), msgId=(?P<id>[0-9A-F]+), "
    r"commitLogOffset=(?P<clo>\d+), bodyCRC=(?P<crc>\d+), reconsumeTimes=(?P<r>\d+), preparedTransactionOffset=0, "
    r"toString\(\)=Message\{topic='(?P<topic>[^']+)', flag=0, properties=\{(?P<props>[^}]*)\}, "
    r"body=\[(?P<body>[-\d, ]*)\], transactionId='null'\}\]"
)


def test_every_sample_message_ext_rerenders_identically(samples_dir: pathlib.Path) -> None:
    text = (samples_dir / "client/consumers.rocketmq_client.log").read_text(encoding="utf-8")
    seen = 0
    for m in _EXT.finditer(text):
        props = dict(kv.split("=", 1) for kv in m["props"].split(", "))
        body = bytes(int(b) & 0xFF for b in m["body"].split(", ")) if m["body"] else b""
        ip, port, offset = java.decode_offset_msg_id(m["id"])
        assert offset == int(m["clo"]) and m["shost"] == f"/{ip}:{port}"
        assert java.java_crc32(body) == int(m["crc"])
        stored = {k: v for k, v in props.items() if k not in ("MIN_OFFSET", "MAX_OFFSET", "CONSUME_START_TIME")}
        stored_topic = props.get("REAL_TOPIC", m["topic"])  # retry copies are stored in %RETRY%<group>
        assert java.store_size(stored_topic, body, stored) == int(m["size"])
        again = java.message_ext_to_string(
            broker_name=m["broker"],
            queue_id=int(m["qid"]),
            store_size=int(m["size"]),
            queue_offset=int(m["qoff"]),
            born_timestamp=int(m["born"]),
            born_host=m["bhost"],
            store_timestamp=int(m["store"]),
            store_host=m["shost"],
            msg_id=java.offset_msg_id(ip, port, offset),
            commit_log_offset=offset,
            body_crc=java.java_crc32(body),
            reconsume_times=int(m["r"]),
            topic=m["topic"],
            properties=dict(sorted(props.items())),
            body=body,
        )
        assert again == m.group(0)
        seen += 1
    assert seen == text.count("MessageExt [") >= 40  # every rendering in the file, retries included


def test_producer_retry_entry_matches_sample(samples_dir: pathlib.Path) -> None:
    lines = _sample_lines(samples_dir, "client/retryproducer.rocketmq_client.log")
    start = next(i for i, line in enumerate(lines) if "sendKernelImpl exception, resend at once" in line)
    clock = timefmt.Clock(timefmt.CLIENT_4X_TS, "UTC")
    ts = clock.format(1795303570006)  # 23:26:10,006 in the producer JVM's zone (UTC)
    frames = [
        "org.apache.rocketmq.remoting.netty.NettyRemotingClient.invokeSync(NettyRemotingClient.java:407)",
        "org.apache.rocketmq.client.impl.MQClientAPIImpl.sendMessageSync(MQClientAPIImpl.java:521)",
        "org.apache.rocketmq.client.impl.MQClientAPIImpl.sendMessage(MQClientAPIImpl.java:505)",
        "org.apache.rocketmq.client.impl.MQClientAPIImpl.sendMessage(MQClientAPIImpl.java:449)",
        "org.apache.rocketmq.client.impl.producer.DefaultMQProducerImpl.sendKernelImpl(DefaultMQProducerImpl.java:837)",
        "org.apache.rocketmq.client.impl.producer.DefaultMQProducerImpl.sendDefaultImpl(DefaultMQProducerImpl.java:575)",
        "org.apache.rocketmq.client.impl.producer.DefaultMQProducerImpl.send(DefaultMQProducerImpl.java:1363)",
        "org.apache.rocketmq.client.impl.producer.DefaultMQProducerImpl.send(DefaultMQProducerImpl.java:1307)",
        "org.apache.rocketmq.client.producer.DefaultMQProducer.send(DefaultMQProducer.java:333)",
        "RetryProducer.main(RetryProducer.java:20)",
    ]
    msg = statements.fill(
        statements.L_P1.template,
        4346942797859209429,
        4,
        java.message_queue_to_string("CHECKOUT_SUBMITTED", "broker-a", 0),
    )
    exc = "org.apache.rocketmq.remoting.exception.RemotingConnectException: connect to 127.0.0.1:10911 failed"
    got = layouts.render_client_4x(ts, "WARN", "RocketmqClient", msg, layouts.java_stack(exc, frames))
    assert got == "".join(lines[start : start + 13])
    body = b'{"checkoutId":"CHK-13007","cartItems":3}'
    props = {"WAIT": "true", "TAGS": "submit", "KEYS": "CHK-13007", "UNIQ_KEY": "7F00000141765FFD2B276C0692520012"}
    dumped = layouts.render_client_4x(
        ts, "WARN", "RocketmqClient", java.message_to_string("CHECKOUT_SUBMITTED", props, body)
    )
    assert dumped in lines


def test_grpc_message_id_layout() -> None:
    # the example in rocketmq-clients' MessageIdCodec javadoc
    ms = java.GRPC_ID_EPOCH_MS + 0x024CCDBE * 1000
    assert java.grpc_message_id("56F7E71C361B", 0x21BC, ms, 0) == "0156F7E71C361B21BC024CCDBE00000000"


def test_spring_running_container_line() -> None:
    container = java.listener_container_to_string("GID_x", "10.0.0.5:9876", "T")
    assert statements.fill(statements.S_RUNNING_CONTAINER.template, container) == (
        "running container: DefaultRocketMQListenerContainer{consumerGroup='GID_x', namespace='', "
        "nameServer='10.0.0.5:9876', topic='T', consumeMode=CONCURRENTLY, selectorType=TAG, selectorExpression='*', "
        "messageModel=CLUSTERING', tlsEnable=false, instanceName=DEFAULT}"
    )


# --- Spring Boot patterns, rocketmq-spring versions, thread names (rocketmq-facts Q1, Q6, Q11) ---------------------


def test_spring_boot2_console_line_cuts_the_thread_to_its_last_15_characters() -> None:
    clock = timefmt.Clock(timefmt.SPRING_BOOT2_TS, "Asia/Shanghai")
    msg = statements.fill(statements.S_CONSUME_FAILED.template, "7F0000013EA75FFD2B276C0599210006", "T", 2)
    got = layouts.render_spring(
        clock.format(1636875373157),
        "WARN",
        17592,
        "ConsumeMessageThread_18",
        layouts.SPRING_CONTAINER_LOGGER,
        msg,
        pattern=layouts.SPRING_BOOT2_CONSOLE,
    )
    assert got == (
        "2021-11-14 15:36:13.157  WARN 17592 --- [essageThread_18] a.r.s.s.DefaultRocketMQListenerContainer : "
        "consume message failed. messageId:7F0000013EA75FFD2B276C0599210006, topic:T, reconsumeTimes:2\n"
    )
    main = layouts.render_spring(
        clock.format(1636875373157), "INFO", 17592, "main", "com.example.a.AApplication", "Started",
        pattern=layouts.SPRING_BOOT2_CONSOLE,
    )  # fmt: skip
    assert main.startswith("2021-11-14 15:36:13.157  INFO 17592 --- [           main] com.example.a.AApplication ")
    # the Boot 2 file pattern keeps the whole thread name
    file_line = layouts.render_spring(
        clock.format(1636875373157), "WARN", 17592, "ConsumeMessageThread_GID_invoice_mailer_18",
        layouts.SPRING_CONTAINER_LOGGER, msg, pattern=layouts.SPRING_BOOT2_FILE,
    )  # fmt: skip
    assert "--- [ConsumeMessageThread_GID_invoice_mailer_18] a.r.s.s." in file_line
    for line in (got, main, file_line):
        assert re.match(layouts.SPRING_LINE_RE, line.rstrip("\n"))


def test_spring_boot3_console_patterns() -> None:
    clock = timefmt.Clock(timefmt.SPRING_TS, "Asia/Shanghai")
    thread = "ConsumeMessageThread_GID_invoice_mailer_18"
    plain = layouts.render_spring(
        clock.format(1795303506245), "WARN", 4242, thread, layouts.SPRING_CONTAINER_LOGGER, "x",
        pattern=layouts.SPRING_BOOT3_CONSOLE, application_name="invoice-mailer",
    )  # fmt: skip
    assert plain == (
        "2026-11-22T07:25:06.245+08:00  WARN 4242 --- [voice_mailer_18] a.r.s.s.DefaultRocketMQListenerContainer : x\n"
    )
    named = layouts.render_spring(
        clock.format(1795303506245), "WARN", 4242, thread, layouts.SPRING_CONTAINER_LOGGER, "x",
        pattern=layouts.SPRING_BOOT3_CONSOLE_APPNAME, application_name="invoice-mailer",
    )  # fmt: skip
    assert named.startswith("2026-11-22T07:25:06.245+08:00  WARN 4242 --- [invoice-mailer] [voice_mailer_18] a.r.s.s.")
    m = re.match(layouts.SPRING_LINE_RE, named.rstrip("\n"))
    assert m is not None and m.group("app") == "invoice-mailer" and m.group("thread") == "voice_mailer_18"
    assert layouts.thread_field("main", 15) == "           main"
    assert layouts.thread_field("main", None) == "main"


def test_running_container_line_per_rocketmq_spring_version() -> None:
    def line(version: str) -> str:
        container = java.listener_container_to_string("G", "ns:9876", "T", spring_version=version)
        return statements.fill(statements.S_RUNNING_CONTAINER.template, container)

    assert line("2.2.1") == (
        "running container: DefaultRocketMQListenerContainer{consumerGroup='G', nameServer='ns:9876', topic='T', "
        "consumeMode=CONCURRENTLY, selectorType=TAG, selectorExpression='*', messageModel=CLUSTERING}"
    )
    assert line("2.2.2") == (
        "running container: DefaultRocketMQListenerContainer{consumerGroup='G', namespace='', nameServer='ns:9876', "
        "topic='T', consumeMode=CONCURRENTLY, selectorType=TAG, selectorExpression='*', messageModel=CLUSTERING', "
        "tlsEnable=false}"
    )
    assert line("2.3.0") == (
        "running container: DefaultRocketMQListenerContainer{consumerGroup='G', namespace='', nameServer='ns:9876', "
        "topic='T', consumeMode=CONCURRENTLY, selectorType=TAG, selectorExpression='*', messageModel=CLUSTERING', "
        "tlsEnable=false, instanceName=DEFAULT}"
    )
    assert line("2.3.1") == (
        "running container: DefaultRocketMQListenerContainer{consumerGroup='G', namespace='', namespaceV2='', "
        "nameServer='ns:9876', topic='T', consumeMode=CONCURRENTLY, selectorType=TAG, selectorExpression='*', "
        "messageModel=CLUSTERING', tlsEnable=false, instanceName=DEFAULT}"
    )
    # the release an application runs, from its client (rocketmq-spring-boot-parent/pom.xml)
    assert java.spring_version_for_client((4, 8, 0)) == "2.2.0"
    assert java.spring_version_for_client((4, 9, 1)) == "2.2.1"
    assert java.spring_version_for_client((4, 9, 4)) == "2.2.2"
    assert java.spring_version_for_client((5, 2, 0)) == "2.3.0"
    assert java.spring_version_for_client((5, 3, 3)) == "2.3.5"


def test_consume_thread_names_follow_the_client_version() -> None:
    assert java.consume_thread_name("GID_a", 3, (4, 9, 1)) == "ConsumeMessageThread_3"
    assert java.consume_thread_name("GID_a", 3, (4, 9, 2)) == "ConsumeMessageThread_3"
    assert java.consume_thread_name("GID_a", 3, (4, 9, 3)) == "ConsumeMessageThread_GID_a_3"
    assert java.consume_thread_name("GID_a", 3, (5, 2, 0)) == "ConsumeMessageThread_GID_a_3"
    assert java.consume_thread_name("GID_a", 3, (5, 2, 0), pop=True) == "ConsumeMessageThread_3"
    assert java.consume_thread_name("G" * 120, 1, (4, 9, 4)) == "ConsumeMessageThread_" + "G" * 100 + "_1"
    clean = "CleanExpireMsgScheduledThread_"
    assert java.scheduled_thread_name(clean, "GID_a", 1, (5, 1, 0)) == "CleanExpireMsgScheduledThread_1"
    assert java.scheduled_thread_name(clean, "GID_a", 1, (5, 1, 1)) == "CleanExpireMsgScheduledThread_GID_a_1"


def test_grpc_message_queue_and_rebalance_renderings() -> None:
    # rocketmq-clients MessageQueueImpl.toString(): brokerName + "." + topic + "." + queueId
    assert java.grpc_message_queue_to_string("broker-b", "PAYMENT_CAPTURED", 1) == "broker-b.PAYMENT_CAPTURED.1"
    # HashSet<MessageQueue> iteration order, checked against a JDK 17 HashSet of MessageQueue (same hashCode)
    assert java.message_queue_set_order("CACHE_INVALIDATE", "broker-a", range(4)) == [0, 3, 2, 1]
    assert java.message_queue_set_order("ORDER_PAID", "broker-a", range(4)) == [0, 1, 2, 3]
    assert java.message_queue_set_order("%RETRY%GID_x", "broker-a", range(4)) == [2, 3, 0, 1]
    assert java.message_queue_set_order("%RETRY%GID_x", "broker-b", [1, 3]) == [3, 1]
    mq = java.message_queue_to_string("T", "broker-a", 0)
    assert statements.fill(statements.C_ADD_PULL_REQUEST, "G", java.pull_request_to_string("G", mq, 7)) == (
        "doRebalance, G, add a new pull request PullRequest [consumerGroup=G, messageQueue=MessageQueue [topic=T, "
        "brokerName=broker-a, queueId=0], nextOffset=7]"
    )
    assert statements.C_REBALANCED_5X == "client " + statements.C_REBALANCED_4X
    assert statements.C_REBALANCED_4X.startswith("rebalanced result changed. allocateMessageQueueStrategyName={}")


# --- one grammar: every template the simulator renders round-trips through the parser's regexes ----------------------

_RT_EXT = java.message_ext_to_string(
    broker_name="broker-a",
    queue_id=2,
    store_size=261,
    queue_offset=7,
    born_timestamp=1795303506209,
    born_host="/10.0.0.5:49294",
    store_timestamp=1795303506212,
    store_host="/10.0.0.9:10911",
    msg_id=java.offset_msg_id("10.0.0.9", 10911, 1560),
    commit_log_offset=1560,
    body_crc=1234,
    reconsume_times=3,
    topic="%RETRY%GID_orders",
    properties={"KEYS": "ORD-1", "UNIQ_KEY": "0A00000531CC18B4AAC2", "RETRY_TOPIC": "ORDERS"},
    body=b"{}",
)
_MQ = java.message_queue_to_string("ORDERS", "broker-a", 2)
_GMQ = java.grpc_message_queue_to_string("broker-a", "ORDERS", 2)
_EXC = "java.lang.IllegalStateException: ledger down, Listener.onMessage(Listener.java:42)"
_UNIQ = "0A00000531CC18B4AAC2"
_CID = "10.0.0.5@4242#123"
_PY_ID = "01C31BD72CF06C63030B1B41D000000000"  # a gRPC message id: 34 hex digits, "01" first
_POP_RECORD = (
    "PopDeliveryRecord{popTime=1795794896000, groupId='GID_push_inventory', "
    "topicId='%RETRY%GID_push_inventory_ORDER_EVENTS', queueId=0, retryFlag=1, invisibleTime=60000, offset=17, "
    "attemptTimes=16, attemptId='null'}"
)

# statement variant -> (the simulator's rendering of its message, the fields the parser must extract from it).
# Each expected dict names every extraction the statement defines (group/topic/msg_id/reconsume/detail/msgs).
_ROUND_TRIP: dict[str, tuple[str, dict[str, str]]] = {
    "L_C1": (
        statements.fill(statements.L_C1.template, _EXC, "GID_orders", java.message_list_to_string([_RT_EXT]), _MQ),
        {"group_rx": "GID_orders", "msgs_rx": _RT_EXT, "detail_rx": _EXC},
    ),
    "L_C2": (
        statements.fill(statements.L_C2.template, "GID_orders", java.message_list_to_string([_RT_EXT, _RT_EXT]), _MQ),
        {"group_rx": "GID_orders", "msgs_rx": f"{_RT_EXT}, {_RT_EXT}"},
    ),
    "L_C3": (
        statements.fill(statements.L_C3.template, "GID_fifo", java.message_list_to_string([_RT_EXT]), _MQ),
        {"group_rx": "GID_fifo", "msgs_rx": _RT_EXT},
    ),
    "L_C4": (statements.fill(statements.L_C4.template, _RT_EXT), {"msgs_rx": _RT_EXT}),
    "L_C5_5X": (
        statements.fill(statements.L_C5_5X.template, "GID_orders", "broker-a", _MQ, _RT_EXT),
        {"group_rx": "GID_orders", "msgs_rx": _RT_EXT},
    ),
    "L_C5_4X": (statements.fill(statements.L_C5_4X.template, "GID_orders"), {"group_rx": "GID_orders"}),
    "L_C6": (
        statements.fill(statements.L_C6.template, "GID_orders", _RT_EXT),
        {"group_rx": "GID_orders", "msgs_rx": _RT_EXT},
    ),
    "L_C8": (
        statements.fill(statements.L_C8.template, "ORDERS", _UNIQ, "10.0.0.9:10911", 2, 7),
        {"topic_rx": "ORDERS", "msg_id_rx": _UNIQ},
    ),
    "L_C12": (statements.fill(statements.L_C12.template, _RT_EXT), {"msgs_rx": _RT_EXT}),
    "L_C13": (statements.fill(statements.L_C13.template, 16, _RT_EXT), {"msgs_rx": _RT_EXT}),
    "L_P1": (
        statements.fill(statements.L_P1.template, 4611686018427387903, 3001, _MQ),
        {
            "topic_rx": "ORDERS",
            "detail_rx": f"resend at once, InvokeID: 4611686018427387903, RT: 3001ms, Broker: {_MQ}",
        },
    ),
    "S_CONSUME_FAILED": (
        statements.fill(statements.S_CONSUME_FAILED.template, _UNIQ, "ORDERS", 2),
        {"topic_rx": "ORDERS", "msg_id_rx": _UNIQ, "reconsume_rx": "2"},
    ),
    "G_LISTENER_EXCEPTION": (
        statements.fill(statements.G_LISTENER_EXCEPTION.template, _CID, _GMQ, _UNIQ),
        {"msg_id_rx": _UNIQ, "topic_rx": "ORDERS"},
    ),
    "G_FORWARD_DLQ_OK": (
        statements.fill(
            statements.G_FORWARD_DLQ_OK.template, _CID, "GID_fifo", _UNIQ, _GMQ, "ipv4:10.0.0.9:8081", "R1"
        ),
        {"group_rx": "GID_fifo", "msg_id_rx": _UNIQ},
    ),
    "G_SEND_RETRY": (
        statements.fill(statements.G_SEND_RETRY.template, 3, 1, "ORDERS", _UNIQ, "ipv4:10.0.0.9:8081", _CID),
        {"msg_id_rx": _UNIQ, "topic_rx": "ORDERS"},
    ),
    "G_SEND_FAILED": (
        statements.fill(statements.G_SEND_FAILED.template, 3, 3, "ORDERS", _UNIQ, "ipv4:10.0.0.9:8081", _CID),
        {"msg_id_rx": _UNIQ, "topic_rx": "ORDERS"},
    ),
    "G_SEND_THROTTLED": (
        statements.fill(statements.G_SEND_THROTTLED.template, "PT1S", 3, 1, "ORDERS", _UNIQ, "ipv4:h:8081", _CID),
        {"msg_id_rx": _UNIQ, "topic_rx": "ORDERS"},
    ),
    "G_RESEND_OK": (
        statements.fill(statements.G_RESEND_OK.template, "ORDERS", _UNIQ, 3, 2, "ipv4:10.0.0.9:8081", _CID),
        {"msg_id_rx": _UNIQ, "topic_rx": "ORDERS"},
    ),
    "L_B7": (
        statements.fill(
            statements.L_B7.template, "%DLQ%GID_orders", None, "ORDERS", "GID_orders", _UNIQ, 1795303506212
        ),
        {"group_rx": "GID_orders", "msg_id_rx": _UNIQ, "topic_rx": "%DLQ%GID_orders"},
    ),
    "L_B2": (
        statements.fill(statements.L_B2.template, "GID_fifo", "%RETRY%GID_fifo", 16, 16),
        {"group_rx": "GID_fifo", "topic_rx": "%RETRY%GID_fifo"},
    ),
    # Python SDK 5.1.2 (§5.7): values of the real 5.2.0 proxy sample (tests/data/rocketmq-5.2.0-proxy)
    "PY_LISTENER_EXCEPTION": (
        statements.fill(
            statements.PY_LISTENER_EXCEPTION.template,
            "ORDER_EVENTS",
            _PY_ID,
            "downstream unavailable for key=THROW-ORD1006",
        ),
        {
            "topic_rx": "ORDER_EVENTS",
            "msg_id_rx": _PY_ID,
            "message_rx": "downstream unavailable for key=THROW-ORD1006",
        },
    ),
    "PY_CORRUPTED": (
        statements.fill(statements.PY_CORRUPTED.template, "ORDER_EVENTS", _PY_ID),
        {"topic_rx": "ORDER_EVENTS", "msg_id_rx": _PY_ID, "detail_rx": "corrupted"},
    ),
    "PY_FIFO_BUG": (
        statements.fill(statements.PY_FIFO_BUG.template, "ORDER_STATUS_FIFO", _PY_ID, "boom, again"),
        {"topic_rx": "ORDER_STATUS_FIFO", "msg_id_rx": _PY_ID, "message_rx": "boom, again"},
    ),
    "PY_FORWARD_DLQ_OK": (
        statements.fill(statements.PY_FORWARD_DLQ_OK.template, "GID_fifo_state_machine", "ORDER_STATUS_FIFO", _PY_ID),
        {"group_rx": "GID_fifo_state_machine", "topic_rx": "ORDER_STATUS_FIFO", "msg_id_rx": _PY_ID},
    ),
    "PY_FORWARD_DLQ_FAILED": (
        statements.fill(statements.PY_FORWARD_DLQ_FAILED.template, "ORDER_STATUS_FIFO", _PY_ID, "CANCELLED"),
        {"topic_rx": "ORDER_STATUS_FIFO", "msg_id_rx": _PY_ID, "detail_rx": "CANCELLED"},
    ),
    "PY_SEND_FAILED": (
        statements.fill(statements.PY_SEND_FAILED.template, "127.0.0.1:8081", "ORDER_EVENTS", _PY_ID, 1, 4),
        {"topic_rx": "ORDER_EVENTS", "msg_id_rx": _PY_ID, "detail_rx": "run out of attempt times"},
    ),
    "L_B1": (
        statements.fill(statements.L_B1.template, java.topic_config_to_string("%RETRY%GID_orders")),
        {"topic_rx": "%RETRY%GID_orders"},
    ),
    "L_B9": (
        stats.minute_line(statements.SNDBCK_PUT_NUMS, "ORDERS@GID_orders", 12, 50_000),
        {"group_rx": "GID_orders", "topic_rx": "ORDERS", "detail_rx": "12"},
    ),
    "L_B10": (
        stats.minute_line(
            statements.SNDBCK2DLQ_TIMES, "null@ORDERS@GID_orders@" + statements.SEND_BACK_TO_DLQ, 2, 60_000
        ),
        {"group_rx": "GID_orders", "topic_rx": "ORDERS", "detail_rx": "2"},
    ),
    "L_B15": (
        stats.minute_line(statements.TOPIC_PUT_NUMS, "%DLQ%GID_orders", 1, 60_000),
        {"group_rx": "GID_orders", "topic_rx": "%DLQ%GID_orders", "detail_rx": "1"},
    ),
    "L_C16": (
        stats.minute_line(statements.CONSUME_FAILED_TPS, "%RETRY%GID_orders@GID_orders", 4, 60_000),
        {"group_rx": "GID_orders", "topic_rx": "%RETRY%GID_orders", "detail_rx": "4"},
    ),
    # PopConsumerRecord#toString (5.3.3), of a copy popped from the V1 pop retry topic (retryFlag 1)
    "L_B16": (
        statements.fill(statements.L_B16.template, _POP_RECORD),
        {
            "group_rx": "GID_push_inventory",
            "topic_rx": "%RETRY%GID_push_inventory_ORDER_EVENTS",
            "detail_rx": _POP_RECORD,
        },
    ),
    "L_B17": (
        statements.fill(statements.L_B17.template, _POP_RECORD),
        {
            "group_rx": "GID_push_inventory",
            "topic_rx": "%RETRY%GID_push_inventory_ORDER_EVENTS",
            "detail_rx": _POP_RECORD,
        },
    ),
    "L_B18": (
        statements.fill(
            statements.L_B18.template, "ORDER_EVENTS", "GID_push_inventory", "broker-a", 2, 17, 1795794896000, 60000, 17
        ),
        {
            "group_rx": "GID_push_inventory",
            "topic_rx": "ORDER_EVENTS",
            "detail_rx": "ORDER_EVENTS, GID_push_inventory, broker-a, 2-17, 1795794896000, 60000, 17",
        },
    ),
}
_EXTRACTIONS = ("group_rx", "msgs_rx", "detail_rx", "topic_rx", "msg_id_rx", "reconsume_rx", "message_rx")
_WRITTEN_ONLY_ARGS = {
    "S_RUNNING_CONTAINER": ("DefaultRocketMQListenerContainer{consumerGroup='GID_x', topic='ORDERS'}",),
    "G_FIFO_EXHAUSTED": (16, 16, _GMQ, _UNIQ, _CID),
}


def _name_of(st: statements.Statement) -> str:
    return next(name for name, value in vars(statements).items() if value is st and name.isupper())


def _render_and_read(fmt: str, st: statements.Statement, message: str) -> str:
    """Write ``message`` in ``fmt``'s layout as the simulator does, read it back with the parser's head regex."""
    from rocketmq_retry.jobs.ingest import patterns as P
    from rocketmq_retry.jobs.ingest.screen import RX_BROKER

    ms = 1795303506245
    logger = st.logger or "RocketmqClient"
    if fmt == "rocketmq-client-4x":
        line = layouts.render_client_4x(
            timefmt.Clock(timefmt.CLIENT_4X_TS, "UTC").format(ms), st.level, logger, message
        )
        m = re.match(P.CLIENT4_HEAD, line.removesuffix("\r\n"))
        assert m and m.group(2) == st.level, line
        return m.group(4)
    if fmt in ("rocketmq-client-5x", "rocketmq-grpc-client"):
        clock = timefmt.Clock(timefmt.CLIENT_5X_TS, timefmt.GMT8)
        line = layouts.render_client_5x(clock.format(ms), st.level, 4242, "ConsumeMessageThread_1", logger, message)
        m = re.match(P.CLIENT5_HEAD, line.removesuffix("\n"))
        assert m and m.group(2) == st.level, line
        return m.group(6)
    if fmt == "rocketmq-python-client":
        line = layouts.render_python(timefmt.Clock(timefmt.PYTHON_TS, "UTC").format(ms), st.level, message)
        m = re.match(P.PYTHON_HEAD, line.removesuffix("\n"))
        assert m and m.group(2) == st.level, line
        return m.group(3)
    if fmt == "spring-listener":
        clock = timefmt.Clock(timefmt.SPRING_TS, timefmt.GMT8)
        line = layouts.render_spring(clock.format(ms), st.level, 4242, "ConsumeMessageThread_1", logger, message)
        m = re.match(P.SPRING_HEAD, line.removesuffix("\n"))
        assert m and m.group(4) == st.level, line
        return m.group(8)
    assert fmt in ("broker", "broker-stats"), fmt
    ts = timefmt.Clock(timefmt.BROKER_TS, timefmt.GMT8).format(ms)
    # stats.log / broker_default.log minute lines have no thread (RocketmqStats appender), the rest do
    stats_line = "Stats In One Minute" in message
    line = layouts.render_stats(ts, message) if stats_line else layouts.render_broker(ts, st.level, "T_1", message)
    head, _, msg = line.removesuffix("\n").partition(" - ")  # the parser cuts the head at the first " - "
    m = re.match(RX_BROKER, head)
    assert m and m.group(2) == st.level, line
    return msg


def test_every_statement_with_a_template_is_round_tripped() -> None:
    with_template = {_name_of(st) for st in statements.CATALOGUE if st.template is not None}
    assert with_template == set(_ROUND_TRIP) | set(_WRITTEN_ONLY_ARGS)
    assert all(st.template is None for st in statements.STATEMENTS if _name_of(st) not in _ROUND_TRIP)


@pytest.mark.parametrize("name", sorted(_ROUND_TRIP))
def test_simulated_statement_is_read_back_by_the_parser(name: str) -> None:
    from rocketmq_retry.jobs.ingest import patterns as P

    st = getattr(statements, name)
    message, expected = _ROUND_TRIP[name]
    # the case's message is the template filled (stats lines come from stats.minute_line, the simulator's path)
    assert message == statements.fill(
        st.template, *re.fullmatch(statements.template_regex(st.template), message).groups()
    )
    assert set(expected) == {rx for rx in _EXTRACTIONS if getattr(st, rx)}, "every extraction must be checked"
    for fmt in st.formats:
        got = _render_and_read(fmt, st, message)
        assert got == message
        # the parser classifies by the first matching prefix, then requires the full pattern
        first = next(
            s
            for s in P.STATEMENTS
            if fmt in s.formats and (got.startswith(s.prefix) or (s.contains and s.prefix in got))
        )
        assert first is st, (fmt, first.id)
        assert re.search(st.pattern, got), (fmt, st.pattern, got)
        for rx, value in expected.items():
            m = re.search(getattr(st, rx), got)
            assert m and m.group(1) == value, (fmt, rx, m and m.group(1), value)


def test_l_p1_literal_placeholders_of_5_2_0_still_parse() -> None:
    m = re.search(statements.L_P1.pattern, statements.L_P1_520_LITERAL)
    assert m and m.groups() == ("%s", "%s", "%s")


@pytest.mark.parametrize("name", sorted(_WRITTEN_ONLY_ARGS))
def test_written_only_statement_is_claimed_by_no_parser_statement(name: str) -> None:
    from rocketmq_retry.jobs.ingest import patterns as P

    st = getattr(statements, name)
    assert st in statements.WRITTEN_ONLY and not st.pattern
    message = statements.fill(st.template, *_WRITTEN_ONLY_ARGS[name])
    assert not [s.id for s in P.STATEMENTS if message.startswith(s.prefix)]


@pytest.mark.parametrize(
    "message",
    [
        # PopConsumerService#revive(AtomicLong, int): the per-pass summary (every pass, also idle) and a back-off
        "PopConsumerService, revive count=0, failure count=0, behindInMillis=50, scanInMillis=0, costInMillis=0",
        "PopConsumerService revive backoff retry, record=" + _POP_RECORD,
        "PopConsumerService revive error, message may be lost, record=" + _POP_RECORD,  # retried, not dropped yet
        "reviveQueueId=1, can not get cid GID_gone, then continue",  # no literal prefix a statement could take
    ],
)
def test_pop_log_lines_that_are_not_drops_are_claimed_by_no_statement(message: str) -> None:
    from rocketmq_retry.jobs.ingest import patterns as P

    assert not [s.id for s in P.STATEMENTS if message.startswith(s.prefix)]
