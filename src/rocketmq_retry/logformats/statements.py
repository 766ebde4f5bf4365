"""The exact log statements that expose retry transitions, with their statement ids (§6.2, §6.3, §6.4, §5.3, §5.6).

Templates keep the source's own placeholders: SLF4J ``{}``. 4.x statements built with ``String.format`` render
identically, so one template serves both. :func:`fill` renders a template; :func:`template_regex` turns it into a
regex with one capture group per placeholder (for the Spark parser).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Statement:
    id: str
    level: str
    template: str
    versions: str  # "4.x", "5.x" or "both"
    logger: str = ""  # 5.x class (FQCN) or broker logger name


_CMCS = "org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService"
_CMOS = "org.apache.rocketmq.client.impl.consumer.ConsumeMessageOrderlyService"
_DMPCI = "org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl"
_PQ = "org.apache.rocketmq.client.impl.consumer.ProcessQueue"
_DMPI = "org.apache.rocketmq.client.impl.producer.DefaultMQProducerImpl"
_CMPCS = "org.apache.rocketmq.client.impl.consumer.ConsumeMessagePopConcurrentlyService"

# --- remoting client (§6.2) ---------------------------------------------------------------------------------
L_C1 = Statement("L-C1", "WARN", "consumeMessage exception: {} Group: {} Msgs: {} MQ: {}", "both", _CMCS)
L_C2 = Statement("L-C2", "WARN", "consumeMessage return null, Group: {} Msgs: {} MQ: {}", "both", _CMCS)
L_C3 = Statement("L-C3", "WARN", "consumeMessage Orderly return not OK, Group: {} Msgs: {} MQ: {}", "both", _CMOS)
L_C4 = Statement("L-C4", "WARN", "BROADCASTING, the message consume failed, drop it, {}", "both", _CMCS)
L_C5_5X = Statement(
    "L-C5", "ERROR", "Failed to send message back, consumerGroup={}, brokerName={}, mq={}, message={}", "5.x", _DMPCI
)
L_C5_4X = Statement("L-C5", "ERROR", "sendMessageBack Exception, {}", "4.x", _DMPCI)  # "…, " + group
L_C6 = Statement("L-C6", "ERROR", "sendMessageBack exception, group: {} msg: {}", "both", _CMCS)  # string concat
L_C7 = Statement(
    "L-C7",
    "INFO",
    "Message is not found in its process queue; skip send-back-procedure, topic={}, brokerName={}, queueId={}, "
    "queueOffset={}",
    "5.x",
    _CMCS,
)
L_C8 = Statement(
    "L-C8", "INFO", "send expire msg back. topic={}, msgId={}, storeHost={}, queueId={}, queueOffset={}", "both", _PQ
)
L_C9 = Statement(
    "L-C9", "WARN", "processQueue is dropped without process consume result. messageQueue={}, msgs={}", "both", _CMCS
)
L_C12 = Statement("L-C12", "WARN", "Consume too many times, ack message async. message {}", "5.x", _CMPCS)
L_C13 = Statement("L-C13", "INFO", "Reconsume times has reached {}, so ack msg={}", "5.x", _DMPCI)
L_P1 = Statement(
    "L-P1", "WARN", "sendKernelImpl exception, resend at once, InvokeID: {}, RT: {}ms, Broker: {}", "both", _DMPI
)
# 5.2.0 prints the placeholders literally (§12): the String.format-style text reached an SLF4J call.
L_P1_520_LITERAL = "sendKernelImpl exception, resend at once, InvokeID: %s, RT: %sms, Broker: %s"
L_P3 = "Send [{}] times, still failed, cost [{}]ms, Topic: {}, BrokersSent: {}"
FAQ_SEND_MSG_FAILED = "See http://rocketmq.apache.org/docs/faq/ for further details."

# --- remoting client lines that name a group and its topics (no retry transition; start-up and periodic) ---------
# The client log's evidence of which group an application instance runs (rocketmq-facts Q7, Q12).
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

# --- gRPC Java SDK (§5.3, §5.6, §6.2) -----------------------------------------------------------------------
_GRPC_CONSUME_TASK = "org.apache.rocketmq.client.java.impl.consumer.ConsumeTask"
_GRPC_PQ = "org.apache.rocketmq.client.java.impl.consumer.ProcessQueueImpl"
_GRPC_PRODUCER = "org.apache.rocketmq.client.java.impl.producer.ProducerImpl"
G_LISTENER_EXCEPTION = Statement(
    "G-C1",
    "ERROR",
    "Message listener raised an exception while consuming messages, clientId={}, mq={}, messageId={}",
    "5.x",
    _GRPC_CONSUME_TASK,
)
G_FIFO_EXHAUSTED = Statement(
    "G-C2",
    "INFO",
    "Failed to consume fifo message finally, run out of attempt times, maxAttempts={}, attempt={}, mq={}, "
    "messageId={}, clientId={}",
    "5.x",
    _GRPC_PQ,
)
G_FORWARD_DLQ_OK = Statement(
    "G-C3",
    "INFO",
    "Forward message to dead letter queue successfully, clientId={}, consumerGroup={}, messageId={}, mq={}, "
    "endpoints={}, requestId={}",
    "5.x",
    _GRPC_PQ,
)
G_SEND_RETRY = Statement(
    "G-P1",
    "WARN",
    "Failed to send message, would attempt to resend right now, maxAttempts={}, attempt={}, topic={}, "
    "messageId(s)={}, endpoints={}, clientId={}",
    "5.x",
    _GRPC_PRODUCER,
)
G_SEND_THROTTLED = Statement(
    "G-P2",
    "WARN",
    "Failed to send message due to too many requests, would attempt to resend after {}, maxAttempts={}, "
    "attempt={}, topic={}, messageId(s)={}, endpoints={}, clientId={}",
    "5.x",
    _GRPC_PRODUCER,
)
G_SEND_FAILED = Statement(
    "G-P3",
    "ERROR",
    "Failed to send message(s) finally, run out of attempt times, maxAttempts={}, attempt={}, topic={}, "
    "messageId(s)={}, endpoints={}, clientId={}",
    "5.x",
    _GRPC_PRODUCER,
)
G_RESEND_OK = Statement(
    "G-P4",
    "INFO",
    "Resend message successfully, topic={}, messageId(s)={}, maxAttempts={}, attempt={}, endpoints={}, clientId={}",
    "5.x",
    _GRPC_PRODUCER,
)

# --- broker (§6.3) ------------------------------------------------------------------------------------------
L_B1 = Statement("L-B1", "INFO", "create new topic {}", "both", "RocketmqBroker")
L_B2 = Statement(
    "L-B2",
    "INFO",
    "Group has unexpired lock record, which show it is ordered message, send it to DLQ right now group={}, "
    "topic={}, reconsumeTimes={}, maxReconsumeTimes={}.",
    "5.x",
    "RocketmqBroker",
)
L_B7 = Statement(
    "L-B7",
    "INFO",
    "send msg to DLQ {}, owner={}, originalTopic={}, consumerId={}, msgUniqKey={}, storeTimestamp={}",
    "5.x",
    "RocketmqDLQ",
)
# Stats lines (§6.3 L-B9, L-B10; tests/data/rocketmq-4.9.4/broker/stats.log).
STATS_MINUTE = "[{}] [{}] Stats In One Minute, SUM: {} TPS: {} AVGPT: {}"
STATS_MINUTE_RT = "[{}] [{}] Stats In One Minute, TIMES: {} AVGRT: {}"
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"
SNDBCK2DLQ_TIMES = "SNDBCK2DLQ_TIMES"
SEND_BACK_TO_DLQ = "SEND_BACK_TO_DLQ"

# --- rocketmq-spring (§6.4) ---------------------------------------------------------------------------------
S_CONSUME_FAILED = Statement(
    "S-1", "WARN", "consume message failed. messageId:{}, topic:{}, reconsumeTimes:{}", "2.2.0+", "spring"
)
S_RUNNING_CONTAINER = Statement("S-2", "INFO", "running container: {}", "all", "spring")


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


def stats_tps(total: int, seconds: int = 60) -> str:
    """``TPS: %.2f`` of a per-minute stats line (sum / 60 → e.g. ``0.24`` for 12)."""
    return f"{total / seconds:.2f}"
