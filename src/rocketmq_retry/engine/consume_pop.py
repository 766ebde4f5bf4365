"""5.x remoting push consumer in POP mode: ``ConsumeMessagePopConcurrentlyService`` (§1.7) and the broker's revive
of un-acked messages into the pop retry topic (§2.6). This path never writes a DLQ.

Two checks drop a message that failed too often, and they differ by client version (client/.../impl/consumer/):

- ``ConsumeMessagePopConcurrentlyService#checkNeedAckOrDelay`` (r >= max, after a failure): ack once the message
  was born more than 2 × 7200 s ago, else ``changePopInvisibleTime`` by the elapsed time. Same in every tag from
  rocketmq-all-5.0.0 to 5.3.3.
- ``DefaultMQPushConsumerImpl#processPopResult`` (r > max, on arrival): "Reconsume times has reached {}, so ack
  msg={}" (INFO) acks the copy without handing it to the listener. From rocketmq-all-5.3.1 only (commit ce27e1fc64
  "[ISSUE #8332]"; absent in 5.0.0 … 5.3.0). Before it, an over-max copy is consumed again and every further
  failure goes through checkNeedAckOrDelay until the 4 hours have passed.
"""

from __future__ import annotations

from rocketmq_retry.engine.max_reconsume_times import effective_max_reconsume_times
from rocketmq_retry.engine.model import (
    UNKNOWN_TOPIC,
    FailedDelivery,
    GroupPolicy,
    HopAction,
    NextHop,
    pop_retry_topic,
)
from rocketmq_retry.engine.retry_policy import POP_DELAY_LEVEL_S, pop_delay_seconds
from rocketmq_retry.engine.versions import Version, format_version

# checkNeedAckOrDelay: acked (dropped) once more than popDelayLevel[last] * 1000 * 2 ms have passed since born.
POP_GIVE_UP_AFTER_BORN_MS = POP_DELAY_LEVEL_S[-1] * 1000 * 2
# DefaultMQPushConsumerImpl.MIN/MAX_POP_INVISIBLE_TIME; outside the range the pop request uses 60000 (§1.1).
MIN_POP_INVISIBLE_TIME_MS = 5_000
MAX_POP_INVISIBLE_TIME_MS = 300_000
DEFAULT_POP_INVISIBLE_TIME_MS = 60_000
POP_RETRY_QUEUE_ID = 0  # PopReviveService.reviveRetry: setQueueId(0) (§2.6)
# processPopResult acks arriving copies with reconsumeTimes > getMaxReconsumeTimes() from this client tag on.
POP_ACK_OVER_MAX_ON_ARRIVAL_SINCE: Version = (5, 3, 1)
# ConsumeMessagePopConcurrentlyService exists from rocketmq-all-5.0.0 (4.x clients have no POP).
POP_CLIENT_SINCE: Version = (5, 0, 0)


def pop_invisible_time_ms(policy: GroupPolicy) -> int:
    """``popMessage``: ``if (invisibleTime < MIN_POP_INVISIBLE_TIME || invisibleTime > MAX_POP_INVISIBLE_TIME)
    invisibleTime = 60000``. (``checkConfig`` refuses to start a consumer set outside the range, so only a value
    changed after start reaches this fallback; the configuration refuses such values.)"""
    t = policy.pop_invisible_time_ms
    return t if MIN_POP_INVISIBLE_TIME_MS <= t <= MAX_POP_INVISIBLE_TIME_MS else DEFAULT_POP_INVISIBLE_TIME_MS


def _too_many_times_level(elapsed_ms: int) -> int:
    """checkNeedAckOrDelay's search: one past the largest popDelayLevel entry not above the elapsed time; -1 when
    even the first (10 s) is above it."""
    for index in range(len(POP_DELAY_LEVEL_S) - 1, -1, -1):
        if elapsed_ms >= POP_DELAY_LEVEL_S[index] * 1000:
            return index + 1
    return -1


def pop_next_hop(policy: GroupPolicy, failure: FailedDelivery) -> NextHop:
    """A failed delivery to a 5.x remoting POP consumer (§1.7)."""
    if policy.broker_major < 5:
        raise ValueError(f"group {policy.group!r}: POP consumption needs a 5.x broker (§1.7)")
    if policy.client_version < POP_CLIENT_SINCE:
        raise ValueError(
            f"group {policy.group!r}: POP consumption needs a 5.x client, not {format_version(policy.client_version)}"
        )
    r = failure.reconsume_times
    max_times = effective_max_reconsume_times(policy)
    retry_topic = pop_retry_topic(policy.group, failure.original_topic or UNKNOWN_TOPIC, policy.enable_retry_topic_v2)

    def reappear(delay_ms: int, rule: str) -> NextHop:
        return NextHop(
            action=HopAction.INVISIBLE_RETRY,
            topic=retry_topic,
            queue_id=POP_RETRY_QUEUE_ID,
            delay_level=None,
            delay_ms=delay_ms,
            ready_at_ms=failure.failed_at_ms + delay_ms,
            reconsume_times=r + 1,  # §2.6 reviveRetry: reconsumeTimes + 1 on the revived copy
            rule=rule + "; §2.6 revived into the pop retry topic with reconsumeTimes + 1",
            destination_topic=retry_topic,
        )

    if r < max_times:
        # processConsumeResult: changePopInvisibleTime(msg, group, context.getDelayLevelWhenNextConsume()), i.e. the
        # failure's own level, else the group's setting.
        level = failure.effective_delay_level(policy)
        index = r if level == 0 else level  # changePopInvisibleTime: "0 == delayLevel → delayLevel = r"
        if index < 0:
            # delayLevelTable[-1] throws before changePopInvisibleTimeAsync, so nothing is acked or changed and the
            # message comes back when the pop's own invisible time runs out.
            wait = pop_invisible_time_ms(policy)
            return reappear(
                wait,
                f"§1.7 delayLevel {level} < 0: popDelayLevel[{level}] throws → reappears after "
                f"the pop invisible time {wait} ms",
            )
        seconds = pop_delay_seconds(index)
        return reappear(
            seconds * 1000,
            f"§1.7 r {r} < max {max_times}: changePopInvisibleTime popDelayLevel[{index}] = {seconds} s "
            f"(index = delayLevel, 0 → r, clamped to the last entry)",
        )

    elapsed = failure.failed_at_ms - failure.born_at_ms
    if elapsed > POP_GIVE_UP_AFTER_BORN_MS:
        return NextHop(
            action=HopAction.DROPPED,
            topic=None,
            queue_id=None,
            delay_level=None,
            delay_ms=0,
            ready_at_ms=failure.failed_at_ms,
            reconsume_times=r,
            rule=f"§1.7 checkNeedAckOrDelay: r {r} >= max {max_times} and {elapsed} ms > 2 × 7200 s since born "
            f"→ 'Consume too many times, ack message async' (L-C12), no DLQ",
        )
    index = _too_many_times_level(elapsed)
    if index < 0:
        wait = pop_invisible_time_ms(policy)
        why = f"born {elapsed} ms ago < 10 s: popDelayLevel[-1] throws, the pop invisible time {wait} ms runs out"
    else:
        wait = pop_delay_seconds(index) * 1000
        why = f"delay time {elapsed} ms not enough → changePopInvisibleTime popDelayLevel[{index}] ({wait} ms)"
    if policy.client_version >= POP_ACK_OVER_MAX_ON_ARRIVAL_SINCE:
        # The revived copy has r + 1 > max and DMPCI.processPopResult acks it on arrival without consuming it
        # ("Reconsume times has reached", L-C13, client ≥ 5.3.1): the re-delay only postpones the drop.
        return NextHop(
            action=HopAction.DROPPED,
            topic=None,
            queue_id=None,
            delay_level=None,
            delay_ms=wait,
            ready_at_ms=failure.failed_at_ms + wait,
            reconsume_times=r + 1,
            rule=f"§1.7 checkNeedAckOrDelay: r {r} >= max {max_times}, {why}; the revived copy (r + 1 > max) is "
            f"acked by processPopResult on arrival (L-C13, client ≥ 5.3.1), no DLQ",
        )
    # Client < 5.3.1: nothing filters the revived copy, so the listener gets it again; a further failure comes
    # back here (r >= max) with more time elapsed, until the 2 × 7200 s since born are over.
    return reappear(
        wait,
        f"§1.7 checkNeedAckOrDelay: r {r} >= max {max_times}, {why}; the revived copy is consumed again "
        f"(client {format_version(policy.client_version)} < 5.3.1 has no arrival ack)",
    )
