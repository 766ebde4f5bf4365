"""Literal events in, exactly the expected lifecycles and transitions out, one scenario class per group.

All scenarios run through one ``reconstruct`` call (one Spark plan) to keep the suite fast; each test then looks
at its own consumer group. Times are seconds after 10:00:00 UTC on D unless a scenario says otherwise.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pyspark.sql import Row
from pyspark.sql import types as T
from pyspark.testing import assertDataFrameEqual

from rocketmq_retry.config import parse_config
from rocketmq_retry.jobs.reconstruct.events import EVENTS_SCHEMA
from rocketmq_retry.jobs.reconstruct.job import reconstruct

pytestmark = pytest.mark.spark

D = "2026-11-21"
T0 = dt.datetime(2026, 11, 21, 10, 0, 0)
FAST = "1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 11s 12s 13s 14s 15s 16s 17s 18s"

CONFIG = parse_config(
    {
        "timezone": "UTC",  # dt=D is the UTC day here
        "brokers": {"default": {}, "fast": {"message_delay_level": FAST}, "five": {"version": "5.2.0"}},
        "groups": {
            "dlq_default": {},
            "dlq_custom": {"broker": "fast", "max_reconsume_times": 3},
            "ok_after_2": {"broker": "fast", "max_reconsume_times": 3},
            "level_minus1": {"broker": "fast", "max_reconsume_times": 3},
            "level_2": {"broker": "fast", "max_reconsume_times": 3},
            "fallback": {"broker": "fast", "max_reconsume_times": 3},
            "local": {"broker": "fast", "max_reconsume_times": 3},
            "timeout": {"broker": "fast"},
            "timeout_dlq": {"broker": "fast", "max_reconsume_times": 1},
            "orderly": {"broker": "fast", "consume_mode": "orderly", "max_reconsume_times": 2},
            "bcast": {"broker": "fast", "message_model": "broadcasting"},
            "pop": {"broker": "five", "consume_mode": "pop"},
            "grpc": {"broker": "five", "protocol": "grpc", "retry_max_times": 2},
            "midnight": {"broker": "fast", "max_reconsume_times": 3},
            "late_day": {},
            "spring_only": {"broker": "fast", "max_reconsume_times": 2},
            "trace_only": {"broker": "fast", "max_reconsume_times": 3},
            "client_only": {"broker": "fast", "max_reconsume_times": 1},
            "early": {"broker": "fast", "max_reconsume_times": 5},
            "same_ms": {},
            "fallback_dlq": {"broker": "fast", "max_reconsume_times": 3},
            "skewed": {"broker": "fast", "max_reconsume_times": 3},
            "dlq_line": {"broker": "five", "max_reconsume_times": 3},
            "after_dlq": {"broker": "fast", "max_reconsume_times": 3},
        },
    }
)


class Events:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(
        self, event_type: str, sec: float, group: str | None, msg: str | None, r: int | None = None, **kw: Any
    ) -> None:
        row: dict[str, Any] = {f.name: None for f in EVENTS_SCHEMA.fields}
        n = len(self.rows) + 1
        row.update(
            event_id=kw.pop("event_id", f"{group or 'x'}-{n:03d}"),
            event_time=kw.pop("base", T0) + dt.timedelta(seconds=sec),
            source=kw.pop("source", "trace"),
            source_file="f",
            line_no=n,
            event_type=event_type,
            consumer_group=group,
            msg_id=msg,
            reconsume_times=r,
        )
        row.update(kw)
        self.rows.append(row)

    def trace(self, sec: float, group: str, msg: str, r: int, ok: bool, **kw: Any) -> None:
        """A SubBefore/SubAfter pair (§7.2): the SubAfter has no retryTimes."""
        self.add("DELIVERED", sec, group, msg, r, **kw)
        self.add("CONSUME_OK" if ok else "CONSUME_FAILED", sec + 0.01, group, msg, None, **kw)

    def copies(self, sec: float, group: str, msg: str, next_r: int, level: int, delay: float, **kw: Any) -> None:
        """The schedule-topic copy and the %RETRY% copy of one send-back, as a dump shows them (§2.5, §3.2)."""
        self.add("SEND_BACK", sec, group, msg, next_r, source="message-dump", topic="SCHEDULE_TOPIC_XXXX",
                 delay_level=level, queue_id=level - 1, detail=f"REAL_TOPIC=%RETRY%{group}", **kw)  # fmt: skip
        self.add("RETRY_ENQUEUED", sec + delay, group, msg, next_r, source="message-dump", topic=f"%RETRY%{group}",
                 delay_level=level, queue_id=0, detail=f"REAL_TOPIC=%RETRY%{group}", **kw)  # fmt: skip

    def dlq(self, sec: float, group: str, msg: str, r: int, **kw: Any) -> None:
        self.add("DEAD_LETTERED", sec, group, msg, r, source="message-dump", topic=f"%DLQ%{group}", **kw)


def scenario_events() -> Events:
    e = Events()
    # Published business message for the identity join (keys/tags/body) and offset-id linking.
    e.add("PUBLISHED", -1, None, "M-dlq", source="message-dump", topic="T1", original_topic="T1", keys="ORD-1 X",
          tags="created", body='{"orderId":"ORD-1"}', offset_msg_id="OFF-1")  # fmt: skip
    # 1. always failing, custom levels (level n = n s), max 3: deliveries 0..3 then DLQ (§2.2, §3.1).
    t = 0.0
    for r in range(4):
        e.trace(t, "dlq_custom", "M-dlq", r, ok=False)
        if r < 3:
            e.copies(t + 0.05, "dlq_custom", "M-dlq", r + 1, 3 + r, 3 + r)
            t += 0.05 + 3 + r + 0.02
    e.dlq(t + 0.05, "dlq_custom", "M-dlq", 4)
    # stats.log at 10:01:00 for the minute 10:00: 3 retries + the DLQ-bound send-back (L-B9)
    e.add("SEND_BACK_COUNT", 60, "dlq_custom", None, source="broker-stats", topic="T1", detail="4")
    # 2. always failing, default broker and group: 17 deliveries over 4h45m40s, then DLQ (§3.1 table).
    delays = [10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]
    t = 0.0
    for r in range(17):
        e.trace(t, "dlq_default", "M-def", r, ok=False)
        if r < 16:
            t += delays[r] + 0.5
    e.dlq(t + 0.1, "dlq_default", "M-def", 17)
    # 3. success after 2 retries (scenario A4 of the real sample).
    e.trace(0, "ok_after_2", "M-ok", 0, ok=False)
    e.trace(3.1, "ok_after_2", "M-ok", 1, ok=False)
    e.trace(7.2, "ok_after_2", "M-ok", 2, ok=True)
    # 4. delayLevelWhenNextConsume = -1 (§1.5): one delivery, straight to the DLQ with reconsumeTimes 1.
    e.trace(0, "level_minus1", "M-m1", 0, ok=False)
    e.dlq(0.05, "level_minus1", "M-m1", 1)
    # 5. consumer-set level 2: each retry waits 2 s; copies show DELAY=2.
    t = 0.0
    for r in range(4):
        e.trace(t, "level_2", "M-l2", r, ok=False)
        if r < 3:
            e.copies(t + 0.05, "level_2", "M-l2", r + 1, 2, 2)
            t += 2.1
    e.dlq(t + 0.05, "level_2", "M-l2", 4)
    # 6. send-back RPC failed -> client re-publish at 3 + r (§1.4); 4.x DLQs one hop early (r + 1 >= max, §2.3).
    e.trace(0, "fallback", "M-fb", 0, ok=False)
    e.add("SEND_BACK_FAILED", 0.02, "fallback", "M-fb", 0, source="rocketmq-client-4x")
    e.trace(3.1, "fallback", "M-fb", 1, ok=True)
    # 7. send-back and re-publish failed: local resubmit after 5 s, r bumped in the client only (§1.3).
    e.trace(0, "local", "M-lo", 0, ok=False)
    e.add("LOCAL_RETRY", 0.02, "local", "M-lo", 0, source="rocketmq-client-4x")
    e.trace(5.03, "local", "M-lo", 1, ok=True)
    # 8. consume timeout (§1.6): sent back at the fixed level 3 whatever r; redelivered, then consumed.
    e.add("DELIVERED", 0, "timeout", "M-to", 0)
    e.add("CONSUME_TIMEOUT", 900, "timeout", "M-to", 0, source="rocketmq-client-4x")
    e.trace(903.2, "timeout", "M-to", 1, ok=True)
    # 8b. the last allowed delivery times out (§1.6): the expired message is sent back past max, to the DLQ, and
    # the listener's late success shows in the trace afterwards. The client logs each failure twice (L-C1 and
    # L-C2, both with r) and L-C8 without r: that line is the delivery the trace last saw begin (r = 1).
    e.add("DELIVERED", 0, "timeout_dlq", "M-tdl", 0)
    e.add("CONSUME_FAILED", 0.01, "timeout_dlq", "M-tdl", None)
    e.add("CONSUME_FAILED", 0.02, "timeout_dlq", "M-tdl", 0, source="rocketmq-client-4x")
    e.add("CONSUME_FAILED", 0.02, "timeout_dlq", "M-tdl", 0, source="rocketmq-client-4x")
    e.copies(0.05, "timeout_dlq", "M-tdl", 1, 3, 3)
    e.add("DELIVERED", 3.1, "timeout_dlq", "M-tdl", 1)
    e.add("CONSUME_TIMEOUT", 903.1, "timeout_dlq", "M-tdl", None, source="rocketmq-client-4x")
    e.dlq(903.15, "timeout_dlq", "M-tdl", 2)
    e.add("CONSUME_OK", 1203.1, "timeout_dlq", "M-tdl", None)
    # 9. orderly, max 2 (§4): 3 local deliveries 1 s apart, then the 4.x re-publish waits at level 3 + 2 = 5 s.
    for r in range(3):
        e.trace(r * 1.01, "orderly", "M-or", r, ok=False)
        e.add("ORDERLY_SUSPENDED", r * 1.01 + 0.02, "orderly", "M-or", r, source="rocketmq-client-4x")
    e.add("SEND_BACK", 2.1, "orderly", "M-or", 2, source="message-dump", topic="SCHEDULE_TOPIC_XXXX", delay_level=5,
          queue_id=4, detail="REAL_TOPIC=%DLQ%orderly")  # fmt: skip
    e.dlq(7.1, "orderly", "M-or", 2)
    # 10. broadcasting: two instances each get the message once and drop the failure (§1.3, L-C4).
    for inst in ("n1", "n2"):
        e.trace(0, "bcast", "M-bc", 0, ok=False, client_host=inst)
        # L-C4 names no group: each instance's own client log binds its topic to the group (BINDINGS)
        e.add("BROADCAST_DROPPED", 0.02, None, "M-bc", 0, source="rocketmq-client-4x", client_host=inst,
              event_id=f"bcast-drop-{inst}", instance=inst, topic="TB", original_topic="TB")  # fmt: skip
    # 11. remoting POP (5.x, §1.7): invisible-time retry, then consumed.
    e.add("POP_NACK", 0.01, "pop", "M-pop", 0, source="rocketmq-client-5x")
    e.add("DELIVERED", 10.05, "pop", "M-pop", 1, source="rocketmq-client-5x")
    e.add("CONSUME_OK", 10.1, "pop", "M-pop", 1, source="rocketmq-client-5x")
    # 12. gRPC push, retryMaxTimes 2 -> maxAttempts 3 (§5.2, §5.4): 3 deliveries, DLQ copy reconsumeTimes 4.
    e.add("CONSUME_FAILED", 0.01, "grpc", "M-grpc", 0, source="rocketmq-grpc-client")
    e.add("CONSUME_FAILED", 1.02, "grpc", "M-grpc", 1, source="rocketmq-grpc-client")
    e.add("CONSUME_FAILED", 6.03, "grpc", "M-grpc", 2, source="rocketmq-grpc-client")
    e.add("DEAD_LETTERED", 16.1, "grpc", "M-grpc", 4, source="broker", topic="%DLQ%grpc")
    # 13. midnight crossing: began on D-1 (read through the look-back), completed on D.
    night = dt.datetime(2026, 11, 20, 23, 59, 58)
    e.trace(0, "midnight", "M-mn", 0, ok=False, base=night, dt="2026-11-20")
    e.trace(3.1, "midnight", "M-mn", 1, ok=False, base=night, dt="2026-11-21")
    e.trace(7.2, "midnight", "M-mn", 2, ok=True, base=night, dt="2026-11-21")
    # 14. still retrying at the end of D: IN_RETRY (D+1's run completes it).
    late = dt.datetime(2026, 11, 21, 23, 59, 0)
    e.trace(0, "late_day", "M-late", 0, ok=False, base=late)
    e.trace(10.1, "late_day", "M-late", 1, ok=False, base=late)
    # 15. partial evidence: only rocketmq-spring lines (§6.4), max 2 -> the engine proves the DLQ.
    for r, s in enumerate((0, 3.1, 7.2)):
        e.add("CONSUME_FAILED", s, None, "M-sp", r, source="spring-listener", consumer_group="spring_only")
    # 16. partial evidence: only the trace, always failing, max 3.
    for r, s in enumerate((0, 3.1, 7.2, 12.3)):
        e.trace(s, "trace_only", "M-tr", r, ok=False)
    # 17. partial evidence: only the 4.x client log (throw: L-C1 then L-C2), identified by offset id only on the
    # second line, max 1.
    for r, s in enumerate((0, 3.1)):
        e.add("CONSUME_FAILED", s, "client_only", "M-cl", r, source="rocketmq-client-4x", offset_msg_id=f"OFF-cl{r}",
              status_code="EXCEPTION")  # fmt: skip
        e.add("CONSUME_FAILED", s + 0.001, "client_only", None, r, source="rocketmq-client-4x",
              offset_msg_id=f"OFF-cl{r}", status_code="RETURNNULL")  # fmt: skip
    # 19. a SubBefore/SubAfter pair in the same millisecond, the SubAfter's event_id sorting first: paired by
    # requestId (§7.2, §12), not by order.
    e.add("DELIVERED", 0, "same_ms", "M-ms", 0, detail="requestId=R1", event_id="same_ms-b")
    e.add("CONSUME_OK", 0, "same_ms", "M-ms", None, detail="requestId=R1", event_id="same_ms-a")
    # 18. early DLQ: retried through %RETRY% then dead-lettered at r=2 although the group's max is 5.
    e.trace(0, "early", "M-early", 0, ok=False)
    e.copies(0.05, "early", "M-early", 1, 3, 3)
    e.trace(3.1, "early", "M-early", 1, ok=False)
    e.copies(3.15, "early", "M-early", 2, 4, 4)
    e.trace(7.2, "early", "M-early", 2, ok=False)
    e.dlq(7.25, "early", "M-early", 3)
    # 20. send-back RPC fails at r = 2 with max 3: the 4.x client re-publishes with r + 1 = 3 >= max (§1.4, §2.3),
    # so the broker DLQs it one hop early, through SCHEDULE_TOPIC_XXXX at 3 + r = 5 (REAL_TOPIC=%DLQ%, §2.3 quirk).
    # Unlike the orderly copy of scenario 9, this DLQ-bound copy carries r + 1.
    e.trace(0, "fallback_dlq", "M-fd", 0, ok=False)
    e.copies(0.05, "fallback_dlq", "M-fd", 1, 3, 3)
    e.trace(3.1, "fallback_dlq", "M-fd", 1, ok=False)
    e.copies(3.15, "fallback_dlq", "M-fd", 2, 4, 4)
    e.trace(7.2, "fallback_dlq", "M-fd", 2, ok=False)
    e.add("SEND_BACK_FAILED", 7.22, "fallback_dlq", "M-fd", 2, source="rocketmq-client-4x")
    e.add("SEND_BACK", 7.25, "fallback_dlq", "M-fd", 3, source="message-dump", topic="SCHEDULE_TOPIC_XXXX",
          delay_level=5, queue_id=4, detail="REAL_TOPIC=%DLQ%fallback_dlq")  # fmt: skip
    e.dlq(12.25, "fallback_dlq", "M-fd", 3)
    # 21. level -1 (§1.5) seen through a consumer host whose clock runs 200 ms ahead of the broker's: the trace
    # says the delivery came after the DLQ copy's storeTimestamp; within the clock-skew tolerance, no anomaly.
    e.dlq(0.03, "skewed", "M-sk", 1)
    e.trace(0.2, "skewed", "M-sk", 0, ok=False)
    # 23. 5.x: the broker's `send msg to DLQ` line has whole seconds (§6.1), 882 ms before the DLQ copy's
    # storeTimestamp; the consumer host runs 140 ms ahead: its delivery reads 1.02 s after the broker line.
    e.add("DEAD_LETTERED", 0, "dlq_line", "M-dl", None, source="broker", topic="%DLQ%dlq_line")
    e.dlq(0.882, "dlq_line", "M-dl", 1)
    e.trace(1.02, "dlq_line", "M-dl", 0, ok=False)
    # 22. a delivery 30 s after the DLQ arrival: no clock is that far off.
    e.trace(0, "after_dlq", "M-ad", 0, ok=False)
    e.dlq(0.05, "after_dlq", "M-ad", 1)
    e.trace(30, "after_dlq", "M-ad", 1, ok=True)
    return e


# What the broadcasting instances' client logs say (``[persistAll]``-free: rebalance lines), scenario 10.
BINDINGS = [("n1", "client-log", "bcast", "TB"), ("n2", "client-log", "bcast", "TB")]


@pytest.fixture(scope="module")
def outputs(spark: Any) -> dict[str, list[Row]]:
    return run_scenarios(spark)


def run_scenarios(spark: Any) -> dict[str, list[Row]]:
    e = scenario_events()
    schema = T.StructType([*EVENTS_SCHEMA.fields, T.StructField("dt", T.StringType())])
    for row in e.rows:
        row.setdefault("dt", None)
        if row["dt"] is None:
            row["dt"] = row["event_time"].strftime("%Y-%m-%d")
    events = spark.createDataFrame(e.rows, schema)
    bindings = spark.createDataFrame(BINDINGS, "instance string, kind string, consumer_group string, topic string")
    out = reconstruct(spark, events, CONFIG, D, bindings=bindings)
    try:
        return {
            "transitions": out.transitions.collect(),
            "lifecycles": out.lifecycles.collect(),
            "dead_letters": out.dead_letters.collect(),
            "reconciliation": out.reconciliation.collect(),
        }
    finally:
        out.release()


LIFE_COLS = ("msg_id", "deliveries", "final_state", "expected_final_state", "anomalies", "evidence_class")


def life(outputs: dict[str, list[Row]], group: str) -> list[Row]:
    return [Row(**{c: r[c] for c in LIFE_COLS}) for r in outputs["lifecycles"] if r["consumer_group"] == group]


def hops(
    outputs: dict[str, list[Row]], group: str, cols: tuple[str, ...] = ("hop", "from_state", "to_state", "inferred")
) -> list[Row]:
    rows = sorted((r for r in outputs["transitions"] if r["consumer_group"] == group), key=lambda r: r["hop"])
    return [Row(**{c: r[c] for c in cols}) for r in rows]


def L(msg: str, deliveries: int, final: str, expected: str, anomalies: list[str], evidence: str) -> Row:
    return Row(msg_id=msg, deliveries=deliveries, final_state=final, expected_final_state=expected,
               anomalies=anomalies, evidence_class=evidence)  # fmt: skip


def H(hop: int, frm: str, to: str, inferred: bool) -> Row:
    return Row(hop=hop, from_state=frm, to_state=to, inferred=inferred)


def _retry_hops(start: int, failed_inferred: bool = False, sent_inferred: bool = True) -> list[Row]:
    return [
        H(start, "DELIVERED", "FAILED", failed_inferred),
        H(start + 1, "FAILED", "SENT_BACK", sent_inferred),
        H(start + 2, "SENT_BACK", "SCHEDULED", sent_inferred),
        H(start + 3, "SCHEDULED", "READY", sent_inferred),
        H(start + 4, "READY", "DELIVERED", False),
    ]


def test_always_failing_custom_levels(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(life(outputs, "dlq_custom"), [L("M-dlq", 4, "DEAD_LETTERED", "DEAD_LETTERED", [], "PARTIAL")])
    expected = [H(0, "PUBLISHED", "DELIVERED", False)]
    for k in range(3):
        expected += _retry_hops(1 + 5 * k, sent_inferred=False)
    expected += [
        H(16, "DELIVERED", "FAILED", False),
        H(17, "FAILED", "SENT_BACK", True),  # the broker logs nothing for a send-back (§6.3 gaps)
        H(18, "SENT_BACK", "DEAD_LETTERED", False),
    ]
    assertDataFrameEqual(hops(outputs, "dlq_custom"), expected)
    # expected_at comes from the engine and the broker's table: READY = scheduled + level (3 + r) seconds.
    cols = ("hop", "to_state", "delay_level", "reconsume_times", "physical_topic", "queue_id", "drift_ms")
    got = [r for r in hops(outputs, "dlq_custom", cols) if r["to_state"] in ("SCHEDULED", "READY", "DEAD_LETTERED")]
    assertDataFrameEqual(
        got,
        [
            Row(hop=3, to_state="SCHEDULED", delay_level=3, reconsume_times=1, physical_topic="SCHEDULE_TOPIC_XXXX",
                queue_id=2, drift_ms=40),
            Row(hop=4, to_state="READY", delay_level=3, reconsume_times=1, physical_topic="%RETRY%dlq_custom",
                queue_id=0, drift_ms=0),
            Row(hop=8, to_state="SCHEDULED", delay_level=4, reconsume_times=2, physical_topic="SCHEDULE_TOPIC_XXXX",
                queue_id=3, drift_ms=40),
            Row(hop=9, to_state="READY", delay_level=4, reconsume_times=2, physical_topic="%RETRY%dlq_custom",
                queue_id=0, drift_ms=0),
            Row(hop=13, to_state="SCHEDULED", delay_level=5, reconsume_times=3, physical_topic="SCHEDULE_TOPIC_XXXX",
                queue_id=4, drift_ms=40),
            Row(hop=14, to_state="READY", delay_level=5, reconsume_times=3, physical_topic="%RETRY%dlq_custom",
                queue_id=0, drift_ms=0),
            Row(hop=18, to_state="DEAD_LETTERED", delay_level=None, reconsume_times=4, physical_topic="%DLQ%dlq_custom",
                queue_id=0, drift_ms=40),
        ],
    )  # fmt: skip


def test_business_metadata_joined_by_msg_id(outputs: dict[str, list[Row]]) -> None:
    [row] = [r for r in outputs["dead_letters"] if r["consumer_group"] == "dlq_custom"]
    assert (row["original_topic"], row["keys"], row["tags"], row["business_key"]) == (
        "T1",
        "ORD-1 X",
        "created",
        "ORD-1",
    )
    assert (row["reconsume_times"], row["dlq_inferred"], row["compensation_handler"]) == (4, False, "log-only")


def test_always_failing_default_levels(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(
        life(outputs, "dlq_default"), [L("M-def", 17, "DEAD_LETTERED", "DEAD_LETTERED", [], "PARTIAL")]
    )
    redeliveries = [r for r in hops(outputs, "dlq_default", ("to_state", "reconsume_times", "drift_ms"))
                    if r["to_state"] == "DELIVERED" and r["reconsume_times"] > 0]  # fmt: skip
    # each redelivery came 500 ms after level 3 + r's delay (§3.1), measured from the failure
    assert [r["drift_ms"] for r in redeliveries] == [490] * 16


def test_success_after_k_retries(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(life(outputs, "ok_after_2"), [L("M-ok", 3, "CONSUMED", "CONSUMED", [], "PARTIAL")])
    assert hops(outputs, "ok_after_2")[-1] == H(11, "DELIVERED", "CONSUMED", False)


def test_consumer_level_minus1_goes_straight_to_dlq(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(life(outputs, "level_minus1"), [L("M-m1", 1, "DEAD_LETTERED", "DEAD_LETTERED", [], "PARTIAL")])
    assertDataFrameEqual(
        hops(outputs, "level_minus1"),
        [H(0, "PUBLISHED", "DELIVERED", False), H(1, "DELIVERED", "FAILED", False), H(2, "FAILED", "SENT_BACK", True),
         H(3, "SENT_BACK", "DEAD_LETTERED", False)],
    )  # fmt: skip


def test_consumer_set_level(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(life(outputs, "level_2"), [L("M-l2", 4, "DEAD_LETTERED", "DEAD_LETTERED", [], "PARTIAL")])
    ready = [r for r in hops(outputs, "level_2", ("to_state", "delay_level", "drift_ms")) if r["to_state"] == "READY"]
    # the observed level (DELAY=2) wins over the broker's 3 + r, so the hops are on time
    assert ready == [Row(to_state="READY", delay_level=2, drift_ms=0)] * 3


def test_send_back_fallback(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(life(outputs, "fallback"), [L("M-fb", 2, "CONSUMED", "CONSUMED", [], "PARTIAL")])
    assertDataFrameEqual(
        hops(outputs, "fallback", ("hop", "to_state", "delay_level", "inferred")),
        [
            Row(hop=0, to_state="DELIVERED", delay_level=None, inferred=False),
            Row(hop=1, to_state="FAILED", delay_level=None, inferred=False),
            Row(hop=2, to_state="REPUBLISHED", delay_level=3, inferred=False),  # client re-publish, 3 + r (§1.4)
            Row(hop=3, to_state="SCHEDULED", delay_level=3, inferred=True),
            Row(hop=4, to_state="READY", delay_level=3, inferred=True),
            Row(hop=5, to_state="DELIVERED", delay_level=None, inferred=False),
            Row(hop=6, to_state="CONSUMED", delay_level=None, inferred=False),
        ],
    )


def test_local_resubmit(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(life(outputs, "local"), [L("M-lo", 2, "CONSUMED", "CONSUMED", [], "FULL")])
    assertDataFrameEqual(
        hops(outputs, "local", ("hop", "to_state", "physical_topic", "drift_ms")),
        [
            Row(hop=0, to_state="DELIVERED", physical_topic=None, drift_ms=None),
            Row(hop=1, to_state="FAILED", physical_topic=None, drift_ms=None),
            Row(hop=2, to_state="LOCAL_RETRY", physical_topic=None, drift_ms=10),
            Row(hop=3, to_state="DELIVERED", physical_topic=None, drift_ms=10),  # 5 s after the resubmit (§1.3)
            Row(hop=4, to_state="CONSUMED", physical_topic=None, drift_ms=None),
        ],
    )


def test_a_timed_out_last_delivery_is_dead_lettered_whatever_the_listener_returns_later(
    outputs: dict[str, list[Row]],
) -> None:
    # found on the production line mix (docs/scale.md): L-C8 took r = 2 from counting its client log's failure
    # lines, so the late success became a consumption, hops were invented, and reconsume_times went 6 -> 4
    assert [r["final_state"] for r in life(outputs, "timeout_dlq")] == ["DEAD_LETTERED"]
    transitions = sorted(
        (r for r in outputs["transitions"] if r["consumer_group"] == "timeout_dlq"), key=lambda r: r["hop"]
    )
    times = [r["reconsume_times"] for r in transitions]
    assert times == sorted(times), times
    assert not any(r["to_state"] == "CONSUMED" for r in transitions)
    assert not any(r["inferred"] and r["from_state"] == "CONSUMED" for r in transitions)


def test_consume_timeout(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(life(outputs, "timeout"), [L("M-to", 2, "CONSUMED", "CONSUMED", [], "PARTIAL")])
    sched = [r for r in hops(outputs, "timeout", ("to_state", "delay_level")) if r["to_state"] == "SCHEDULED"]
    assert sched == [Row(to_state="SCHEDULED", delay_level=3)]  # fixed level 3, not 3 + r (§1.6)


def test_orderly(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(life(outputs, "orderly"), [L("M-or", 3, "DEAD_LETTERED", "DEAD_LETTERED", [], "FULL")])
    assertDataFrameEqual(
        hops(outputs, "orderly", ("hop", "to_state", "delay_level", "drift_ms")),
        [
            Row(hop=0, to_state="DELIVERED", delay_level=None, drift_ms=None),
            Row(hop=1, to_state="FAILED", delay_level=None, drift_ms=None),
            Row(hop=2, to_state="SUSPENDED", delay_level=None, drift_ms=0),
            Row(hop=3, to_state="DELIVERED", delay_level=None, drift_ms=0),  # 1.01 s later: suspend 1000 ms (§4)
            Row(hop=4, to_state="FAILED", delay_level=None, drift_ms=None),
            Row(hop=5, to_state="SUSPENDED", delay_level=None, drift_ms=0),
            Row(hop=6, to_state="DELIVERED", delay_level=None, drift_ms=0),
            Row(hop=7, to_state="FAILED", delay_level=None, drift_ms=None),
            Row(hop=8, to_state="REPUBLISHED", delay_level=5, drift_ms=70),  # 4.x re-publish at 3 + r (§4, §12)
            Row(hop=9, to_state="SCHEDULED", delay_level=5, drift_ms=70),
            Row(hop=10, to_state="DEAD_LETTERED", delay_level=None, drift_ms=0),
        ],
    )


def test_broadcasting(outputs: dict[str, list[Row]]) -> None:
    # one lifecycle per (group, msg): two instances' deliveries, each dropped; the engine expects the drop
    assertDataFrameEqual(life(outputs, "bcast"), [L("M-bc", 2, "DROPPED", "DROPPED", [], "FULL")])
    assertDataFrameEqual(
        hops(outputs, "bcast"),
        [H(0, "PUBLISHED", "DELIVERED", False), H(1, "DELIVERED", "FAILED", False), H(2, "FAILED", "DROPPED", False)],
    )


def test_broadcast_drop_line_without_group_is_attributed_by_its_instance(outputs: dict[str, list[Row]]) -> None:
    [row] = [r for r in outputs["lifecycles"] if r["consumer_group"] == "bcast"]
    assert row["linked_by"] == []
    assert row["attribution"] == ["client-log", "line"]
    assert row["instances"] == ["n1", "n2"]
    assert row["evidence_sources"] == ["rocketmq-client-4x", "trace"]


def test_trace_pair_in_one_millisecond(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(life(outputs, "same_ms"), [L("M-ms", 1, "CONSUMED", "CONSUMED", [], "FULL")])


def test_pop_and_grpc(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(life(outputs, "pop"), [L("M-pop", 2, "CONSUMED", "CONSUMED", [], "PARTIAL")])
    assert [r["to_state"] for r in hops(outputs, "pop")] == [
        "DELIVERED",
        "FAILED",
        "INVISIBLE",
        "DELIVERED",
        "CONSUMED",
    ]
    assertDataFrameEqual(life(outputs, "grpc"), [L("M-grpc", 3, "DEAD_LETTERED", "DEAD_LETTERED", [], "PARTIAL")])
    topics = [r["physical_topic"] for r in hops(outputs, "grpc", ("to_state", "physical_topic"))
              if r["to_state"] == "INVISIBLE"]  # fmt: skip
    # No event names M-grpc's business topic, so its pop retry topic is unknown: null, never a made-up name.
    assert topics == [None, None]


def test_midnight_crossing(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(life(outputs, "midnight"), [L("M-mn", 3, "CONSUMED", "CONSUMED", [], "PARTIAL")])
    [row] = [r for r in outputs["lifecycles"] if r["consumer_group"] == "midnight"]
    assert row["first_seen"] == dt.datetime(2026, 11, 20, 23, 59, 58)


def test_in_retry_at_end_of_day(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(life(outputs, "late_day"), [L("M-late", 2, "IN_RETRY", "IN_RETRY", [], "PARTIAL")])
    assert not [r for r in outputs["dead_letters"] if r["consumer_group"] == "late_day"]


def test_only_spring_lines(outputs: dict[str, list[Row]]) -> None:
    # the engine proves the DLQ (r = max = 2 failed); the DLQ hop is inferred
    assertDataFrameEqual(life(outputs, "spring_only"), [L("M-sp", 3, "DEAD_LETTERED", "DEAD_LETTERED", [], "PARTIAL")])
    [dl] = [r for r in outputs["dead_letters"] if r["consumer_group"] == "spring_only"]
    assert (dl["dlq_inferred"], dl["reconsume_times"]) == (True, 3)


def test_only_trace(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(life(outputs, "trace_only"), [L("M-tr", 4, "DEAD_LETTERED", "DEAD_LETTERED", [], "PARTIAL")])


def test_only_client_log_linked_by_offset_id(outputs: dict[str, list[Row]]) -> None:
    # L-C1 + L-C2 for one throw are one delivery, not two; the offset-id-only line joins the same lifecycle
    assertDataFrameEqual(life(outputs, "client_only"), [L("M-cl", 2, "DEAD_LETTERED", "DEAD_LETTERED", [], "PARTIAL")])
    [row] = [r for r in outputs["lifecycles"] if r["consumer_group"] == "client_only"]
    assert row["linked_by"] == ["offset_msg_id"]


def test_early_dlq_is_an_anomaly(outputs: dict[str, list[Row]]) -> None:
    assertDataFrameEqual(
        life(outputs, "early"), [L("M-early", 3, "DEAD_LETTERED", "IN_RETRY", ["EARLY_DLQ"], "PARTIAL")]
    )


def test_send_back_fallback_into_the_dlq_counts_each_delivery_once(outputs: dict[str, list[Row]]) -> None:
    # the DLQ-bound copy (reconsumeTimes 3) is about the failure of delivery r = 2, not a fourth delivery
    assertDataFrameEqual(life(outputs, "fallback_dlq"), [L("M-fd", 3, "DEAD_LETTERED", "DEAD_LETTERED", [], "FULL")])
    assert [r["to_state"] for r in hops(outputs, "fallback_dlq", ("hop", "to_state"))][-5:] == [
        "DELIVERED",
        "FAILED",
        "REPUBLISHED",
        "SCHEDULED",
        "DEAD_LETTERED",
    ]


def test_delivery_after_dlq_allows_for_clock_skew(outputs: dict[str, list[Row]]) -> None:
    (skewed,) = life(outputs, "skewed")
    assert (skewed["final_state"], skewed["anomalies"]) == ("DEAD_LETTERED", [])
    (line,) = life(outputs, "dlq_line")
    assert (line["final_state"], line["anomalies"]) == ("DEAD_LETTERED", [])
    (late,) = life(outputs, "after_dlq")
    assert "DELIVERY_AFTER_DLQ" in late["anomalies"]


def test_reconciliation_counts_send_backs_including_dlq_bound(outputs: dict[str, list[Row]]) -> None:
    rows = [r for r in outputs["reconciliation"] if r["consumer_group"] == "dlq_custom"]
    # SNDBCK_PUT_NUMS counts the DLQ-bound send-back too. A 4.x broker counts a DLQ put only when it comes through
    # handleRetryAndDLQ (TOPIC_PUT_NUMS [%DLQ%g]), not a send-back's: the send-back DLQ is on neither DLQ side. No
    # client log, so the 4 failures are not compared.
    assertDataFrameEqual(
        rows,
        [Row(consumer_group="dlq_custom", minute=dt.datetime(2026, 11, 21, 10, 0), reconstructed_send_backs=4,
             broker_send_backs=4, send_back_diff=0, reconstructed_dlq=0, broker_dlq=0, dlq_diff=0,
             reconstructed_failures=4, client_failures=None, failure_diff=None, cause=None)],
    )  # fmt: skip
