"""The retry engine: RocketMQ's retry rules as pure functions (DESIGN §5).

Section marks (§) refer to ``docs/rocketmq-rules.md``.
"""

from __future__ import annotations

from rocketmq_retry.engine.consume_concurrently import (
    BatchConsumeResult,
    ConsumeConcurrentlyStatus,
    process_consume_result,
)
from rocketmq_retry.engine.delay_levels import DEFAULT_MESSAGE_DELAY_LEVEL, DelayLevelError, DelayLevelTable
from rocketmq_retry.engine.expected_path import expected_path, policy_settings
from rocketmq_retry.engine.max_reconsume_times import effective_max_reconsume_times
from rocketmq_retry.engine.model import (
    ConsumeMode,
    ConsumeOutcome,
    CustomizedPolicy,
    ExpectedPath,
    ExponentialPolicy,
    FailedDelivery,
    FinalState,
    GroupPolicy,
    HopAction,
    MessageModel,
    NextHop,
    PathStep,
    Protocol,
    SendBackFault,
    dlq_topic,
    pop_retry_topic,
    retry_topic,
)
from rocketmq_retry.engine.next_hop import next_hop
from rocketmq_retry.engine.producer_retry import (
    PlannedAttempt,
    SendAttemptResult,
    SendMode,
    SendOutcome,
    SendPlan,
    plan_grpc_send,
    plan_remoting_send,
    retry_response_codes,
)
from rocketmq_retry.engine.retry_policy import (
    CustomizedBackoffRetryPolicy,
    ExponentialBackoffRetryPolicy,
    broker_next_delay_duration,
    consumer_retry_policy,
    customized_next_delay_duration,
    exponential_next_delay_duration,
    max_attempts,
)
from rocketmq_retry.engine.versions import Version, format_version, parse_version

__all__ = [
    "DEFAULT_MESSAGE_DELAY_LEVEL",
    "BatchConsumeResult",
    "ConsumeConcurrentlyStatus",
    "ConsumeMode",
    "ConsumeOutcome",
    "CustomizedBackoffRetryPolicy",
    "CustomizedPolicy",
    "DelayLevelError",
    "DelayLevelTable",
    "ExpectedPath",
    "ExponentialBackoffRetryPolicy",
    "ExponentialPolicy",
    "FailedDelivery",
    "FinalState",
    "GroupPolicy",
    "HopAction",
    "MessageModel",
    "NextHop",
    "PathStep",
    "PlannedAttempt",
    "Protocol",
    "SendAttemptResult",
    "SendBackFault",
    "SendMode",
    "SendOutcome",
    "SendPlan",
    "Version",
    "broker_next_delay_duration",
    "consumer_retry_policy",
    "customized_next_delay_duration",
    "dlq_topic",
    "effective_max_reconsume_times",
    "expected_path",
    "exponential_next_delay_duration",
    "format_version",
    "max_attempts",
    "next_hop",
    "parse_version",
    "plan_grpc_send",
    "plan_remoting_send",
    "policy_settings",
    "pop_retry_topic",
    "process_consume_result",
    "retry_response_codes",
    "retry_topic",
]
