"""A literal day for the operator's desk (issue 34): 50 dead letters with values as long as real ones (keys of
three ids, long group names, a 300-character error), and one message that failed 17 times: delivered, failed,
sent back, scheduled at levels 3..18 and redelivered 16 times, then dead-lettered 4 h 45 min 42 s after its
first delivery, and compensated by the ``refund-api`` handler. Every other letter's handler fails, so the ledger
holds GAVE_UP rows (re-drivable) next to the DONE one. Written with the data contract's columns
(test_pages_support.write_table) and compensated by the real batch service."""

from __future__ import annotations

import datetime as dt
import pathlib
from typing import Any

from test_pages_support import build_site

DAY = "2026-11-21"
GROUP = "GID_order_fulfilment_shipment_dispatch_consumer"
RETRIED = "0A00023727274624BE3467AB29860003"  # the message that failed 17 times
LETTERS = 50
START = dt.datetime(2026, 11, 21, 1, 0, 0, tzinfo=dt.UTC)
# RocketMQ's default messageDelayLevel from level 3 on: the waits of 16 scheduled retries (4 h 45 min 40 s)
LEVEL_DELAYS = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
EXCEPTION = (
    "java.lang.IllegalStateException: shipment-service unavailable for orderId=ORD-26112100058, "
    "com.example.shipping.ShippingListener.onMessage(ShippingListener.java:74)"
)
LONG_ERROR = "warehouse-api answered 503 Service Unavailable " + "(retry-after unknown) " * 12


def msg_id(i: int) -> str:
    return f"0A0002372727462400000000{i:08X}"


def long_keys(i: int) -> str:
    return f"ORD-2611210{i:05d} TRACE-9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 SKU-{i:04d}"


def letters() -> list[dict[str, Any]]:
    rows = []
    for i in range(LETTERS):
        retried = i == 0
        rows.append(
            {
                "consumer_group": GROUP if i % 2 == 0 else "GID_refund_validator",
                "msg_id": RETRIED if retried else msg_id(i),
                "original_topic": "shipments" if retried else ("orders-fulfilment-events" if i % 2 == 0 else "refunds"),
                "dlq_at": _dlq_at() if retried else START + dt.timedelta(minutes=i),
                "reconsume_times": 16,
                "keys": "ORD-26112100058" if retried else long_keys(i),
                "tags": "TagShip",
                "business_key": "ORD-26112100058" if retried else f"ORD-2611210{i:05d}",
                "body": '{"orderId": 1}',
                "dlq_inferred": False,
                "evidence": [f"ev-{i}-dlq"],
                "attribution": ["line"],
                "compensable": True,
            }
        )
    return rows


def _hop_plan() -> list[tuple[str, str, dt.datetime, int | None, int]]:
    """(to_state, physical topic, observed time, delay level, reconsume times) of the 17-retry message."""
    hops: list[tuple[str, str, dt.datetime, int | None, int]] = []
    t = START
    for attempt in range(17):
        topic = "shipments" if attempt == 0 else f"%RETRY%{GROUP}"
        hops.append(("DELIVERED", topic, t, None, attempt))
        hops.append(("FAILED", "", t + dt.timedelta(seconds=1), None, attempt))
        if attempt == 16:
            hops.append(("DEAD_LETTERED", f"%DLQ%{GROUP}", t + dt.timedelta(seconds=2), None, 16))
            break
        level = attempt + 3
        hops.append(("SENT_BACK", f"%RETRY%{GROUP}", t + dt.timedelta(seconds=2), level, attempt))
        hops.append(("SCHEDULED", "SCHEDULE_TOPIC_XXXX", t + dt.timedelta(seconds=2), level, attempt + 1))
        t = t + dt.timedelta(seconds=2 + LEVEL_DELAYS[attempt])
        hops.append(("READY", f"%RETRY%{GROUP}", t, level, attempt + 1))
        t = t - dt.timedelta(seconds=2)  # redelivered as it becomes ready (the 2 s of handling are in the wait)
    return hops


def _dlq_at() -> dt.datetime:
    return next(t for state, _, t, _, _ in _hop_plan() if state == "DEAD_LETTERED")


def transitions_and_events() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    key = {"consumer_group": GROUP, "msg_id": RETRIED}
    transitions, events = [], []
    previous = "PUBLISHED"
    for i, (state, topic, observed, level, times) in enumerate(_hop_plan()):
        event_id = f"ev-r-{i}"
        transitions.append(
            {
                **key,
                "hop": i,
                "from_state": previous,
                "to_state": state,
                "observed_at": observed,
                "expected_at": observed,
                "drift_ms": 0,
                "delay_level": level,
                "reconsume_times": times,
                "physical_topic": topic or None,
                "queue_id": 0,
                "inferred": False,
                "evidence": [event_id],
            }
        )
        previous = state
        kind = {"FAILED": "CONSUME_FAILED", "SENT_BACK": "SEND_BACK", "DEAD_LETTERED": "DEAD_LETTERED"}
        events.append(
            {
                **key,
                "event_id": event_id,
                "event_time": observed,
                "source": "rocketmq-client-4x",
                "source_file": "shipping-01/logs/rocketmqlogs/rocketmq_client.log",
                "line_no": 10 + i,
                "event_type": kind.get(state, "DELIVERED"),
                "topic": topic or "shipments",
                "original_topic": "shipments",
                "keys": "ORD-26112100058",
                "reconsume_times": times,
                "detail": EXCEPTION if state == "FAILED" else None,
            }
        )
    return transitions, events


def lifecycles(dead: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "consumer_group": d["consumer_group"],
            "msg_id": d["msg_id"],
            "original_topic": d["original_topic"],
            "keys": d["keys"],
            "tags": d["tags"],
            "business_key": d["business_key"],
            "first_seen": START,
            "last_seen": d["dlq_at"],
            "deliveries": 17,
            "final_state": "DEAD_LETTERED",
            "expected_final_state": "DEAD_LETTERED",
            "max_reconsume_times": 16,
            "anomalies": [],
            "evidence_class": "FULL",
            "attribution": ["line"],
            "instances": ["shipping-01"],
        }
        for d in dead
    ]


def refuse(letter: Any) -> str:
    """The warehouse API is down: the ledger records the (long) error and, with one attempt allowed, GAVE_UP."""
    raise RuntimeError(LONG_ERROR)


# The 13 days before DAY, for the overview's and groups page's trends: per day, the lifecycles of each group and how
# many of them were dead-lettered (a gap on the fourth day: no partition was committed that day).
HISTORY = {i: (40, (2, 5, 3, 0, 6, 4, 9, 3, 2, 7, 5, 4, 6)[i - 1]) for i in range(1, 14) if i != 4}


def history() -> dict[str, list[dict[str, Any]]]:
    """Earlier days' lifecycles of both groups (msg_ids of their own, no keys: no search of the desk finds them)."""
    out = {}
    for back, (n, dead) in HISTORY.items():
        ds = (dt.date.fromisoformat(DAY) - dt.timedelta(days=14 - back)).isoformat()
        out[ds] = [
            {"consumer_group": group, "msg_id": f"HIST-{ds}-{g}-{i:03d}", "original_topic": "shipments",
             "final_state": "DEAD_LETTERED" if i < dead + g else "CONSUMED", "expected_final_state": "CONSUMED",
             "anomalies": [], "attribution": ["line"]}
            for g, group in enumerate((GROUP, "GID_refund_validator"))
            for i in range(n)
        ]  # fmt: skip
    return out


def build(root: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """(warehouse, config) of the desk day, compensated, and its groups' earlier days (``history``)."""
    from test_pages_support import write_table

    dead = letters()
    transitions, events = transitions_and_events()
    warehouse, config = build_site(
        root,
        {"dead_letters": dead, "lifecycles": lifecycles(dead), "transitions": transitions, "events": events},
        [{"topic": "shipments", "handler": "refund-api"}, {"handler": "warehouse-api"}],
        {"refund-api": "rocketmq_retry.compensation.handlers:log_only", "warehouse-api": "pages_desk_support:refuse"},
    )
    for ds, rows in history().items():
        write_table(warehouse, "lifecycles", ds, rows)
    return warehouse, config
