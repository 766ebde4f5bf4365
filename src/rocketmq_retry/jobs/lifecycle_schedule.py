"""Driver-side schedule tables: what the retry engine says about every (group, reconsume_times) a run can meet.

The reconstruction never calls the engine per row. Before the Spark plan runs, the driver asks the engine, for
each consumer group seen in the data or listed in the configuration and for every ``reconsume_times`` up to the
largest one observed (plus a margin), "this delivery failed: what happens next, where, and when" (``next_hop``),
once per failure variant. The answers form a table of a few hundred rows that Spark broadcasts and joins.

Failure variants (the engine's ``FailedDelivery`` fields that evidence can reveal, §1.3–§1.6):

- ``NONE``: a plain failure, the broker decides the level (§1.5, ``3 + r``);
- ``TIMEOUT``: ``cleanExpireMsg`` sends the message back at the fixed level 3 (§1.6);
- ``RPC_FAILED``: the send-back RPC failed, the client re-published with ``3 + r`` (§1.4);
- ``LOCAL``: the re-publish failed too, the client resubmits locally after 5 s (§1.3);
- ``DLQ_OVERRIDE``: the listener set ``delayLevelWhenNextConsume = -1`` (§1.5).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketmq_retry import contract
from rocketmq_retry.engine import next_hop as engine_next_hop
from rocketmq_retry.engine.model import (
    ConsumeMode,
    ConsumeOutcome,
    FailedDelivery,
    FinalState,
    GroupPolicy,
    HopAction,
    MessageModel,
    NextHop,
    Protocol,
    SendBackFault,
)

if TYPE_CHECKING:
    from rocketmq_retry.config import Config

VARIANTS = ("NONE", "TIMEOUT", "RPC_FAILED", "LOCAL", "DLQ_OVERRIDE")
# Rows computed beyond the largest reconsume_times observed for a group, so the next hop is always known.
MARGIN = 2
# A path that never ends (orderly -1 = Integer.MAX_VALUE, §4) is tabulated up to this many retries for the
# look-back and the expected delivery count; the table itself always covers what the data shows.
PATH_CAP = 64


def next_hop(policy: GroupPolicy, failure: FailedDelivery) -> NextHop:
    """The engine's answer. A group the engine cannot model (e.g. gRPC on a 4.x broker) never gets here: the
    config refuses it when it is loaded, and groups that are not configured get the default remoting policy."""
    return engine_next_hop(policy, failure)


def _failure(variant: str, r: int, original_topic: str) -> FailedDelivery:
    if variant == "TIMEOUT":
        return FailedDelivery(r, outcome=ConsumeOutcome.TIMEOUT, original_topic=original_topic)
    if variant == "RPC_FAILED":
        return FailedDelivery(r, original_topic=original_topic, send_back_fault=SendBackFault.RPC_FAILED)
    if variant == "LOCAL":
        return FailedDelivery(r, original_topic=original_topic, send_back_fault=SendBackFault.RPC_AND_FALLBACK_FAILED)
    if variant == "DLQ_OVERRIDE":
        return FailedDelivery(r, original_topic=original_topic, delay_level_when_next_consume=-1)
    return FailedDelivery(r, original_topic=original_topic)


@dataclass(frozen=True)
class GroupSummary:
    """Group-level facts the Spark plan needs (one row per group)."""

    group: str
    mode: str  # CONCURRENTLY | ORDERLY | BROADCASTING | POP | GRPC
    broker_major: int
    dlq_threshold: int | None  # first r whose plain failure dead-letters; None = never (orderly -1)
    dlq_copy_offset: int  # reconsume_times of the DLQ copy minus that of the last delivery
    expected_deliveries: int | None  # deliveries of a message that always fails; None = unbounded
    expected_final_state: str  # for a message that always fails
    path_ms: int  # cumulative delay of the always-failing path (capped), for the look-back
    longest_wait_ms: int  # the longest single wait of that path: how long a redelivery can be due
    level_ms: tuple[int, ...]  # the broker's delay table, for hops whose level the evidence shows


def group_mode(policy: GroupPolicy) -> str:
    """The mode label the engine table and the anomaly rules use (BROADCASTING, GRPC_FIFO, GRPC, ORDERLY, …)."""
    if policy.message_model is MessageModel.BROADCASTING:
        return "BROADCASTING"
    if policy.protocol is Protocol.GRPC:
        return "GRPC_FIFO" if policy.consume_mode is ConsumeMode.ORDERLY else "GRPC"
    return str(policy.consume_mode.value).upper()


def summarize(policy: GroupPolicy) -> GroupSummary:
    threshold: int | None = None
    offset = 1
    total = 0
    longest = 0
    # The engine's final states in the tables' words (the data contract): RETRYING_FOREVER is IN_RETRY there.
    final = contract.final_state_of(FinalState.RETRYING_FOREVER)
    deliveries: int | None = None
    for r in range(PATH_CAP + 1):
        hop = next_hop(policy, _failure("NONE", r, ""))
        if hop is None:
            break
        if hop.action is HopAction.DEAD_LETTER:
            threshold, offset, deliveries = r, hop.reconsume_times - r, r + 1
            final = contract.final_state_of(FinalState.DEAD_LETTERED)
            total += hop.delay_ms if hop.via_schedule_topic else 0
            break
        if hop.action is HopAction.DROPPED:
            threshold, deliveries = None, r + 1
            final = contract.final_state_of(FinalState.DROPPED)
            break
        total += hop.delay_ms
        longest = max(longest, hop.delay_ms)
    else:
        # Never terminal within the cap: orderly with -1 retries forever (§4). Use the DLQ override for the
        # offset of an explicit dead letter.
        hop = next_hop(policy, _failure("DLQ_OVERRIDE", 0, ""))
        if hop is not None and hop.action is HopAction.DEAD_LETTER:
            offset = hop.reconsume_times
    return GroupSummary(
        group=policy.group,
        mode=group_mode(policy),
        broker_major=policy.broker_major,
        dlq_threshold=threshold,
        dlq_copy_offset=offset,
        expected_deliveries=deliveries,
        expected_final_state=final,
        path_ms=total,
        longest_wait_ms=longest,
        level_ms=tuple(policy.delay_levels.levels_ms),
    )


def schedule_rows(policy: GroupPolicy, max_r: int) -> list[tuple[object, ...]]:
    """One row per (variant, r) for r in 0..max_r: the engine's next hop after delivery r failed."""
    rows: list[tuple[object, ...]] = []
    for variant in VARIANTS:
        for r in range(max_r + 1):
            hop = next_hop(policy, _failure(variant, r, ""))
            if hop is None:
                continue
            rows.append(
                (
                    policy.group,
                    variant,
                    r,
                    str(hop.action.value),
                    hop.topic,
                    hop.delay_level,
                    int(hop.delay_ms),
                    int(hop.reconsume_times),
                    bool(hop.via_schedule_topic),
                    hop.rule,
                )
            )
    return rows


def build_tables(
    policies: Mapping[str, GroupPolicy], max_r_by_group: Mapping[str, int]
) -> tuple[list[tuple[object, ...]], list[GroupSummary]]:
    """The broadcast tables for ``policies`` (every configured and observed group)."""
    rows: list[tuple[object, ...]] = []
    summaries: list[GroupSummary] = []
    for group in sorted(policies):
        policy = policies[group]
        summary = summarize(policy)
        summaries.append(summary)
        cap = max(max_r_by_group.get(group, 0), summary.dlq_threshold or 0) + MARGIN
        rows.extend(schedule_rows(policy, cap))
    return rows, summaries


def default_lookback_ms(summaries: Iterable[GroupSummary], margin_ms: int = 0, late_factor: float = 1.0) -> int:
    """How far before D a reconstruction reads events: the longest configured always-failing schedule (about 4h46m
    on default brokers, §3.1), plus the longest wait once more and ``late_factor`` times over (a lifecycle whose
    last redelivery is silently consumed is settled when that redelivery is overdue, docs/reconstruction.md), plus
    ``margin_ms`` (``reconstruct.lookback_margin``: late deliveries, clock skew). Every event of a lifecycle that
    is active on D, or settled on D, is then read."""
    spans = [s.path_ms + int(s.longest_wait_ms * (1 + late_factor)) for s in summaries]
    return max(spans, default=0) + margin_ms


def configured_lookback_ms(config: Config, late_factor: float = 1.0) -> int:
    """``default_lookback_ms`` over every configured group and the default policy of groups not listed."""
    policies = [config.group_policy(g) for g in sorted({*config.groups, "__default__"})]
    return default_lookback_ms((summarize(p) for p in policies), config.reconstruct.lookback_margin_ms, late_factor)
