"""The retry engine's vocabulary: consumer-group policies, failed deliveries and the hops they lead to.

Names follow RocketMQ's own (delay level, reconsume times, send-back, DLQ). Section marks (§) refer to
``docs/rocketmq-rules.md``. This module is plain data: no rule lives here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from rocketmq_retry.engine.delay_levels import DelayLevelTable
from rocketmq_retry.engine.versions import (
    KNOWN_MAJORS,
    POP_CONSUMER_KV_SERVICE_SINCE,
    POP_REVIVE_SKIP_IF_GROUP_ABSENT_SINCE,
    RETRY_TOPIC_V2_SINCE,
    UNSET_VERSION,
    Version,
    check_version,
    format_version,
    version_for_major,
)

# §2.4 topic names
RETRY_TOPIC_PREFIX = "%RETRY%"
DLQ_TOPIC_PREFIX = "%DLQ%"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
# §2.6 the POP checkpoint log: PopAckConstants.REVIVE_TOPIC (TopicValidator.SYSTEM_TOPIC_PREFIX + "REVIVE_LOG_");
# buildClusterReviveTopic appends the cluster name. Its records' tags: CK_TAG (a PopCheckPoint), ACK_TAG (an
# AckMsg), BATCH_ACK_TAG (a BatchAckMsg, written by PopBufferMergeService with enablePopBatchAck)
REVIVE_TOPIC_PREFIX = "rmq_sys_REVIVE_LOG_"
REVIVE_CK_TAG = "ck"
REVIVE_ACK_TAG = "ack"
REVIVE_BATCH_ACK_TAG = "bAck"
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
INTEGER_MAX_VALUE = 2**31 - 1
# ProxyConfig.minInvisibleTimeMillsForRecv / maxInvisibleTimeMills (§5.5), both bounds inclusive.
MIN_INVISIBLE_TIME_MS_FOR_RECV = 10_000
MAX_INVISIBLE_TIME_MS = 12 * 3_600_000


def check_invisible_duration_ms(invisible_duration_ms: int) -> int:
    """GrpcValidator.validateInvisibleTime (§5.5): the proxy answers ILLEGAL_INVISIBLE_TIME "the invisibleTime is too
    small/large" outside [ProxyConfig.minInvisibleTimeMillsForRecv, maxInvisibleTimeMills] = [10 s, 12 h]."""
    if not MIN_INVISIBLE_TIME_MS_FOR_RECV <= invisible_duration_ms <= MAX_INVISIBLE_TIME_MS:
        raise ValueError(
            f"invisible_duration_ms {invisible_duration_ms} is outside the proxy's bounds "
            f"[{MIN_INVISIBLE_TIME_MS_FOR_RECV}, {MAX_INVISIBLE_TIME_MS}] ms (10 s .. 12 h, §5.5)"
        )
    return invisible_duration_ms


def retry_topic(group: str) -> str:
    """``MixAll.getRetryTopic`` (§2.4)."""
    return RETRY_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """``MixAll.getDLQTopic`` (§2.4)."""
    return DLQ_TOPIC_PREFIX + group


# What the engine names as the business topic when the failure does not carry it: a group's schedule is computed
# once for all its topics, and each lifecycle puts its own topic in its place (jobs/reconstruct/transitions.py).
UNKNOWN_TOPIC = "<topic>"


POP_RETRY_SEPARATOR_V1 = "_"  # KeyBuilder.POP_RETRY_SEPARATOR_V1
POP_RETRY_SEPARATOR_V2 = "+"  # KeyBuilder.POP_RETRY_SEPARATOR_V2; '+' is not allowed in a topic or group name
# A V2 pop retry topic split back into group and business topic (KeyBuilder.parseGroup / parseNormalTopic: split on
# '+', exactly two parts), as a Java/Python regex for a Spark regexp_extract: group 1 the group, group 2 the topic.
POP_RETRY_TOPIC_V2_RX = r"^%RETRY%([^+]+)\+([^+]+)$"


def pop_retry_topic(group: str, topic: str, v2: bool = False) -> str:
    """``KeyBuilder.buildPopRetryTopicV1/V2`` (§2.4): ``%RETRY%<group>_<topic>`` or ``%RETRY%<group>+<topic>``."""
    sep = POP_RETRY_SEPARATOR_V2 if v2 else POP_RETRY_SEPARATOR_V1
    return f"{RETRY_TOPIC_PREFIX}{group}{sep}{topic}"


class RetryTopicRule(StrEnum):
    """How :func:`parse_retry_topic` read a ``%RETRY%`` name."""

    V2 = "v2"  # %RETRY%<group>+<topic>: unambiguous
    KNOWN_GROUP = "known-group"  # %RETRY%<group> of a configured group: the plain (remoting) retry topic
    KNOWN_GROUP_PREFIX = "known-group-prefix"  # %RETRY%<group>_<topic> with <group> a configured group
    BUSINESS_TOPIC = "business-topic"  # %RETRY%<group>_<topic> with <topic> known from the copy itself
    AS_GROUP = "as-group"  # nothing known: read as %RETRY%<group>, as KeyBuilder.parseGroup reads a V1 name


@dataclass(frozen=True)
class RetryTopicName:
    """A ``%RETRY%`` topic read back: its consumer group, the business topic for a pop retry topic (None for the
    plain ``%RETRY%<group>``), and the rule that decided."""

    group: str
    topic: str | None
    rule: RetryTopicRule


def parse_retry_topic(
    name: str, known_groups: tuple[str, ...] | frozenset[str] = (), business_topic: str | None = None
) -> RetryTopicName | None:
    """Read a retry topic name back into (group, business topic) (§2.4, §5.9); None for a name without ``%RETRY%``.

    RocketMQ itself cannot always do this: ``KeyBuilder.parseGroup`` / ``parseNormalTopic`` split a V2 name on '+'
    (a character topic and group names may not contain, ``TopicValidator.isTopicOrGroupIllegal``), but return a V1
    name ``%RETRY%<group>_<topic>`` whole, because '_' is legal in both names: ``%RETRY%A_B_C`` is group ``A`` with
    topic ``B_C``, group ``A_B`` with topic ``C``, or the plain retry topic of group ``A_B_C`` (apache/rocketmq
    issues #9632/#9633 name the collision). So, in order:

    1. V2: split on '+' (two non-empty parts, else None: no broker builds such a name).
    2. the whole rest is a configured group: the plain ``%RETRY%<group>`` (remoting send-back retries).
    3. the longest configured group followed by '_' (preferring the one that leaves ``business_topic``).
    4. ``business_topic`` known and the rest ends with ``_<business_topic>``: the part before it is the group.
       Pass it only for a copy known to be a pop retry copy (one carrying ``1ST_POP_TIME``, set by
       ``PopReviveService#reviveRetry`` / ``PopConsumerService#reviveRetry``): a remoting retry copy's
       ``RETRY_TOPIC`` is its business topic too, and ``%RETRY%GID_ORDERS`` of group ``GID_ORDERS`` consuming
       ``ORDERS`` would be misread as group ``GID``.
    5. otherwise the rest is the group, as ``KeyBuilder.parseGroup`` has it (rule AS_GROUP: for a name with '_' the
       caller may want to count it as unresolved rather than trust it).
    """
    if not name.startswith(RETRY_TOPIC_PREFIX):
        return None
    rest = name[len(RETRY_TOPIC_PREFIX) :]
    if POP_RETRY_SEPARATOR_V2 in rest:
        parts = rest.split(POP_RETRY_SEPARATOR_V2)
        if len(parts) != 2 or not all(parts):
            return None
        return RetryTopicName(parts[0], parts[1], RetryTopicRule.V2)
    if rest in known_groups:
        return RetryTopicName(rest, None, RetryTopicRule.KNOWN_GROUP)
    prefixes = [g for g in known_groups if rest.startswith(g + POP_RETRY_SEPARATOR_V1) and len(rest) > len(g) + 1]
    if prefixes:
        exact = [
            g for g in prefixes if business_topic is not None and rest == g + POP_RETRY_SEPARATOR_V1 + business_topic
        ]
        group = max(exact or prefixes, key=len)
        return RetryTopicName(group, rest[len(group) + 1 :], RetryTopicRule.KNOWN_GROUP_PREFIX)
    suffix = POP_RETRY_SEPARATOR_V1 + (business_topic or "")
    if business_topic and not business_topic.startswith(RETRY_TOPIC_PREFIX) and rest.endswith(suffix):
        group = rest[: -len(suffix)]
        if group:
            return RetryTopicName(group, business_topic, RetryTopicRule.BUSINESS_TOPIC)
    return RetryTopicName(rest, None, RetryTopicRule.AS_GROUP)


class Protocol(StrEnum):
    REMOTING = "remoting"
    GRPC = "grpc"


class ConsumeMode(StrEnum):
    CONCURRENTLY = "concurrently"
    ORDERLY = "orderly"
    POP = "pop"
    SIMPLE = "simple"


class MessageModel(StrEnum):
    CLUSTERING = "clustering"
    BROADCASTING = "broadcasting"


class ConsumeOutcome(StrEnum):
    """How one delivery ended, as the listener/client saw it (§1.2, §4, §5.3)."""

    SUCCESS = "SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"  # concurrent listener returned RECONSUME_LATER (trace code 4)
    EXCEPTION = "EXCEPTION"  # listener threw (trace code 2); status becomes null -> RECONSUME_LATER
    RETURN_NULL = "RETURN_NULL"  # listener returned null (trace code 3)
    SUSPEND = "SUSPEND"  # orderly SUSPEND_CURRENT_QUEUE_A_MOMENT (or null/ROLLBACK, §4)
    TIMEOUT = "TIMEOUT"  # still consuming after consumeTimeout: cleanExpireMsg sends it back at level 3 (§1.6)


class SendBackFault(StrEnum):
    """What went wrong on the client's send-back path (§1.4)."""

    NONE = "NONE"
    RPC_FAILED = "RPC_FAILED"  # CONSUMER_SEND_MSG_BACK failed; the internal producer re-published with 3 + r
    RPC_AND_FALLBACK_FAILED = "RPC_AND_FALLBACK_FAILED"  # both failed: local resubmit after 5000 ms (§1.3)


class HopAction(StrEnum):
    """What happens after a failed delivery."""

    SCHEDULED_RETRY = "SCHEDULED_RETRY"  # send-back -> SCHEDULE_TOPIC_XXXX level d -> %RETRY%<group> (§2.2, §3.2)
    REPUBLISHED_RETRY = "REPUBLISHED_RETRY"  # send-back RPC failed; fallback re-publish to %RETRY% with 3 + r (§1.4)
    LOCAL_RESUBMIT = "LOCAL_RESUBMIT"  # send-back and fallback failed: same client retries in 5 s (§1.3)
    ORDERLY_SUSPEND = "ORDERLY_SUSPEND"  # orderly: local re-consume after the suspend time (§4)
    INVISIBLE_RETRY = "INVISIBLE_RETRY"  # POP / gRPC: message becomes visible again after a delay (§1.7, §5.3)
    FIFO_LOCAL_RETRY = "FIFO_LOCAL_RETRY"  # gRPC FIFO: the SDK re-consumes locally after the policy delay (§5.3)
    DEAD_LETTER = "DEAD_LETTER"  # the copy goes to %DLQ%<group>
    DROPPED = "DROPPED"  # nothing will ever deliver it again (broadcasting, retryQueueNums <= 0, POP over max)


class FinalState(StrEnum):
    DEAD_LETTERED = "DEAD_LETTERED"
    DROPPED = "DROPPED"
    RETRYING_FOREVER = "RETRYING_FOREVER"
    CONSUMED = "CONSUMED"


@dataclass(frozen=True)
class ExponentialPolicy:
    """5.x ``ExponentialRetryPolicy`` (broker) / ``ExponentialBackoffRetryPolicy`` shape (§5.1)."""

    initial_ms: int = 5_000
    max_ms: int = 7_200_000
    multiplier: float = 2.0


@dataclass(frozen=True)
class CustomizedPolicy:
    """5.x ``CustomizedRetryPolicy.next`` (§5.1).

    Empty means the class's own built-in ``next`` (1s 5s 10s 30s 1m … 1h 2h, 18 entries). That list is a constant in
    ``CustomizedRetryPolicy``, not read from the broker's ``messageDelayLevel``, so a broker with a custom delay table
    still hands gRPC consumers the stock durations.
    """

    next_ms: tuple[int, ...] = ()


RetryPolicy = ExponentialPolicy | CustomizedPolicy


@dataclass(frozen=True)
class GroupPolicy:
    """Everything the engine needs to know about one consumer group, with RocketMQ's defaults (§1.1, §2.4).

    Versions: rules change at particular tags, so the policy carries the broker's and the client's full versions.
    Give ``broker_version`` (and ``client_version`` when the group's consumers run another client release than the
    broker); ``broker_major`` alone still works and stands for the newest release of that major (4 → 4.9.8,
    5 → 5.3.3, ``versions.LATEST_RELEASE``). After construction all three are set and consistent.
    """

    group: str
    broker_major: int = 0  # 4 -> 4.x rules, 5 -> 5.x rules; 0 = broker_version's major (4 when neither is given)
    delay_levels: DelayLevelTable = field(default_factory=DelayLevelTable.default)
    protocol: Protocol = Protocol.REMOTING
    consume_mode: ConsumeMode = ConsumeMode.CONCURRENTLY
    message_model: MessageModel = MessageModel.CLUSTERING
    max_reconsume_times: int = -1  # the client's setting; -1 = the mode's default (§1.4, §4)
    # SubscriptionGroupConfig.retryMaxTimes: gRPC maxAttempts = this + 1 (§5.2). Remoting consumers (POP included,
    # §1.7) send their own maxReconsumeTimes, which wins over this on the broker (§2.2 step 9).
    retry_max_times: int = 16
    retry_queue_nums: int = 1  # SubscriptionGroupConfig.retryQueueNums; <= 0 silently drops send-backs (§2.2)
    suspend_current_queue_time_millis: int = 1000  # orderly (§4)
    consume_timeout_minutes: int = 15  # §1.1
    pop_invisible_time_ms: int = 60_000  # §1.1 (remoting POP)
    retry_policy: RetryPolicy = field(default_factory=CustomizedPolicy)
    # SimpleConsumer.receive(…, invisibleDuration) (§5.5); the proxy refuses values outside [10 s, 12 h]. The SDK
    # has no default (receive takes it as an argument); 15 s is what rocketmq-clients' SimpleConsumerExample passes.
    invisible_duration_ms: int = 15_000
    # BrokerConfig.enableRetryTopicV2 (§2.4): pop retry topics use '+' instead of '_'. Broker 5.2.0 or later.
    enable_retry_topic_v2: bool = False
    # BrokerConfig.popConsumerKVServiceEnable (with popConsumerKVServiceInit): the broker keeps pop records in RocksDB
    # and PopConsumerService revives them (§5.9). Broker 5.3.2 or later; default false.
    pop_consumer_kv_service_enable: bool = False
    # BrokerConfig.popReviveSkipIfGroupAbsent (§5.9): PopConsumerService does not revive a record of a group without
    # a subscription group config. Broker 5.5.0 or later, where it defaults to true; None = the broker's default
    # (true from 5.5.0; before, the switch does not exist and the record is revived).
    pop_revive_skip_if_group_absent: bool | None = None
    # The broker's full version (broker-side rules: handleRetryAndDLQ's orderly-lock short-cut from 5.1.1, …).
    broker_version: Version = UNSET_VERSION
    # The remoting client (org.apache.rocketmq:rocketmq-client) the group's consumers and its internal producer run;
    # unset = the broker's version. Client-side rules key on it (processPopResult's arrival ack from 5.3.1, the
    # orderly RECONSUME_TIME + 1 from 5.1.1, …). gRPC SDK consumers (rocketmq-clients) are versioned apart and no
    # rule reads this for them.
    client_version: Version = UNSET_VERSION
    # ConsumeConcurrentlyContext.delayLevelWhenNextConsume that the listener sets on every failure (rocketmq-spring:
    # @RocketMQMessageListener(delayLevelWhenNextConsume), copied into the context by DefaultMessageListenerConcurrently
    # since rocketmq-spring 2.2.2): -1 = straight to the DLQ, 0 = the broker decides (3 + r), > 0 = that level.
    # A FailedDelivery with its own value overrides it for that one failure (§1.5).
    delay_level_when_next_consume: int = 0

    def __post_init__(self) -> None:
        if self.broker_version == UNSET_VERSION:
            major = self.broker_major or 4
            if major not in KNOWN_MAJORS:
                raise ValueError(f"broker_major must be 4 or 5 (the rule sets the engine knows), got {major}")
            object.__setattr__(self, "broker_version", version_for_major(major))
        else:
            version = check_version("broker_version", self.broker_version)
            if self.broker_major and self.broker_major != version[0]:
                raise ValueError(
                    f"broker_major {self.broker_major} contradicts broker_version {format_version(version)}"
                )
        object.__setattr__(self, "broker_major", self.broker_version[0])
        if self.client_version == UNSET_VERSION:
            object.__setattr__(self, "client_version", self.broker_version)
        else:
            check_version("client_version", self.client_version)
        if self.enable_retry_topic_v2 and self.broker_version < RETRY_TOPIC_V2_SINCE:
            raise ValueError(
                f"enable_retry_topic_v2 needs broker {format_version(RETRY_TOPIC_V2_SINCE)} or later "
                f"(BrokerConfig.enableRetryTopicV2), but broker_version is {format_version(self.broker_version)}"
            )
        if self.pop_consumer_kv_service_enable and self.broker_version < POP_CONSUMER_KV_SERVICE_SINCE:
            raise ValueError(
                f"pop_consumer_kv_service_enable needs broker {format_version(POP_CONSUMER_KV_SERVICE_SINCE)} or "
                f"later (BrokerConfig.popConsumerKVServiceEnable), but broker_version is "
                f"{format_version(self.broker_version)}"
            )
        # False on an older broker is what it does anyway (PopConsumerService revives whatever the group), so only
        # True is refused; None stays None (the broker's default, pop_revive.pop_revive_skip_if_group_absent).
        if self.pop_revive_skip_if_group_absent and self.broker_version < POP_REVIVE_SKIP_IF_GROUP_ABSENT_SINCE:
            raise ValueError(
                f"pop_revive_skip_if_group_absent needs broker {format_version(POP_REVIVE_SKIP_IF_GROUP_ABSENT_SINCE)} "
                f"or later (BrokerConfig.popReviveSkipIfGroupAbsent), but broker_version is "
                f"{format_version(self.broker_version)}"
            )
        check_invisible_duration_ms(self.invisible_duration_ms)


@dataclass(frozen=True)
class FailedDelivery:
    """One delivery of a message to a consumer of ``group`` that did not succeed.

    ``reconsume_times`` is ``MessageExt.getReconsumeTimes()`` of this delivery (0 = first delivery).
    ``failed_at_ms`` is when the client acted on the failure (epoch ms).
    """

    reconsume_times: int
    failed_at_ms: int = 0
    outcome: ConsumeOutcome = ConsumeOutcome.RECONSUME_LATER
    original_topic: str = ""
    # ConsumeConcurrentlyContext.delayLevelWhenNextConsume for this failure (§1.5); None = the group's setting
    # (GroupPolicy.delay_level_when_next_consume). An explicit value, e.g. -1 for one failure, wins.
    delay_level_when_next_consume: int | None = None
    send_back_fault: SendBackFault = SendBackFault.NONE
    born_at_ms: int = 0  # remoting POP's "too many times" check uses the born time (§1.7)
    # reconsumeTimes of the copy the broker holds, when earlier retries were local only (LOCAL_RESUBMIT, orderly,
    # gRPC FIFO) and the client's counter ran ahead of it; None = the same as reconsume_times. The broker's DLQ
    # check and 3 + r use this value, the client's fallback re-publish uses reconsume_times (§1.3, §1.4, §2.2).
    stored_reconsume_times: int | None = None
    # Offset msgId of the stored copy that was delivered (what the broker's msgExt.getMsgId() returns, §2.5).
    offset_msg_id: str | None = None
    # UNIQ_KEY, i.e. the client-side getMsgId() (§2.5).
    uniq_key: str | None = None
    # ORIGIN_MESSAGE_ID already on the delivered copy (set by an earlier hop), if any (§2.2 step 11).
    origin_message_id: str | None = None
    # ConsumeOrderlyContext.suspendCurrentQueueTimeMillis; -1 = the consumer's setting (§4).
    suspend_current_queue_time_millis: int = -1
    # When a pop-based consumer received the message; its invisible time runs from here (§5.5). None = failed_at_ms.
    delivered_at_ms: int | None = None

    @property
    def broker_reconsume_times(self) -> int:
        return self.reconsume_times if self.stored_reconsume_times is None else self.stored_reconsume_times

    def effective_delay_level(self, policy: GroupPolicy) -> int:
        """The level the listener left on ``ConsumeConcurrentlyContext``: this failure's own, else the group's."""
        own = self.delay_level_when_next_consume
        return policy.delay_level_when_next_consume if own is None else own


@dataclass(frozen=True)
class NextHop:
    """The engine's answer for a failed delivery: what happens next, where, and when.

    ``topic`` is where the copy waits or is delivered from: ``SCHEDULE_TOPIC_XXXX`` for every copy that carries a
    delay level (broker send-back retries, fallback re-publishes to ``%RETRY%<group>`` — the store rewrites those
    too, §3.2 — and the 4.x DLQ-bound re-publish), the pop retry topic, ``%DLQ%<group>``, or the business topic for
    local retries; ``None`` when the message goes nowhere (DROPPED).
    ``destination_topic`` is where the copy ends up (``REAL_TOPIC`` for schedule-topic copies).
    ``delay_level`` is the level the store actually uses (clamped, §3.2); ``requested_delay_level`` the one asked for.
    ``reconsume_times`` is that of the next copy: the next delivery's, or the DLQ copy's (or, for DROPPED, of the
    copy that is dropped). ``stored_reconsume_times`` is set for local retries, whose counter lives only in the
    client (§1.3, §4, §5.3): the broker's copy still carries this value.
    ``ready_at_ms`` is when the next delivery can happen (or when the DLQ copy is stored / the drop takes effect).
    ``rule`` names the docs/rocketmq-rules.md section the decision comes from.
    """

    action: HopAction
    topic: str | None
    queue_id: int | None
    delay_level: int | None
    delay_ms: int
    ready_at_ms: int
    reconsume_times: int
    properties: dict[str, str] = field(default_factory=dict)
    rule: str = ""
    # The copy passes through SCHEDULE_TOPIC_XXXX (queue level-1). Includes the 4.x quirk (§2.3, §12): a DLQ-bound
    # re-publish still waits there with REAL_TOPIC=%DLQ%<group>.
    via_schedule_topic: bool = False
    destination_topic: str | None = None
    requested_delay_level: int | None = None
    stored_reconsume_times: int | None = None

    @property
    def terminal(self) -> bool:
        return self.action in (HopAction.DEAD_LETTER, HopAction.DROPPED)


@dataclass(frozen=True)
class PathStep:
    """One retry along an expected path (``hop`` is 1-based: hop k is the k-th retry)."""

    hop: int
    failed_reconsume_times: int
    next: NextHop
    cumulative_ms: int


@dataclass(frozen=True)
class ExpectedPath:
    """The whole expected path of a message that fails every time (or as a scenario dictates)."""

    group: str
    steps: tuple[PathStep, ...]
    final: FinalState
    final_topic: str | None
    deliveries: int  # total deliveries including the first; for RETRYING_FOREVER, those listed
    truncated: bool = False  # RETRYING_FOREVER paths are cut after a limit
