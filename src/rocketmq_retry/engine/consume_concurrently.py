"""Remoting push consumer, concurrent mode: ``ConsumeMessageConcurrentlyService`` and the send-back chain of
``DefaultMQPushConsumerImpl`` (§1.2–§1.6), handing over to the broker (§2.2, §2.3)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from rocketmq_retry.engine.max_reconsume_times import effective_max_reconsume_times
from rocketmq_retry.engine.model import (
    INTEGER_MAX_VALUE,
    ConsumeOutcome,
    FailedDelivery,
    GroupPolicy,
    HopAction,
    MessageModel,
    NextHop,
    SendBackFault,
)
from rocketmq_retry.engine.send_message_processor import (
    consumer_send_msg_back,
    handle_retry_and_dlq,
    republished_properties,
)

# submitConsumeRequestLater(msgs, pq, mq): the local resubmit waits 5000 ms (§1.3).
LOCAL_RESUBMIT_DELAY_MS = 5_000
# ProcessQueue.cleanExpiredMsg sends timed-out messages back with a fixed delay level of 3 (§1.6).
EXPIRED_MSG_DELAY_LEVEL = 3


class ConsumeConcurrentlyStatus(StrEnum):
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


@dataclass(frozen=True)
class BatchConsumeResult:
    """``processConsumeResult`` for one listener call over a batch (§1.3).

    ``ack_index`` is the effective index after clamping; ``consumed`` are the indexes counted as OK and ``failed``
    those that are sent back (CLUSTERING) or dropped with a WARN (BROADCASTING).
    """

    ack_index: int
    consumed: tuple[int, ...]
    failed: tuple[int, ...]


def process_consume_result(
    batch_size: int, status: ConsumeConcurrentlyStatus | None, ack_index: int = INTEGER_MAX_VALUE
) -> BatchConsumeResult:
    """Which messages of a batch count as consumed and which are retried (§1.3).

    ``CONSUME_SUCCESS`` with ackIndex k → k+1..n-1 are still sent back (ackIndex ≥ size is clamped to size-1);
    ``RECONSUME_LATER`` (and a null status, which §1.2 step 7 turns into it) → all of them.
    """
    if batch_size < 1:
        raise ValueError("a consume request holds at least one message")
    if status is None or status == ConsumeConcurrentlyStatus.RECONSUME_LATER:
        effective = -1
    else:
        effective = min(ack_index, batch_size - 1)
        if effective < -1:
            # The Java loop would start at msgs.get(ackIndex + 1) < 0 and throw IndexOutOfBoundsException.
            raise ValueError(f"ackIndex {ack_index} < -1 makes processConsumeResult throw IndexOutOfBoundsException")
    return BatchConsumeResult(
        ack_index=effective,
        consumed=tuple(range(effective + 1)),
        failed=tuple(range(effective + 1, batch_size)),
    )


def concurrently_next_hop(policy: GroupPolicy, failure: FailedDelivery) -> NextHop:
    """A failed delivery to a remoting concurrent push consumer."""
    if policy.message_model == MessageModel.BROADCASTING:
        # §1.3: BROADCASTING only logs "BROADCASTING, the message consume failed, drop it" (L-C4).
        return NextHop(
            action=HopAction.DROPPED,
            topic=None,
            queue_id=None,
            delay_level=None,
            delay_ms=0,
            ready_at_ms=failure.failed_at_ms,
            reconsume_times=failure.reconsume_times,
            rule="§1.3 BROADCASTING: failed message dropped, never retried (L-C4)",
        )
    max_times = effective_max_reconsume_times(policy)
    timeout = failure.outcome == ConsumeOutcome.TIMEOUT
    if timeout:
        delay_level = EXPIRED_MSG_DELAY_LEVEL
        head = "§1.6 cleanExpiredMsg: sendMessageBack(msg, 3)"
    else:
        # The listener's ConsumeConcurrentlyContext level: the failure's own, else the group's setting (e.g. what
        # rocketmq-spring's container copies from @RocketMQMessageListener(delayLevelWhenNextConsume), §1.5).
        delay_level = failure.effective_delay_level(policy)
        head = "§1.3/§1.4 CLUSTERING send-back CONSUMER_SEND_MSG_BACK"

    if failure.send_back_fault == SendBackFault.NONE:
        return consumer_send_msg_back(
            policy, failure, delay_level=delay_level, max_reconsume_times=max_times, rule=head
        )

    r = failure.reconsume_times  # the client's own counter: the fallback reads msg.getReconsumeTimes()
    if failure.send_back_fault == SendBackFault.RPC_FAILED:
        # §1.4: the internal producer re-publishes to %RETRY%<group> with RECONSUME_TIME = r + 1 and DELAY = 3 + r,
        # ignoring the listener's delay level; the broker then applies handleRetryAndDLQ (§2.3).
        header_r = r + 1
        # ORIGIN_MESSAGE_ID: in every released client (4.9.4 … 5.3.3) the fallback calls
        # MessageAccessor.setOriginMessageId(newMsg, …) *before* MessageAccessor.setProperties(newMsg,
        # msg.getProperties()), which replaces the whole map, so the id survives only when the delivered copy already
        # carried one (client/.../impl/consumer/DefaultMQPushConsumerImpl.java #sendMessageBack in 4.9.4/4.9.8,
        # #sendMessageBackAsNormalMessage in 5.0.0 … 5.3.3). Fixed only on the unreleased develop branch
        # (commit 8abc0a1cf7, "[ISSUE #9481]"), so no released version keeps a fresh one.
        props = republished_properties(
            policy,
            failure,
            header_reconsume_times=header_r,
            max_reconsume_times=max_times,
            fresh_origin_id=False,
        )
        return handle_retry_and_dlq(
            policy,
            failure,
            header_reconsume_times=header_r,
            max_reconsume_times=max_times,
            delay_level=3 + r,
            properties=props,
            orderly_locked=False,
            rule=f"{head} failed → §1.4 fallback re-publish (3 + r, override ignored)",
        )

    if timeout:
        # §1.6: cleanExpiredMsg only logs "send expired msg exception"; nothing is resubmitted and the message stays
        # at the head of the process queue, so the next sweep, consumeTimeout later, sends it back again. Modelled
        # as a local hop with the counter unchanged.
        delay = policy.consume_timeout_minutes * 60_000
        return NextHop(
            action=HopAction.LOCAL_RESUBMIT,
            topic=failure.original_topic or None,
            queue_id=None,
            delay_level=None,
            delay_ms=delay,
            ready_at_ms=failure.failed_at_ms + delay,
            reconsume_times=r,
            rule="§1.6 send expired msg exception: retried by the next cleanExpiredMsg sweep (consumeTimeout later)",
            destination_topic=failure.original_topic or None,
            stored_reconsume_times=failure.broker_reconsume_times,
        )
    # §1.3: sendMessageBack returned false → msg.reconsumeTimes += 1 in client memory and a local resubmit after
    # 5000 ms; the broker stores nothing.
    return NextHop(
        action=HopAction.LOCAL_RESUBMIT,
        topic=failure.original_topic or None,
        queue_id=None,
        delay_level=None,
        delay_ms=LOCAL_RESUBMIT_DELAY_MS,
        ready_at_ms=failure.failed_at_ms + LOCAL_RESUBMIT_DELAY_MS,
        reconsume_times=r + 1,
        rule="§1.4 send-back and fallback failed → §1.3 submitConsumeRequestLater 5000 ms, r + 1 only locally",
        destination_topic=failure.original_topic or None,
        stored_reconsume_times=failure.broker_reconsume_times,
    )
