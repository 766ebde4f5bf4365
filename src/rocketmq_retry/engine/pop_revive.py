"""The broker's revive of un-acked pop records when they fail (§2.6, §5.9): what happens to a message whose revive
into the pop retry topic does not succeed, by revive service and release.

Two services revive (both in ``broker/src/main/java/org/apache/rocketmq/broker/``):

- ``processor/PopReviveService`` (every 5.x release; the default): checkpoints in ``rmq_sys_REVIVE_LOG_<cluster>``.
  A failed revive rewrites the checkpoint (``rePutCK``) with the back-off ``ckRewriteIntervalsInSeconds``; from
  rocketmq-all-5.3.1 (commit aab646ce83, "[ISSUE #8460]") a checkpoint rewritten 17 times is dropped only when
  ``skipWhenCKRePutReachMaxTimes`` (default false) is set: WARN "rePut CK reach max times, drop it. …" (L-B18).
  A checkpoint of a group without a subscription group config is skipped in every 5.x release: WARN
  "reviveQueueId={}, can not get cid {}, then continue" (``mergeAndRevive``).
- ``pop/PopConsumerService`` (RIP-73, rocketmq-all-5.3.2 on, with ``popConsumerKVServiceInit`` and
  ``popConsumerKVServiceEnable``, both default false): records in RocksDB. ``revive(AtomicLong, int)`` re-writes a
  record whose revive failed with ``invisibleTime + REWRITE_INTERVALS_IN_SECONDS[attemptTimes]`` (WARN
  "PopConsumerService revive backoff retry, record={}") until ``attemptTimes`` reaches ``popReviveMaxAttemptTimes``
  (16), then drops it: ERROR "PopConsumerService drop record, message may be lost, record={}" (L-B16). From
  rocketmq-all-5.5.0, ``popReviveSkipIfGroupAbsent`` (default true) makes ``revive(PopConsumerRecord)`` skip the
  record of a group without a subscription group config: INFO "PopConsumerService skip revive message, record={}"
  (L-B17).

None of these reaches a DLQ: the message is gone for the group (FinalState.DROPPED, the SILENT_LOSS kind of end).
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketmq_retry.engine.model import GroupPolicy
from rocketmq_retry.engine.versions import POP_REVIVE_SKIP_IF_GROUP_ABSENT_SINCE

# PopConsumerService.REWRITE_INTERVALS_IN_SECONDS (5.3.2 … 5.5.0; the same 16 values as the client's popDelayLevel).
KV_REVIVE_REWRITE_INTERVALS_S = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
# BrokerConfig.popReviveMaxAttemptTimes default (5.3.2 on).
POP_REVIVE_MAX_ATTEMPT_TIMES = 16
# PopReviveService.ckRewriteIntervalsInSeconds (17 values; rePutCK drops at rePutTimes >= 17 when
# skipWhenCKRePutReachMaxTimes, 5.3.1 on).
CK_REWRITE_INTERVALS_S = (10, 20, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)

POP_REVIVE_SERVICE = "PopReviveService"
POP_CONSUMER_SERVICE = "PopConsumerService"


def revive_service(policy: GroupPolicy) -> str:
    """Which broker service revives the group's un-acked pops: PopConsumerService when the broker keeps pop records in
    RocksDB (``pop_consumer_kv_service_enable``, 5.3.2 on), else PopReviveService."""
    return POP_CONSUMER_SERVICE if policy.pop_consumer_kv_service_enable else POP_REVIVE_SERVICE


@dataclass(frozen=True)
class KvReviveRetry:
    """What ``PopConsumerService#revive(AtomicLong, int)`` writes after the ``attempt_times``-th failed revive of a
    record: the new record's invisible time (``None`` = dropped, L-B16) and how long after the failure it is due."""

    attempt_times: int
    invisible_time_ms: int | None
    due_after_ms: int | None

    @property
    def dropped(self) -> bool:
        return self.invisible_time_ms is None


def kv_revive_retry(
    invisible_time_ms: int, attempt_times: int, max_attempt_times: int = POP_REVIVE_MAX_ATTEMPT_TIMES
) -> KvReviveRetry:
    """A failed revive of a record with ``invisible_time_ms`` that has failed ``attempt_times`` times before.

    The retry record gets ``popTime = now`` and ``invisibleTime = record.invisibleTime + 1000 *
    REWRITE_INTERVALS_IN_SECONDS[min(len, attemptTimes)]``, so it is due one whole (growing) invisible time after the
    failure, not only the back-off. At ``attemptTimes >= popReviveMaxAttemptTimes`` the record is dropped.
    (5.3.2/5.3.3 index with ``min(length, attemptTimes)``: with ``popReviveMaxAttemptTimes`` above 16 the 17th
    failure would index past the table; with the default 16 it never does. Later sources use ``length - 1``.)
    """
    if invisible_time_ms < 0 or attempt_times < 0:
        raise ValueError("invisible_time_ms and attempt_times must not be negative")
    if attempt_times >= max_attempt_times:
        return KvReviveRetry(attempt_times, None, None)
    backoff_ms = 1000 * KV_REVIVE_REWRITE_INTERVALS_S[min(len(KV_REVIVE_REWRITE_INTERVALS_S) - 1, attempt_times)]
    new_invisible = invisible_time_ms + backoff_ms
    return KvReviveRetry(attempt_times + 1, new_invisible, new_invisible)


def kv_revive_give_up_after_ms(invisible_time_ms: int, max_attempt_times: int = POP_REVIVE_MAX_ATTEMPT_TIMES) -> int:
    """From the first failed revive to the drop (L-B16), when every revive fails: the sum of the retry records' waits
    (revive scan latency not counted)."""
    total, invisible = 0, invisible_time_ms
    for attempt in range(max_attempt_times):
        invisible = kv_revive_retry(invisible, attempt, max_attempt_times).invisible_time_ms or 0
        total += invisible
    return total


def pop_revive_skip_if_group_absent(policy: GroupPolicy) -> bool:
    """``BrokerConfig.popReviveSkipIfGroupAbsent`` as the broker has it: the configured value, else its default (true
    from rocketmq-all-5.5.0; false before, where the switch does not exist)."""
    if policy.pop_revive_skip_if_group_absent is not None:
        return policy.pop_revive_skip_if_group_absent
    return policy.broker_version >= POP_REVIVE_SKIP_IF_GROUP_ABSENT_SINCE


def revive_skipped_when_group_absent(policy: GroupPolicy) -> bool:
    """Whether an un-acked pop of this group is dropped instead of revived once the group's subscription group config
    is gone (deleted with ``deleteSubGroup``, or never created with ``autoCreateSubscriptionGroup=false``).

    PopReviveService: always (``mergeAndRevive`` "can not get cid {}, then continue", every 5.x release).
    PopConsumerService: only with ``popReviveSkipIfGroupAbsent`` (5.5.0 on, default true; L-B17); before 5.5.0 it
    revives into the pop retry topic whatever the group.
    """
    if revive_service(policy) == POP_REVIVE_SERVICE:
        return True
    return pop_revive_skip_if_group_absent(policy)
