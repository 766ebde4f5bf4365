"""Remoting push consumer, orderly mode: ``ConsumeMessageOrderlyService`` (§4, corrected by §12)."""

from __future__ import annotations

from rocketmq_retry.engine.max_reconsume_times import effective_max_reconsume_times
from rocketmq_retry.engine.model import FailedDelivery, GroupPolicy, HopAction, MessageModel, NextHop, SendBackFault
from rocketmq_retry.engine.send_message_processor import handle_retry_and_dlq, republished_properties

# submitConsumeRequestLater(pq, mq, suspendTimeMillis) clamps to [10, 30000] ms (§4).
MIN_SUSPEND_MILLIS = 10
MAX_SUSPEND_MILLIS = 30_000


def suspend_time_millis(context_millis: int, consumer_millis: int) -> int:
    """``-1`` (the context default) → the consumer's ``suspendCurrentQueueTimeMillis``; then clamp to [10, 30000]."""
    millis = consumer_millis if context_millis == -1 else context_millis
    return min(max(millis, MIN_SUSPEND_MILLIS), MAX_SUSPEND_MILLIS)


def orderly_next_hop(policy: GroupPolicy, failure: FailedDelivery) -> NextHop:
    """A failed delivery (SUSPEND_CURRENT_QUEUE_A_MOMENT, or null/ROLLBACK/exception, which §4 maps to it).

    Orderly consumers have no consume timeout (cleanExpiredMsg skips them, §1.6) and no delay level; a TIMEOUT or
    RECONSUME_LATER outcome is therefore handled like SUSPEND. Broadcasting orderly consumers take this path too:
    ``ConsumeMessageOrderlyService`` only skips the queue lock for them and has no broadcasting branch in
    ``processConsumeResult`` (read in 4.9.4 and HEAD), unlike the concurrent service (§1.3).
    """
    r = failure.reconsume_times
    max_times = effective_max_reconsume_times(policy)
    if r < max_times:
        return _suspend(
            policy, failure, rule=f"§4 checkReconsumeTimes: r {r} < max {max_times} → suspend, r + 1 locally"
        )

    # §4: past the max, sendMessageBack re-publishes to %RETRY%<group> through the internal producer (not to %DLQ%).
    # For orderly there is no CONSUMER_SEND_MSG_BACK RPC: RPC_FAILED is read as "the re-publish went through" and
    # RPC_AND_FALLBACK_FAILED as "the re-publish failed".
    if failure.send_back_fault == SendBackFault.RPC_AND_FALLBACK_FAILED:
        return _suspend(
            policy,
            failure,
            rule="§4 sendMessageBack failed (L-C6) → keeps retrying locally: suspend, r + 1",
        )
    major5 = policy.broker_major >= 5
    header_r = r + 1 if major5 else r  # §4 RECONSUME_TIME: [4.x] r, [5.x] r + 1 (4.x DLQ copy observed r, §12)
    props = republished_properties(policy, failure, header_reconsume_times=header_r, max_reconsume_times=max_times)
    return handle_retry_and_dlq(
        policy,
        failure,
        header_reconsume_times=header_r,
        max_reconsume_times=max_times,
        delay_level=3 + r,
        properties=props,
        # [5.x ≥ 5.1.4] a clustering orderly group holds queue locks, so the broker takes the lock short-cut (§2.3)
        orderly_locked=major5 and policy.message_model == MessageModel.CLUSTERING,
        rule=f"§4 r {r} >= max {max_times}: sendMessageBack re-publishes to %RETRY%<group> with 3 + r (§12)",
    )


def _suspend(policy: GroupPolicy, failure: FailedDelivery, *, rule: str) -> NextHop:
    delay = suspend_time_millis(failure.suspend_current_queue_time_millis, policy.suspend_current_queue_time_millis)
    topic = failure.original_topic or None
    return NextHop(
        action=HopAction.ORDERLY_SUSPEND,
        topic=topic,
        queue_id=None,
        delay_level=None,
        delay_ms=delay,
        ready_at_ms=failure.failed_at_ms + delay,
        reconsume_times=failure.reconsume_times + 1,
        rule=f"{rule}; §4 suspend {delay} ms (clamped to [10, 30000], -1 → suspendCurrentQueueTimeMillis)",
        destination_topic=topic,
        stored_reconsume_times=failure.broker_reconsume_times,
    )
