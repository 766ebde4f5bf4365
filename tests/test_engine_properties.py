"""Properties of the engine over many policies and failure sequences (hypothesis, bounded to stay fast)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_retry.engine import (
    ConsumeMode,
    ConsumeOutcome,
    DelayLevelTable,
    FailedDelivery,
    FinalState,
    GroupPolicy,
    HopAction,
    MessageModel,
    Protocol,
    SendBackFault,
    expected_path,
    next_hop,
)

FAST = settings(max_examples=60, deadline=None)

tables = st.lists(st.integers(min_value=1, max_value=7_200), min_size=1, max_size=20).map(
    lambda secs: DelayLevelTable.parse(" ".join(f"{s}s" for s in secs))
)


@st.composite
def remoting_policies(draw, modes=(ConsumeMode.CONCURRENTLY, ConsumeMode.ORDERLY)):
    mode = draw(st.sampled_from(modes))
    return GroupPolicy(
        "G",
        broker_major=draw(st.sampled_from([4, 5])),
        delay_levels=draw(tables),
        consume_mode=mode,
        max_reconsume_times=draw(st.integers(min_value=-1, max_value=20)),
        suspend_current_queue_time_millis=draw(st.integers(min_value=-1, max_value=40_000)),
    )


BROKER_FAULTS = [SendBackFault.NONE, SendBackFault.NONE, SendBackFault.RPC_FAILED]
ALL_FAULTS = [*BROKER_FAULTS, SendBackFault.RPC_AND_FALLBACK_FAILED]


@st.composite
def failure_scripts(draw, faults=ALL_FAULTS):
    """A callable r -> FailedDelivery drawing an outcome, override and send-back fault per delivery."""
    outcomes = draw(
        st.lists(
            st.tuples(
                st.sampled_from(
                    [
                        ConsumeOutcome.RECONSUME_LATER,
                        ConsumeOutcome.EXCEPTION,
                        ConsumeOutcome.TIMEOUT,
                        ConsumeOutcome.SUSPEND,
                        ConsumeOutcome.RETURN_NULL,
                    ]
                ),
                st.integers(min_value=-1, max_value=25),
                st.sampled_from(faults),
            ),
            min_size=1,
            max_size=12,
        )
    )

    def script(r: int) -> FailedDelivery:
        outcome, level, fault = outcomes[r % len(outcomes)]
        return FailedDelivery(r, outcome=outcome, original_topic="T", delay_level_when_next_consume=level,
                              send_back_fault=fault, uniq_key="UQ", offset_msg_id="OFF")  # fmt: skip

    return script


@FAST
@given(remoting_policies(), failure_scripts(faults=BROKER_FAULTS))
def test_reconsume_times_strictly_increase_along_a_remoting_lifecycle(policy, script):
    # Whenever every failure reaches the broker (send-back or its re-publish) or is an orderly local suspend. A
    # failed re-publish (local resubmit) breaks this in real RocketMQ: see the test below.
    path = expected_path(policy, failure=script, limit=40)
    seen = [s.failed_reconsume_times for s in path.steps]
    assert all(a < b for a, b in itertools.pairwise(seen))
    for step, following in zip(path.steps, path.steps[1:], strict=False):
        assert step.next.reconsume_times == following.failed_reconsume_times


def test_local_resubmit_counter_is_lost_when_the_broker_copies_again():
    # Two local resubmits bump r to 2 in client memory only; the next send-back reaches the broker, which copies
    # the stored message (r 0) with r + 1 = 1: deliveries see reconsumeTimes 0, 1, 2, 1 (§1.3, §2.2 step 7).
    faults = [SendBackFault.RPC_AND_FALLBACK_FAILED, SendBackFault.RPC_AND_FALLBACK_FAILED, SendBackFault.NONE]

    def script(r: int) -> FailedDelivery:
        return FailedDelivery(r, send_back_fault=faults[min(r, 2)] if r < 3 else SendBackFault.NONE)

    path = expected_path(GroupPolicy("G", max_reconsume_times=3), failure=script, limit=4)
    assert [s.failed_reconsume_times for s in path.steps] == [0, 1, 2, 1]


@FAST
@given(remoting_policies(), failure_scripts())
def test_nothing_follows_a_terminal_hop(policy, script):
    path = expected_path(policy, failure=script, limit=40)
    assert not any(s.next.terminal for s in path.steps[:-1])
    if path.final in (FinalState.DEAD_LETTERED, FinalState.DROPPED):
        assert path.steps[-1].next.terminal
        assert not path.truncated
    if path.final is FinalState.DEAD_LETTERED:
        assert path.final_topic == "%DLQ%G"


@FAST
@given(remoting_policies(), failure_scripts())
def test_no_schedule_delay_exceeds_the_max_level(policy, script):
    table = policy.delay_levels
    longest = max(table.levels_ms)
    for step in expected_path(policy, failure=script, limit=40).steps:
        hop = step.next
        if hop.via_schedule_topic:
            assert 1 <= hop.delay_level <= table.max_level
            assert hop.delay_ms == table.levels_ms[hop.delay_level - 1] <= longest
            assert hop.queue_id == hop.delay_level - 1
            assert hop.properties["DELAY"] == str(hop.delay_level)
        if hop.action == HopAction.ORDERLY_SUSPEND:
            assert 10 <= hop.delay_ms <= 30_000


@FAST
@given(
    st.sampled_from([4, 5]),
    st.sampled_from(
        [
            (Protocol.REMOTING, ConsumeMode.CONCURRENTLY),
            (Protocol.GRPC, ConsumeMode.CONCURRENTLY),
            (Protocol.GRPC, ConsumeMode.ORDERLY),
        ]
    ),
    st.integers(min_value=0, max_value=100),
    failure_scripts(),
)
def test_broadcasting_never_produces_a_retry(major, kind, r, script):
    protocol, mode = kind
    if protocol == Protocol.GRPC:
        major = 5
    policy = GroupPolicy("G", broker_major=major, protocol=protocol, consume_mode=mode,
                         message_model=MessageModel.BROADCASTING)  # fmt: skip
    hop = next_hop(policy, script(r))
    assert hop.action is HopAction.DROPPED
    assert hop.topic is None


@FAST
@given(remoting_policies(), failure_scripts())
def test_terminating_path_length_is_deliveries_minus_one(policy, script):
    path = expected_path(policy, failure=script, limit=40)
    retries = [s for s in path.steps if not s.next.terminal]
    if path.final in (FinalState.DEAD_LETTERED, FinalState.DROPPED):
        assert len(retries) == path.deliveries - 1
        assert len(path.steps) == path.deliveries


@FAST
@given(
    st.integers(min_value=0, max_value=30),
    st.sampled_from([ConsumeMode.CONCURRENTLY, ConsumeMode.ORDERLY, ConsumeMode.SIMPLE]),
)
def test_grpc_deliveries_are_max_attempts(retry_max_times, mode):
    path = expected_path(GroupPolicy("G", broker_major=5, protocol=Protocol.GRPC, consume_mode=mode,
                                     retry_max_times=retry_max_times))  # fmt: skip
    assert path.final is FinalState.DEAD_LETTERED
    assert path.deliveries == retry_max_times + 1
