"""The engine against real RocketMQ 4.9.4 output (tests/data/rocketmq-4.9.4, docs/rocketmq-rules.md §12).

Every consumer row of ground-truth.csv is replayed through ``expected_path`` with the broker's fast delay table and
compared with what the broker and client actually did: delivery count, reconsumeTimes per delivery, gaps between
deliveries, the schedule-topic trips, the final state, and the DLQ copy's reconsumeTimes and properties.
"""

from __future__ import annotations

import csv
import itertools
import json
from datetime import datetime

import pytest

from rocketmq_retry.engine import (
    ConsumeMode,
    ConsumeOutcome,
    DelayLevelTable,
    FailedDelivery,
    FinalState,
    GroupPolicy,
    MessageModel,
    expected_path,
)

FAST = DelayLevelTable.parse("1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 11s 12s 13s 14s 15s 16s 17s 18s")
RETRY_PROPERTIES = ("RETRY_TOPIC", "ORIGIN_MESSAGE_ID", "DELAY", "REAL_TOPIC", "REAL_QID", "WAIT", "RECONSUME_TIME",
                    "MAX_RECONSUME_TIMES")  # fmt: skip
FINAL = {"DLQ": FinalState.DEAD_LETTERED, "CONSUMED": FinalState.CONSUMED, "DROPPED_BROADCAST": FinalState.DROPPED}


def _ms(ts: str) -> int:
    # nanosecond ISO stamps: keep milliseconds
    head, _, frac = ts.rstrip("Z").partition(".")
    return int(datetime.fromisoformat(head + "+00:00").timestamp() * 1000) + int((frac + "000")[:3])


def _rows(samples_dir):
    with open(samples_dir / "ground-truth.csv", newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["consumer_group"]]


def _case(row: dict[str, str]) -> tuple[GroupPolicy, object]:
    scenario = row["scenario"]
    policy = GroupPolicy(
        row["consumer_group"],
        broker_major=4,
        delay_levels=FAST,
        consume_mode=ConsumeMode.ORDERLY if scenario.startswith("D_") else ConsumeMode.CONCURRENTLY,
        message_model=MessageModel.BROADCASTING if row["message_model"] == "BROADCASTING" else MessageModel.CLUSTERING,
        max_reconsume_times=int(row["client_maxReconsumeTimes"]),
        suspend_current_queue_time_millis=1000,
    )
    ok = scenario == "E_OK_GROUP" or (scenario.startswith("D_") and row["keys"] == "ORD-4002")
    fail_outcome = {"A2_THROW": ConsumeOutcome.EXCEPTION, "A3_RETURN_NULL": ConsumeOutcome.RETURN_NULL}.get(
        scenario, ConsumeOutcome.SUSPEND if scenario.startswith("D_") else ConsumeOutcome.RECONSUME_LATER
    )
    level = {"B1_DELAYLEVEL_MINUS1": -1, "B2_DELAYLEVEL_2": 2}.get(scenario, 0)

    def delivery(r: int) -> FailedDelivery:
        success = ok or (scenario == "A4_SUCCEED_ON_RETRY2" and r >= 2)
        return FailedDelivery(
            reconsume_times=r,
            outcome=ConsumeOutcome.SUCCESS if success else fail_outcome,
            original_topic=row["topic"],
            delay_level_when_next_consume=level,
            offset_msg_id=row["original_offsetMsgId"],
            uniq_key=row["msgId_uniqKey"],
        )

    return policy, delivery


def test_every_consumer_scenario_is_covered(samples_dir):
    scenarios = {r["scenario"] for r in _rows(samples_dir)}
    assert scenarios == {"A1_RECONSUME_LATER", "A2_THROW", "A3_RETURN_NULL", "A4_SUCCEED_ON_RETRY2",
                         "B1_DELAYLEVEL_MINUS1", "B2_DELAYLEVEL_2", "C_BROADCAST_FAIL", "D_ORDERLY_SUSPEND",
                         "E_FAIL_GROUP", "E_OK_GROUP"}  # fmt: skip


def test_engine_matches_real_4_9_4_output(samples_dir):
    dlq_dump = {}
    for line in (samples_dir / "dumps" / "dlq-topics.jsonl").read_text().splitlines():
        record = json.loads(line)
        dlq_dump[(record["dumpTopic"], record["uniqKey"])] = record
    checked = 0
    for row in _rows(samples_dir):
        policy, delivery = _case(row)
        path = expected_path(policy, failure=delivery)
        where = f"{row['scenario']} {row['keys']} {row['broadcast_instance']}"
        assert path.final is FINAL[row["final_state"]], where
        assert path.deliveries == int(row["deliveries_observed"]), where
        assert [str(s.failed_reconsume_times) for s in path.steps if s.hop <= path.deliveries] == row[
            "delivery_reconsumeTimes"
        ].split(";")[: len(path.steps)], where

        # gaps between deliveries: the expected delay, plus up to 1.5 s of pull/timer latency
        times = [_ms(t) for t in row["delivery_ts_utc"].split(";")]
        for step, (before, after) in zip(path.steps, itertools.pairwise(times), strict=False):
            gap = after - before
            assert step.next.delay_ms - 50 <= gap <= step.next.delay_ms + 1_500, (where, step.hop, gap)

        trips = [f"{s.next.delay_level}->{s.next.destination_topic}" for s in path.steps if s.next.via_schedule_topic]
        assert trips == [t for t in row["schedule_topic_delay_levels"].split(";") if t], where

        if row["final_state"] == "DLQ":
            last = path.steps[-1].next
            assert path.final_topic == row["dlq_topic"], where
            assert last.reconsume_times == int(row["dlq_reconsumeTimes"]), where
            expected_store = times[-1] + last.delay_ms
            assert expected_store - 50 <= _ms(row["dlq_store_ts_utc"]) <= expected_store + 1_500, where
            stored = dlq_dump[(row["dlq_topic"], row["msgId_uniqKey"])]["properties"]
            if last.via_schedule_topic:
                # the DLQ copy was re-put by the schedule service, which clears nothing it serialised (§3.3)
                assert stored["DELAY"] == last.properties["DELAY"], where
            for key in RETRY_PROPERTIES:
                assert stored.get(key) == last.properties.get(key), (where, key)
        checked += 1
    assert checked == 29


@pytest.mark.parametrize(
    ("scenario", "max_times", "levels", "deliveries"),
    [
        ("A1", 3, [3, 4, 5], 4),  # A1: 4 deliveries, gaps of levels 3, 4, 5, then DLQ
        ("E", 2, [3, 4], 3),  # E: max 2 → 3 deliveries
    ],
)
def test_concurrent_sample_shapes(scenario, max_times, levels, deliveries):
    path = expected_path(GroupPolicy("G", delay_levels=FAST, max_reconsume_times=max_times))
    assert [s.next.delay_level for s in path.steps if not s.next.terminal] == levels
    assert [s.next.delay_ms for s in path.steps if not s.next.terminal] == [lv * 1000 for lv in levels]
    assert path.deliveries == deliveries
    assert path.steps[-1].next.reconsume_times == deliveries  # DLQ copy reconsumeTimes = deliveries (§12)


def test_b1_level_minus_one_single_delivery():
    path = expected_path(GroupPolicy("G", delay_levels=FAST, max_reconsume_times=3),
                         failure=FailedDelivery(0, delay_level_when_next_consume=-1))  # fmt: skip
    assert (path.deliveries, path.steps[-1].next.reconsume_times, path.final_topic) == (1, 1, "%DLQ%G")


def test_b2_level_two_gaps():
    path = expected_path(GroupPolicy("G", delay_levels=FAST, max_reconsume_times=3),
                         failure=FailedDelivery(0, delay_level_when_next_consume=2))  # fmt: skip
    assert [s.next.delay_ms for s in path.steps] == [2000, 2000, 2000, 0]
    assert path.deliveries == 4


def test_d_orderly_4x_three_deliveries_then_dlq_via_level_5():
    policy = GroupPolicy("G", delay_levels=FAST, consume_mode=ConsumeMode.ORDERLY, max_reconsume_times=2)
    path = expected_path(policy, failure=FailedDelivery(0, outcome=ConsumeOutcome.SUSPEND))
    assert [s.next.delay_ms for s in path.steps] == [1000, 1000, 5000]
    last = path.steps[-1].next
    assert (last.delay_level, last.destination_topic, last.reconsume_times) == (5, "%DLQ%G", 2)
    assert path.deliveries == 3
