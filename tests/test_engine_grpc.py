"""5.x gRPC consumers: PushConsumer nack + proxy DLQ (§5.3, §5.4), FIFO (§5.3), SimpleConsumer (§5.5)."""

from __future__ import annotations

import pytest

from rocketmq_retry.engine import (
    ConsumeMode,
    ConsumeOutcome,
    CustomizedPolicy,
    ExponentialPolicy,
    FailedDelivery,
    FinalState,
    GroupPolicy,
    HopAction,
    MessageModel,
    Protocol,
    expected_path,
    next_hop,
)

S, M, H = 1_000, 60_000, 3_600_000


def grpc(**kw) -> GroupPolicy:
    kw.setdefault("protocol", Protocol.GRPC)
    return GroupPolicy("G", broker_major=5, **kw)


def fail(r: int, **kw) -> FailedDelivery:
    kw.setdefault("original_topic", "T")
    kw.setdefault("failed_at_ms", 0)
    return FailedDelivery(reconsume_times=r, **kw)


def test_grpc_needs_a_5x_broker():
    with pytest.raises(ValueError, match=r"5\.x broker"):
        next_hop(GroupPolicy("G", protocol=Protocol.GRPC), fail(0))


# ---------------------------------------------------------------- PushConsumer (non-FIFO)


@pytest.mark.parametrize(("r", "delay"), [(0, 1 * S), (1, 5 * S), (2, 10 * S), (3, 30 * S), (15, 30 * M)])
def test_push_nack_uses_customized_list_at_delivery_attempt_index(r, delay):
    # deliveryAttempt = r + 1 → next[r]: the first retry after 1 s, not 10 s (§5.3 index offset)
    hop = next_hop(grpc(), fail(r))
    assert hop.action is HopAction.INVISIBLE_RETRY
    assert (hop.topic, hop.queue_id, hop.delay_ms, hop.reconsume_times) == ("%RETRY%G_T", 0, delay, r + 1)
    assert hop.delay_level is None


def test_push_nack_exponential():
    hop = next_hop(grpc(retry_policy=ExponentialPolicy()), fail(2))
    assert hop.delay_ms == 20 * S


def test_push_nack_custom_list():
    hop = next_hop(grpc(retry_policy=CustomizedPolicy(next_ms=(2 * S, 4 * S))), fail(5))
    assert hop.delay_ms == 4 * S


def test_push_dlq_when_revived_copy_reaches_max_attempts():
    # maxAttempts 17: failure at r=16 → revived copy r=17 >= 17 → TO_DLQ at the next receive
    hop = next_hop(grpc(), fail(16))
    assert hop.action is HopAction.DEAD_LETTER
    assert (hop.topic, hop.queue_id) == ("%DLQ%G", 0)
    assert hop.delay_ms == 1 * H  # next[16]: the copy waits out its invisible time before it is popped
    assert hop.reconsume_times == 18  # the broker adds 1 to the popped copy's 17 (§5.4)
    assert hop.properties["RETRY_TOPIC"] == "%RETRY%G_T"
    assert hop.properties["DELAY"] == "0"


def test_push_default_path_17_deliveries():
    path = expected_path(grpc(), failure=FailedDelivery(0, original_topic="T"))
    assert (path.final, path.deliveries, path.final_topic) == (FinalState.DEAD_LETTERED, 17, "%DLQ%G")
    assert path.steps[0].next.delay_ms == 1 * S


@pytest.mark.parametrize(("retry_max_times", "deliveries"), [(0, 1), (3, 4), (10, 11)])
def test_push_deliveries_equal_max_attempts(retry_max_times, deliveries):
    assert expected_path(grpc(retry_max_times=retry_max_times)).deliveries == deliveries


def test_grpc_pop_mode_is_a_push_consumer():
    assert next_hop(grpc(consume_mode=ConsumeMode.POP), fail(0)).delay_ms == 1 * S


def test_grpc_broadcasting_dropped():
    assert next_hop(grpc(message_model=MessageModel.BROADCASTING), fail(0)).action is HopAction.DROPPED


# ---------------------------------------------------------------- FIFO


def fifo(**kw) -> GroupPolicy:
    return grpc(consume_mode=ConsumeMode.ORDERLY, **kw)


def test_fifo_local_retry_while_attempt_below_max():
    hop = next_hop(fifo(retry_max_times=3), fail(2))
    assert hop.action is HopAction.FIFO_LOCAL_RETRY
    assert (hop.topic, hop.delay_ms, hop.reconsume_times, hop.stored_reconsume_times) == ("T", 10 * S, 3, 2)
    assert hop.properties == {}


def test_fifo_dead_letter_immediately_at_max_attempts():
    hop = next_hop(fifo(retry_max_times=3), fail(3, stored_reconsume_times=0, offset_msg_id="OFF"))
    assert hop.action is HopAction.DEAD_LETTER
    assert (hop.topic, hop.delay_ms, hop.ready_at_ms) == ("%DLQ%G", 0, 0)
    assert hop.reconsume_times == 1  # the stored copy had 0; local attempts are not stored
    assert hop.properties == {"RETRY_TOPIC": "T", "ORIGIN_MESSAGE_ID": "OFF", "DELAY": "0", "WAIT": "false"}


def test_fifo_path():
    path = expected_path(fifo(retry_max_times=3), failure=FailedDelivery(0, original_topic="T"))
    assert [s.next.action for s in path.steps] == [HopAction.FIFO_LOCAL_RETRY] * 3 + [HopAction.DEAD_LETTER]
    assert [s.next.delay_ms for s in path.steps] == [1 * S, 5 * S, 10 * S, 0]
    assert (path.deliveries, path.steps[-1].cumulative_ms) == (4, 16 * S)


def test_fifo_null_result_skips_local_retry():
    hop = next_hop(fifo(), fail(0, outcome=ConsumeOutcome.RETURN_NULL))
    assert hop.action is HopAction.DEAD_LETTER


# ---------------------------------------------------------------- SimpleConsumer


def simple(**kw) -> GroupPolicy:
    return GroupPolicy("G", broker_major=5, consume_mode=ConsumeMode.SIMPLE, **kw)


def test_simple_retries_after_the_invisible_duration_from_receive():
    hop = next_hop(simple(invisible_duration_ms=30 * S), fail(0, delivered_at_ms=1_000, failed_at_ms=5_000))
    assert hop.action is HopAction.INVISIBLE_RETRY
    assert (hop.delay_ms, hop.ready_at_ms, hop.topic, hop.reconsume_times) == (26 * S, 31 * S, "%RETRY%G_T", 1)


def test_simple_same_proxy_dlq_rule():
    path = expected_path(simple(retry_max_times=2))
    assert (path.final, path.deliveries) == (FinalState.DEAD_LETTERED, 3)
    assert path.steps[-1].next.reconsume_times == 4


@pytest.mark.parametrize("bad", [9_999, 12 * H + 1, 0])
def test_invisible_duration_bounds(bad):
    with pytest.raises(ValueError, match="invisible_duration_ms"):
        simple(invisible_duration_ms=bad)


@pytest.mark.parametrize("ok", [10_000, 12 * H])
def test_invisible_duration_bounds_inclusive(ok):
    assert simple(invisible_duration_ms=ok).invisible_duration_ms == ok
