"""5.x gRPC consumers (rocketmq-clients Java SDK + proxy + pop broker): PushConsumer (§5.3), FIFO (§5.3) and
SimpleConsumer (§5.5), with the proxy's dead-letter rule (§5.4)."""

from __future__ import annotations

from rocketmq_retry.engine.message_const import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_WAIT_STORE_MSG_OK,
)
from rocketmq_retry.engine.model import (
    UNKNOWN_TOPIC,
    ConsumeMode,
    ConsumeOutcome,
    FailedDelivery,
    GroupPolicy,
    HopAction,
    MessageModel,
    NextHop,
    dlq_topic,
    pop_retry_topic,
)
from rocketmq_retry.engine.retry_policy import consumer_retry_policy
from rocketmq_retry.engine.send_message_processor import DLQ_QUEUE_ID

POP_RETRY_QUEUE_ID = 0  # PopReviveService.reviveRetry (§2.6)


def _dlq_copy(
    policy: GroupPolicy,
    failure: FailedDelivery,
    *,
    stored_r: int,
    stored_topic: str,
    at_ms: int,
    delay_ms: int,
    offset_msg_id: str | None,
    rule: str,
) -> NextHop:
    """``forwardMessageToDeadLetterQueue`` → ``consumerSendMsgBack(delayLevel = -1, maxReconsumeTimes = 0)`` on the
    stored copy the receipt handle points at (§2.1, §5.4): reconsumeTimes + 1, DELAY=0, DLQ log line L-B7.

    RETRY_TOPIC is absent on pop copies, so step 8 of §2.2 fills it with the *stored* copy's topic, which for a
    revived copy is the pop retry topic (INFERRED from HEAD's AbstractSendMessageProcessor, not run).
    """
    props: dict[str, str] = {PROPERTY_RETRY_TOPIC: stored_topic} if stored_topic else {}
    origin = failure.origin_message_id or offset_msg_id
    if origin:
        props[PROPERTY_ORIGIN_MESSAGE_ID] = origin
    props[PROPERTY_DELAY_TIME_LEVEL] = "0"
    props[PROPERTY_WAIT_STORE_MSG_OK] = "false"
    return NextHop(
        action=HopAction.DEAD_LETTER,
        topic=dlq_topic(policy.group),
        queue_id=DLQ_QUEUE_ID,
        delay_level=None,
        delay_ms=delay_ms,
        ready_at_ms=at_ms,
        reconsume_times=stored_r + 1,
        properties=props,
        rule=rule,
        destination_topic=dlq_topic(policy.group),
    )


def _dropped_broadcast(failure: FailedDelivery) -> NextHop:
    return NextHop(
        action=HopAction.DROPPED,
        topic=None,
        queue_id=None,
        delay_level=None,
        delay_ms=0,
        ready_at_ms=failure.failed_at_ms,
        reconsume_times=failure.reconsume_times,
        rule="§1.3 broadcasting is never retried (the gRPC SDK has no broadcasting mode either)",
    )


def grpc_next_hop(policy: GroupPolicy, failure: FailedDelivery) -> NextHop:
    if policy.broker_major < 5:
        raise ValueError(f"group {policy.group!r}: gRPC consumers need a 5.x broker and proxy (§5)")
    if policy.message_model == MessageModel.BROADCASTING:
        return _dropped_broadcast(failure)
    if policy.consume_mode == ConsumeMode.ORDERLY:
        return _fifo(policy, failure)
    if policy.consume_mode == ConsumeMode.SIMPLE:
        return _simple(policy, failure)
    return _push(policy, failure)


def _revive(policy: GroupPolicy, failure: FailedDelivery, *, delay_ms: int, start_ms: int, rule: str) -> NextHop:
    """The message is not acked: when the invisible time ends the broker revives it into the pop retry topic with
    reconsumeTimes + 1 (§2.6); the proxy dead-letters a popped copy whose reconsumeTimes >= maxAttempts (§5.4)."""
    attempts = consumer_retry_policy(policy).max_attempts
    r = failure.reconsume_times
    topic = failure.original_topic or UNKNOWN_TOPIC
    retry_topic = pop_retry_topic(policy.group, topic, policy.enable_retry_topic_v2)
    ready = start_ms + delay_ms
    if r + 1 >= attempts:
        return _dlq_copy(
            policy,
            failure,
            stored_r=r + 1,
            stored_topic=retry_topic,
            at_ms=ready,
            delay_ms=delay_ms,
            offset_msg_id=None,  # the revived copy's own offset id is not known in advance
            rule=(
                f"{rule}; §5.4 the revived copy (reconsumeTimes {r + 1} >= maxAttempts {attempts}) is TO_DLQ at "
                f"the next receive → forwardMessageToDeadLetterQueue, DLQ copy reconsumeTimes {r + 2}"
            ),
        )
    return NextHop(
        action=HopAction.INVISIBLE_RETRY,
        topic=retry_topic,
        queue_id=POP_RETRY_QUEUE_ID,
        delay_level=None,
        delay_ms=delay_ms,
        ready_at_ms=ready,
        reconsume_times=r + 1,
        rule=f"{rule}; §2.6 revived into the pop retry topic with reconsumeTimes + 1",
        destination_topic=retry_topic,
    )


def _push(policy: GroupPolicy, failure: FailedDelivery) -> NextHop:
    attempt = failure.reconsume_times + 1  # GrpcConverter: deliveryAttempt = reconsumeTimes + 1 (§5.3)
    delay = consumer_retry_policy(policy).get_next_attempt_delay_ms(attempt)
    return _revive(
        policy,
        failure,
        delay_ms=delay,
        start_ms=failure.failed_at_ms,
        rule=(
            f"§5.3 PushConsumer nack: changeInvisibleDuration(getNextAttemptDelay(deliveryAttempt {attempt}) = "
            f"{delay} ms)"
        ),
    )


def _simple(policy: GroupPolicy, failure: FailedDelivery) -> NextHop:
    start = failure.failed_at_ms if failure.delivered_at_ms is None else failure.delivered_at_ms
    delay = policy.invisible_duration_ms
    return _revive(
        policy,
        failure,
        delay_ms=max(0, start + delay - failure.failed_at_ms),
        start_ms=failure.failed_at_ms,
        rule=f"§5.5 SimpleConsumer: not acked, visible again {delay} ms after receive (invisibleDuration)",
    )


def _fifo(policy: GroupPolicy, failure: FailedDelivery) -> NextHop:
    """``ProcessQueueImpl.eraseFifoMessage`` (§5.3): local retries while attempt < maxAttempts, then the SDK
    forwards the message to the DLQ itself."""
    retry = consumer_retry_policy(policy)
    attempt = failure.reconsume_times + 1
    stored_r = failure.broker_reconsume_times
    topic = failure.original_topic or None
    if failure.outcome == ConsumeOutcome.RETURN_NULL:
        # A null ConsumeResult is neither FAILURE nor SUCCESS: no local retry, straight to forwardToDeadLetterQueue
        # (§5.3, INFERRED; ConsumeTask passes null through, read in rocketmq-clients HEAD).
        reason = "listener returned null → not FAILURE, skips the local retry"
    elif attempt < retry.max_attempts:
        delay = retry.get_next_attempt_delay_ms(attempt)
        return NextHop(
            action=HopAction.FIFO_LOCAL_RETRY,
            topic=topic,
            queue_id=None,
            delay_level=None,
            delay_ms=delay,
            ready_at_ms=failure.failed_at_ms + delay,
            reconsume_times=failure.reconsume_times + 1,
            rule=(
                f"§5.3 FIFO: attempt {attempt} < maxAttempts {retry.max_attempts} → consume again locally after "
                f"getNextAttemptDelay({attempt}) = {delay} ms (incrementAndGetDeliveryAttempt, no broker copy)"
            ),
            destination_topic=topic,
            stored_reconsume_times=stored_r,
        )
    else:
        reason = f"attempt {attempt} >= maxAttempts {retry.max_attempts}, run out of attempt times"
    stored_topic = (
        failure.original_topic
        if stored_r == 0
        else pop_retry_topic(policy.group, failure.original_topic or UNKNOWN_TOPIC, policy.enable_retry_topic_v2)
    )
    return _dlq_copy(
        policy,
        failure,
        stored_r=stored_r,
        stored_topic=stored_topic,
        at_ms=failure.failed_at_ms,
        delay_ms=0,
        offset_msg_id=failure.offset_msg_id,
        rule=(
            f"§5.3 FIFO: {reason} → forwardToDeadLetterQueue; the broker adds 1 to the stored copy's reconsumeTimes "
            f"{stored_r} (local attempts are not stored)"
        ),
    )
