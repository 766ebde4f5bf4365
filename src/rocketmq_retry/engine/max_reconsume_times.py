"""``getMaxReconsumeTimes()`` per consumer kind: what "max" means for each of them (§1.4, §4, §1.7, §5.2)."""

from __future__ import annotations

from rocketmq_retry.engine.model import INTEGER_MAX_VALUE, ConsumeMode, GroupPolicy, Protocol

# DefaultMQPushConsumerImpl.getMaxReconsumeTimes: "default reconsume times: 16" (§1.4).
DEFAULT_CONCURRENT_MAX_RECONSUME_TIMES = 16


def is_grpc(policy: GroupPolicy) -> bool:
    """gRPC SDK consumers; a SimpleConsumer exists only there, so ``simple`` implies gRPC (§5.5)."""
    return policy.protocol == Protocol.GRPC or policy.consume_mode == ConsumeMode.SIMPLE


def effective_max_reconsume_times(policy: GroupPolicy) -> int:
    """The highest ``reconsumeTimes`` a message can fail at and still be retried; deliveries = this + 1.

    - remoting concurrently / POP: the client's ``maxReconsumeTimes``, ``-1`` → 16 (§1.4, DMPCI; POP uses the same
      getter, §1.7, not the group's retryMaxTimes);
    - remoting orderly: ``-1`` → ``Integer.MAX_VALUE`` (§4), i.e. retry forever;
    - gRPC push / FIFO / SimpleConsumer: the group's ``retryMaxTimes``. The proxy hands clients
      ``maxAttempts = retryMaxTimes + 1`` (§5.2) and counts attempts from 1 (``deliveryAttempt = r + 1``, §5.3),
      so attempts 1..maxAttempts are reconsumeTimes 0..retryMaxTimes; the client's ``maxReconsumeTimes`` plays no
      part.
    """
    if is_grpc(policy):
        return policy.retry_max_times
    if policy.max_reconsume_times == -1:
        if policy.consume_mode == ConsumeMode.ORDERLY:
            return INTEGER_MAX_VALUE
        return DEFAULT_CONCURRENT_MAX_RECONSUME_TIMES
    return policy.max_reconsume_times
