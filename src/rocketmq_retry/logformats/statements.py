"""The exact log statements that expose retry transitions, with their statement ids (§6.2, §6.3, §6.4, §5.3, §5.6).

One catalogue for both sides (docs/ingest.md "One grammar"): each :class:`Statement` is defined once, with

- ``template``: what the source logs, in the source's own placeholders (SLF4J ``{}``; 4.x statements built with
  ``String.format`` render identically, so one template serves both). The simulator renders it with :func:`fill`.
  ``None`` for a statement the simulator never writes: its ``pattern`` is then the only definition, and the entry
  says so (``written=False``).
- ``pattern`` and the ``*_rx`` extractions: the Java regexes the Spark ingest job matches a message against (they
  are also valid Python ``re`` syntax, which is how ``tests/test_logformats_grammar.py`` round-trips every
  template through them). ``pattern`` is ``""`` for a statement that is written only (:data:`WRITTEN_ONLY`).

:data:`STATEMENTS` is the parser's ordered table (``jobs/ingest/patterns.py`` re-exports it): the first statement
whose ``prefix`` the message starts with (or, for ``contains`` statements, that the message contains) decides the
line's event_type; a line that matches a statement's prefix but not its full ``pattern`` is quarantined as
truncated/malformed for that statement id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocketmq_retry.contract import EVENT_TYPES, EventType
from rocketmq_retry.logformats import (
    BROKER,
    BROKER_STATS,
    CLIENT_4X,
    CLIENT_5X,
    GRPC_CLIENT,
    PYTHON_CLIENT,
    SPRING_LISTENER,
)


@dataclass(frozen=True)
class Statement:
    """One log statement: how the source writes it (simulator) and how the ingest job reads it (parser)."""

    id: str  # statement id, e.g. "L-C1" (docs/rocketmq-rules.md §6.2/§6.3, §11)
    level: str  # the level the source logs it at
    template: str | None  # SLF4J template; None: the simulator never writes this statement
    versions: str  # "4.x", "5.x", "both", "2.2.0+", "all"
    logger: str = ""  # 5.x class (FQCN) or broker logger name
    # --- parser side (empty pattern: written only, no retry evidence the parser reads) ---
    event_type: str = ""
    prefix: str = ""  # literal the message starts with (fast classification)
    pattern: str = ""  # full Java regex the message must match; else the line is quarantined as truncated
    formats: tuple[str, ...] = ()
    group_rx: str | None = None  # consumer group
    msgs_rx: str | None = None  # group 1 = the MessageExt/Message rendering(s) the line carries
    msgs_list: bool = False  # msgs_rx captures List<MessageExt>.toString() contents: one event per element
    detail_rx: str | None = None  # group 1 goes to events.detail
    topic_rx: str | None = None
    msg_id_rx: str | None = None
    reconsume_rx: str | None = None  # reconsumeTimes printed in the line itself (not in a MessageExt rendering)
    status: str | None = None  # constant status_code
    contains: bool = False  # match prefix anywhere (used for stats lines whose message starts with a tag)
    written: bool = True  # False: the simulator never renders it (parser-only; template may still be known)
    # the source hands the consume failure's Throwable to the logger, so its stack trace follows the line: the
    # event's cause columns are read from it (docs/ingest.md "Causes")
    stack_trace: bool = False
    # group 1 = the exception's message printed in the line itself (the Python SDK's f"…, {e}": str(e), no class
    # and no stack trace, §5.7): the event's cause is read from it (docs/ingest.md "Causes")
    message_rx: str | None = None


CLIENTS = (CLIENT_4X, CLIENT_5X)
ALL_CLIENTS = (*CLIENTS, SPRING_LISTENER)
BROKERS = (BROKER,)
STATS = (BROKER_STATS, BROKER)

_CMCS = "org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService"
_CMOS = "org.apache.rocketmq.client.impl.consumer.ConsumeMessageOrderlyService"
_DMPCI = "org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl"
_PQ = "org.apache.rocketmq.client.impl.consumer.ProcessQueue"
_DMPI = "org.apache.rocketmq.client.impl.producer.DefaultMQProducerImpl"
_CMPCS = "org.apache.rocketmq.client.impl.consumer.ConsumeMessagePopConcurrentlyService"
_MQCAPI = "org.apache.rocketmq.client.impl.MQClientAPIImpl"
_GRPC_CONSUME_TASK = "org.apache.rocketmq.client.java.impl.consumer.ConsumeTask"
_GRPC_PQ = "org.apache.rocketmq.client.java.impl.consumer.ProcessQueueImpl"
_GRPC_PRODUCER = "org.apache.rocketmq.client.java.impl.producer.ProducerImpl"

# Stats lines (§6.3 L-B9, L-B10; tests/data/rocketmq-4.9.4/broker/stats.log): "[KIND] [KEY] Stats In One Minute, …".
STATS_MINUTE = "[{}] [{}] Stats In One Minute, SUM: {} TPS: {} AVGPT: {}"
STATS_MINUTE_RT = "[{}] [{}] Stats In One Minute, TIMES: {} AVGRT: {}"
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"
SNDBCK2DLQ_TIMES = "SNDBCK2DLQ_TIMES"
SEND_BACK_TO_DLQ = "SEND_BACK_TO_DLQ"
TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
CONSUME_FAILED_TPS = "CONSUME_FAILED_TPS"


def stats_template(kind: str) -> str:
    """:data:`STATS_MINUTE` with its first placeholder (the stats kind) filled: ``[KIND] [{}] Stats In One …``."""
    return STATS_MINUTE.replace("{}", kind, 1)


# --- remoting client (§6.2) ---------------------------------------------------------------------------------
# L-C1: listener threw; 4.x String.format and 5.x {} give the same rendering. Status is the trace's
# ConsumeReturnType name (§7.2) so log and trace rows compare.
L_C1 = Statement(
    "L-C1",
    "WARN",
    "consumeMessage exception: {} Group: {} Msgs: {} MQ: {}",
    "both",
    _CMCS,
    event_type=EventType.CONSUME_FAILED,
    prefix="consumeMessage exception: ",
    pattern=r"^consumeMessage exception: (.*?) Group: (\S+) Msgs: \[(.*)\] MQ: (MessageQueue \[.*\])$",
    formats=ALL_CLIENTS,
    group_rx=r" Group: (\S+) Msgs: ",
    msgs_rx=r" Msgs: \[(.*)\] MQ: ",
    msgs_list=True,
    status="EXCEPTION",
    detail_rx=r"^consumeMessage exception: (.*?) Group: ",
    # ConsumeMessageConcurrentlyService / ConsumeMessageOrderlyService ConsumeRequest#run:
    # log.warn(String.format("consumeMessage exception: %s Group: %s Msgs: %s MQ: %s", …), e)
    stack_trace=True,
)
# L-C2: null status (returned null, or after L-C1 because the status stays null -- §12).
L_C2 = Statement(
    "L-C2",
    "WARN",
    "consumeMessage return null, Group: {} Msgs: {} MQ: {}",
    "both",
    _CMCS,
    event_type=EventType.CONSUME_FAILED,
    prefix="consumeMessage return null, ",
    pattern=r"^consumeMessage return null, Group: (\S+) Msgs: \[(.*)\] MQ: (MessageQueue \[.*\])$",
    formats=ALL_CLIENTS,
    group_rx=r"Group: (\S+) Msgs: ",
    msgs_rx=r" Msgs: \[(.*)\] MQ: ",
    msgs_list=True,
    status="RETURNNULL",
)
# L-C3 / §4: orderly listener not OK -> local suspend and redelivery.
L_C3 = Statement(
    "L-C3",
    "WARN",
    "consumeMessage Orderly return not OK, Group: {} Msgs: {} MQ: {}",
    "both",
    _CMOS,
    event_type=EventType.ORDERLY_SUSPENDED,
    prefix="consumeMessage Orderly return not OK, ",
    pattern=r"^consumeMessage Orderly return not OK, Group: (\S+) Msgs: \[(.*)\] MQ: (MessageQueue \[.*\])$",
    formats=ALL_CLIENTS,
    group_rx=r"Group: (\S+) Msgs: ",
    msgs_rx=r" Msgs: \[(.*)\] MQ: ",
    msgs_list=True,
)
# L-C4: broadcasting failure: the client drops the message (no retry).
L_C4 = Statement(
    "L-C4",
    "WARN",
    "BROADCASTING, the message consume failed, drop it, {}",
    "both",
    _CMCS,
    event_type=EventType.BROADCAST_DROPPED,
    prefix="BROADCASTING, the message consume failed, drop it, ",
    pattern=r"^BROADCASTING, the message consume failed, drop it, (MessageExt \[.*\])$",
    formats=ALL_CLIENTS,
    msgs_rx=r"drop it, (.*)$",
)
# L-C5: CONSUMER_SEND_MSG_BACK failed; the client re-publishes to %RETRY% itself. 5.x and 4.x forms.
L_C5_5X = Statement(
    "L-C5",
    "ERROR",
    "Failed to send message back, consumerGroup={}, brokerName={}, mq={}, message={}",
    "5.x",
    _DMPCI,
    event_type=EventType.SEND_BACK_FAILED,
    prefix="Failed to send message back, consumerGroup=",
    pattern=r"^Failed to send message back, consumerGroup=([^,]*), brokerName=([^,]*), mq=(.*), message=(.*)$",
    formats=ALL_CLIENTS,
    group_rx=r"consumerGroup=([^,]*),",
    msgs_rx=r", message=(.*)$",
)
L_C5_4X = Statement(  # "…, " + group
    "L-C5",
    "ERROR",
    "sendMessageBack Exception, {}",
    "4.x",
    _DMPCI,
    event_type=EventType.SEND_BACK_FAILED,
    prefix="sendMessageBack Exception, ",
    pattern=r"^sendMessageBack Exception, (\S+)$",
    formats=ALL_CLIENTS,
    group_rx=r"^sendMessageBack Exception, (\S+)",
)
# L-C6: the re-publish failed too: local resubmit in 5 s (string concatenation in the source).
L_C6 = Statement(
    "L-C6",
    "ERROR",
    "sendMessageBack exception, group: {} msg: {}",
    "both",
    _CMCS,
    event_type=EventType.LOCAL_RETRY,
    prefix="sendMessageBack exception, group: ",
    pattern=r"^sendMessageBack exception, group: (\S+) msg: (.*)$",
    formats=ALL_CLIENTS,
    group_rx=r"group: (\S+) msg: ",
    msgs_rx=r" msg: (.*)$",
)
# L-C8 / §1.6: consume timeout clean-up sends the message back (DELAY=3).
L_C8 = Statement(
    "L-C8",
    "INFO",
    "send expire msg back. topic={}, msgId={}, storeHost={}, queueId={}, queueOffset={}",
    "both",
    _PQ,
    event_type=EventType.CONSUME_TIMEOUT,
    prefix="send expire msg back. ",
    pattern=r"^send expire msg back\. topic=([^,]*), msgId=([^,]*), storeHost=([^,]*), queueId=(\d+), queueOffset=(\d+)$",  # noqa: E501
    formats=ALL_CLIENTS,
    topic_rx=r"topic=([^,]*),",
    msg_id_rx=r"msgId=([^,]*),",
)
# L-C12 / L-C13: 5.x remoting POP consumer over the max: message acked and dropped.
L_C12 = Statement(
    "L-C12",
    "WARN",
    "Consume too many times, ack message async. message {}",
    "5.x",
    _CMPCS,
    event_type=EventType.POP_DROPPED,
    prefix="Consume too many times, ack message async. message ",
    pattern=r"^Consume too many times, ack message async\. message (.*)$",
    formats=ALL_CLIENTS,
    msgs_rx=r"async\. message (.*)$",
)
L_C13 = Statement(  # the simulator's POP consumer writes L-C12 only; the template is the 5.x source's
    "L-C13",
    "INFO",
    "Reconsume times has reached {}, so ack msg={}",
    "5.x",
    _DMPCI,
    event_type=EventType.POP_DROPPED,
    prefix="Reconsume times has reached ",
    pattern=r"^Reconsume times has reached (\d+), so ack msg=(.*)$",
    formats=ALL_CLIENTS,
    msgs_rx=r"so ack msg=(.*)$",
    written=False,
)
# L-C14: admin direct consume (dashboard resend / queryMsgById -d). Parser only: the simulator has no admin tool.
L_C14 = Statement(
    "L-C14",
    "INFO",
    None,
    "both",
    _CMCS,
    event_type=EventType.DIRECT_CONSUME,
    prefix="consumeMessageDirectly receive new message: ",
    pattern=r"^consumeMessageDirectly receive new message: (.*)$",
    formats=ALL_CLIENTS,
    msgs_rx=r"new message: (.*)$",
    written=False,
)
# L-P1: sync send failed, resend at once. 4.9.4 prints the values and then a Message{...} line (§12), which the
# job folds into this event (msg_id/keys/tags); 5.2.0 prints the placeholders literally (L_P1_520_LITERAL).
L_P1 = Statement(
    "L-P1",
    "WARN",
    "sendKernelImpl exception, resend at once, InvokeID: {}, RT: {}ms, Broker: {}",
    "both",
    _DMPI,
    event_type=EventType.PUBLISH_RETRY,
    prefix="sendKernelImpl exception, resend at once, ",
    pattern=r"^sendKernelImpl exception, resend at once, InvokeID: (\S+), RT: (\S+)ms, Broker: (.*)$",
    formats=ALL_CLIENTS,
    topic_rx=r"Broker: MessageQueue \[topic=([^,\]]*)",
    detail_rx=r"^sendKernelImpl exception, (.*)$",
)
# 5.2.0 prints the placeholders literally (§12): the String.format-style text reached an SLF4J call.
L_P1_520_LITERAL = "sendKernelImpl exception, resend at once, InvokeID: %s, RT: %sms, Broker: %s"
# L-P2: async send retry. Parser only: the simulator's producers send synchronously.
L_P2 = Statement(
    "L-P2",
    "INFO",
    None,
    "both",
    _MQCAPI,
    event_type=EventType.PUBLISH_RETRY,
    prefix="async send msg by retry ",
    pattern=r"^async send msg by retry (\d+) times\. topic=([^,]*), brokerAddr=([^,]*), brokerName=(.*)$",
    formats=ALL_CLIENTS,
    topic_rx=r"topic=([^,]*),",
    written=False,
)

# --- rocketmq-spring (§6.4) ---------------------------------------------------------------------------------
# rocketmq-spring container (2.2.0+): no group in the line -> source consumer_group / running container.
S_CONSUME_FAILED = Statement(
    "S-1",
    "WARN",
    "consume message failed. messageId:{}, topic:{}, reconsumeTimes:{}",
    "2.2.0+",
    "spring",
    event_type=EventType.CONSUME_FAILED,
    prefix="consume message failed. messageId:",
    pattern=r"^consume message failed\. messageId:([^,]*), topic:([^,]*), reconsumeTimes:(\d+)$",
    formats=(SPRING_LISTENER,),
    topic_rx=r"topic:([^,]*),",
    msg_id_rx=r"messageId:([^,]*),",
    reconsume_rx=r"reconsumeTimes:(\d+)$",
    status="EXCEPTION",
    # DefaultRocketMQListenerContainer: log.warn("consume message failed. messageId:{}, topic:{}, reconsumeTimes:{}",
    # …, e) in both listener classes (concurrently and orderly)
    stack_trace=True,
)
# Written only: no retry transition. The ingest job reads the line as binding B-S1 (jobs/ingest/patterns.BINDINGS).
S_RUNNING_CONTAINER = Statement("S-2", "INFO", "running container: {}", "all", "spring")

# --- gRPC Java SDK (§5.3, §5.6, §6.2) -----------------------------------------------------------------------
# Listener exception -> nack; group comes from config.
G_LISTENER_EXCEPTION = Statement(
    "G-C1",
    "ERROR",
    "Message listener raised an exception while consuming messages, clientId={}, mq={}, messageId={}",
    "5.x",
    _GRPC_CONSUME_TASK,
    event_type=EventType.CONSUME_FAILED,
    prefix="Message listener raised an exception while consuming messages, ",
    pattern=r"^Message listener raised an exception while consuming messages, clientId=([^,]*), mq=(.*), messageId=(\S+)$",  # noqa: E501
    formats=(GRPC_CLIENT,),
    msg_id_rx=r"messageId=(\S+)$",
    # MessageQueueImpl.toString(): brokerName + "." + topic + "." + queueId (rocketmq-clients java)
    topic_rx=r", mq=[^,]*?\.([^.,]+)\.\d+, messageId=",
    status="EXCEPTION",
    # rocketmq-clients java ConsumeTask#call: catch (Throwable t) { log.error("Message listener raised …", …, t) },
    # the one task of the standard and the FIFO push consumer
    stack_trace=True,
)
# Written only: the FIFO consumer runs out of attempts, then forwards to the DLQ; the event is read from G-C3.
G_FIFO_EXHAUSTED = Statement(
    "G-C2",
    "INFO",
    "Failed to consume fifo message finally, run out of attempt times, maxAttempts={}, attempt={}, mq={}, "
    "messageId={}, clientId={}",
    "5.x",
    _GRPC_PQ,
)
# §5.3/§11 gRPC FIFO: out of attempts, then forwarded to the DLQ.
G_FORWARD_DLQ_OK = Statement(
    "G-C3",
    "INFO",
    "Forward message to dead letter queue successfully, clientId={}, consumerGroup={}, messageId={}, mq={}, "
    "endpoints={}, requestId={}",
    "5.x",
    _GRPC_PQ,
    event_type=EventType.DEAD_LETTERED,
    prefix="Forward message to dead letter queue successfully, ",
    pattern=r"^Forward message to dead letter queue successfully, (.*)$",
    formats=(GRPC_CLIENT,),
    group_rx=r"consumerGroup=([^,]*)",
    msg_id_rx=r"messageId=([^,]*)",
)
G_SEND_RETRY = Statement(
    "G-P1",
    "WARN",
    "Failed to send message, would attempt to resend right now, maxAttempts={}, attempt={}, topic={}, "
    "messageId(s)={}, endpoints={}, clientId={}",
    "5.x",
    _GRPC_PRODUCER,
    event_type=EventType.PUBLISH_RETRY,
    prefix="Failed to send message, would attempt to resend ",
    pattern=r"^Failed to send message, would attempt to resend (.*)$",
    formats=(GRPC_CLIENT,),
    msg_id_rx=r"messageId\(s\)=\[?([^,\]]*)",
    topic_rx=r"topic=([^,]*)",
)
G_SEND_FAILED = Statement(
    "G-P3",
    "ERROR",
    "Failed to send message(s) finally, run out of attempt times, maxAttempts={}, attempt={}, topic={}, "
    "messageId(s)={}, endpoints={}, clientId={}",
    "5.x",
    _GRPC_PRODUCER,
    event_type=EventType.PUBLISH_FAILED,
    prefix="Failed to send message(s) finally, run out of attempt times, ",
    pattern=r"^Failed to send message\(s\) finally, run out of attempt times, (.*)$",
    formats=(GRPC_CLIENT,),
    msg_id_rx=r"messageId\(s\)=\[?([^,\]]*)",
    topic_rx=r"topic=([^,]*)",
)
# §5.6/§11 gRPC producer: throttled resend (G-P2) and the success after resending (G-P4; gRPC writes no trace).
G_SEND_THROTTLED = Statement(
    "G-P2",
    "WARN",
    "Failed to send message due to too many requests, would attempt to resend after {}, maxAttempts={}, "
    "attempt={}, topic={}, messageId(s)={}, endpoints={}, clientId={}",
    "5.x",
    _GRPC_PRODUCER,
    event_type=EventType.PUBLISH_RETRY,
    prefix="Failed to send message due to too many requests, would attempt to resend after ",
    pattern=r"^Failed to send message due to too many requests, would attempt to resend after (.*)$",
    formats=(GRPC_CLIENT,),
    msg_id_rx=r"messageId\(s\)=\[?([^,\]]*)",
    topic_rx=r"topic=([^,]*)",
)
G_RESEND_OK = Statement(
    "G-P4",
    "INFO",
    "Resend message successfully, topic={}, messageId(s)={}, maxAttempts={}, attempt={}, endpoints={}, clientId={}",
    "5.x",
    _GRPC_PRODUCER,
    event_type=EventType.PUBLISHED,
    prefix="Resend message successfully, ",
    pattern=r"^Resend message successfully, (.*)$",
    formats=(GRPC_CLIENT,),
    msg_id_rx=r"messageId\(s\)=\[?([^,\]]*)",
    topic_rx=r"topic=([^,]*)",
)

# --- Python gRPC SDK, rocketmq-python-client 5.1.2 (§5.7) ---------------------------------------------------
# f-strings in the SDK's own modules; none names the consumer group except PY-C5, and none carries the delivery
# attempt. Lines of a client object start with its ``__str__`` ("PUSH_CONSUMER:<group>, client_id:<id> ",
# "PRODUCER client_id:<id> "): the screen reads a message after that prefix (``PY_SELF_PREFIX``), so the
# templates below start where the prefix ends. Parser only: the simulator writes no Python client.
_PY = "rocketmq-clients python/rocketmq/v5/"
# What the screen strips from the start of a Python client line before it looks for a statement (§5.7):
# consumer.py Consumer#__str__ and producer.py Producer#__str__, then one space.
PY_SELF_PREFIX = r"^(?:PRODUCER|(?:PUSH|SIMPLE)_CONSUMER:[^,\s]*,) client_id:\S+ "
_PY_TOPIC_ID = r"topic: ([^,]*), message_id: ([^,\s]*)"
# the extractions every "…, topic: {}, message_id: {}[, {e}]" statement shares
_PY_TOPIC_RX = r", topic: ([^,]*), message_id: "
_PY_MSG_ID_RX = r", message_id: ([^,\s]*)"
_PY_AFTER_ID_RX = r", message_id: [^,\s]*, (.*)$"  # the {e} after the message id: str(e)
# PY-C1: the listener raised (Consumption#__consume, consumer/push/consumption.py); the result is
# FAILURE, so a nack follows (PushConsumer#__ack_or_nack). A listener that returns FAILURE logs nothing.
PY_LISTENER_EXCEPTION = Statement(
    "PY-C1",
    "ERROR",
    "message listener raised an exception while consuming messages, topic: {}, message_id: {}, {}",
    "5.x",
    _PY + "consumer/push/consumption.py",
    event_type=EventType.CONSUME_FAILED,
    prefix="message listener raised an exception while consuming messages, topic: ",
    pattern=r"^message listener raised an exception while consuming messages, " + _PY_TOPIC_ID + r", (.*)$",
    formats=(PYTHON_CLIENT,),
    topic_rx=_PY_TOPIC_RX,
    msg_id_rx=_PY_MSG_ID_RX,
    status="EXCEPTION",
    message_rx=_PY_AFTER_ID_RX,
    written=False,
)
# PY-C2: a message whose body failed its checksum is reported FAILURE without calling the listener
# (consumption.py and fifo_consumption.py): redelivered (standard) or, FIFO, dead-lettered after the local retries.
PY_CORRUPTED = Statement(
    "PY-C2",
    "ERROR",
    "message is corrupted for consumption, prepare to discard it, topic: {}, message_id: {}",
    "5.x",
    _PY + "consumer/push/consumption.py",
    event_type=EventType.CONSUME_FAILED,
    prefix="message is corrupted for consumption, prepare to discard it, ",
    pattern=r"^message is corrupted for consumption, prepare to discard it, " + _PY_TOPIC_ID + r"$",
    formats=(PYTHON_CLIENT,),
    topic_rx=_PY_TOPIC_RX,
    msg_id_rx=_PY_MSG_ID_RX,
    detail_rx=r"^message is (corrupted) for consumption",
    written=False,
)
# PY-C4: FifoConsumption#__consume_fifo caught an exception around the local retries ("[BUG]"): FAILURE.
PY_FIFO_BUG = Statement(
    "PY-C4",
    "ERROR",
    "[BUG]consume fifo raise exception, topic: {}, message_id: {}, {}",
    "5.x",
    _PY + "consumer/push/fifo_consumption.py",
    event_type=EventType.CONSUME_FAILED,
    prefix="[BUG]consume fifo raise exception, topic: ",
    pattern=r"^\[BUG\]consume fifo raise exception, " + _PY_TOPIC_ID + r", (.*)$",
    formats=(PYTHON_CLIENT,),
    topic_rx=_PY_TOPIC_RX,
    msg_id_rx=_PY_MSG_ID_RX,
    status="EXCEPTION",
    message_rx=_PY_AFTER_ID_RX,
    written=False,
)
# PY-C5: the FIFO consumer ran out of local attempts and ForwardMessageToDeadLetterQueue succeeded
# (PushConsumer#__discard_fifo_message, consumer/push/push_consumer.py); the proxy's broker logs L-B7 with the
# business topic as originalTopic (§5.4, §12).
PY_FORWARD_DLQ_OK = Statement(
    "PY-C5",
    "INFO",
    "forward message to dead letter queue successfully, consumerGroup: {}, topic: {}, message_id: {}",
    "5.x",
    _PY + "consumer/push/push_consumer.py",
    event_type=EventType.DEAD_LETTERED,
    prefix="forward message to dead letter queue successfully, consumerGroup: ",
    pattern=r"^forward message to dead letter queue successfully, consumerGroup: ([^,]*), " + _PY_TOPIC_ID + r"$",
    formats=(PYTHON_CLIENT,),
    group_rx=r"consumerGroup: ([^,]*),",
    topic_rx=_PY_TOPIC_RX,
    msg_id_rx=_PY_MSG_ID_RX,
    written=False,
)
# PY-C6: that forward failed; the SDK retries it every second until it succeeds (same method).
PY_FORWARD_DLQ_FAILED = Statement(
    "PY-C6",
    "ERROR",
    "discard message raise exception, topic: {}, message_id: {}, {}",
    "5.x",
    _PY + "consumer/push/push_consumer.py",
    event_type=EventType.SEND_BACK_FAILED,
    prefix="discard message raise exception, topic: ",
    pattern=r"^discard message raise exception, " + _PY_TOPIC_ID + r", (.*)$",
    formats=(PYTHON_CLIENT,),
    topic_rx=_PY_TOPIC_RX,
    msg_id_rx=_PY_MSG_ID_RX,
    detail_rx=_PY_AFTER_ID_RX,
    written=False,
)
# PY-P1 / PY-P2: Producer#__check_send_retry_condition ends the retries: out of attempts, or the server said
# TooManyRequests (producer/producer.py); the message was not sent. Written after "PRODUCER client_id:<id> ".
PY_SEND_FAILED = Statement(
    "PY-P1",
    "ERROR",
    "failed to send message to {}, because of run out of attempt times, topic:{}, message_id:{},  message_type:{}, "
    "attempt:{}",
    "5.x",
    _PY + "producer/producer.py",
    event_type=EventType.PUBLISH_FAILED,
    prefix="failed to send message to ",
    pattern=r"^failed to send message to (.*), because of (run out of attempt times|to too many requests), "
    r"topic:([^,]*), .*message_id:([^,\s]*),.*attempt:(\d+)$",
    formats=(PYTHON_CLIENT,),
    topic_rx=r", topic:([^,]*),",
    msg_id_rx=r"message_id:([^,\s]*),",
    detail_rx=r", because of (run out of attempt times|to too many requests),",
    written=False,
)

# --- broker (§6.3) ------------------------------------------------------------------------------------------
# L-B7 (5.x): send-back to DLQ. L-B8: the DLQ put failed.
L_B7 = Statement(
    "L-B7",
    "INFO",
    "send msg to DLQ {}, owner={}, originalTopic={}, consumerId={}, msgUniqKey={}, storeTimestamp={}",
    "5.x",
    "RocketmqDLQ",
    event_type=EventType.DEAD_LETTERED,
    prefix="send msg to DLQ ",
    pattern=r"^send msg to DLQ (\S+), owner=([^,]*), originalTopic=([^,]*), consumerId=([^,]*), msgUniqKey=([^,]*), storeTimestamp=(\d+)$",  # noqa: E501
    formats=BROKERS,
    group_rx=r"consumerId=([^,]*),",
    msg_id_rx=r"msgUniqKey=([^,]*),",
    topic_rx=r"^send msg to DLQ (\S+),",
)
# Parser only: the simulated broker's DLQ puts never fail.
L_B8 = Statement(
    "L-B8",
    "",
    None,
    "5.x",
    "RocketmqDLQ",
    event_type=EventType.SEND_BACK_FAILED,
    prefix="failed to send msg to DLQ ",
    pattern=r"^failed to send msg to DLQ (\S+), owner=([^,]*), originalTopic=([^,]*), consumerId=([^,]*), msgUniqKey=([^,]*), result=(.*)$",  # noqa: E501
    formats=BROKERS,
    group_rx=r"consumerId=([^,]*),",
    msg_id_rx=r"msgUniqKey=([^,]*),",
    topic_rx=r"^failed to send msg to DLQ (\S+),",
    written=False,
)
# L-B2 (5.x >= 5.1.4): orderly group straight to DLQ.
L_B2 = Statement(
    "L-B2",
    "INFO",
    "Group has unexpired lock record, which show it is ordered message, send it to DLQ right now group={}, "
    "topic={}, reconsumeTimes={}, maxReconsumeTimes={}.",
    "5.x",
    "RocketmqBroker",
    event_type=EventType.DEAD_LETTERED,
    prefix="Group has unexpired lock record, ",
    pattern=r"^Group has unexpired lock record, which show it is ordered message, send it to DLQ right now group=([^,]*), topic=([^,]*), reconsumeTimes=(\d+), maxReconsumeTimes=(-?\d+)\.$",  # noqa: E501
    formats=BROKERS,
    group_rx=r"group=([^,]*),",
    topic_rx=r" topic=([^,]*),",
)
# L-B1 (+ §12 bracketed form): %RETRY%/%DLQ% topic auto-created (first send-back/heartbeat).
L_B1 = Statement(
    "L-B1",
    "INFO",
    "create new topic {}",
    "both",
    "RocketmqBroker",
    event_type=EventType.TOPIC_CREATED,
    prefix="create new topic ",
    pattern=r"^create new topic \[?TopicConfig \[topicName=([^,]+), .*\]\]?$",
    formats=BROKERS,
    topic_rx=r"topicName=([^,]+),",
)
# L-B4..L-B6: schedule-topic delivery problems (4.x store.log, 5.x broker.log). Parser only: the simulated schedule
# service always delivers.
L_B4 = Statement(
    "L-B4",
    "",
    None,
    "both",
    event_type=EventType.SCHEDULE_ERROR,
    prefix="ScheduleMessageService put message ",
    pattern=r"^ScheduleMessageService put message .*$",
    formats=BROKERS,
    written=False,
)
L_B5 = Statement(
    "L-B5",
    "",
    None,
    "both",
    event_type=EventType.SCHEDULE_ERROR,
    prefix="ScheduleMessageService, ",
    pattern=r"^ScheduleMessageService, .*$",
    formats=BROKERS,
    written=False,
)
# L-B9: per-minute send-back counter (stats.log); detail = the SUM.
L_B9 = Statement(
    "L-B9",
    "INFO",
    stats_template(SNDBCK_PUT_NUMS),
    "both",
    "RocketmqStats",
    event_type=EventType.SEND_BACK_COUNT,
    prefix="[SNDBCK_PUT_NUMS] [",
    pattern=r"^\[SNDBCK_PUT_NUMS\] \[([^@\]]*)@([^\]]*)\] Stats In One Minute, SUM: (\d+) TPS: .*$",
    formats=STATS,
    group_rx=r"^\[SNDBCK_PUT_NUMS\] \[[^@\]]*@([^\]]*)\]",
    topic_rx=r"^\[SNDBCK_PUT_NUMS\] \[([^@\]]*)@",
    detail_rx=r"SUM: (\d+)",
)
# L-B10 (5.x): per-minute DLQ counter in broker_default.log: [owner@originTopic@group@SEND_BACK_TO_DLQ].
L_B10 = Statement(
    "L-B10",
    "INFO",
    stats_template(SNDBCK2DLQ_TIMES),
    "5.x",
    "RocketmqStats",
    event_type=EventType.DLQ_COUNT,
    prefix="[SNDBCK2DLQ_TIMES] [",
    pattern=r"^\[SNDBCK2DLQ_TIMES\] \[([^@\]]*)@([^@\]]*)@([^@\]]*)@SEND_BACK_TO_DLQ\] Stats In One Minute, SUM: (\d+) TPS: .*$",  # noqa: E501
    formats=STATS,
    group_rx=r"^\[SNDBCK2DLQ_TIMES\] \[[^@\]]*@[^@\]]*@([^@\]]*)@",
    topic_rx=r"^\[SNDBCK2DLQ_TIMES\] \[[^@\]]*@([^@\]]*)@",
    detail_rx=r"SUM: (\d+)",
)
# Broker TOPIC_PUT_NUMS of a %DLQ% topic (stats.log, 4.x and 5.x): incremented by SendMessageProcessor's
# handlePutMessageResult, i.e. for DLQ puts made by handleRetryAndDLQ (the client's fallback re-publish and the
# orderly send-back past the max) and, for 4.x, when the schedule service delivers a DLQ-bound copy; a DLQ put of
# consumerSendMsgBack does not count here (only SNDBCK_PUT_NUMS / 5.x SNDBCK2DLQ_TIMES).
L_B15 = Statement(
    "L-B15",
    "INFO",
    stats_template(TOPIC_PUT_NUMS),
    "both",
    "RocketmqStats",
    event_type=EventType.DLQ_PUT_COUNT,
    prefix="[TOPIC_PUT_NUMS] [%DLQ%",
    pattern=r"^\[TOPIC_PUT_NUMS\] \[%DLQ%([^\]]+)\] Stats In One Minute, SUM: (\d+) TPS: .*$",
    formats=STATS,
    group_rx=r"^\[TOPIC_PUT_NUMS\] \[%DLQ%([^\]]+)\]",
    topic_rx=r"^\[TOPIC_PUT_NUMS\] \[(%DLQ%[^\]]+)\]",
    detail_rx=r"SUM: (\d+)",
)
# Client ConsumerStatsManager, printed every minute for every topic@group (StatsItem#printAtMinutes): failed
# consumptions (RECONSUME_LATER, an exception or null, orderly SUSPEND). The only client-side trace of a plain
# RECONSUME_LATER (§12). The topic is the consumed queue's: %RETRY%<group> for redeliveries.
L_C16 = Statement(
    "L-C16",
    "INFO",
    stats_template(CONSUME_FAILED_TPS),
    "both",
    "RocketmqClient",
    event_type=EventType.CONSUME_FAILED_COUNT,
    prefix="[CONSUME_FAILED_TPS] [",
    pattern=r"^\[CONSUME_FAILED_TPS\] \[([^@\]]*)@([^\]]*)\] Stats In One Minute, SUM: (\d+) TPS: .*$",
    formats=CLIENTS,
    group_rx=r"^\[CONSUME_FAILED_TPS\] \[[^@\]]*@([^\]]*)\]",
    topic_rx=r"^\[CONSUME_FAILED_TPS\] \[([^@\]]*)@",
    detail_rx=r"SUM: (\d+)",
)

# --- broker pop revive: records dropped without a DLQ (§5.9, RocketMQ 5.3.1 to 5.5.0) ------------------------------
# All three in pop.log (logger RocketmqPop). None names a message id: they name the popped copy by group, topic,
# queue and queue offset (the record / checkpoint), the topic being the pop retry topic for a copy popped from it.
# Parser only: the simulator's brokers always revive. POP_DROPPED: the message is gone for the group, no DLQ copy.
_POP_RECORD = r"PopDeliveryRecord\{popTime=\d+, groupId='[^']*', topicId='[^']*', queueId=-?\d+, .*\}"
# L-B16 (5.3.2+, popConsumerKVServiceEnable): PopConsumerService#revive(AtomicLong, int), ERROR, after
# popReviveMaxAttemptTimes (16) failed revives of the record (each failure a WARN "revive backoff retry").
L_B16 = Statement(
    "L-B16",
    "ERROR",
    "PopConsumerService drop record, message may be lost, record={}",
    "5.3.2+",
    "RocketmqPop",
    event_type=EventType.POP_DROPPED,
    prefix="PopConsumerService drop record, message may be lost, record=",
    pattern=rf"^PopConsumerService drop record, message may be lost, record={_POP_RECORD}$",
    formats=BROKERS,
    group_rx=r"groupId='([^']*)'",
    topic_rx=r"topicId='([^']*)'",
    detail_rx=r"record=(PopDeliveryRecord\{.*\})$",
    written=False,
)
# L-B17 (5.5.0+, popReviveSkipIfGroupAbsent, default true): PopConsumerService#revive(PopConsumerRecord), INFO: the
# group has no subscription group config, the record is deleted unrevived.
L_B17 = Statement(
    "L-B17",
    "INFO",
    "PopConsumerService skip revive message, record={}",
    "5.5.0+",
    "RocketmqPop",
    event_type=EventType.POP_DROPPED,
    prefix="PopConsumerService skip revive message, record=",
    pattern=rf"^PopConsumerService skip revive message, record={_POP_RECORD}$",
    formats=BROKERS,
    group_rx=r"groupId='([^']*)'",
    topic_rx=r"topicId='([^']*)'",
    detail_rx=r"record=(PopDeliveryRecord\{.*\})$",
    written=False,
)
# L-B18 (5.3.1+, skipWhenCKRePutReachMaxTimes, default false): PopReviveService#rePutCK, WARN: a checkpoint rewritten
# 17 times (ckRewriteIntervalsInSeconds) is not rewritten again. Arguments: topic, group, brokerName,
# queueId-offset (a timestamp instead of the offset when called for a checkpoint that "stay too long"), popTime,
# invisibleTime, rePutTimes.
L_B18 = Statement(
    "L-B18",
    "WARN",
    "rePut CK reach max times, drop it. {}, {}, {}, {}-{}, {}, {}, {}",
    "5.3.1+",
    "RocketmqPop",
    event_type=EventType.POP_DROPPED,
    prefix="rePut CK reach max times, drop it. ",
    pattern=r"^rePut CK reach max times, drop it\. ([^,]*), ([^,]*), ([^,]*), (-?\d+)-(-?\d+), (\d+), (\d+), (\d+)$",
    formats=BROKERS,
    group_rx=r"^rePut CK reach max times, drop it\. [^,]*, ([^,]*),",
    topic_rx=r"^rePut CK reach max times, drop it\. ([^,]*),",
    detail_rx=r"^rePut CK reach max times, drop it\. (.*)$",
    written=False,
)

# The parser's table, in match order (the first statement whose prefix matches decides the event_type).
STATEMENTS: tuple[Statement, ...] = (
    L_C1,
    L_C2,
    L_C3,
    L_C4,
    L_C5_5X,
    L_C5_4X,
    L_C6,
    L_C8,
    L_C12,
    L_C13,
    L_C14,
    L_P1,
    L_P2,
    S_CONSUME_FAILED,
    G_LISTENER_EXCEPTION,
    G_FORWARD_DLQ_OK,
    G_SEND_RETRY,
    G_SEND_FAILED,
    G_SEND_THROTTLED,
    G_RESEND_OK,
    PY_LISTENER_EXCEPTION,
    PY_CORRUPTED,
    PY_FIFO_BUG,
    PY_FORWARD_DLQ_OK,
    PY_FORWARD_DLQ_FAILED,
    PY_SEND_FAILED,
    L_B7,
    L_B8,
    L_B2,
    L_B1,
    L_B4,
    L_B5,
    L_B9,
    L_B10,
    L_B15,
    L_C16,
    L_B16,
    L_B17,
    L_B18,
)
# Statements the simulator writes that carry no retry evidence the parser reads (each says why above).
WRITTEN_ONLY: tuple[Statement, ...] = (S_RUNNING_CONTAINER, G_FIFO_EXHAUSTED)
# Every statement with a template: what tests/test_logformats_grammar.py round-trips through the parser.
CATALOGUE: tuple[Statement, ...] = (*STATEMENTS, *WRITTEN_ONLY)


def _check_catalogue() -> None:
    """A template without a parser regex must be declared written-only; a parsed statement needs a prefix and an
    event type of the data contract."""
    for st in CATALOGUE:
        if st.pattern and not (st.prefix and st.event_type and st.formats):
            raise ValueError(f"statement {st.id}: a pattern needs a prefix, an event_type and formats")
        if st.event_type and st.event_type not in EVENT_TYPES:
            raise ValueError(f"statement {st.id}: event_type {st.event_type!r} is not in contract.EVENT_TYPES")
        if not st.pattern and st not in WRITTEN_ONLY:
            raise ValueError(f"statement {st.id}: a template without a parser pattern must be in WRITTEN_ONLY")
        if st.template is None and st.written:
            raise ValueError(f"statement {st.id}: written by the simulator but has no template")


_check_catalogue()

# --- remoting client lines that name a group and its topics (no retry transition; start-up and periodic) ---------
# The client log's evidence of which group an application instance runs (rocketmq-facts Q7, Q12). The ingest job
# reads them as bindings (jobs/ingest/patterns.BINDINGS), by prefix, not as statements.
C_CONSUMER_START = "the consumer [{}] start beginning. messageModel={}, isUnitMode={}"  # DefaultMQPushConsumerImpl
C_CONSUMER_START_OK = "the consumer [{}] start OK."
_REBALANCED = (
    "rebalanced result changed. allocateMessageQueueStrategyName={}, group={}, topic={}, clientId={}, mqAllSize={}, "
    "cidAllSize={}, rebalanceResultSize={}, rebalanceResultSet={}"
)
C_REBALANCED_4X = _REBALANCED  # RebalanceImpl#rebalanceByTopic, CLUSTERING, 4.x
C_REBALANCED_5X = "client " + _REBALANCED  # 5.0.0+ ("broker rebalanced result changed. …" is the POP form)
C_BROKER_REBALANCED = (  # RebalanceImpl#getRebalanceResultFromBroker, 5.x (POP / clientRebalance=false)
    "broker rebalanced result changed. allocateMessageQueueStrategyName={}, group={}, topic={}, clientId={}, "
    "assignmentSet={}"
)
C_MQ_CHANGED = "messageQueueChanged {} {} {} {}"  # BROADCASTING: group, topic, mqSet, mqSet
C_ADD_MQ = "doRebalance, {}, add a new mq, {}"  # RebalanceImpl#updateProcessQueueTableInRebalance
C_ADD_PULL_REQUEST = "doRebalance, {}, add a new pull request {}"  # RebalancePushImpl#dispatchPullRequest, 4.x only
C_PERSIST_ALL = "[persistAll] Group: {} ClientId: {} updateConsumeOffsetToBroker {} {}"  # RemoteBrokerOffsetStore


def fill(template: str, *args: object) -> str:
    """SLF4J ``MessageFormatter``: each ``{}`` takes the next argument's ``toString()``."""
    parts = template.split("{}")
    if len(parts) - 1 != len(args):
        raise ValueError(f"template has {len(parts) - 1} placeholders, got {len(args)} arguments: {template!r}")
    out = [parts[0]]
    for arg, part in zip(args, parts[1:], strict=True):
        out.append(_java_str(arg))
        out.append(part)
    return "".join(out)


def _java_str(value: object) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def template_regex(template: str, greedy_last: bool = True) -> str:
    """A regex for one rendered template: literal text escaped, each ``{}`` a lazy group (the last one greedy)."""
    parts = [re.escape(p) for p in template.split("{}")]
    groups = ["(.*?)"] * (len(parts) - 1)
    if groups and greedy_last:
        groups[-1] = "(.*)"
    out = parts[0]
    for group, part in zip(groups, parts[1:], strict=True):
        out += group + part
    return out
