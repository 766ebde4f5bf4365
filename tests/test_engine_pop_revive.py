"""RocketMQ 5.2 to 5.5 pop retry rules (docs/rocketmq-rules.md §2.4, §5.9): pop retry topic names read back, the
broker switches by release, and PopConsumerService's revive back-off and drop."""

from __future__ import annotations

import dataclasses
import re

import pytest

from rocketmq_retry.engine.model import (
    POP_RETRY_TOPIC_V2_RX,
    GroupPolicy,
    Protocol,
    RetryTopicName,
    RetryTopicRule,
    parse_retry_topic,
    pop_retry_topic,
)
from rocketmq_retry.engine.pop_revive import (
    POP_CONSUMER_SERVICE,
    POP_REVIVE_SERVICE,
    kv_revive_give_up_after_ms,
    kv_revive_retry,
    pop_revive_skip_if_group_absent,
    revive_service,
    revive_skipped_when_group_absent,
)

R = RetryTopicRule


@pytest.mark.parametrize(
    ("name", "known", "business", "expected"),
    [
        # V2: '+' is not a legal topic/group character, so the split is exact whatever '_' the names hold
        ("%RETRY%GID_a_b+ORDER_EVENTS", (), None, RetryTopicName("GID_a_b", "ORDER_EVENTS", R.V2)),
        ("%RETRY%G+T+U", (), None, None),  # KeyBuilder.parseGroup needs exactly two parts; no broker builds this
        ("%RETRY%+T", (), None, None),
        ("ORDER_EVENTS", (), None, None),
        # a configured group's plain retry topic, even when the name ends with _<its topic>
        ("%RETRY%GID_ORDERS", ("GID_ORDERS",), "ORDERS", RetryTopicName("GID_ORDERS", None, R.KNOWN_GROUP)),
        # V1 with a configured group: the sample's names (README §3)
        (
            "%RETRY%GID_push_inventory_ORDER_EVENTS",
            ("GID_push_inventory", "GID_simple_ledger"),
            None,
            RetryTopicName("GID_push_inventory", "ORDER_EVENTS", R.KNOWN_GROUP_PREFIX),
        ),
        # issue #9632's collision: both groups configured; the business topic picks, else the longest group
        ("%RETRY%A_B_C", ("A", "A_B"), "B_C", RetryTopicName("A", "B_C", R.KNOWN_GROUP_PREFIX)),
        ("%RETRY%A_B_C", ("A", "A_B"), None, RetryTopicName("A_B", "C", R.KNOWN_GROUP_PREFIX)),
        # no configured group: a pop copy's business topic (e.g. from PGROUP of a gRPC-produced message)
        ("%RETRY%GID_x_ORDER_EVENTS", (), "ORDER_EVENTS", RetryTopicName("GID_x", "ORDER_EVENTS", R.BUSINESS_TOPIC)),
        # a business topic that is itself a retry topic says nothing about the split
        ("%RETRY%G_T", (), "%RETRY%G_T", RetryTopicName("G_T", None, R.AS_GROUP)),
        # nothing known: the whole rest, as KeyBuilder.parseGroup reads a V1 name
        ("%RETRY%GID_orders", (), None, RetryTopicName("GID_orders", None, R.AS_GROUP)),
    ],
)
def test_parse_retry_topic(
    name: str, known: tuple[str, ...], business: str | None, expected: RetryTopicName | None
) -> None:
    assert parse_retry_topic(name, known, business) == expected


def test_parse_reads_back_what_pop_retry_topic_builds() -> None:
    for v2 in (False, True):
        name = pop_retry_topic("GID_a", "T_b", v2)
        parsed = parse_retry_topic(name, ("GID_a",))
        assert parsed is not None and (parsed.group, parsed.topic) == ("GID_a", "T_b")


def test_v2_regex_matches_the_parser() -> None:
    m = re.match(POP_RETRY_TOPIC_V2_RX, "%RETRY%GID_a_b+ORDER_EVENTS")
    assert m and m.groups() == ("GID_a_b", "ORDER_EVENTS")
    assert re.match(POP_RETRY_TOPIC_V2_RX, "%RETRY%GID_a_b_ORDER_EVENTS") is None


def test_kv_revive_back_off_grows_the_invisible_time_then_drops_at_16() -> None:
    # PopConsumerService#revive: invisibleTime + 1000 * REWRITE_INTERVALS_IN_SECONDS[attemptTimes], due from now
    first = kv_revive_retry(60_000, 0)
    assert (first.attempt_times, first.invisible_time_ms, first.due_after_ms, first.dropped) == (
        1,
        70_000,
        70_000,
        False,
    )
    assert kv_revive_retry(70_000, 1).invisible_time_ms == 100_000  # + 30 s
    assert kv_revive_retry(60_000, 15).invisible_time_ms == 60_000 + 7_200_000  # the last interval, 2 h
    last = kv_revive_retry(60_000, 16)  # attemptTimes >= popReviveMaxAttemptTimes (16): "drop record" (L-B16)
    assert (last.dropped, last.invisible_time_ms, last.due_after_ms) == (True, None, None)
    assert kv_revive_retry(60_000, 3, max_attempt_times=3).dropped
    # 16 waits of 60 s plus the cumulative back-offs: 16 * 60 s + sum_k sum_{i<=k} interval_i
    assert kv_revive_give_up_after_ms(60_000) == 52_570_000
    assert kv_revive_give_up_after_ms(0, max_attempt_times=2) == 10_000 + 40_000
    with pytest.raises(ValueError, match="must not be negative"):
        kv_revive_retry(-1, 0)


def test_group_absent_skip_by_service_and_release() -> None:
    classic = GroupPolicy("G", broker_version=(5, 3, 3), protocol=Protocol.GRPC)
    kv_533 = GroupPolicy("G", broker_version=(5, 3, 3), pop_consumer_kv_service_enable=True)
    kv_550 = GroupPolicy("G", broker_version=(5, 5, 0), pop_consumer_kv_service_enable=True)
    kv_550_off = GroupPolicy(
        "G", broker_version=(5, 5, 0), pop_consumer_kv_service_enable=True, pop_revive_skip_if_group_absent=False
    )
    assert [revive_service(p) for p in (classic, kv_533)] == [POP_REVIVE_SERVICE, POP_CONSUMER_SERVICE]
    # PopReviveService skips a group without config in every 5.x ("can not get cid"); PopConsumerService from 5.5.0
    assert [revive_skipped_when_group_absent(p) for p in (classic, kv_533, kv_550, kv_550_off)] == [
        True,
        False,
        True,
        False,
    ]
    # None = the broker's default: true from 5.5.0, and before it the record is revived (the switch does not exist)
    assert (kv_533.pop_revive_skip_if_group_absent, kv_550.pop_revive_skip_if_group_absent) == (None, None)
    assert [pop_revive_skip_if_group_absent(p) for p in (kv_533, kv_550, kv_550_off)] == [False, True, False]
    # dataclasses.replace keeps working across releases (the what-if varies policies this way)
    assert dataclasses.replace(kv_550, broker_version=(5, 3, 3)).pop_revive_skip_if_group_absent is None


def test_switches_refused_on_brokers_without_them() -> None:
    with pytest.raises(ValueError, match=r"pop_consumer_kv_service_enable needs broker 5\.3\.2 or later.*5\.3\.1"):
        GroupPolicy("G", broker_version=(5, 3, 1), pop_consumer_kv_service_enable=True)
    with pytest.raises(ValueError, match=r"pop_revive_skip_if_group_absent needs broker 5\.5\.0 or later.*5\.4\.0"):
        GroupPolicy("G", broker_version=(5, 4, 0), pop_revive_skip_if_group_absent=True)
    # false is what a 5.4.0 broker does anyway: accepted by the engine (the configuration refuses the key itself)
    assert GroupPolicy("G", broker_version=(5, 4, 0), pop_revive_skip_if_group_absent=False)
    assert GroupPolicy(
        "G", broker_version=(5, 3, 2), pop_consumer_kv_service_enable=True
    ).pop_consumer_kv_service_enable
