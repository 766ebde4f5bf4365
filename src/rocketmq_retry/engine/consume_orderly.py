"""Remoting push consumer, orderly mode: ``ConsumeMessageOrderlyService`` (§4, corrected by §12)."""

from __future__ import annotations

from rocketmq_retry.engine.max_reconsume_times import effective_max_reconsume_times
from rocketmq_retry.engine.model import FailedDelivery, GroupPolicy, HopAction, MessageModel, NextHop, SendBackFault
from rocketmq_retry.engine.send_message_processor import handle_retry_and_dlq, republished_properties
from rocketmq_retry.engine.versions import Version

# Client tags where ConsumeMessageOrderlyService#sendMessageBack changed (see orderly_next_hop).
ORDERLY_RECONSUME_TIME_PLUS_ONE_SINCE: Version = (5, 1, 1)
ORDERLY_KEEPS_ORIGIN_ID_SINCE: Version = (4, 9, 4)

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
    # §4 RECONSUME_TIME: the client sends r up to 5.1.0 and r + 1 from 5.1.1 (client/.../impl/consumer/
    # ConsumeMessageOrderlyService.java#sendMessageBack: `String.valueOf(msg.getReconsumeTimes() + 1)` arrived with
    # commit 7cfffe7f48 "[ISSUE #6163]", first tag rocketmq-all-5.1.1; the 4.9.4 DLQ copy observed r, §12). With a
    # 5.0.0/5.1.0 client on a 5.0.0/5.1.0 broker, r > max never holds, so the copy comes back and is sent back
    # again for ever: the infinite retry that issue #6163 reports.
    plus_one = policy.client_version >= ORDERLY_RECONSUME_TIME_PLUS_ONE_SINCE
    header_r = r + 1 if plus_one else r
    props = republished_properties(
        policy,
        failure,
        header_reconsume_times=header_r,
        max_reconsume_times=max_times,
        # ConsumeMessageOrderlyService#sendMessageBack calls setOriginMessageId after setProperties from client
        # 4.9.4 on (commit 45010d9bdf "[ISSUE #4050]"); before that the property map replaced it, as in §1.4.
        fresh_origin_id=policy.client_version >= ORDERLY_KEEPS_ORIGIN_ID_SINCE,
    )
    return handle_retry_and_dlq(
        policy,
        failure,
        header_reconsume_times=header_r,
        max_reconsume_times=max_times,
        delay_level=3 + r,
        properties=props,
        # A clustering orderly group holds queue locks; a 5.1.1+ broker dead-letters its re-publishes at once (§2.3).
        orderly_locked=policy.message_model == MessageModel.CLUSTERING,
        rule=(
            f"§4 r {r} >= max {max_times}: sendMessageBack re-publishes to %RETRY%<group> with 3 + r, "
            f"RECONSUME_TIME {'r + 1 (client ≥ 5.1.1)' if plus_one else 'r (client < 5.1.1)'} (§12)"
        ),
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
