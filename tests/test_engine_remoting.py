"""Remoting push consumers: concurrent send-back (§1.3–§1.6, §2.2, §2.3), orderly (§4, §12), POP (§1.7)."""

from __future__ import annotations

import pytest

from rocketmq_retry.engine import (
    ConsumeMode,
    ConsumeOutcome,
    DelayLevelTable,
    FailedDelivery,
    FinalState,
    GroupPolicy,
    HopAction,
    MessageModel,
    SendBackFault,
    effective_max_reconsume_times,
    expected_path,
    next_hop,
)

S, M, H = 1_000, 60_000, 3_600_000
INT_MAX = 2_147_483_647


def fail(r: int, **kw) -> FailedDelivery:
    kw.setdefault("original_topic", "ORDER_CREATED")
    kw.setdefault("failed_at_ms", 1_000_000)
    return FailedDelivery(reconsume_times=r, **kw)


# ---------------------------------------------------------------- effective max (§1.4, §4, §1.7, §5.2)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, 16),  # concurrent -1 → 16 (§1.4)
        ({"max_reconsume_times": 3}, 3),
        ({"consume_mode": ConsumeMode.ORDERLY}, INT_MAX),  # orderly -1 → Integer.MAX_VALUE (§4)
        ({"consume_mode": ConsumeMode.ORDERLY, "max_reconsume_times": 2}, 2),
        ({"consume_mode": ConsumeMode.POP, "broker_major": 5}, 16),  # POP uses DMPCI.getMaxReconsumeTimes (§1.7)
        ({"protocol": "grpc", "broker_major": 5, "max_reconsume_times": 3}, 16),  # gRPC: retryMaxTimes, not client
        ({"protocol": "grpc", "broker_major": 5, "retry_max_times": 3}, 3),
        ({"consume_mode": ConsumeMode.SIMPLE, "broker_major": 5, "retry_max_times": 10}, 10),
    ],
)
def test_effective_max_reconsume_times(kwargs, expected):
    assert effective_max_reconsume_times(GroupPolicy("G", **kwargs)) == expected


# ---------------------------------------------------------------- broker send-back (§2.2)


@pytest.mark.parametrize("major", [4, 5])
def test_first_failure_goes_to_schedule_topic_level_3_then_retry_topic(major):
    hop = next_hop(GroupPolicy("G", broker_major=major), fail(0, offset_msg_id="0A00000100002A9F0000000000000000"))
    assert hop.action is HopAction.SCHEDULED_RETRY
    assert (hop.topic, hop.queue_id, hop.delay_level, hop.delay_ms) == ("SCHEDULE_TOPIC_XXXX", 2, 3, 10 * S)
    assert hop.ready_at_ms == 1_010_000
    assert hop.reconsume_times == 1
    assert hop.destination_topic == "%RETRY%G"
    assert hop.via_schedule_topic
    assert hop.properties == {
        "RETRY_TOPIC": "ORDER_CREATED",
        "ORIGIN_MESSAGE_ID": "0A00000100002A9F0000000000000000",  # the offset msgId, not the UNIQ_KEY (§2.2 step 11)
        "WAIT": "false",
        "DELAY": "3",
        "REAL_TOPIC": "%RETRY%G",
        "REAL_QID": "0",
    }
    assert "§2.2" in hop.rule


def test_level_zero_is_three_plus_r():
    hop = next_hop(GroupPolicy("G"), fail(7))
    assert (hop.delay_level, hop.delay_ms, hop.reconsume_times) == (10, 6 * M, 8)


def test_existing_origin_message_id_is_kept():
    hop = next_hop(GroupPolicy("G"), fail(2, origin_message_id="FIRST", offset_msg_id="LATER"))
    assert hop.properties["ORIGIN_MESSAGE_ID"] == "FIRST"


def test_client_override_level_is_used():
    hop = next_hop(GroupPolicy("G"), fail(0, delay_level_when_next_consume=2))
    assert (hop.delay_level, hop.delay_ms, hop.queue_id) == (2, 5 * S, 1)


def test_override_above_max_level_is_clamped_at_store_time():
    hop = next_hop(GroupPolicy("G"), fail(0, delay_level_when_next_consume=25))
    assert (hop.requested_delay_level, hop.delay_level, hop.delay_ms, hop.queue_id) == (25, 18, 2 * H, 17)


@pytest.mark.parametrize("major", [4, 5])
def test_dlq_when_r_reaches_max(major):
    hop = next_hop(GroupPolicy("G", broker_major=major, max_reconsume_times=3), fail(3))
    assert hop.action is HopAction.DEAD_LETTER
    assert (hop.topic, hop.queue_id, hop.delay_ms, hop.ready_at_ms) == ("%DLQ%G", 0, 0, 1_000_000)
    assert hop.reconsume_times == 4  # §12: DLQ copies carry reconsumeTimes = deliveries (4 for max 3)
    assert hop.properties["DELAY"] == "0"
    assert hop.properties["REAL_TOPIC"] == "%RETRY%G"
    assert hop.terminal


def test_below_max_is_not_dlq():
    assert next_hop(GroupPolicy("G", max_reconsume_times=3), fail(2)).action is HopAction.SCHEDULED_RETRY


def test_negative_delay_level_goes_to_dlq_at_once_whatever_r():
    hop = next_hop(GroupPolicy("G"), fail(0, delay_level_when_next_consume=-1, offset_msg_id="OFF"))
    assert hop.action is HopAction.DEAD_LETTER
    assert hop.reconsume_times == 1  # §12: 1 for level -1
    assert "REAL_TOPIC" not in hop.properties  # §12: absent for level -1
    assert hop.properties["DELAY"] == "0"


def test_retry_queue_nums_zero_drops_silently_before_dlq_check():
    hop = next_hop(GroupPolicy("G", retry_queue_nums=0), fail(16))  # r >= max, yet dropped rather than DLQ
    assert hop.action is HopAction.DROPPED
    assert hop.topic is None
    assert "step 4" in hop.rule


def test_several_retry_queues_leave_the_queue_unknown():
    hop = next_hop(GroupPolicy("G", retry_queue_nums=4), fail(0))
    assert "REAL_QID" not in hop.properties
    assert hop.queue_id == 2  # the schedule queue is still level - 1


def test_broker_uses_stored_reconsume_times_after_a_local_resubmit():
    # r was bumped to 3 locally; the stored copy still has 2, so 3 + 2 = level 5 and no DLQ at max 3.
    hop = next_hop(GroupPolicy("G", max_reconsume_times=3), fail(3, stored_reconsume_times=2))
    assert (hop.action, hop.delay_level, hop.reconsume_times) == (HopAction.SCHEDULED_RETRY, 5, 3)


# ---------------------------------------------------------------- broadcasting (§1.3)


@pytest.mark.parametrize("r", [0, 5, 16])
def test_broadcasting_drops(r):
    hop = next_hop(GroupPolicy("G", message_model=MessageModel.BROADCASTING), fail(r))
    assert hop.action is HopAction.DROPPED
    assert (hop.topic, hop.delay_ms) == (None, 0)
    path = expected_path(GroupPolicy("G", message_model=MessageModel.BROADCASTING))
    assert (path.final, path.deliveries, len(path.steps)) == (FinalState.DROPPED, 1, 1)


# ---------------------------------------------------------------- consume timeout (§1.6)


def test_timeout_sends_back_at_fixed_level_3():
    hop = next_hop(GroupPolicy("G"), fail(6, outcome=ConsumeOutcome.TIMEOUT, delay_level_when_next_consume=7))
    assert (hop.action, hop.delay_level, hop.delay_ms, hop.reconsume_times) == (HopAction.SCHEDULED_RETRY, 3, 10 * S, 7)


def test_timeout_dlq_condition_unchanged():
    hop = next_hop(GroupPolicy("G", max_reconsume_times=2), fail(2, outcome=ConsumeOutcome.TIMEOUT))
    assert hop.action is HopAction.DEAD_LETTER


# ---------------------------------------------------------------- fallbacks (§1.4, §2.3)


@pytest.mark.parametrize("major", [4, 5])
def test_rpc_failed_republishes_with_three_plus_r_ignoring_override(major):
    hop = next_hop(
        GroupPolicy("G", broker_major=major),
        fail(1, send_back_fault=SendBackFault.RPC_FAILED, delay_level_when_next_consume=1, uniq_key="UQ"),
    )
    assert hop.action is HopAction.REPUBLISHED_RETRY
    assert (hop.delay_level, hop.delay_ms, hop.reconsume_times) == (4, 30 * S, 2)
    assert (hop.topic, hop.destination_topic) == ("SCHEDULE_TOPIC_XXXX", "%RETRY%G")
    assert hop.properties["RECONSUME_TIME"] == "2"
    assert hop.properties["MAX_RECONSUME_TIMES"] == "16"
    assert hop.properties["RETRY_TOPIC"] == "ORDER_CREATED"


@pytest.mark.parametrize("version", [(4, 9, 4), (5, 0, 0), (5, 2, 0), (5, 3, 3)])
def test_rpc_failed_fallback_loses_a_fresh_origin_id_in_every_released_client(version):
    # setOriginMessageId(newMsg, …) runs before setProperties(newMsg, msg.getProperties()) replaces the map
    # (DefaultMQPushConsumerImpl#sendMessageBack 4.9.4, #sendMessageBackAsNormalMessage 5.0.0 … 5.3.3).
    f = fail(0, send_back_fault=SendBackFault.RPC_FAILED, uniq_key="UQ", offset_msg_id="OFF")
    hop = next_hop(GroupPolicy("G", broker_version=version), f)
    assert hop.action is HopAction.REPUBLISHED_RETRY
    assert "ORIGIN_MESSAGE_ID" not in hop.properties


@pytest.mark.parametrize("version", [(4, 9, 4), (5, 3, 3)])
def test_rpc_failed_fallback_keeps_the_origin_id_the_delivered_copy_carried(version):
    f = fail(2, send_back_fault=SendBackFault.RPC_FAILED, uniq_key="UQ", origin_message_id="FIRST_OFFSET_ID")
    hop = next_hop(GroupPolicy("G", broker_version=version), f)
    assert hop.properties["ORIGIN_MESSAGE_ID"] == "FIRST_OFFSET_ID"


def test_fallback_path_carries_the_origin_id_only_after_a_broker_send_back():
    # Hop 1 goes through CONSUMER_SEND_MSG_BACK (ORIGIN_MESSAGE_ID = the offset msgId, §2.2 step 11); from then on
    # the delivered copies carry it, so the fallback re-publishes of later hops keep it.
    def listener(r: int) -> FailedDelivery:
        fault = SendBackFault.NONE if r == 0 else SendBackFault.RPC_FAILED
        return FailedDelivery(r, original_topic="T", send_back_fault=fault, uniq_key="UQ", offset_msg_id="OFF0")

    path = expected_path(GroupPolicy("G", broker_version=(5, 3, 3), max_reconsume_times=3), failure=listener)
    assert [s.next.action for s in path.steps] == [
        HopAction.SCHEDULED_RETRY,
        HopAction.REPUBLISHED_RETRY,
        HopAction.REPUBLISHED_RETRY,
        HopAction.DEAD_LETTER,
    ]
    assert [s.next.properties.get("ORIGIN_MESSAGE_ID") for s in path.steps] == ["OFF0"] * 4
    # The same fallback from the first delivery on never has one to keep.
    path = expected_path(
        GroupPolicy("G", broker_version=(5, 3, 3), max_reconsume_times=3),
        failure=FailedDelivery(0, original_topic="T", send_back_fault=SendBackFault.RPC_FAILED, uniq_key="UQ"),
    )
    assert [s.next.properties.get("ORIGIN_MESSAGE_ID") for s in path.steps] == [None] * 4


def test_rpc_failed_4x_dlq_one_hop_earlier_and_waits_in_schedule_topic():
    # 4.x handleRetryAndDLQ: header r+1 >= max. r=2, max 3 → 3 >= 3 → DLQ, via SCHEDULE_TOPIC_XXXX level 5.
    hop = next_hop(GroupPolicy("G", broker_major=4, max_reconsume_times=3), fail(2, send_back_fault="RPC_FAILED"))
    assert hop.action is HopAction.DEAD_LETTER
    assert hop.via_schedule_topic
    assert (hop.topic, hop.queue_id, hop.delay_level, hop.delay_ms) == ("SCHEDULE_TOPIC_XXXX", 4, 5, 1 * M)
    assert hop.ready_at_ms == 1_060_000
    assert hop.destination_topic == "%DLQ%G"
    assert (hop.properties["REAL_TOPIC"], hop.properties["REAL_QID"]) == ("%DLQ%G", "0")
    assert hop.reconsume_times == 3


def test_rpc_failed_4x_dlq_bound_level_is_clamped():
    hop = next_hop(GroupPolicy("G", broker_major=4, max_reconsume_times=20), fail(19, send_back_fault="RPC_FAILED"))
    assert (hop.action, hop.requested_delay_level, hop.delay_level, hop.delay_ms) == (
        HopAction.DEAD_LETTER,
        22,
        18,
        2 * H,
    )


def test_rpc_failed_5x_not_dlq_at_r_plus_one_equal_max():
    hop = next_hop(GroupPolicy("G", broker_major=5, max_reconsume_times=3), fail(2, send_back_fault="RPC_FAILED"))
    assert hop.action is HopAction.REPUBLISHED_RETRY


def test_rpc_failed_5x_dlq_directly_with_delay_minus_one():
    hop = next_hop(GroupPolicy("G", broker_major=5, max_reconsume_times=3), fail(3, send_back_fault="RPC_FAILED"))
    assert hop.action is HopAction.DEAD_LETTER
    assert not hop.via_schedule_topic
    assert (hop.topic, hop.queue_id, hop.delay_ms, hop.reconsume_times) == ("%DLQ%G", 0, 0, 4)
    assert hop.properties["DELAY"] == "-1"


@pytest.mark.parametrize(("major", "deliveries"), [(4, 3), (5, 4)])
def test_fallback_every_time_path_length(major, deliveries):
    policy = GroupPolicy("G", broker_major=major, max_reconsume_times=3)
    path = expected_path(policy, failure=FailedDelivery(0, send_back_fault=SendBackFault.RPC_FAILED))
    assert (path.final, path.deliveries) == (FinalState.DEAD_LETTERED, deliveries)


def test_rpc_and_fallback_failed_resubmits_locally_after_5s():
    hop = next_hop(GroupPolicy("G"), fail(4, send_back_fault=SendBackFault.RPC_AND_FALLBACK_FAILED))
    assert hop.action is HopAction.LOCAL_RESUBMIT
    assert (hop.topic, hop.delay_ms, hop.ready_at_ms) == ("ORDER_CREATED", 5_000, 1_005_000)
    assert (hop.reconsume_times, hop.stored_reconsume_times) == (5, 4)
    assert hop.properties == {}
    assert hop.delay_level is None


def test_local_resubmit_ignores_the_max_and_the_broker_copy_lags():
    # both failed every time: the counter runs ahead in memory, nothing ever reaches the broker
    path = expected_path(
        GroupPolicy("G", max_reconsume_times=2),
        failure=FailedDelivery(0, send_back_fault=SendBackFault.RPC_AND_FALLBACK_FAILED),
        limit=5,
    )
    assert path.final is FinalState.RETRYING_FOREVER and path.truncated
    assert [s.next.reconsume_times for s in path.steps] == [1, 2, 3, 4, 5]
    assert {s.next.stored_reconsume_times for s in path.steps} == {0}
    assert path.steps[-1].cumulative_ms == 25_000


# ---------------------------------------------------------------- orderly (§4, §12)


def orderly(major: int = 4, **kw) -> GroupPolicy:
    return GroupPolicy("G", broker_major=major, consume_mode=ConsumeMode.ORDERLY, **kw)


@pytest.mark.parametrize(
    ("context_ms", "consumer_ms", "expected"),
    [(-1, 1000, 1000), (-1, 5, 10), (-1, 60_000, 30_000), (2_000, 1000, 2_000), (1, 1000, 10), (40_000, 1000, 30_000)],
)
def test_orderly_suspend_time_clamped(context_ms, consumer_ms, expected):
    hop = next_hop(
        orderly(suspend_current_queue_time_millis=consumer_ms),
        fail(0, outcome=ConsumeOutcome.SUSPEND, suspend_current_queue_time_millis=context_ms),
    )
    assert hop.action is HopAction.ORDERLY_SUSPEND
    assert hop.delay_ms == expected


def test_orderly_suspend_increments_locally_only():
    hop = next_hop(orderly(), fail(41, outcome=ConsumeOutcome.SUSPEND))
    assert (hop.reconsume_times, hop.stored_reconsume_times) == (42, 41)
    assert (hop.topic, hop.delay_level, hop.properties) == ("ORDER_CREATED", None, {})


def test_orderly_default_retries_forever():
    path = expected_path(orderly(), limit=10)
    assert (path.final, path.truncated, path.deliveries) == (FinalState.RETRYING_FOREVER, True, 10)
    assert {s.next.action for s in path.steps} == {HopAction.ORDERLY_SUSPEND}
    assert path.steps[-1].cumulative_ms == 10_000


def test_orderly_4x_past_max_republishes_and_waits_in_schedule_topic():
    hop = next_hop(orderly(4, max_reconsume_times=2), fail(2, outcome=ConsumeOutcome.SUSPEND, uniq_key="UQ"))
    assert hop.action is HopAction.DEAD_LETTER and hop.via_schedule_topic
    assert (hop.topic, hop.queue_id, hop.delay_level, hop.delay_ms) == ("SCHEDULE_TOPIC_XXXX", 4, 5, 1 * M)
    assert hop.reconsume_times == 2  # §12: DLQ copy reconsumeTimes = r
    assert hop.properties == {
        "RETRY_TOPIC": "ORDER_CREATED",
        "ORIGIN_MESSAGE_ID": "UQ",
        "RECONSUME_TIME": "2",
        "MAX_RECONSUME_TIMES": "2",
        "DELAY": "5",
        "REAL_TOPIC": "%DLQ%G",
        "REAL_QID": "0",
    }


def test_orderly_5x_past_max_straight_to_dlq():
    hop = next_hop(orderly(5, max_reconsume_times=2), fail(2, outcome=ConsumeOutcome.SUSPEND, uniq_key="UQ"))
    assert hop.action is HopAction.DEAD_LETTER and not hop.via_schedule_topic
    assert (hop.topic, hop.queue_id, hop.delay_ms, hop.reconsume_times) == ("%DLQ%G", 0, 0, 3)  # max + 1
    assert hop.properties["DELAY"] == "-1"
    assert hop.properties["ORIGIN_MESSAGE_ID"] == "UQ"  # §12: equal to the message's own id


def versioned_orderly(broker: tuple[int, int, int], client: tuple[int, int, int], **kw) -> GroupPolicy:
    return GroupPolicy(
        "G", broker_version=broker, client_version=client, consume_mode=ConsumeMode.ORDERLY, max_reconsume_times=2, **kw
    )


def test_orderly_lock_short_cut_absent_on_broker_5_1_0():
    # 5.1.0 broker and client: RECONSUME_TIME = r = 2, `2 > 2` is false and there is no lock short-cut, so the copy
    # goes back to %RETRY%G with 3 + r and keeps its r: the infinite retry of issue #6163.
    hop = next_hop(versioned_orderly((5, 1, 0), (5, 1, 0)), fail(2, outcome=ConsumeOutcome.SUSPEND))
    assert hop.action is HopAction.REPUBLISHED_RETRY
    assert (hop.topic, hop.destination_topic, hop.delay_level, hop.reconsume_times) == (
        "SCHEDULE_TOPIC_XXXX",
        "%RETRY%G",
        5,
        2,
    )
    path = expected_path(versioned_orderly((5, 1, 0), (5, 1, 0)), limit=6)
    assert (path.final, path.truncated) == (FinalState.RETRYING_FOREVER, True)
    assert [s.next.action for s in path.steps[2:]] == [HopAction.REPUBLISHED_RETRY] * 4


def test_orderly_lock_short_cut_from_broker_5_1_1():
    # A 5.1.0 client still sends r (2 > 2 is false): only the 5.1.1 broker's lock short-cut dead-letters it.
    hop = next_hop(versioned_orderly((5, 1, 1), (5, 1, 0)), fail(2, outcome=ConsumeOutcome.SUSPEND))
    assert (hop.action, hop.topic, hop.reconsume_times) == (HopAction.DEAD_LETTER, "%DLQ%G", 2)
    assert hop.properties["DELAY"] == "-1"
    assert "unexpired lock record" in hop.rule


def test_orderly_client_5_1_1_sends_r_plus_one_so_even_a_5_1_0_broker_dead_letters():
    hop = next_hop(versioned_orderly((5, 1, 0), (5, 1, 1)), fail(2, outcome=ConsumeOutcome.SUSPEND))
    assert (hop.action, hop.topic, hop.reconsume_times) == (HopAction.DEAD_LETTER, "%DLQ%G", 3)
    assert hop.properties["RECONSUME_TIME"] == "3"
    assert "3 > max 2" in hop.rule


def test_orderly_lock_short_cut_is_for_lock_holders_only():
    # A broadcasting orderly group takes no queue locks on the broker, so a 5.1.1 broker has nothing to act on.
    policy = versioned_orderly((5, 1, 1), (5, 1, 0), message_model=MessageModel.BROADCASTING)
    assert next_hop(policy, fail(2, outcome=ConsumeOutcome.SUSPEND)).action is HopAction.REPUBLISHED_RETRY


@pytest.mark.parametrize(("client", "origin"), [((4, 9, 3), None), ((4, 9, 4), "UQ")])
def test_orderly_send_back_keeps_a_fresh_origin_id_from_client_4_9_4(client, origin):
    # ConsumeMessageOrderlyService#sendMessageBack calls setOriginMessageId after setProperties from 4.9.4 on.
    policy = versioned_orderly((4, 9, 4), client)
    hop = next_hop(policy, fail(2, outcome=ConsumeOutcome.SUSPEND, uniq_key="UQ"))
    assert hop.properties.get("ORIGIN_MESSAGE_ID") == origin


def test_orderly_failed_republish_keeps_suspending():
    hop = next_hop(
        orderly(4, max_reconsume_times=2),
        fail(2, outcome=ConsumeOutcome.SUSPEND, send_back_fault=SendBackFault.RPC_AND_FALLBACK_FAILED),
    )
    assert (hop.action, hop.reconsume_times, hop.delay_ms) == (HopAction.ORDERLY_SUSPEND, 3, 1000)


def test_orderly_broadcasting_still_suspends():
    # CMOS has no broadcasting branch in processConsumeResult (4.9.4 / HEAD): unlike §1.3, the retry is local.
    policy = orderly(4, message_model=MessageModel.BROADCASTING)
    assert next_hop(policy, fail(0, outcome=ConsumeOutcome.SUSPEND)).action is HopAction.ORDERLY_SUSPEND


# ---------------------------------------------------------------- remoting POP (§1.7, 5.x)


def pop(**kw) -> GroupPolicy:
    return GroupPolicy("G", broker_major=5, consume_mode=ConsumeMode.POP, **kw)


def test_pop_needs_a_5x_broker():
    with pytest.raises(ValueError, match=r"5\.x"):
        next_hop(GroupPolicy("G", consume_mode=ConsumeMode.POP), fail(0))


@pytest.mark.parametrize(("r", "delay_s"), [(0, 10), (1, 30), (2, 60), (11, 600), (15, 7200)])
def test_pop_invisible_retry_uses_pop_delay_level_indexed_by_r(r, delay_s):
    hop = next_hop(pop(max_reconsume_times=20), fail(r))
    assert hop.action is HopAction.INVISIBLE_RETRY
    assert (hop.topic, hop.queue_id, hop.delay_ms) == ("%RETRY%G_ORDER_CREATED", 0, delay_s * 1000)
    assert hop.reconsume_times == r + 1


def test_pop_index_clamped_to_last_entry():
    assert next_hop(pop(max_reconsume_times=30), fail(20)).delay_ms == 7_200_000


def test_pop_override_is_a_zero_based_index():
    # changePopInvisibleTime uses delayLevel itself as the index: level 2 → popDelayLevel[2] = 60 s, not 5 s
    assert next_hop(pop(), fail(0, delay_level_when_next_consume=2)).delay_ms == 60_000


def test_pop_negative_level_throws_and_waits_for_the_pop_invisible_time():
    assert next_hop(pop(), fail(0, delay_level_when_next_consume=-1)).delay_ms == 60_000
    assert next_hop(pop(pop_invisible_time_ms=20_000), fail(0, delay_level_when_next_consume=-1)).delay_ms == 20_000
    assert next_hop(pop(pop_invisible_time_ms=1_000), fail(0, delay_level_when_next_consume=-1)).delay_ms == 60_000


def test_pop_v2_retry_topic():
    assert next_hop(pop(enable_retry_topic_v2=True), fail(0)).topic == "%RETRY%G+ORDER_CREATED"


def test_pop_never_dlq_over_max_dropped_after_two_times_7200s_since_born():
    hop = next_hop(pop(max_reconsume_times=3), fail(3, born_at_ms=0, failed_at_ms=14_400_001))
    assert (hop.action, hop.delay_ms, hop.topic) == (HopAction.DROPPED, 0, None)


def test_pop_over_max_redelays_by_elapsed_time_then_drops_on_arrival():
    # 100 s since born: the largest entry <= 100 s is 60 s (index 2), so popDelayLevel[3] = 120 s
    hop = next_hop(pop(max_reconsume_times=3), fail(3, born_at_ms=0, failed_at_ms=100_000))
    assert (hop.action, hop.delay_ms, hop.ready_at_ms, hop.reconsume_times) == (HopAction.DROPPED, 120_000, 220_000, 4)
    assert "processPopResult" in hop.rule


def test_pop_path_max_3():
    path = expected_path(pop(max_reconsume_times=3))
    assert [s.next.delay_ms for s in path.steps] == [10_000, 30_000, 60_000, 120_000]
    assert (path.final, path.deliveries, path.final_topic) == (FinalState.DROPPED, 4, None)


def test_pop_over_max_client_5_3_0_consumes_the_revived_copy_again():
    # No arrival ack before client 5.3.1: the copy revived by checkNeedAckOrDelay reaches the listener again.
    hop = next_hop(pop(max_reconsume_times=3, client_version=(5, 3, 0)), fail(3, born_at_ms=0, failed_at_ms=100_000))
    assert (hop.action, hop.topic, hop.queue_id) == (HopAction.INVISIBLE_RETRY, "%RETRY%G_ORDER_CREATED", 0)
    assert (hop.delay_ms, hop.ready_at_ms, hop.reconsume_times) == (120_000, 220_000, 4)
    assert "5.3.0 < 5.3.1" in hop.rule


def test_pop_over_max_client_5_3_1_acks_the_revived_copy_on_arrival():
    hop = next_hop(pop(max_reconsume_times=3, client_version=(5, 3, 1)), fail(3, born_at_ms=0, failed_at_ms=100_000))
    assert (hop.action, hop.topic, hop.delay_ms, hop.ready_at_ms, hop.reconsume_times) == (
        HopAction.DROPPED,
        None,
        120_000,
        220_000,
        4,
    )
    assert "client ≥ 5.3.1" in hop.rule


def test_pop_path_client_5_3_0_retries_over_max_until_four_hours_since_born():
    # r 3 at 100 s: popDelayLevel[3] = 120 s; r 4 at 220 s: [5] = 240 s; r 5 at 460 s: [9] = 480 s; r 6 at 940 s:
    # [12] = 1200 s; r 7 at 2140 s: [14] = 3600 s; r 8 at 5740 s: [15] = 7200 s; r 9 at 12940 s: [16] → last entry
    # 7200 s; r 10 at 20140 s > 14400 s → acked and dropped.
    path = expected_path(pop(max_reconsume_times=3, client_version=(5, 3, 0)))
    assert [s.next.delay_ms // 1000 for s in path.steps] == [10, 30, 60, 120, 240, 480, 1200, 3600, 7200, 7200, 0]
    assert (path.final, path.deliveries) == (FinalState.DROPPED, 11)
    assert path.steps[-1].failed_reconsume_times == 10
    assert expected_path(pop(max_reconsume_times=3, client_version=(5, 3, 1))).deliveries == 4


def test_pop_needs_a_5x_client():
    with pytest.raises(ValueError, match=r"5\.x client, not 4\.9\.4"):
        next_hop(pop(client_version=(4, 9, 4)), fail(0))


def test_pop_with_huge_max_is_cut_at_limit():
    path = expected_path(pop(max_reconsume_times=INT_MAX), limit=20)
    assert (path.final, path.truncated, path.deliveries) == (FinalState.RETRYING_FOREVER, True, 20)


# ---------------------------------------------------------------- general


def test_success_has_no_next_hop():
    with pytest.raises(ValueError, match="SUCCESS"):
        next_hop(GroupPolicy("G"), fail(0, outcome=ConsumeOutcome.SUCCESS))


def test_path_ending_in_success_is_consumed():
    # A4: RECONSUME_LATER while reconsumeTimes < 2, then CONSUME_SUCCESS → 3 deliveries, CONSUMED
    def listener(r: int) -> FailedDelivery:
        return FailedDelivery(r, outcome=ConsumeOutcome.SUCCESS if r >= 2 else ConsumeOutcome.RECONSUME_LATER)

    path = expected_path(GroupPolicy("G", max_reconsume_times=3), failure=listener)
    assert (path.final, path.deliveries, len(path.steps)) == (FinalState.CONSUMED, 3, 2)


def test_start_ms_offsets_ready_times_not_cumulative():
    path = expected_path(GroupPolicy("G", max_reconsume_times=1), start_ms=5_000)
    assert path.steps[0].next.ready_at_ms == 15_000
    assert path.steps[0].cumulative_ms == 10_000


def test_group_policy_validation():
    with pytest.raises(ValueError, match="broker_major"):
        GroupPolicy("G", broker_major=3)
    with pytest.raises(ValueError, match="at least one level"):
        DelayLevelTable(())
    with pytest.raises(ValueError, match=r"broker_major 4 contradicts broker_version 5\.2\.0"):
        GroupPolicy("G", broker_major=4, broker_version=(5, 2, 0))
    with pytest.raises(ValueError, match=r"client_version 6\.0\.0"):
        GroupPolicy("G", client_version=(6, 0, 0))
    with pytest.raises(ValueError, match=r"enable_retry_topic_v2 needs broker 5\.2\.0 or later.*5\.1\.4"):
        GroupPolicy("G", broker_version=(5, 1, 4), enable_retry_topic_v2=True)


@pytest.mark.parametrize(
    ("kwargs", "broker", "client", "major"),
    [
        ({}, (4, 9, 8), (4, 9, 8), 4),  # a bare major stands for its newest release
        ({"broker_major": 5}, (5, 3, 3), (5, 3, 3), 5),
        ({"broker_version": (5, 2, 0)}, (5, 2, 0), (5, 2, 0), 5),  # the client defaults to the broker's version
        ({"broker_version": (5, 2, 0), "client_version": (4, 9, 4)}, (5, 2, 0), (4, 9, 4), 5),
        ({"broker_major": 5, "broker_version": (5, 1, 0)}, (5, 1, 0), (5, 1, 0), 5),
    ],
)
def test_group_policy_versions(kwargs, broker, client, major):
    policy = GroupPolicy("G", **kwargs)
    assert (policy.broker_version, policy.client_version, policy.broker_major) == (broker, client, major)


def test_group_delay_level_applies_unless_the_failure_sets_its_own():
    policy = GroupPolicy("G", delay_level_when_next_consume=2)
    assert (next_hop(policy, fail(0)).delay_level, next_hop(policy, fail(7)).delay_level) == (2, 2)
    hop = next_hop(policy, fail(0, delay_level_when_next_consume=-1))  # one failure's own -1 wins
    assert (hop.action, hop.reconsume_times) == (HopAction.DEAD_LETTER, 1)
    assert next_hop(policy, fail(0, delay_level_when_next_consume=0)).delay_level == 3  # so does an explicit 0


def test_group_delay_level_2_path_and_minus_1_path():
    path = expected_path(GroupPolicy("G", delay_level_when_next_consume=2))
    assert [s.next.delay_level for s in path.steps[:-1]] == [2] * 16
    assert (path.final, path.deliveries, path.steps[-2].cumulative_ms) == (FinalState.DEAD_LETTERED, 17, 80_000)
    path = expected_path(GroupPolicy("G", delay_level_when_next_consume=-1))
    assert (path.final, path.deliveries, path.final_topic) == (FinalState.DEAD_LETTERED, 1, "%DLQ%G")


def test_group_delay_level_above_the_table_is_clamped():
    path = expected_path(GroupPolicy("G", delay_level_when_next_consume=5, delay_levels=DelayLevelTable.parse("1s 2s")))
    assert {(s.next.requested_delay_level, s.next.delay_level, s.next.delay_ms) for s in path.steps[:-1]} == {
        (5, 2, 2_000)
    }


def test_group_delay_level_is_a_pop_index_for_pop_groups():
    assert next_hop(pop(delay_level_when_next_consume=3), fail(0)).delay_ms == 120_000  # popDelayLevel[3]


def test_template_path_starts_at_its_reconsume_times():
    path = expected_path(GroupPolicy("G"), failure=FailedDelivery(14))
    assert [s.failed_reconsume_times for s in path.steps] == [14, 15, 16]
    assert [s.next.delay_ms for s in path.steps] == [1 * H, 2 * H, 0]
    assert path.deliveries == 3


def test_broadcasting_pop_consumer_drops():
    policy = GroupPolicy("G", broker_major=5, consume_mode=ConsumeMode.POP, message_model=MessageModel.BROADCASTING)
    assert next_hop(policy, fail(0)).action is HopAction.DROPPED


def test_timeout_with_failed_rpc_republishes_with_three_plus_r():
    f = fail(5, outcome=ConsumeOutcome.TIMEOUT, send_back_fault=SendBackFault.RPC_FAILED)
    hop = next_hop(GroupPolicy("G"), f)
    assert (hop.action, hop.delay_level, hop.reconsume_times) == (HopAction.REPUBLISHED_RETRY, 8, 6)


def test_timeout_with_everything_failing_waits_for_the_next_sweep():
    f = fail(5, outcome=ConsumeOutcome.TIMEOUT, send_back_fault=SendBackFault.RPC_AND_FALLBACK_FAILED)
    hop = next_hop(GroupPolicy("G", consume_timeout_minutes=15), f)
    assert (hop.action, hop.delay_ms, hop.reconsume_times) == (HopAction.LOCAL_RESUBMIT, 15 * M, 5)
