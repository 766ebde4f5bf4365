"""The broker's side of a send-back: ``consumerSendMsgBack`` (§2.2), ``handleRetryAndDLQ`` (§2.3) and the store's
rewrite of delayed copies into ``SCHEDULE_TOPIC_XXXX`` (§3.2).

Every function here answers with a ``NextHop`` for the copy the broker stores.
"""

from __future__ import annotations

from rocketmq_retry.engine.message_const import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_MAX_RECONSUME_TIMES,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_WAIT_STORE_MSG_OK,
)
from rocketmq_retry.engine.model import (
    SCHEDULE_TOPIC,
    FailedDelivery,
    GroupPolicy,
    HopAction,
    NextHop,
    dlq_topic,
    retry_topic,
)
from rocketmq_retry.engine.versions import Version

# First broker tag with handleRetryAndDLQ's orderly-lock short-cut (§2.3; see handle_retry_and_dlq).
ORDERLY_LOCK_DLQ_SHORTCUT_SINCE: Version = (5, 1, 1)

# SendMessageProcessor.DLQ_NUMS_PER_GROUP = 1: the DLQ always has a single queue, so the copy lands in queue 0 (§2.2).
DLQ_NUMS_PER_GROUP = 1
DLQ_QUEUE_ID = 0


def retry_queue_id(policy: GroupPolicy) -> int | None:
    """The %RETRY% queue: random in [0, retryQueueNums) (§2.2 step 5); knowable only with a single queue."""
    return 0 if policy.retry_queue_nums == 1 else None


def base_properties(failure: FailedDelivery, *, origin_id: str | None) -> dict[str, str]:
    """Properties a copy inherits from the delivered message (§2.5): RETRY_TOPIC and ORIGIN_MESSAGE_ID."""
    props: dict[str, str] = {}
    if failure.original_topic:
        # §2.2 step 8: RETRY_TOPIC is set at hop 1 from the stored topic and kept afterwards, so it is always the
        # business topic on the remoting path.
        props[PROPERTY_RETRY_TOPIC] = failure.original_topic
    origin = failure.origin_message_id or origin_id
    if origin:
        props[PROPERTY_ORIGIN_MESSAGE_ID] = origin
    return props


def schedule_copy(
    policy: GroupPolicy,
    *,
    action: HopAction,
    requested_level: int,
    real_topic: str,
    real_queue_id: int | None,
    failed_at_ms: int,
    reconsume_times: int,
    properties: dict[str, str],
    rule: str,
) -> NextHop:
    """A copy with ``DELAY > 0``: the store clamps the level to ``maxDelayLevel`` and parks it in
    ``SCHEDULE_TOPIC_XXXX`` queue ``level - 1`` with ``REAL_TOPIC``/``REAL_QID`` (§3.2); the schedule service puts it
    back into ``real_topic`` when due, reconsumeTimes unchanged (§3.3)."""
    table = policy.delay_levels
    level = table.clamp(requested_level)
    delay = table.delay_ms(level)
    props = dict(properties)
    props[PROPERTY_DELAY_TIME_LEVEL] = str(level)  # the store rewrites DELAY to the clamped level
    props[PROPERTY_REAL_TOPIC] = real_topic
    if real_queue_id is not None:
        props[PROPERTY_REAL_QUEUE_ID] = str(real_queue_id)
    return NextHop(
        action=action,
        topic=SCHEDULE_TOPIC,
        queue_id=table.queue_id(level),
        delay_level=level,
        delay_ms=delay,
        ready_at_ms=failed_at_ms + delay,
        reconsume_times=reconsume_times,
        properties=props,
        rule=rule + "; §3.2 clamp to maxDelayLevel, SCHEDULE_TOPIC_XXXX queue level-1",
        via_schedule_topic=True,
        destination_topic=real_topic,
        requested_delay_level=requested_level,
    )


def consumer_send_msg_back(
    policy: GroupPolicy, failure: FailedDelivery, *, delay_level: int, max_reconsume_times: int, rule: str
) -> NextHop:
    """``CONSUMER_SEND_MSG_BACK`` handled by the broker (§2.2), given that the RPC reached it.

    The broker looks the delivered message up by commit-log offset, so ``r`` is the *stored* copy's
    reconsumeTimes, not a counter the client may have bumped locally (§1.3).
    """
    r = failure.broker_reconsume_times
    group = policy.group
    if policy.retry_queue_nums <= 0:
        # §2.2 step 4: answered SUCCESS with nothing stored, before the DLQ check; no log anywhere (§10).
        return NextHop(
            action=HopAction.DROPPED,
            topic=None,
            queue_id=None,
            delay_level=None,
            delay_ms=0,
            ready_at_ms=failure.failed_at_ms,
            reconsume_times=r,
            rule=f"{rule}; §2.2 step 4: retryQueueNums <= 0 → SUCCESS, message silently dropped",
        )
    # §2.2 step 11: ORIGIN_MESSAGE_ID = existing, else the broker-side msgExt.getMsgId(), the offset msgId.
    props = base_properties(failure, origin_id=failure.offset_msg_id)
    props[PROPERTY_WAIT_STORE_MSG_OK] = "false"  # §2.2 step 8
    if r > 0:
        # The delivered copy came back through the schedule topic, whose REAL_TOPIC/REAL_QID are never removed (§3.3)
        props[PROPERTY_REAL_TOPIC] = retry_topic(group)
        qid = retry_queue_id(policy)
        if qid is not None:
            props[PROPERTY_REAL_QUEUE_ID] = str(qid)
    if r >= max_reconsume_times or delay_level < 0:
        # §2.2 step 10: DLQ condition `r >= max || delayLevel < 0`; setDelayTimeLevel(0) leaves DELAY=0 (§12).
        props[PROPERTY_DELAY_TIME_LEVEL] = "0"
        why = "delayLevel < 0" if delay_level < 0 else f"reconsumeTimes {r} >= max {max_reconsume_times}"
        return NextHop(
            action=HopAction.DEAD_LETTER,
            topic=dlq_topic(group),
            queue_id=DLQ_QUEUE_ID,
            delay_level=None,
            delay_ms=0,
            ready_at_ms=failure.failed_at_ms,
            reconsume_times=r + 1,  # §2.2 step 11; observed as "deliveries" on 4.9.4 DLQ copies (§12)
            properties=props,
            rule=f"{rule}; §2.2 step 10: {why} → %DLQ%<group> queue 0, DELAY=0",
            destination_topic=dlq_topic(group),
        )
    # §2.2 step 10: 0 → "broker decides" 3 + r; > 0 → the client's level (§1.5).
    requested = 3 + r if delay_level == 0 else delay_level
    why = f"delayLevel 0 → 3 + r = {requested}" if delay_level == 0 else f"delayLevel {delay_level} from the client"
    return schedule_copy(
        policy,
        action=HopAction.SCHEDULED_RETRY,
        requested_level=requested,
        real_topic=retry_topic(group),
        real_queue_id=retry_queue_id(policy),
        failed_at_ms=failure.failed_at_ms,
        reconsume_times=r + 1,
        properties=props,
        rule=f"{rule}; §2.2 step 10: {why}; step 11: reconsumeTimes + 1",
    )


def handle_retry_and_dlq(
    policy: GroupPolicy,
    failure: FailedDelivery,
    *,
    header_reconsume_times: int,
    max_reconsume_times: int,
    delay_level: int,
    properties: dict[str, str],
    orderly_locked: bool,
    rule: str,
) -> NextHop:
    """A SEND_MESSAGE to ``%RETRY%<group>`` (client fallback §1.4, orderly send-back §4) through
    ``handleRetryAndDLQ`` (§2.3). ``header_reconsume_times`` is the producer's ``RECONSUME_TIME``, which becomes
    the stored copy's reconsumeTimes as is (no + 1 on this path). ``orderly_locked`` says the group holds orderly
    queue locks; the broker acts on that only from 5.1.1 (``ORDERLY_LOCK_DLQ_SHORTCUT_SINCE``)."""
    group = policy.group
    props = dict(properties)
    if policy.broker_major >= 5:
        # §2.3 [5.x]: strict `>` (5.0.0 on), plus, from rocketmq-all-5.1.1, the short-cut for groups that hold
        # orderly queue locks: `if (!brokerController.getRebalanceLockManager().isLockAllExpired(groupName))` →
        # "Group has unexpired lock record, which show it is ordered message, send it to DLQ right now" (broker/
        # .../processor/SendMessageProcessor.java#handleRetryAndDLQ; commit 7cfffe7f48 "[ISSUE #6163]", absent in
        # 5.0.0 and 5.1.0, present in 5.1.1 … 5.3.3).
        shortcut = orderly_locked and policy.broker_version >= ORDERLY_LOCK_DLQ_SHORTCUT_SINCE
        to_dlq = header_reconsume_times > max_reconsume_times or shortcut
        if to_dlq:
            why = (
                f"reconsumeTimes {header_reconsume_times} > max {max_reconsume_times}"
                if header_reconsume_times > max_reconsume_times
                else "group has unexpired lock record (orderly, broker ≥ 5.1.1) → DLQ right now"
            )
            props[PROPERTY_DELAY_TIME_LEVEL] = "-1"  # §2.3 [5.x] properties.put("DELAY", "-1"); seen in §12
            return NextHop(
                action=HopAction.DEAD_LETTER,
                topic=dlq_topic(group),
                queue_id=DLQ_QUEUE_ID,
                delay_level=None,
                delay_ms=0,
                ready_at_ms=failure.failed_at_ms,
                reconsume_times=header_reconsume_times,
                properties=props,
                rule=f"{rule}; §2.3 [5.x] handleRetryAndDLQ: {why}, DELAY=-1, no DLQ log line",
                destination_topic=dlq_topic(group),
            )
    elif header_reconsume_times >= max_reconsume_times:
        # §2.3 [4.x] `>=`, and the quirk confirmed in §12: asyncSendMessage restores the producer's properties
        # (DELAY = 3 + r) after handleRetryAndDLQ set DELAY=0, so the DLQ-bound copy waits in the schedule topic
        # with REAL_TOPIC=%DLQ%<group> first.
        return schedule_copy(
            policy,
            action=HopAction.DEAD_LETTER,
            requested_level=delay_level,
            real_topic=dlq_topic(group),
            real_queue_id=DLQ_QUEUE_ID,
            failed_at_ms=failure.failed_at_ms,
            reconsume_times=header_reconsume_times,
            properties=props,
            rule=(
                f"{rule}; §2.3 [4.x] handleRetryAndDLQ: reconsumeTimes {header_reconsume_times} >= max "
                f"{max_reconsume_times} → %DLQ%<group>, but DELAY={delay_level} is restored (§12: waits in "
                f"SCHEDULE_TOPIC_XXXX with REAL_TOPIC=%DLQ%<group>)"
            ),
        )
    return schedule_copy(
        policy,
        action=HopAction.REPUBLISHED_RETRY,
        requested_level=delay_level,
        real_topic=retry_topic(group),
        real_queue_id=retry_queue_id(policy),
        failed_at_ms=failure.failed_at_ms,
        reconsume_times=header_reconsume_times,
        properties=props,
        rule=f"{rule}; §2.3 handleRetryAndDLQ: below the max, stored in %RETRY%<group> with DELAY={delay_level}",
    )


def republished_properties(
    policy: GroupPolicy,
    failure: FailedDelivery,
    *,
    header_reconsume_times: int,
    max_reconsume_times: int,
    fresh_origin_id: bool = True,
) -> dict[str, str]:
    """What the client's internal producer puts on a re-published copy (§1.4, §4).

    RECONSUME_TIME and MAX_RECONSUME_TIMES stay in the stored properties: ``sendKernelImpl`` serialises the
    properties *before* it moves them to header fields and clears them (read in 4.9.4 and HEAD; the §12 sample's
    DLQ copies carry both), contrary to §1.4's "neither property survives".
    """
    props: dict[str, str] = {}
    if failure.original_topic:
        props[PROPERTY_RETRY_TOPIC] = failure.original_topic  # RETRY_TOPIC = msg.getTopic(), the reset topic
    if failure.origin_message_id:
        # Copied with the delivered copy's property map, whichever order the client sets things in.
        props[PROPERTY_ORIGIN_MESSAGE_ID] = failure.origin_message_id
    elif failure.uniq_key and fresh_origin_id:
        # Client-side msg.getMsgId() is the UNIQ_KEY (§2.5). Only paths that call setOriginMessageId *after*
        # setProperties keep it: the orderly send-back from client 4.9.4 on. The concurrent fallback of every
        # released client sets it first and then replaces the map, so there it is lost (callers pass False; see
        # consume_concurrently and consume_orderly for the tags).
        props[PROPERTY_ORIGIN_MESSAGE_ID] = failure.uniq_key
    props[PROPERTY_RECONSUME_TIME] = str(header_reconsume_times)
    props[PROPERTY_MAX_RECONSUME_TIMES] = str(max_reconsume_times)
    if failure.broker_reconsume_times > 0:
        props[PROPERTY_REAL_TOPIC] = retry_topic(policy.group)  # inherited from the delivered copy (§3.3)
    return props
