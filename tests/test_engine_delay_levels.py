"""messageDelayLevel parsing and clamping (§3.1, §3.2, §9 ScheduleMessageServiceTest)."""

from __future__ import annotations

import re

import pytest

from rocketmq_retry.engine import DelayLevelError, DelayLevelTable, GroupPolicy, expected_path

S, M, H = 1_000, 60_000, 3_600_000


def test_default_table_has_18_levels_with_level_equal_index_plus_one():
    table = DelayLevelTable.default()
    assert table.max_level == 18
    assert table.delay_ms(1) == 1 * S
    assert table.delay_ms(3) == 10 * S
    assert table.delay_ms(18) == 2 * H


@pytest.mark.parametrize(
    ("text", "expected_ms"),
    [
        ("1s", (1 * S,)),
        ("2m", (2 * M,)),
        ("3h", (3 * H,)),
        ("1d", (86_400_000,)),
        ("1s 2m 3h 4d", (1 * S, 2 * M, 3 * H, 4 * 86_400_000)),
        ("0s", (0,)),
        ("5s 8s ", (5 * S, 8 * S)),  # Java's split drops trailing empty tokens
        ("+5s", (5 * S,)),  # Long.parseLong accepts a leading plus sign
        ("٥s", (5 * S,)),  # Long.parseLong reads Unicode decimal digits (Character.digit)
    ],
)
def test_parse_units_and_levels(text, expected_ms):
    assert DelayLevelTable.parse(text).levels_ms == expected_ms


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("1s 5x", "unknown unit 'x'"),
        ("1s 5S", "unknown unit 'S'"),  # the unit table is case-sensitive
        ("1s  5s", "empty entry (two spaces in a row)"),
        (" 1s", "empty entry"),  # a leading space is an empty first token
        ("abcs", "not a number"),
        ("1.5s", "not a number"),
        ("1_0s", "not a number"),  # Python's int() would take this, Long.parseLong does not
        ("s", "not a number"),
        ("", "empty"),
        ("   ", "empty"),
        ("99999999999999999999s", "out of range for a Java long"),
    ],
)
def test_bad_strings_rejected_with_reason(text, reason):
    with pytest.raises(DelayLevelError, match=re.escape(reason)):
        DelayLevelTable.parse(text)


def test_level_three_of_a_two_level_table_is_clamped_to_two():
    # ScheduleMessageServiceTest.testDeliverDelayedMessageTimerTask: "5s 8s", delayLevel 3 → maxDelayLevel 2
    table = DelayLevelTable.parse("5s 8s")
    assert table.clamp(3) == 2
    assert table.delay_ms(3) == 8 * S
    assert DelayLevelTable.queue_id(3) == 2  # delayLevel2QueueId(3) == 2
    assert DelayLevelTable.level_of_queue(3) == 4  # otherTest: queueId2DelayLevel(3) == 4


def test_level_zero_does_not_go_through_the_schedule_topic():
    with pytest.raises(ValueError, match="does not go through the schedule topic"):
        DelayLevelTable.default().clamp(0)


def test_negative_entry_is_delivered_at_once():
    assert DelayLevelTable.parse("-5s").delay_ms(1) == 0


def test_multiplication_wraps_like_java_long():
    # tu * num in parseDelayLevel is long arithmetic: 106751991168 days is 9223372036915200000 ms, just above
    # Long.MAX_VALUE, and wraps to that minus 2^64.
    assert DelayLevelTable.parse("106751991168d").levels_ms == (-9_223_372_036_794_351_616,)


# §3.1: retry k is caused by a failure at r = k-1 and uses level 3+r; (level, delay, cumulative) per row.
SPEC_3_1_TABLE = [
    (1, 0, 3, 10 * S, 10 * S),
    (2, 1, 4, 30 * S, 40 * S),
    (3, 2, 5, 1 * M, 1 * M + 40 * S),
    (4, 3, 6, 2 * M, 3 * M + 40 * S),
    (5, 4, 7, 3 * M, 6 * M + 40 * S),
    (6, 5, 8, 4 * M, 10 * M + 40 * S),
    (7, 6, 9, 5 * M, 15 * M + 40 * S),
    (8, 7, 10, 6 * M, 21 * M + 40 * S),
    (9, 8, 11, 7 * M, 28 * M + 40 * S),
    (10, 9, 12, 8 * M, 36 * M + 40 * S),
    (11, 10, 13, 9 * M, 45 * M + 40 * S),
    (12, 11, 14, 10 * M, 55 * M + 40 * S),
    (13, 12, 15, 20 * M, 1 * H + 15 * M + 40 * S),
    (14, 13, 16, 30 * M, 1 * H + 45 * M + 40 * S),
    (15, 14, 17, 1 * H, 2 * H + 45 * M + 40 * S),
    (16, 15, 18, 2 * H, 4 * H + 45 * M + 40 * S),
]


@pytest.mark.parametrize(("hop", "r", "level", "delay", "cumulative"), SPEC_3_1_TABLE)
def test_spec_3_1_table_row(hop, r, level, delay, cumulative):
    step = expected_path(GroupPolicy("G")).steps[hop - 1]
    assert (step.hop, step.failed_reconsume_times) == (hop, r)
    assert (step.next.delay_level, step.next.delay_ms, step.cumulative_ms) == (level, delay, cumulative)
    assert step.next.queue_id == level - 1


def test_spec_3_1_final_row_dlq_immediately_after_17_deliveries():
    path = expected_path(GroupPolicy("G"))
    assert path.deliveries == 17
    assert path.final.value == "DEAD_LETTERED"
    assert path.final_topic == "%DLQ%G"
    last = path.steps[-1]
    assert (last.failed_reconsume_times, last.next.delay_ms, last.cumulative_ms) == (16, 0, 17_140_000)


def test_small_table_clamps_every_level_above_three():
    path = expected_path(GroupPolicy("G", delay_levels=DelayLevelTable.parse("1s 2s 3s"), max_reconsume_times=5))
    retries = [s.next for s in path.steps if not s.next.terminal]
    assert [h.requested_delay_level for h in retries] == [3, 4, 5, 6, 7]
    assert [h.delay_level for h in retries] == [3, 3, 3, 3, 3]
    assert [h.delay_ms for h in retries] == [3 * S] * 5
    assert [h.properties["DELAY"] for h in retries] == ["3"] * 5
    assert path.deliveries == 6
