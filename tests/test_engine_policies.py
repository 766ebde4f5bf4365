"""Retry-policy classes (§5.1, §5.2, §9), batch ackIndex (§1.3) and producer retries (§5.6)."""

from __future__ import annotations

import pytest

from rocketmq_retry.engine import (
    ConsumeConcurrentlyStatus,
    CustomizedBackoffRetryPolicy,
    CustomizedPolicy,
    ExponentialBackoffRetryPolicy,
    ExponentialPolicy,
    GroupPolicy,
    SendAttemptResult,
    SendMode,
    SendOutcome,
    broker_next_delay_duration,
    consumer_retry_policy,
    customized_next_delay_duration,
    exponential_next_delay_duration,
    max_attempts,
    plan_grpc_send,
    plan_remoting_send,
    process_consume_result,
    retry_response_codes,
)

S, M, H = 1_000, 60_000, 3_600_000


# ---------------------------------------------------------------- broker side (§9 *RetryPolicyTest)


@pytest.mark.parametrize(("r", "expected"), [(0, 10 * S), (10, 9 * M), (-1, 10 * S), (100, 2 * H)])
def test_customized_retry_policy_next_delay_duration(r, expected):
    assert customized_next_delay_duration(r) == expected
    assert broker_next_delay_duration(CustomizedPolicy(), r) == expected


@pytest.mark.parametrize(("r", "expected"), [(0, 5 * S), (10, 5120 * S), (-1, 5 * S), (100, 2 * H)])
def test_exponential_retry_policy_next_delay_duration(r, expected):
    assert exponential_next_delay_duration(r) == expected
    assert broker_next_delay_duration(ExponentialPolicy(), r) == expected


def test_customized_with_own_list_indexes_r_plus_2_and_clamps():
    assert customized_next_delay_duration(0, (1000, 5000, 10000)) == 10000
    assert customized_next_delay_duration(5, (1000, 5000, 10000)) == 10000


def test_exponential_java_long_saturation_and_wrap():
    # (long) Math.pow(10, 32) saturates at Long.MAX_VALUE; 2 * that wraps to -2, then min(max, -2) = -2
    assert exponential_next_delay_duration(40, ExponentialPolicy(initial_ms=2, max_ms=H, multiplier=10)) == -2


# ---------------------------------------------------------------- client side (rocketmq-clients tests)


def test_exponential_backoff_get_next_attempt_delay():
    policy = ExponentialBackoffRetryPolicy(3, initial_backoff_ms=5, max_backoff_ms=1000, backoff_multiplier=5)
    assert [policy.get_next_attempt_delay_ms(a) for a in range(1, 7)] == [5, 25, 125, 625, 1000, 1000]


def test_exponential_backoff_illegal_attempt():
    policy = ExponentialBackoffRetryPolicy(3, 5, 1000, 5)
    for attempt in (0, -1):
        with pytest.raises(ValueError, match="attempt must be positive"):
            policy.get_next_attempt_delay_ms(attempt)


def test_immediately_retry_policy_is_all_zero():
    policy = ExponentialBackoffRetryPolicy.immediately_retry_policy(3)
    assert [policy.get_next_attempt_delay_ms(a) for a in (1, 2, 3, 10)] == [0, 0, 0, 0]


def test_customized_backoff_next_attempt_delay():
    policy = CustomizedBackoffRetryPolicy((1 * S, 2 * S), max_attempts=3)
    assert [policy.get_next_attempt_delay_ms(a) for a in (1, 2, 3, 4)] == [1 * S, 2 * S, 2 * S, 2 * S]
    with pytest.raises(ValueError, match="attempt must be positive"):
        policy.get_next_attempt_delay_ms(0)


@pytest.mark.parametrize(("retry_max_times", "attempts"), [(3, 4), (10, 11), (16, 17)])
def test_max_attempts(retry_max_times, attempts):
    # GrpcClientSettingsManagerTest.testGetSubscriptionData: 3 → 4, 10 → 11
    assert max_attempts(retry_max_times) == attempts
    assert consumer_retry_policy(GroupPolicy("G", retry_max_times=retry_max_times)).max_attempts == attempts


def test_default_consumer_policy_is_the_constant_customized_list_not_message_delay_level():
    from rocketmq_retry.engine import DelayLevelTable

    policy = consumer_retry_policy(GroupPolicy("G", delay_levels=DelayLevelTable.parse("1s 2s 3s")))
    assert isinstance(policy, CustomizedBackoffRetryPolicy)
    assert policy.durations_ms[:4] == (1 * S, 5 * S, 10 * S, 30 * S)
    assert len(policy.durations_ms) == 18


def test_exponential_consumer_policy():
    policy = consumer_retry_policy(GroupPolicy("G", retry_policy=ExponentialPolicy()))
    assert [policy.get_next_attempt_delay_ms(a) for a in (1, 2, 3, 11, 12)] == [5 * S, 10 * S, 20 * S, 5120 * S, 2 * H]


# ---------------------------------------------------------------- batch consumption (§1.3)


@pytest.mark.parametrize(
    ("size", "status", "ack_index", "effective", "failed"),
    [
        (4, ConsumeConcurrentlyStatus.CONSUME_SUCCESS, 2**31 - 1, 3, ()),  # default ackIndex = Integer.MAX_VALUE
        (4, ConsumeConcurrentlyStatus.CONSUME_SUCCESS, 1, 1, (2, 3)),  # success still sends back k+1..n-1
        (4, ConsumeConcurrentlyStatus.CONSUME_SUCCESS, 4, 3, ()),  # ackIndex >= size clamped to size-1
        (4, ConsumeConcurrentlyStatus.CONSUME_SUCCESS, -1, -1, (0, 1, 2, 3)),
        (4, ConsumeConcurrentlyStatus.RECONSUME_LATER, 2, -1, (0, 1, 2, 3)),  # RECONSUME_LATER → all
        (1, ConsumeConcurrentlyStatus.RECONSUME_LATER, 2**31 - 1, -1, (0,)),
        (3, None, 1, -1, (0, 1, 2)),  # null status becomes RECONSUME_LATER (§1.2 step 7)
    ],
)
def test_process_consume_result(size, status, ack_index, effective, failed):
    result = process_consume_result(size, status, ack_index)
    assert result.ack_index == effective
    assert result.failed == failed
    assert result.consumed == tuple(i for i in range(size) if i not in failed)


def test_process_consume_result_rejects_empty_batch_and_ack_index_below_minus_one():
    with pytest.raises(ValueError):
        process_consume_result(0, ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    with pytest.raises(ValueError, match="IndexOutOfBounds"):
        process_consume_result(3, ConsumeConcurrentlyStatus.CONSUME_SUCCESS, -3)


# ---------------------------------------------------------------- producer retries (§5.6)

OK = SendAttemptResult(SendOutcome.SEND_OK, rt_ms=5)
NET = SendAttemptResult(SendOutcome.REMOTING_ERROR, rt_ms=100)
THROTTLED = SendAttemptResult(SendOutcome.TOO_MANY_REQUESTS, rt_ms=1)


def broker(code: int) -> SendAttemptResult:
    return SendAttemptResult(SendOutcome.BROKER_ERROR, response_code=code, rt_ms=2)


def test_remoting_sync_three_attempts_at_once_then_fail():
    plan = plan_remoting_send([NET, NET, NET])
    assert [a.at_ms for a in plan.attempts] == [0, 100, 200]
    assert [a.delay_before_ms for a in plan.attempts] == [0, 0, 0]
    assert not plan.succeeded
    assert plan.reason == "Send [3] times, still failed"


def test_remoting_sync_recovers_on_second_attempt():
    plan = plan_remoting_send([NET, OK, NET])
    assert (len(plan.attempts), plan.succeeded) == (2, True)
    assert [a.retried for a in plan.attempts] == [True, False]


def test_remoting_sync_retry_times_setting():
    assert len(plan_remoting_send([NET] * 6, retry_times_when_send_failed=5).attempts) == 6


@pytest.mark.parametrize(("code", "retried_4", "retried_5"), [(17, True, True), (1, True, True), (2, False, True),
                                                             (1500, False, True), (13, False, False)])  # fmt: skip
def test_remoting_retried_broker_codes_per_version(code, retried_4, retried_5):
    # A bare major stands for its newest release (4.9.8, 5.3.3), as callers that pass client_major rely on.
    assert (code in retry_response_codes(4), code in retry_response_codes(5)) == (retried_4, retried_5)
    assert len(plan_remoting_send([broker(code), OK], client_major=4).attempts) == (2 if retried_4 else 1)
    assert len(plan_remoting_send([broker(code), OK], client_major=5).attempts) == (2 if retried_5 else 1)


@pytest.mark.parametrize(
    ("client", "system_busy", "go_away"),
    [((4, 9, 8), False, False), ((5, 2, 0), False, False), ((5, 3, 0), True, False), ((5, 3, 1), True, True)],
)
def test_remoting_retry_codes_follow_the_client_version(client, system_busy, go_away):
    # DefaultMQProducer.retryResponseCodes: SYSTEM_BUSY (2) from client 5.3.0, GO_AWAY (1500) from 5.3.1.
    assert (2 in retry_response_codes(client), 1500 in retry_response_codes(client)) == (system_busy, go_away)
    assert len(plan_remoting_send([broker(2), OK], client_version=client).attempts) == (2 if system_busy else 1)
    assert len(plan_remoting_send([broker(1500), OK], client_version=client).attempts) == (2 if go_away else 1)
    assert len(plan_remoting_send([broker(17), OK], client_version=client).attempts) == 2  # TOPIC_NOT_EXIST: always


def test_remoting_send_client_major_and_version_must_agree():
    assert len(plan_remoting_send([broker(2), OK], client_major=5, client_version=(5, 3, 0)).attempts) == 2
    with pytest.raises(ValueError, match=r"client_major 4 contradicts client_version 5\.3\.0"):
        plan_remoting_send([broker(2), OK], client_major=4, client_version=(5, 3, 0))


def test_remoting_sync_stops_when_the_timeout_budget_is_spent():
    slow = SendAttemptResult(SendOutcome.REMOTING_ERROR, rt_ms=3_001)
    plan = plan_remoting_send([slow, OK])
    assert len(plan.attempts) == 1
    assert "timeout" in plan.reason


def test_remoting_not_store_ok_returned_unless_retry_another_broker():
    flush = SendAttemptResult(SendOutcome.NOT_STORE_OK)
    assert len(plan_remoting_send([flush, OK]).attempts) == 1
    assert len(plan_remoting_send([flush, OK], retry_another_broker_when_not_store_ok=True).attempts) == 2


def test_remoting_async_retries_transport_failures_only():
    assert len(plan_remoting_send([NET, NET, OK], mode=SendMode.ASYNC).attempts) == 3
    assert len(plan_remoting_send([broker(17), OK], mode=SendMode.ASYNC).attempts) == 1
    assert len(plan_remoting_send([THROTTLED, OK], mode=SendMode.ASYNC).attempts) == 1


def test_remoting_oneway_single_attempt():
    plan = plan_remoting_send([NET, OK], mode=SendMode.ONEWAY)
    assert (len(plan.attempts), plan.succeeded) == (1, False)


def test_remoting_interrupt_not_retried():
    assert len(plan_remoting_send([SendAttemptResult(SendOutcome.INTERRUPTED), OK]).attempts) == 1


def test_plan_needs_enough_outcomes():
    with pytest.raises(ValueError, match="attempt 2"):
        plan_remoting_send([NET])


def test_grpc_retries_other_failures_immediately():
    plan = plan_grpc_send([NET, NET, NET])
    assert [a.delay_before_ms for a in plan.attempts] == [0, 0, 0]
    assert [a.at_ms for a in plan.attempts] == [0, 100, 200]
    assert plan.reason == "run out of attempt times"


def test_grpc_backs_off_only_on_too_many_requests():
    # getNextAttemptDelay(nextAttempt): 10 ms × 2^(2-1) = 20 ms, then 40 ms
    plan = plan_grpc_send([THROTTLED, THROTTLED, OK])
    assert [a.delay_before_ms for a in plan.attempts] == [0, 20, 40]
    assert [a.at_ms for a in plan.attempts] == [0, 21, 62]
    assert plan.succeeded


def test_grpc_backoff_capped_at_one_second():
    plan = plan_grpc_send([THROTTLED] * 10, max_attempts=10)
    assert plan.attempts[-1].delay_before_ms == 1000


def test_grpc_before_settings_sync_no_backoff():
    assert [a.delay_before_ms for a in plan_grpc_send([THROTTLED, OK], settings_received=False).attempts] == [0, 0]
