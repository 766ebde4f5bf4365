"""``expected_path``: run a message forward, delivery by delivery, with ``next_hop`` (DESIGN §5)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from rocketmq_retry.engine.message_const import PROPERTY_ORIGIN_MESSAGE_ID
from rocketmq_retry.engine.model import (
    ConsumeOutcome,
    ExpectedPath,
    FailedDelivery,
    FinalState,
    GroupPolicy,
    HopAction,
    PathStep,
)
from rocketmq_retry.engine.next_hop import next_hop

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
