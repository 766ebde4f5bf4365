"""A literal day of causes (issue 30 part 5) for the read layer and the pages: two groups, four causes, two
incidents, written with the data contract's columns (test_pages_support.write_table) and compensated by the real
batch service.

- order-consumer, ``java.net.ConnectException`` (FP_DB): an outage from 03:00:10 to 03:12, ended 03:15; six
  messages failed (nine failures), O1-O3 dead-lettered (``safe``), O4-O6 consumed on their retry. The example
  line is O2's first failure, so O2 (not O1, the first to fail) is its example message.
- order-consumer, a Jackson parse error (FP_JSON) whose logged message carries markup: P1 failed three times and
  is poison (``will-fail-again``).
- order-consumer, ``UNKNOWN`` (the trace was cut): O7 once, then consumed.
- pay-consumer, ``CONSUME_TIMEOUT``: an outage still open (from 14:50); Q1 dead-lettered (``outage-open``).

A date before the causes existed (``OLD_DAY``) has dead letters and lifecycles without any cause column.
Orders' compensation fails (its letters are re-drivable), payments' succeeds (DONE)."""

from __future__ import annotations

import datetime as dt
import pathlib
from typing import Any

from test_pages_support import build_site

DAY = "2026-11-21"
OLD_DAY = "2026-11-20"
ORDERS, PAY = "order-consumer", "pay-consumer"
FP_DB = "5d41402abc4b2a76b9719d911017c592"
FP_JSON = "7d793037a0760186574b0282f2f435e7"
TIMEOUT, UNKNOWN = "CONSUME_TIMEOUT", "UNKNOWN"
INC_DB = "0cc175b9c0f1b6a831c399e269772661"
INC_PAY = "92eb5ffee6ae2fec3ad71c777531578f"
HOSTILE_MESSAGE = "Unexpected character ('<' (code 60)): <script>alert(1)</script> at [Source: \"{a,b}\"]"
DB_MESSAGE = "Connection refused (inventory-db:5432)"
APP_FRAME = "com.example.orders.OrderListener.onMessage(OrderListener.java:42)"
LOG = "app-1/logs/app.log"
UNKNOWN_REASON = "trace-cut"


def at(hh: int, mm: int, ss: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, 21, hh, mm, ss, tzinfo=dt.UTC)


# (group, msg_id, reconsume_times, failed_at, cause, evidence, kind, incident, rule)
OUTAGE, POISON = "outage", "poison"
FAILURES: list[tuple[str, str, int, dt.datetime, str, str, str, str | None, str]] = [
    (ORDERS, "O1", 0, at(3, 0, 10), FP_DB, "stack-trace", OUTAGE, INC_DB, "outage-window"),
    (ORDERS, "O1", 1, at(3, 2, 10), FP_DB, "stack-trace", OUTAGE, INC_DB, "outage-window"),
    (ORDERS, "O2", 0, at(3, 1), FP_DB, "stack-trace", OUTAGE, INC_DB, "outage-window"),
    (ORDERS, "O2", 1, at(3, 4), FP_DB, "stack-trace", OUTAGE, INC_DB, "outage-window"),
    (ORDERS, "O3", 0, at(3, 3), FP_DB, "stack-trace", OUTAGE, INC_DB, "outage-window"),
    (ORDERS, "O3", 1, at(3, 12), FP_DB, "stack-trace", OUTAGE, INC_DB, "outage-window"),
    (ORDERS, "O4", 0, at(3, 5), FP_DB, "stack-trace", OUTAGE, INC_DB, "outage-window"),
    (ORDERS, "O5", 0, at(3, 6), FP_DB, "stack-trace", OUTAGE, INC_DB, "outage-window"),
    (ORDERS, "O6", 0, at(3, 7, 30), FP_DB, "stack-trace", OUTAGE, INC_DB, "outage-window"),
    (ORDERS, "P1", 0, at(8, 0), FP_JSON, "stack-trace", POISON, None, "poison-every-delivery"),
    (ORDERS, "P1", 1, at(8, 0, 10), FP_JSON, "stack-trace", POISON, None, "poison-every-delivery"),
    (ORDERS, "P1", 2, at(8, 0, 40), FP_JSON, "stack-trace", POISON, None, "poison-every-delivery"),
    (ORDERS, "O7", 0, at(9, 0), UNKNOWN, UNKNOWN_REASON, "unknown", None, "no-rule"),
    *[(PAY, f"Q{i}", 0, at(14, 49 + i), TIMEOUT, "client-line", OUTAGE, INC_PAY, "outage-window") for i in range(1, 6)],
    (PAY, "Q1", 1, at(14, 58), TIMEOUT, "client-line", OUTAGE, INC_PAY, "outage-window"),
]  # fmt: skip


def event_id(msg_id: str, times: int) -> str:
    return f"ev-{msg_id}-{times}"


def failures() -> list[dict[str, Any]]:
    return [
        {
            "consumer_group": g, "msg_id": m, "reconsume_times": r, "failed_at": t, "cause": c,
            "cause_evidence": e, "source": "spring-listener" if g == ORDERS else "rocketmq-client-4x",
            "event_id": None if c == UNKNOWN else event_id(m, r), "failure_kind": k, "incident_id": i,
            "kind_rule": rule,
        }
        for g, m, r, t, c, e, k, i, rule in FAILURES
    ]  # fmt: skip


def events() -> list[dict[str, Any]]:
    """The failure lines (one per failure with a line), numbered in time order in one file per group."""
    rows = []
    for n, (g, m, r, t, c, _e, _k, _i, _rule) in enumerate(sorted(FAILURES, key=lambda f: f[3])):
        if c == UNKNOWN:
            continue
        rows.append(
            {
                "event_id": event_id(m, r), "event_time": t, "source": "spring-listener", "source_file": LOG,
                "line_no": 100 + n, "event_type": "CONSUME_FAILED", "consumer_group": g, "msg_id": m,
                "reconsume_times": r, "topic": "orders" if g == ORDERS else "payments",
                "fingerprint": c if c not in (TIMEOUT, UNKNOWN) else None,
            }
        )  # fmt: skip
    return rows


def failure_causes() -> list[dict[str, Any]]:
    return [
        {
            "consumer_group": ORDERS, "fingerprint": FP_DB, "exception_class": "org.springframework.dao.X",
            "root_cause_class": "java.net.ConnectException", "normalised_message": "Connection refused (<host>:<n>)",
            "app_frame": APP_FRAME, "example_message": DB_MESSAGE, "example_event_id": event_id("O2", 0),
            "example_source_file": LOG, "example_line_no": 101, "failures": 9, "messages": 6, "dead_letters": 3,
            "recovered": 3, "first_failure": at(3, 0, 10), "last_failure": at(3, 12), "failure_kind": OUTAGE,
            "kind_rule": "outage-window", "incidents": [INC_DB],
        },
        {
            "consumer_group": ORDERS, "fingerprint": FP_JSON,
            "exception_class": "com.fasterxml.jackson.core.JsonParseException",
            "root_cause_class": "com.fasterxml.jackson.core.JsonParseException",
            "normalised_message": "Unexpected character (<q> (code <n>)): <script>", "app_frame": APP_FRAME,
            "example_message": HOSTILE_MESSAGE, "example_event_id": event_id("P1", 0), "example_source_file": LOG,
            "example_line_no": 109, "failures": 3, "messages": 1, "dead_letters": 1, "recovered": 0,
            "first_failure": at(8, 0), "last_failure": at(8, 0, 40), "failure_kind": POISON,
            "kind_rule": "poison-every-delivery", "incidents": [],
        },
        {
            "consumer_group": ORDERS, "fingerprint": UNKNOWN, "failures": 1, "messages": 1, "dead_letters": 0,
            "recovered": 1, "first_failure": at(9, 0), "last_failure": at(9, 0), "failure_kind": "unknown",
            "kind_rule": "no-rule", "incidents": [],
        },
        {
            "consumer_group": PAY, "fingerprint": TIMEOUT, "example_event_id": event_id("Q1", 0),
            "example_source_file": LOG, "example_line_no": 113, "failures": 6, "messages": 5, "dead_letters": 1,
            "recovered": 0, "first_failure": at(14, 50), "last_failure": at(14, 58), "failure_kind": OUTAGE,
            "kind_rule": "outage-window", "incidents": [INC_PAY],
        },
    ]  # fmt: skip


def incidents() -> list[dict[str, Any]]:
    return [
        {
            "consumer_group": ORDERS, "incident_id": INC_DB, "fingerprint": FP_DB, "started_at": at(3, 0, 10),
            "last_failure_at": at(3, 12), "ended_at": at(3, 15), "state": "ended", "failures": 9, "messages": 6,
            "dead_letters": 3, "recovered": 3, "failure_share": 0.9, "rule": "outage-window",
        },
        {
            "consumer_group": PAY, "incident_id": INC_PAY, "fingerprint": TIMEOUT, "started_at": at(14, 50),
            "last_failure_at": at(14, 58), "ended_at": None, "state": "open", "failures": 6, "messages": 5,
            "dead_letters": 1, "recovered": 0, "failure_share": 1.0, "rule": "outage-window",
        },
    ]  # fmt: skip


def _letter(group: str, msg_id: str, dlq_at: dt.datetime, **cause: Any) -> dict[str, Any]:
    topic = "orders" if group == ORDERS else "payments"
    return {
        "consumer_group": group, "msg_id": msg_id, "original_topic": topic, "dlq_at": dlq_at, "reconsume_times": 2,
        "keys": f"KEY-{msg_id}", "tags": "TagA", "business_key": f"BK-{msg_id}", "body": "{}", "dlq_inferred": False,
        "evidence": [], "attribution": ["line"], "compensable": True, **cause,
    }  # fmt: skip


def dead_letters() -> list[dict[str, Any]]:
    db = {
        "cause_fingerprint": FP_DB, "cause": f"java.net.ConnectException: {DB_MESSAGE}", "app_frame": APP_FRAME,
        "failure_kind": OUTAGE, "incident_id": INC_DB, "kind_rule": "outage-window", "redrive_advice": "safe",
    }  # fmt: skip
    json_cause = {
        "cause_fingerprint": FP_JSON, "cause": f"com.fasterxml.jackson.core.JsonParseException: {HOSTILE_MESSAGE}",
        "app_frame": APP_FRAME, "failure_kind": POISON, "kind_rule": "poison-every-delivery",
        "redrive_advice": "will-fail-again",
    }  # fmt: skip
    timeout = {
        "cause_fingerprint": TIMEOUT, "cause": TIMEOUT, "failure_kind": OUTAGE, "incident_id": INC_PAY,
        "kind_rule": "outage-window", "redrive_advice": "outage-open",
    }  # fmt: skip
    return [
        _letter(ORDERS, "O1", at(3, 2, 11), **db),
        _letter(ORDERS, "O2", at(3, 4, 1), **db),
        _letter(ORDERS, "O3", at(3, 12, 1), **db),
        _letter(ORDERS, "P1", at(8, 0, 41), **json_cause),
        _letter(PAY, "Q1", at(14, 58, 1), **timeout),
    ]


def lifecycles() -> list[dict[str, Any]]:
    last: dict[tuple[str, str], tuple[str, str | None, str, str]] = {}
    causes: dict[tuple[str, str], list[str]] = {}
    for g, m, _r, _t, c, _e, k, i, rule in FAILURES:
        last[(g, m)] = (c, i, k, rule)
        if c not in causes.setdefault((g, m), []):
            causes[(g, m)].append(c)
    dead = {(d["consumer_group"], d["msg_id"]) for d in dead_letters()}
    rows = []
    for (g, m), (c, i, k, rule) in sorted(last.items()):
        state = "DEAD_LETTERED" if (g, m) in dead else ("IN_RETRY" if g == PAY else "CONSUMED")
        rows.append(
            {
                "consumer_group": g, "msg_id": m, "original_topic": "orders" if g == ORDERS else "payments",
                "keys": f"KEY-{m}", "tags": "TagA", "business_key": f"BK-{m}", "first_seen": at(3, 0),
                "last_seen": at(15, 0), "deliveries": 3, "final_state": state, "expected_final_state": state,
                "max_reconsume_times": 2, "anomalies": [], "evidence_class": "FULL", "attribution": ["line"],
                "instances": ["app-1"], "causes": causes[(g, m)], "last_cause": c, "failure_kind": k,
                "incident_id": i, "kind_rule": rule,
            }
        )  # fmt: skip
    return rows


def transitions() -> list[dict[str, Any]]:
    """O2's path: delivered, failed, retried at level 3, failed again, dead-lettered."""
    key = {"consumer_group": ORDERS, "msg_id": "O2"}
    plan = [
        ("PUBLISHED", "DELIVERED", "orders", at(3, 1), None, 0, event_id("O2", 0)),
        ("DELIVERED", "FAILED", None, at(3, 1), None, 0, event_id("O2", 0)),
        ("FAILED", "SENT_BACK", "%RETRY%order-consumer", at(3, 1), 3, 0, None),
        ("SENT_BACK", "SCHEDULED", "SCHEDULE_TOPIC_XXXX", at(3, 1), 3, 1, None),
        ("SCHEDULED", "READY", "%RETRY%order-consumer", at(3, 1, 10), 3, 1, None),
        ("READY", "DELIVERED", "%RETRY%order-consumer", at(3, 4), None, 1, event_id("O2", 1)),
        ("DELIVERED", "FAILED", None, at(3, 4), None, 1, event_id("O2", 1)),
        ("FAILED", "DEAD_LETTERED", "%DLQ%order-consumer", at(3, 4, 1), None, 2, None),
    ]
    return [
        {
            **key, "hop": n, "from_state": f, "to_state": t, "physical_topic": topic, "observed_at": when,
            "expected_at": when, "drift_ms": 0, "delay_level": level, "reconsume_times": times, "queue_id": 0,
            "inferred": False, "evidence": [e] if e else [],
        }
        for n, (f, t, topic, when, level, times, e) in enumerate(plan)
    ]  # fmt: skip


def _old_letters() -> list[dict[str, Any]]:
    return [_letter(ORDERS, "OLD1", dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC))]


def _write_old_day(warehouse: pathlib.Path) -> None:
    """dead_letters/ and lifecycles/ of OLD_DAY as written before the causes: without their columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rocketmq_retry import contract
    from rocketmq_retry.explore.dead_letters import CAUSE_COLUMNS
    from test_pages_support import _arrow_type

    new = {*CAUSE_COLUMNS, "causes", "last_cause"}
    life = {
        **_letter(ORDERS, "OLD1", dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)),
        "final_state": "DEAD_LETTERED", "expected_final_state": "DEAD_LETTERED", "anomalies": [],
    }  # fmt: skip
    for table, rows in (("dead_letters", _old_letters()), ("lifecycles", [life])):
        schema = pa.schema([(n, _arrow_type(t)) for n, t in contract.SCHEMAS[table] if n not in new])
        path = contract.partition_dir(warehouse, table, OLD_DAY)
        path.mkdir(parents=True, exist_ok=True)
        full = [{n: r.get(n) for n in schema.names} for r in rows]
        pq.write_table(pa.Table.from_pylist(full, schema=schema), path / "part-00000.parquet")


def refuse(letter: Any) -> str:
    raise RuntimeError(f"order service down for {letter.msg_id}")


def build(root: pathlib.Path, groups: dict[str, Any] | None = None) -> tuple[pathlib.Path, pathlib.Path]:
    """(warehouse, config) of the causes day (and the old day), compensated; ``groups``: the config's groups
    section (default: none, every group on RocketMQ's defaults)."""
    site = build_site(
        root,
        {
            "dead_letters": dead_letters(), "lifecycles": lifecycles(), "transitions": transitions(),
            "events": events(), "failures": failures(), "failure_causes": failure_causes(),
            "incidents": incidents(),
        },
        [{"topic": "orders", "handler": "orders-api"}, {"handler": "log-only"}],
        {"orders-api": "pages_causes_support:refuse", "log-only": "rocketmq_retry.compensation.handlers:log_only"},
        settings={"timezone": "UTC", **({"groups": groups} if groups else {})},
    )  # fmt: skip
    _write_old_day(site[0])
    return site
