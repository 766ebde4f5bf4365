"""``expected_path``: run a message forward, delivery by delivery, with ``next_hop`` (DESIGN §5)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from rocketmq_retry.engine.max_reconsume_times import effective_max_reconsume_times, is_grpc
from rocketmq_retry.engine.message_const import PROPERTY_ORIGIN_MESSAGE_ID
from rocketmq_retry.engine.model import (
    ConsumeOutcome,
    ExpectedPath,
    ExponentialPolicy,
    FailedDelivery,
    FinalState,
    GroupPolicy,
    HopAction,
    PathStep,
)
from rocketmq_retry.engine.next_hop import next_hop
from rocketmq_retry.engine.pop_revive import pop_revive_skip_if_group_absent
from rocketmq_retry.engine.versions import format_version

FailureSource = FailedDelivery | Callable[[int], FailedDelivery]


def expected_path(
    policy: GroupPolicy,
    *,
    failure: FailureSource | None = None,
    start_ms: int = 0,
    limit: int = 64,
) -> ExpectedPath:
    """The whole path of a message first delivered at ``start_ms``.

    ``failure`` describes each delivery: a template ``FailedDelivery`` (same outcome every time; the path starts at
    its ``reconsume_times``, so a path can be continued from an observed delivery) or a callable
    ``r -> FailedDelivery`` (e.g. succeed once r reaches 2; the path starts at r = 0). By default every delivery
    fails with RECONSUME_LATER and no delay-level override. The engine fills in ``reconsume_times``,
    ``stored_reconsume_times``, ``failed_at_ms`` (= the delivery time: processing time is not modelled) and the
    ORIGIN_MESSAGE_ID carried over from earlier hops; the template's offset msgId describes the first stored copy only.

    Steps: one per failed delivery (``hop`` k is the k-th failure and the retry it causes), the terminal hop
    included, so ``deliveries == len(steps)`` unless the last delivery succeeded (CONSUMED, one more). Paths that
    never end (orderly with max = Integer.MAX_VALUE, local resubmits that keep failing, huge POP maxima) stop after
    ``limit`` steps with ``truncated=True`` and final RETRYING_FOREVER.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if failure is None:
        failure = FailedDelivery(reconsume_times=0, born_at_ms=start_ms)

    def delivery(r: int) -> FailedDelivery:
        return failure(r) if callable(failure) else failure

    steps: list[PathStep] = []
    # A template may start mid-path (e.g. reconstruction saw a delivery with reconsumeTimes 5); a callable starts at 0.
    r = 0 if callable(failure) else failure.reconsume_times
    stored = None if callable(failure) else failure.stored_reconsume_times
    at = start_ms
    origin: str | None = None
    first = True
    while True:
        template = delivery(r)
        if template.outcome == ConsumeOutcome.SUCCESS:
            return ExpectedPath(
                group=policy.group,
                steps=tuple(steps),
                final=FinalState.CONSUMED,
                final_topic=template.original_topic or None,
                deliveries=len(steps) + 1,
            )
        if len(steps) >= limit:
            last = steps[-1].next if steps else None
            return ExpectedPath(
                group=policy.group,
                steps=tuple(steps),
                final=FinalState.RETRYING_FOREVER,
                final_topic=last.destination_topic if last else None,
                deliveries=len(steps),
                truncated=True,
            )
        current = dataclasses.replace(
            template,
            reconsume_times=r,
            stored_reconsume_times=stored,
            failed_at_ms=at,
            origin_message_id=template.origin_message_id or origin,
            offset_msg_id=template.offset_msg_id if first else None,
        )
        hop = next_hop(policy, current)
        steps.append(
            PathStep(hop=len(steps) + 1, failed_reconsume_times=r, next=hop, cumulative_ms=hop.ready_at_ms - start_ms)
        )
        if hop.terminal:
            return ExpectedPath(
                group=policy.group,
                steps=tuple(steps),
                final=FinalState.DEAD_LETTERED if hop.action == HopAction.DEAD_LETTER else FinalState.DROPPED,
                final_topic=hop.destination_topic,
                deliveries=len(steps),
            )
        origin = hop.properties.get(PROPERTY_ORIGIN_MESSAGE_ID, origin)
        r = hop.reconsume_times
        stored = hop.stored_reconsume_times
        at = hop.ready_at_ms
        first = False


def policy_settings(policy: GroupPolicy) -> dict[str, object]:
    """The group's settings as the engine reads them, JSON-ready: what ``schedule`` shows next to the path.

    Every key is always present (a stable shape for machines), whether or not this kind of consumer uses it;
    ``effective_max_reconsume_times`` is the max the rules actually use (-1 replaced by the mode's default, gRPC's
    retryMaxTimes, §1.4, §4, §5.2) and ``protocol`` the one the rules apply.
    """
    rp = policy.retry_policy
    retry_policy: dict[str, object] = (
        {"type": "exponential", "initial_ms": rp.initial_ms, "max_ms": rp.max_ms, "multiplier": rp.multiplier}
        if isinstance(rp, ExponentialPolicy)
        else {"type": "customized", "next_ms": list(rp.next_ms) or None}  # None = the class's built-in list (§5.1)
    )
    return {
        "group": policy.group,
        "broker_version": format_version(policy.broker_version),
        "client_version": format_version(policy.client_version),
        # A SimpleConsumer exists only in the gRPC SDK, so `simple` is read as gRPC whatever `protocol` says (§5.5).
        "protocol": "grpc" if is_grpc(policy) else policy.protocol.value,
        "consume_mode": policy.consume_mode.value,
        "message_model": policy.message_model.value,
        "message_delay_level": policy.delay_levels.source,
        "max_delay_level": policy.delay_levels.max_level,
        "max_reconsume_times": policy.max_reconsume_times,
        "effective_max_reconsume_times": effective_max_reconsume_times(policy),
        "retry_max_times": policy.retry_max_times,
        "delay_level_when_next_consume": policy.delay_level_when_next_consume,
        "retry_queue_nums": policy.retry_queue_nums,
        "suspend_current_queue_time_millis": policy.suspend_current_queue_time_millis,
        "consume_timeout_minutes": policy.consume_timeout_minutes,
        "pop_invisible_time_ms": policy.pop_invisible_time_ms,
        "invisible_duration_ms": policy.invisible_duration_ms,
        "enable_retry_topic_v2": policy.enable_retry_topic_v2,
        "pop_consumer_kv_service_enable": policy.pop_consumer_kv_service_enable,
        "pop_revive_skip_if_group_absent": pop_revive_skip_if_group_absent(policy),  # the broker's default filled in
        "retry_policy": retry_policy,
    }
