"""Line grammar used by the ingest job: head-line layouts per format and the retry statements (§6).

These are Java-regex strings for Spark's ``regexp_extract``/``rlike`` (log statements only; the trace's
U+0001/U+0002 layout is split, never regexed). Every statement carries the statement id it implements so a
reader can check it against ``docs/rocketmq-rules.md`` §6.2/§6.3 and §11.

The statement table is ordered: the first statement whose ``prefix`` the message starts with (or, for
``contains`` statements, that the message contains) decides the line's event_type. A line that matches a
statement's prefix but not its full ``pattern`` is quarantined as truncated/malformed for that statement id.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketmq_retry.jobs.ingest_sql import sql_str
from rocketmq_retry.logformats.trace import CONTENT_SPLITOR, FIELD_SPLITOR

LEVEL_NAMES = ("TRACE", "DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL")
LEVELS = "(?:" + "|".join(LEVEL_NAMES) + ")"

# --- head lines ---------------------------------------------------------------------------------------------
# 4.x ClientLogger DefaultLayout (§6.1): "yyyy-MM-dd HH:mm:ss,SSS LEVEL loggerName - message", JVM zone, \r\n.
CLIENT4_HEAD = r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) (" + LEVELS + r") (\S+) - (.*)$"
# logback's default console pattern, where 4.x lines land with -Drocketmq.client.logUseSlf4j=true or on stdout
# (tests/data/rocketmq-4.9.4/client/*.console-stdout.log): "HH:mm:ss.SSS [thread] LEVEL logger - message" -- no date.
CONSOLE_HEAD = r"^(\d{2}:\d{2}:\d{2}\.\d{3}) \[([^\]]*)\] (" + LEVELS + r")\s+(\S+) - (.*)$"
# 5.x remoting client and gRPC SDK (§6.1): "%d{yyy-MM-dd HH:mm:ss.SSS,GMT+8} %-5p [%pid] [%t] [%logger{12}#%M:%L] - %m".
CLIENT5_HEAD = (
    r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}) (" + LEVELS + r")\s+\[(\d*)\] \[(.*?)\] \[([^\]]*)\] - (.*)$"
)
# Broker (§6.1): "%d{yyy-MM-dd HH:mm:ss,GMT+8} %p %t - %m"; stats.log drops the thread; watermark/protection drop
# the level too. Group 2 = level (optional), group 3 = thread (optional).
BROKER_HEAD = r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) (?:(" + LEVELS + r") )?(?:(\S+) )?- (.*)$"
# Spring Boot default file/console pattern: 2.x "yyyy-MM-dd HH:mm:ss.SSS  LEVEL pid --- [thread] logger : msg",
# 3.x "yyyy-MM-ddTHH:mm:ss.SSSXXX  LEVEL pid --- [app] [thread] logger : msg".
SPRING_HEAD = (
    r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2}\.\d{3})(Z|[+-]\d{2}:?\d{2})?\s+(" + LEVELS + r")\s+(\d*)\s+---\s+"
    r"(?:\[[^\]]*\]\s+)?\[\s*([^\]]*)\]\s+(\S+)\s*:\s(.*)$"
)

# Anything that starts like a date but is not a valid head is a damaged head line, not a continuation.
DATE_LIKE = r"^\d{4}-\d{2}-\d{2}[ T]\d"
TIME_LIKE = r"^\d{2}:\d{2}:\d{2}\.\d{3} \["

# What a valid head line's fields may hold (docs/ingest.md, "Noise and continuation lines"): no control character
# and no U+FFFD anywhere before the message, and a logger that is a (possibly abbreviated) Java name; the 5.x
# layout's logger field also carries "#method:line".
HEAD_BAD_CHARS = r"[\x00-\x08\x0A-\x1F\x7F-\x9F\x{FFFD}]"
LOGGER_NAME = r"^[A-Za-z0-9_$.-]+$"
LOGGER5_NAME = r"^[A-Za-z0-9_$.<>-]*(#([A-Za-z0-9_$<>-]*|\?)(:(\d+|\?))?)?$"  # "#?:?" without caller data

# Lines without a head that continue the record above (the only ones counted as continuation):
CONT_FRAME = r"^\s+at \S|^\s+\.\.\. \d+ (more|common frames omitted)\s*$"  # stack frames, "... 5 more"
CONT_CAUSE = r"^\s*(Caused by|Suppressed): \S"
# the first line of a printed Throwable: a qualified class name ending in Exception/Error/Throwable, ": message"
CONT_EXCEPTION = r"^([A-Za-z_$][\w$]*\.)+[A-Za-z_$][\w$]*(Exception|Error|Throwable)(: .*|:)?$"
# A wrapped message line: printable text (tabs allowed) of at most this many characters, right after the head
# line, an exception line or a Caused by line, or after another wrapped line of the same run.
WRAPPED_MAX_CHARS = 4096
# ... but not a line that holds a piece of a head: the rest of a record cut inside its head ("…Client - msg",
# "…Logger : msg") or a level with what follows it in a layout. Such a line is damage, not a message.
HEAD_PIECE = r"^\S+ [-:] |\b" + LEVELS + r"\s+(\d+\s+---\s|\S+ - )"
TEXT_BAD_CHARS = r"[\x00-\x08\x0A-\x1F\x7F-\x9F\x{FFFD}]"
NOT_CONTINUATION = "line without a log head that is not a continuation"

# Headless lines that RocketMQ itself prints to stdout files we are pointed at (broker.stdout.log).
BROKER_HEADLESS_NOISE = r"^The (broker|Name Server)\b.*boot success"

# --- MessageExt / Message rendering (§6.2 "Msgs: {}") --------------------------------------------------------
MSGEXT_SPLIT = r", (?=MessageExt \[)"  # elements of List<MessageExt>.toString()
RX_OFFSET_MSG_ID = r"\bmsgId=([0-9A-Fa-f]+)"
RX_QUEUE_ID = r"\bqueueId=(-?\d+)"
RX_RECONSUME = r"\breconsumeTimes=(\d+)"
RX_TOPIC = r"topic='([^']*)'"
RX_BROKER = r"\bbrokerName=([^,\]]*)"
RX_BORN_HOST = r"\bbornHost=/?([^,\]]*)"
RX_PROPERTIES = r"properties=\{([^}]*)\}"
RX_BODY = r"body=\[([-0-9, ]*)\]"


def rx_property(name: str) -> str:
    """The value of ``name`` inside a rendered ``properties={k=v, …}`` string."""
    return r"(?:^|, )" + name + r"=([^,}]*)"


# --- statements ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Statement:
    """One log statement that is evidence of a retry transition."""

    ref: str  # statement id, e.g. "L-C1"
    event_type: str
    prefix: str  # literal the message starts with (fast classification)
    pattern: str  # full Java regex the message must match; else the line is quarantined as truncated
    formats: tuple[str, ...]
    group_rx: str | None = None  # consumer group
    msgs_rx: str | None = None  # group 1 = the MessageExt/Message rendering(s) the line carries
    msgs_list: bool = False  # msgs_rx captures List<MessageExt>.toString() contents: one event per element
    detail_rx: str | None = None  # group 1 goes to events.detail
    topic_rx: str | None = None
    msg_id_rx: str | None = None
    reconsume_rx: str | None = None  # reconsumeTimes printed in the line itself (not in a MessageExt rendering)
    status: str | None = None  # constant status_code
    contains: bool = False  # match prefix anywhere (used for stats lines whose message starts with a tag)


CLIENTS = ("rocketmq-client-4x", "rocketmq-client-5x")
ALL_CLIENTS = (*CLIENTS, "spring-listener")
BROKERS = ("broker",)
STATS = ("broker-stats", "broker")

STATEMENTS: tuple[Statement, ...] = (
    # §6.2 L-C1: listener threw; 4.x String.format and 5.x {} give the same rendering. Status is the trace's
    # ConsumeReturnType name (§7.2) so log and trace rows compare.
    Statement(
        "L-C1",
        "CONSUME_FAILED",
        "consumeMessage exception: ",
        r"^consumeMessage exception: (.*?) Group: (\S+) Msgs: \[(.*)\] MQ: (MessageQueue \[.*\])$",
        ALL_CLIENTS,
        group_rx=r" Group: (\S+) Msgs: ",
        msgs_rx=r" Msgs: \[(.*)\] MQ: ",
        msgs_list=True,
        status="EXCEPTION",
        detail_rx=r"^consumeMessage exception: (.*?) Group: ",
    ),
    # §6.2 L-C2: null status (returned null, or after L-C1 because the status stays null -- §12).
    Statement(
        "L-C2",
        "CONSUME_FAILED",
        "consumeMessage return null, ",
        r"^consumeMessage return null, Group: (\S+) Msgs: \[(.*)\] MQ: (MessageQueue \[.*\])$",
        ALL_CLIENTS,
        group_rx=r"Group: (\S+) Msgs: ",
        msgs_rx=r" Msgs: \[(.*)\] MQ: ",
        msgs_list=True,
        status="RETURNNULL",
    ),
    # §6.2 L-C3 / §4: orderly listener not OK -> local suspend and redelivery.
    Statement(
        "L-C3",
        "ORDERLY_SUSPENDED",
        "consumeMessage Orderly return not OK, ",
        r"^consumeMessage Orderly return not OK, Group: (\S+) Msgs: \[(.*)\] MQ: (MessageQueue \[.*\])$",
        ALL_CLIENTS,
        group_rx=r"Group: (\S+) Msgs: ",
        msgs_rx=r" Msgs: \[(.*)\] MQ: ",
        msgs_list=True,
    ),
    # §6.2 L-C4: broadcasting failure: the client drops the message (no retry).
    Statement(
        "L-C4",
        "BROADCAST_DROPPED",
        "BROADCASTING, the message consume failed, drop it, ",
        r"^BROADCASTING, the message consume failed, drop it, (MessageExt \[.*\])$",
        ALL_CLIENTS,
        msgs_rx=r"drop it, (.*)$",
    ),
    # §6.2 L-C5: CONSUMER_SEND_MSG_BACK failed; the client re-publishes to %RETRY% itself. 5.x and 4.x forms.
    Statement(
        "L-C5",
        "SEND_BACK_FAILED",
        "Failed to send message back, consumerGroup=",
        r"^Failed to send message back, consumerGroup=([^,]*), brokerName=([^,]*), mq=(.*), message=(.*)$",
        ALL_CLIENTS,
        group_rx=r"consumerGroup=([^,]*),",
        msgs_rx=r", message=(.*)$",
    ),
    Statement(
        "L-C5",
        "SEND_BACK_FAILED",
        "sendMessageBack Exception, ",
        r"^sendMessageBack Exception, (\S+)$",
        ALL_CLIENTS,
        group_rx=r"^sendMessageBack Exception, (\S+)",
    ),
    # §6.2 L-C6: the re-publish failed too: local resubmit in 5 s.
    Statement(
        "L-C6",
        "LOCAL_RETRY",
        "sendMessageBack exception, group: ",
        r"^sendMessageBack exception, group: (\S+) msg: (.*)$",
        ALL_CLIENTS,
        group_rx=r"group: (\S+) msg: ",
        msgs_rx=r" msg: (.*)$",
    ),
    # §6.2 L-C8 / §1.6: consume timeout clean-up sends the message back (DELAY=3).
    Statement(
        "L-C8",
        "CONSUME_TIMEOUT",
        "send expire msg back. ",
        r"^send expire msg back\. topic=([^,]*), msgId=([^,]*), storeHost=([^,]*), queueId=(\d+), queueOffset=(\d+)$",
        ALL_CLIENTS,
        topic_rx=r"topic=([^,]*),",
        msg_id_rx=r"msgId=([^,]*),",
    ),
    # §6.2 L-C12 / L-C13: 5.x remoting POP consumer over the max: message acked and dropped.
    Statement(
        "L-C12",
        "POP_DROPPED",
        "Consume too many times, ack message async. message ",
        r"^Consume too many times, ack message async\. message (.*)$",
        ALL_CLIENTS,
        msgs_rx=r"async\. message (.*)$",
    ),
    Statement(
        "L-C13",
        "POP_DROPPED",
        "Reconsume times has reached ",
        r"^Reconsume times has reached (\d+), so ack msg=(.*)$",
        ALL_CLIENTS,
        msgs_rx=r"so ack msg=(.*)$",
    ),
    # §6.2 L-C14: admin direct consume (dashboard resend / queryMsgById -d).
    Statement(
        "L-C14",
        "DIRECT_CONSUME",
        "consumeMessageDirectly receive new message: ",
        r"^consumeMessageDirectly receive new message: (.*)$",
        ALL_CLIENTS,
        msgs_rx=r"new message: (.*)$",
    ),
    # §6.2 L-P1: sync send failed, resend at once. 4.9.4 prints the values and then a Message{...} line (§12),
    # which the job folds into this event (msg_id/keys/tags); 5.2.0 prints the placeholders literally.
    Statement(
        "L-P1",
        "PUBLISH_RETRY",
        "sendKernelImpl exception, resend at once, ",
        r"^sendKernelImpl exception, resend at once, InvokeID: (\S+), RT: (\S+)ms, Broker: (.*)$",
        ALL_CLIENTS,
        topic_rx=r"Broker: MessageQueue \[topic=([^,\]]*)",
        detail_rx=r"^sendKernelImpl exception, (.*)$",
    ),
    # §6.2 L-P2: async send retry.
    Statement(
        "L-P2",
        "PUBLISH_RETRY",
        "async send msg by retry ",
        r"^async send msg by retry (\d+) times\. topic=([^,]*), brokerAddr=([^,]*), brokerName=(.*)$",
        ALL_CLIENTS,
        topic_rx=r"topic=([^,]*),",
    ),
    # §6.4: rocketmq-spring container (2.2.0+): no group in the line -> source consumer_group / running container.
    Statement(
        "S-1",
        "CONSUME_FAILED",
        "consume message failed. messageId:",
        r"^consume message failed\. messageId:([^,]*), topic:([^,]*), reconsumeTimes:(\d+)$",
        ("spring-listener",),
        topic_rx=r"topic:([^,]*),",
        msg_id_rx=r"messageId:([^,]*),",
        reconsume_rx=r"reconsumeTimes:(\d+)$",
        status="EXCEPTION",
    ),
    # §6.2 (gRPC SDK): listener exception -> nack; group comes from config.
    Statement(
        "G-C1",
        "CONSUME_FAILED",
        "Message listener raised an exception while consuming messages, ",
        r"^Message listener raised an exception while consuming messages, clientId=([^,]*), mq=(.*), messageId=(\S+)$",
        ("rocketmq-grpc-client",),
        msg_id_rx=r"messageId=(\S+)$",
        # MessageQueueImpl.toString(): brokerName + "." + topic + "." + queueId (rocketmq-clients java)
        topic_rx=r", mq=[^,]*?\.([^.,]+)\.\d+, messageId=",
        status="EXCEPTION",
    ),
    # §5.3/§11 gRPC FIFO: out of attempts, then forwarded to the DLQ.
    Statement(
        "G-C3",
        "DEAD_LETTERED",
        "Forward message to dead letter queue successfully, ",
        r"^Forward message to dead letter queue successfully, (.*)$",
        ("rocketmq-grpc-client",),
        group_rx=r"consumerGroup=([^,]*)",
        msg_id_rx=r"messageId=([^,]*)",
    ),
    Statement(
        "G-P1",
        "PUBLISH_RETRY",
        "Failed to send message, would attempt to resend ",
        r"^Failed to send message, would attempt to resend (.*)$",
        ("rocketmq-grpc-client",),
        msg_id_rx=r"messageId\(s\)=\[?([^,\]]*)",
        topic_rx=r"topic=([^,]*)",
    ),
    Statement(
        "G-P3",
        "PUBLISH_FAILED",
        "Failed to send message(s) finally, run out of attempt times, ",
        r"^Failed to send message\(s\) finally, run out of attempt times, (.*)$",
        ("rocketmq-grpc-client",),
        msg_id_rx=r"messageId\(s\)=\[?([^,\]]*)",
        topic_rx=r"topic=([^,]*)",
    ),
    # §5.6/§11 gRPC producer: throttled resend (G-P2) and the success after resending (G-P4; gRPC writes no trace).
    Statement(
        "G-P2",
        "PUBLISH_RETRY",
        "Failed to send message due to too many requests, would attempt to resend after ",
        r"^Failed to send message due to too many requests, would attempt to resend after (.*)$",
        ("rocketmq-grpc-client",),
        msg_id_rx=r"messageId\(s\)=\[?([^,\]]*)",
        topic_rx=r"topic=([^,]*)",
    ),
    Statement(
        "G-P4",
        "PUBLISHED",
        "Resend message successfully, ",
        r"^Resend message successfully, (.*)$",
        ("rocketmq-grpc-client",),
        msg_id_rx=r"messageId\(s\)=\[?([^,\]]*)",
        topic_rx=r"topic=([^,]*)",
    ),
    # §6.3 L-B7 (5.x): send-back to DLQ. L-B8: the DLQ put failed.
    Statement(
        "L-B7",
        "DEAD_LETTERED",
        "send msg to DLQ ",
        r"^send msg to DLQ (\S+), owner=([^,]*), originalTopic=([^,]*), consumerId=([^,]*), msgUniqKey=([^,]*), storeTimestamp=(\d+)$",  # noqa: E501
        BROKERS,
        group_rx=r"consumerId=([^,]*),",
        msg_id_rx=r"msgUniqKey=([^,]*),",
        topic_rx=r"^send msg to DLQ (\S+),",
    ),
    Statement(
        "L-B8",
        "SEND_BACK_FAILED",
        "failed to send msg to DLQ ",
        r"^failed to send msg to DLQ (\S+), owner=([^,]*), originalTopic=([^,]*), consumerId=([^,]*), msgUniqKey=([^,]*), result=(.*)$",  # noqa: E501
        BROKERS,
        group_rx=r"consumerId=([^,]*),",
        msg_id_rx=r"msgUniqKey=([^,]*),",
        topic_rx=r"^failed to send msg to DLQ (\S+),",
    ),
    # §6.3 L-B2 (5.x >= 5.1.4): orderly group straight to DLQ.
    Statement(
        "L-B2",
        "DEAD_LETTERED",
        "Group has unexpired lock record, ",
        r"^Group has unexpired lock record, which show it is ordered message, send it to DLQ right now group=([^,]*), topic=([^,]*), reconsumeTimes=(\d+), maxReconsumeTimes=(-?\d+)\.$",  # noqa: E501
        BROKERS,
        group_rx=r"group=([^,]*),",
        topic_rx=r" topic=([^,]*),",
    ),
    # §6.3 L-B1 (+ §12 bracketed form): %RETRY%/%DLQ% topic auto-created (first send-back/heartbeat).
    Statement(
        "L-B1",
        "TOPIC_CREATED",
        "create new topic ",
        r"^create new topic \[?TopicConfig \[topicName=([^,]+), .*\]\]?$",
        BROKERS,
        topic_rx=r"topicName=([^,]+),",
    ),
    # §6.3 L-B4..L-B6: schedule-topic delivery problems (4.x store.log, 5.x broker.log).
    Statement(
        "L-B4",
        "SCHEDULE_ERROR",
        "ScheduleMessageService put message ",
        r"^ScheduleMessageService put message .*$",
        BROKERS,
    ),
    Statement("L-B5", "SCHEDULE_ERROR", "ScheduleMessageService, ", r"^ScheduleMessageService, .*$", BROKERS),
    # §6.3 L-B9: per-minute send-back counter (stats.log); detail = the SUM.
    Statement(
        "L-B9",
        "SEND_BACK_COUNT",
        "[SNDBCK_PUT_NUMS] [",
        r"^\[SNDBCK_PUT_NUMS\] \[([^@\]]*)@([^\]]*)\] Stats In One Minute, SUM: (\d+) TPS: .*$",
        STATS,
        group_rx=r"^\[SNDBCK_PUT_NUMS\] \[[^@\]]*@([^\]]*)\]",
        topic_rx=r"^\[SNDBCK_PUT_NUMS\] \[([^@\]]*)@",
        detail_rx=r"SUM: (\d+)",
    ),
    # §6.3 L-B10 (5.x): per-minute DLQ counter in broker_default.log: [owner@originTopic@group@SEND_BACK_TO_DLQ].
    Statement(
        "L-B10",
        "DLQ_COUNT",
        "[SNDBCK2DLQ_TIMES] [",
        r"^\[SNDBCK2DLQ_TIMES\] \[([^@\]]*)@([^@\]]*)@([^@\]]*)@SEND_BACK_TO_DLQ\] Stats In One Minute, SUM: (\d+) TPS: .*$",  # noqa: E501
        STATS,
        group_rx=r"^\[SNDBCK2DLQ_TIMES\] \[[^@\]]*@[^@\]]*@([^@\]]*)@",
        topic_rx=r"^\[SNDBCK2DLQ_TIMES\] \[[^@\]]*@([^@\]]*)@",
        detail_rx=r"SUM: (\d+)",
    ),
    # Broker TOPIC_PUT_NUMS of a %DLQ% topic (stats.log, 4.x and 5.x): incremented by SendMessageProcessor's
    # handlePutMessageResult, i.e. for DLQ puts made by handleRetryAndDLQ (the client's fallback re-publish and the
    # orderly send-back past the max) and, for 4.x, when the schedule service delivers a DLQ-bound copy; a DLQ put of
    # consumerSendMsgBack does not count here (only SNDBCK_PUT_NUMS / 5.x SNDBCK2DLQ_TIMES).
    Statement(
        "L-B15",
        "DLQ_PUT_COUNT",
        "[TOPIC_PUT_NUMS] [%DLQ%",
        r"^\[TOPIC_PUT_NUMS\] \[%DLQ%([^\]]+)\] Stats In One Minute, SUM: (\d+) TPS: .*$",
        STATS,
        group_rx=r"^\[TOPIC_PUT_NUMS\] \[%DLQ%([^\]]+)\]",
        topic_rx=r"^\[TOPIC_PUT_NUMS\] \[(%DLQ%[^\]]+)\]",
        detail_rx=r"SUM: (\d+)",
    ),
    # Client ConsumerStatsManager, printed every minute for every topic@group (StatsItem#printAtMinutes): failed
    # consumptions (RECONSUME_LATER, an exception or null, orderly SUSPEND). The only client-side trace of a plain
    # RECONSUME_LATER (§12). The topic is the consumed queue's: %RETRY%<group> for redeliveries.
    Statement(
        "L-C16",
        "CONSUME_FAILED_COUNT",
        "[CONSUME_FAILED_TPS] [",
        r"^\[CONSUME_FAILED_TPS\] \[([^@\]]*)@([^\]]*)\] Stats In One Minute, SUM: (\d+) TPS: .*$",
        CLIENTS,
        group_rx=r"^\[CONSUME_FAILED_TPS\] \[[^@\]]*@([^\]]*)\]",
        topic_rx=r"^\[CONSUME_FAILED_TPS\] \[([^@\]]*)@",
        detail_rx=r"SUM: (\d+)",
    ),
)

# Aggregate lines for hour/day windows repeat the minute lines' counts (§6.3 L-B9): ignored, not events.
STATS_ROLLUP = r"^\[[A-Z0-9_]+\] \[[^\]]*\] Stats In One (Hour|Day), "
# 4.x client: the Message{...} line printed right after L-P1 (§12); folded into the L-P1 event.
RESEND_MESSAGE_PREFIX = "Message{topic='"


# --- bindings: lines that tie an application instance's topic to a consumer group (docs/reconstruction.md) ---


@dataclass(frozen=True)
class Binding:
    """A noise line that says which consumer group consumes which topic in the instance that wrote it.

    ``group_sql``/``topic_sql`` are Spark SQL templates over ``{m}`` (the message), built from byte searches
    rather than regexes: the 4.x ``[persistAll]`` offset flush, written every 5 s per owned queue, is the most
    frequent line of a client log. ``require`` is a literal the message must contain for the extraction to mean
    anything.
    """

    ref: str
    kind: str  # "container" (rocketmq-spring start-up) | "client-log" (the RocketMQ client's own lines)
    prefixes: tuple[str, ...]  # the message starts with one of these (the wordings of the versions)
    formats: tuple[str, ...]
    group_sql: str
    topic_sql: str
    require: str


def _between(after: str, before: str) -> str:
    """SQL template: the text of ``{m}`` after the first ``after``, up to the next ``before``."""
    at = f"locate({sql_str(after)}, {{m}}) + {len(after)}"
    return f"substring_index(substring({{m}}, {at}), {sql_str(before)}, 1)"


_MQ_TOPIC = _between("MessageQueue [topic=", ",")
BINDINGS: tuple[Binding, ...] = (
    # rocketmq-spring DefaultRocketMQListenerContainer.start(): log.info("running container: {}", this), §6.4.
    Binding(
        "B-S1",
        "container",
        ("running container: DefaultRocketMQListenerContainer{",),
        ("spring-listener",),
        _between("consumerGroup='", "'"),
        _between(", topic='", "'"),
        ", topic='",
    ),
    # RemoteBrokerOffsetStore.persistAll (4.x and 5.x remoting clients): one line per owned queue every 5 s.
    Binding(
        "B-C1",
        "client-log",
        ("[persistAll] Group: ",),
        CLIENTS,
        _between("[persistAll] Group: ", " "),
        _MQ_TOPIC,
        "MessageQueue [topic=",
    ),
    # RebalanceImpl.rebalanceByTopic, CLUSTERING (start-up and membership changes); 5.x says "client rebalanced …",
    # and RebalanceImpl#getRebalanceResultFromBroker (5.x broker-side rebalance: POP, clientRebalance=false)
    # "broker rebalanced …".
    Binding(
        "B-C2",
        "client-log",
        ("rebalanced result changed. ", "client rebalanced result changed. ", "broker rebalanced result changed. "),
        CLIENTS,
        _between(", group=", ","),
        _between(", topic=", ","),
        ", topic=",
    ),
    # gRPC SDK PushConsumerImpl#createConsumeService (rocketmq-clients java 5.0.1+), once at start-up: the group, for
    # every topic of the instance ("*"); a SimpleConsumer logs no line that names its group.
    Binding(
        "B-G1",
        "client-log",
        ("Create standard consume service, consumerGroup=", "Create FIFO consume service, consumerGroup="),
        ("rocketmq-grpc-client",),
        _between("consumerGroup=", ","),
        "'*'",
        ", clientId=",
    ),
    # RebalanceImpl.rebalanceByTopic, BROADCASTING: "messageQueueChanged {group} {topic} {mqAll} {mqSet}" (a
    # broadcasting consumer writes no [persistAll] lines: its offsets live in a local file).
    Binding(
        "B-C4",
        "client-log",
        ("messageQueueChanged ",),
        CLIENTS,
        _between("messageQueueChanged ", " "),
        "substring_index(substring_index({m}, ' ', 3), ' ', -1)",
        "messageQueueChanged ",
    ),
    Binding(
        "B-C3",
        "client-log",
        ("doRebalance, ",),
        CLIENTS,
        _between("doRebalance, ", ","),
        _MQ_TOPIC,
        "MessageQueue [topic=",
    ),
)

# Trace (§7.2): record types, field counts and the ConsumeReturnType names of SubAfter.contextCode.
TRACE_RECORD_SEP = FIELD_SPLITOR  # U+0002 ends a record
TRACE_FIELD_SEP = CONTENT_SPLITOR  # U+0001 separates fields
CONTEXT_CODES = ("SUCCESS", "TIME_OUT", "EXCEPTION", "RETURNNULL", "FAILED")

MAX_LINE_CHARS = 1_048_576  # a line of 1 MB or more is quarantined, not parsed
RAW_CAP = 4096  # quarantine.raw and events.body are capped at this many characters

# Lines are screened by their message's first PREFIX_PROBE characters before the statement table is consulted,
# so every statement's literal prefix must be at least that long.
PREFIX_PROBE = 12
_short = [st.ref for st in STATEMENTS if len(st.prefix) < PREFIX_PROBE]
if _short:
    raise ValueError(f"statement prefixes shorter than PREFIX_PROBE={PREFIX_PROBE}: {_short}")
