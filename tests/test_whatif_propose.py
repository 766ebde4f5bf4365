"""``whatif.propose``: the smallest maximum of retries that outlasts an incident, with every expected N worked out
by hand from RocketMQ's tables (the engine is what is being checked, so the numbers are not read from it).

The broker's default messageDelayLevel is 1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h; a remoting
concurrent send-back after reconsume times r waits level 3 + r (§2.2), so deliveries come at 0, 10 s, 40 s, 1m40,
3m40, 6m40, 10m40, 15m40, 21m40, … after the first: the k-th retry is delivery k + 1, at the sum of levels 3..k+2.
"""

from __future__ import annotations

import pytest

from rocketmq_retry import contract
from rocketmq_retry.engine import (
    ConsumeMode,
    ConsumeOutcome,
    CustomizedPolicy,
    DelayLevelTable,
    GroupPolicy,
    MessageModel,
    Protocol,
)
from rocketmq_retry.whatif import PolicyChange, propose
from rocketmq_retry.whatif.propose import GRPC_MAX, MAX_PROPOSED, REMOTING_MAX

S, M, H = 1_000, 60_000, 3_600_000
CONCURRENT_MAX_2 = GroupPolicy("G", max_reconsume_times=2)


@pytest.mark.parametrize(
    ("duration_ms", "n", "last_delivery_ms"),
    [
        (14 * M + 50 * S, 7, 15 * M + 40 * S),  # 10m40 < 14m50 <= 15m40
        (15 * M + 40 * S, 7, 15 * M + 40 * S),  # a delivery at the very end is after it (ended_at: first consumption)
        (15 * M + 40 * S + 1, 8, 21 * M + 40 * S),
        (41 * S, 3, 1 * M + 40 * S),
        (4 * H, 16, 4 * H + 45 * M + 40 * S),  # the whole default schedule, 16 retries (the -1 default)
        (24 * H, 26, 24 * H + 45 * M + 40 * S),  # past level 18 every retry waits the last level, 2 h (§3.2)
    ],
)
def test_remoting_concurrent_takes_levels_3_plus_r_of_the_broker_table(
    duration_ms: int, n: int, last_delivery_ms: int
) -> None:
    p = propose(CONCURRENT_MAX_2, duration_ms)
    assert (p.knob, p.configured, p.effective, p.proposed, p.reason) == (REMOTING_MAX, 2, 2, n, None)
    assert p.change == PolicyChange(max_reconsume_times=n)
    assert p.option_args() == ["--max-reconsume-times", str(n)]
    assert p.under is not None and (p.under.end, p.under.deliveries, p.under.after_ms) == (
        contract.CONSUMED,
        n + 1,
        last_delivery_ms,
    )
    # under the configured maximum: delivered at 0, 10 s and 40 s, then straight to the DLQ
    assert (p.now.end, p.now.deliveries, p.now.after_ms) == (contract.DEAD_LETTERED, 3, 40 * S)


def test_the_words_say_the_change_and_both_ends() -> None:
    assert propose(CONCURRENT_MAX_2, 14 * M + 50 * S).words() == (
        "maxReconsumeTimes 2 → 7: a message that first fails when the incident starts is consumed on delivery 8, "
        "15m40s after the first, when the incident (14m50s) is over; under the configured policy it is "
        "dead-lettered after 3 deliveries, 40s after the first."
    )
    default = propose(GroupPolicy("G"), 5 * H)
    assert default.words().startswith("maxReconsumeTimes -1 (16) → 17: ")


def test_a_short_custom_table_repeats_its_last_level() -> None:
    # "1s 5s 10s": level 3 is 10 s and every later level is clamped to it (§3.2), so N = ceil(95 s / 10 s)
    policy = GroupPolicy("G", max_reconsume_times=2, delay_levels=DelayLevelTable.parse("1s 5s 10s"))
    assert propose(policy, 95 * S).proposed == 10
    assert propose(policy, 100 * S).proposed == 10
    assert propose(policy, 100 * S + 1).proposed == 11


def test_a_consume_timeout_is_sent_back_at_level_3_every_time() -> None:
    # ProcessQueue#cleanExpiredMsg: level 3 (10 s) whatever r (§1.6): 10 minutes is 60 retries
    p = propose(CONCURRENT_MAX_2, 10 * M, ConsumeOutcome.TIMEOUT)
    assert p.proposed == 60 and p.under is not None and p.under.after_ms == 10 * M
    assert (p.now.deliveries, p.now.after_ms) == (3, 20 * S)


def test_the_configured_policy_may_already_outlast_it() -> None:
    p = propose(GroupPolicy("G"), 15 * M)  # -1: 16 retries, the 8th delivery at 15m40
    assert (p.proposed, p.change, p.option_args()) == (None, None, [])
    assert p.reason is not None and p.reason.startswith("the configured policy already outlasts the incident")
    assert p.words().startswith("No change proposed: the configured policy already outlasts")


def test_orderly() -> None:
    # -1 is Integer.MAX_VALUE for an orderly consumer (§4): it suspends the queue, 1 s a time, and never gives up
    forever = propose(GroupPolicy("G", consume_mode=ConsumeMode.ORDERLY), 3 * H)
    assert forever.proposed is None and forever.reason is not None
    assert forever.reason.startswith("the configured policy never gives a message up")
    # a finite maximum: one retry per suspend (1000 ms), so 90 s takes 90
    finite = propose(GroupPolicy("G", consume_mode=ConsumeMode.ORDERLY, max_reconsume_times=5), 90 * S)
    assert (finite.knob, finite.proposed) == (REMOTING_MAX, 90)


def test_no_maximum_helps_a_consumer_that_never_retries() -> None:
    broadcast = propose(GroupPolicy("G", message_model=MessageModel.BROADCASTING), 90 * S)
    assert broadcast.proposed is None and broadcast.reason is not None
    assert broadcast.reason.startswith(f"even with maxReconsumeTimes {MAX_PROPOSED}, a message that first fails ")
    assert "dropped after 1 delivery" in broadcast.reason and "§1.3 BROADCASTING" in broadcast.reason
    # delayLevelWhenNextConsume -1: every failure goes straight to the DLQ (§1.5, §2.2 step 10)
    straight = propose(GroupPolicy("G", delay_level_when_next_consume=-1), 90 * S)
    assert straight.reason is not None and "dead-lettered after 1 delivery" in straight.reason
    assert "delayLevel < 0" in straight.reason


FIVE = {"broker_major": 5}


def test_grpc_push_follows_the_retry_policy_and_retry_max_times() -> None:
    # CustomizedRetryPolicy's built-in 1s 5s 10s 30s 1m 2m 3m 4m …: retries at 1, 6, 16, 46, 106, 226, 406, 646 s
    p = propose(GroupPolicy("G", protocol=Protocol.GRPC, retry_max_times=3, **FIVE), 10 * M)
    assert (p.knob, p.proposed, p.change) == (GRPC_MAX, 8, PolicyChange(retry_max_times=8))
    assert p.under is not None and p.under.after_ms == 10 * M + 46 * S
    # … 3346 s, then 20m, 30m, 1h, 2h: 9946 s < 3 h <= 17146 s, the 18th retry
    assert propose(GroupPolicy("G", protocol=Protocol.GRPC, **FIVE), 3 * H).proposed == 18
    # a customized list of its own: 30 s each
    own = GroupPolicy("G", protocol=Protocol.GRPC, retry_max_times=1, retry_policy=CustomizedPolicy((30 * S,)), **FIVE)
    assert propose(own, 5 * M).proposed == 10


def test_grpc_fifo_and_simple_consumer() -> None:
    fifo = GroupPolicy("G", protocol=Protocol.GRPC, consume_mode=ConsumeMode.ORDERLY, retry_max_times=3, **FIVE)
    assert propose(fifo, 10 * M).proposed == 8  # local retries with the same policy's delays (§5.3)
    null = propose(fifo, 10 * M, ConsumeOutcome.RETURN_NULL)  # a null result skips the local retries (§5.3)
    assert null.proposed is None and null.reason is not None and "listener returned null" in null.reason
    simple = GroupPolicy("G", consume_mode=ConsumeMode.SIMPLE, retry_max_times=3, **FIVE)
    p = propose(simple, 10 * M)  # invisibleDuration 15 s a retry (§5.5): 40 retries
    assert (p.knob, p.proposed) == (GRPC_MAX, 40)


def test_a_negative_length_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot end before it starts"):
        propose(CONCURRENT_MAX_2, -1)
