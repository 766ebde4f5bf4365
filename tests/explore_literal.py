"""A tiny literal warehouse for the read-layer tests: every table written with pyarrow in the contract's schema and
committed through warehouse/partitions.write_partitions (as the jobs commit theirs), plus a SQLite ledger and a
validation result on disk. No Spark."""

from __future__ import annotations

import datetime as dt
import json
import pathlib
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rocketmq_retry import contract
from rocketmq_retry.compensation.ledger import Ledger, Registration
from rocketmq_retry.warehouse.partitions import write_partitions

D1, D2 = "2026-11-20", "2026-11-21"
HOSTILE_KEY = 'a,"b"\n<script>alert(1)</script> 100%_x'
PAGED = 120  # dead letters of G3 on D2, for paging

_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "bigint": pa.int64(),
    "int": pa.int32(),
    "boolean": pa.bool_(),
    "array<string>": pa.list_(pa.string()),
    "map<string,bigint>": pa.map_(pa.string(), pa.int64()),
}


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    schema = pa.schema([(c, _TYPES[t]) for c, t in contract.SCHEMAS[name]])
    full = [{c: r.get(c) for c in schema.names} for r in rows]
    return pa.Table.from_pylist(full, schema=schema)


def _writer(t: pa.Table) -> Any:
    def write(path: pathlib.Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        pq.write_table(t, path / "part-00000.parquet")

    return write


def commit(warehouse: pathlib.Path, ds: str, tables: dict[str, list[dict[str, Any]]]) -> None:
    by_job: dict[str, dict[str, Any]] = {}
    for name, rows in tables.items():
        job = "ingest" if name in ("events", "quarantine", "ingest_report", "bindings") else "reconstruct"
        by_job.setdefault(job, {})[name] = _writer(table(name, rows))
    for job, writers in by_job.items():
        write_partitions(warehouse, ds, writers, job=job)


def life(group: str, msg_id: str, state: str, **kw: Any) -> dict[str, Any]:
    row = {
        "consumer_group": group,
        "msg_id": msg_id,
        "original_topic": "T1",
        "final_state": state,
        "expected_final_state": state,
        "anomalies": [],
        "attribution": ["line"],
        "deliveries": 1,
    }
    row.update(kw)
    return row


def dead(group: str, msg_id: str, **kw: Any) -> dict[str, Any]:
    row = {
        "consumer_group": group,
        "msg_id": msg_id,
        "original_topic": "T1",
        "tags": "tagA",
        "reconsume_times": 2,
        "compensable": True,
        "dlq_inferred": False,
        "attribution": ["line"],
        "evidence": [],
    }
    row.update(kw)
    return row


def build(base: pathlib.Path) -> dict[str, pathlib.Path]:
    """The warehouse, its config (ledger + GE root inside ``base``) and the ledger; returns their paths."""
    wh = base / "wh"
    gx = base / "gx"
    config = base / "c.yaml"
    config.write_text(
        "timezone: UTC\n"
        "groups:\n  G1: {max_reconsume_times: 2}\n  G4: {}\n"
        f"validation: {{context_root: {json.dumps(str(gx))}}}\n"
    )
    m1_hops = [
        ("PUBLISHED", "DELIVERED", "T1", None, 0, "2026-11-20T01:00:00", None, None, False, ["e1"]),
        ("DELIVERED", "FAILED", None, None, 0, "2026-11-20T01:00:00.050", None, None, False, ["e2"]),
        ("FAILED", "SENT_BACK", "%RETRY%G1", 3, 0, None, "2026-11-20T01:00:00.050", None, True, []),
        ("SENT_BACK", "SCHEDULED", "SCHEDULE_TOPIC_XXXX", 3, 1, "2026-11-20T01:00:00.060", "2026-11-20T01:00:00.050",
         10, False, ["e3"]),
        ("SCHEDULED", "READY", "%RETRY%G1", 3, 1, "2026-11-20T01:00:12", "2026-11-20T01:00:10.060", 1940, False,
         ["e4"]),
        ("READY", "DELIVERED", "%RETRY%G1", None, 1, "2026-11-20T01:00:12.500", "2026-11-20T01:00:10.060", 2440, False,
         ["e5"]),
        ("DELIVERED", "FAILED", None, None, 1, "2026-11-20T01:00:12.600", None, None, False, ["e5"]),
        ("FAILED", "SENT_BACK", "%RETRY%G1", None, 1, None, "2026-11-20T01:00:12.600", None, True, []),
        ("SENT_BACK", "DEAD_LETTERED", "%DLQ%G1", None, 2, "2026-11-20T01:00:12.700", "2026-11-20T01:00:12.600", 100,
         False, ["e6"]),
    ]  # fmt: skip
    transitions = [
        {
            "consumer_group": "G1", "msg_id": "M1", "hop": i, "from_state": f, "to_state": t, "physical_topic": topic,
            "queue_id": 2 if topic == "SCHEDULE_TOPIC_XXXX" else None, "delay_level": level, "reconsume_times": r,
            "observed_at": at(obs) if obs else None, "expected_at": at(exp) if exp else None, "drift_ms": drift,
            "inferred": inferred, "evidence": ev,
        }
        for i, (f, t, topic, level, r, obs, exp, drift, inferred, ev) in enumerate(m1_hops)
    ]  # fmt: skip
    transitions += [
        {"consumer_group": "G2", "msg_id": "M1", "hop": 0, "from_state": "PUBLISHED", "to_state": "DELIVERED",
         "physical_topic": "T1", "inferred": False, "observed_at": at("2026-11-20T01:00:01"), "evidence": ["e7"]},
        {"consumer_group": "G2", "msg_id": "M1", "hop": 1, "from_state": "DELIVERED", "to_state": "CONSUMED",
         "inferred": False, "observed_at": at("2026-11-20T01:00:01.010"), "evidence": ["e7"]},
    ]  # fmt: skip

    def ev(eid: str, when: str, etype: str, src: str, f: str, line: int, **kw: Any) -> dict[str, Any]:
        return {"event_id": eid, "event_time": at(when), "event_type": etype, "source": src, "source_file": f,
                "line_no": line, "msg_id": "M1", **kw}  # fmt: skip

    events = [
        ev("e1", "2026-11-20T01:00:00", "DELIVERED", "trace", "trace/t.trace", 3, consumer_group="G1"),
        ev("e2", "2026-11-20T01:00:00.050", "CONSUME_FAILED", "rocketmq-client-4x", "app1/logs/rocketmq_client.log",
           17, consumer_group="G1", thread="ConsumeMessageThread_G1_1"),
        ev("e3", "2026-11-20T01:00:00.060", "SEND_BACK", "message-dump", "dumps/schedule.jsonl", 1,
           offset_msg_id="OFF-SCHED", topic="SCHEDULE_TOPIC_XXXX"),
        ev("e4", "2026-11-20T01:00:12", "RETRY_ENQUEUED", "message-dump", "dumps/retry.jsonl", 1,
           offset_msg_id="OFF-RETRY", topic="%RETRY%G1"),
        ev("e5", "2026-11-20T01:00:12.500", "CONSUME_FAILED", "trace", "trace/t.trace", 9, consumer_group="G1"),
        ev("e6", "2026-11-20T01:00:12.700", "DEAD_LETTERED", "broker", "broker-a/logs/broker.log", 42,
           offset_msg_id="OFF-DLQ", topic="%DLQ%G1"),
        ev("e7", "2026-11-20T01:00:01", "DELIVERED", "trace", "trace/t.trace", 4, consumer_group="G2"),
        ev("e8", "2026-11-20T00:59:59", "PUBLISHED", "trace", "trace/t.trace", 1, offset_msg_id="OFF-BIZ"),
    ]  # fmt: skip
    lifecycles1 = [
        life("G1", "M1", "DEAD_LETTERED", keys="K1 BK-1", business_key="BK-1", tags="tagA", deliveries=2,
             anomalies=["LATE_REDELIVERY"], first_seen=at("2026-11-20T01:00:00"),
             last_seen=at("2026-11-20T01:00:12.700"), evidence_class="PARTIAL", max_reconsume_times=1),
        life("G2", "M1", "CONSUMED", keys="K1 BK-1", business_key="BK-1", first_seen=at("2026-11-20T01:00:01")),
        life("G1", "M2", "DEAD_LETTERED", keys=HOSTILE_KEY, business_key="BK-2", anomalies=["LATE_REDELIVERY",
             "EARLY_DLQ"]),
        life("G2", "M3", "DEAD_LETTERED", original_topic="T2", attribution=["container", "thread"]),
        life("G2", "M4", "DROPPED"),
    ]  # fmt: skip
    dead1 = [
        dead("G1", "M1", keys="K1 BK-1", business_key="BK-1", dlq_at=at("2026-11-20T01:00:12.700"),
             reconsume_times=2, evidence=["e6"]),
        dead("G1", "M2", keys=HOSTILE_KEY, business_key="BK-2", tags="tagB"),
        dead("G2", "M3", original_topic="T2", compensable=False, review_reason="DLQ arrival not observed",
             attribution=["container", "thread"], dlq_inferred=True),
    ]  # fmt: skip
    recon = [
        {"consumer_group": "G1", "minute": at("2026-11-20T01:00:00"), "reconstructed_send_backs": 2,
         "broker_send_backs": 3, "send_back_diff": -1, "cause": "not-collected"},
        {"consumer_group": "G2", "minute": at("2026-11-20T01:00:00"), "reconstructed_send_backs": 0,
         "broker_send_backs": 0, "send_back_diff": 0},
    ]  # fmt: skip
    unattributed = [
        {"source": "spring-listener", "source_file": "app9/logs/app.log", "instance": "app9",
         "event_type": "CONSUME_FAILED", "topic": "T1", "reason": "ambiguous", "candidates": ["G1", "G2"],
         "fix": "sources[2].consumer_group", "lines": 4, "example_line_no": 12},
    ]  # fmt: skip
    report = [
        {"source_file": "app1/logs/rocketmq_client.log", "source": "rocketmq-client-4x", "lines_read": 100,
         "events": 10, "ignored": 80, "continuation": 7, "quarantined": 3, "other_date": 0, "event_rows": 10,
         "quarantined_by_reason": {"bad-timestamp": 2, "too-long": 1}, "ignored_by_kind": {"heartbeat": 80},
         "file_status": "read"},
        {"source_file": "app1/logs/rocketmq_client.1.log.gz", "source": "rocketmq-client-4x", "lines_read": 0,
         "events": 0, "ignored": 0, "continuation": 0, "quarantined": 0, "other_date": 0,
         "quarantined_by_reason": {}, "file_status": "quarantined", "file_reason": "damaged gzip"},
    ]  # fmt: skip
    commit(wh, D1, {
        "events": events, "ingest_report": report, "lifecycles": lifecycles1, "transitions": transitions,
        "dead_letters": dead1, "reconciliation": recon, "unattributed": unattributed,
    })  # fmt: skip
    paged = [f"P{i:04d}" for i in range(PAGED)]
    commit(wh, D2, {
        "lifecycles": [life("G3", m, "DEAD_LETTERED", original_topic="T3") for m in paged]
        + [life("G1", "M9", "CONSUMED")],
        "transitions": [{"consumer_group": "G3", "msg_id": m, "hop": 3, "from_state": "SENT_BACK",
                         "to_state": "SCHEDULED", "delay_level": 3 + (i % 2), "inferred": False, "evidence": []}
                        for i, m in enumerate(paged)],
        "dead_letters": [dead("G3", m, original_topic="T3", tags="tagC", keys=f"KEY-{m}") for m in paged],
        "reconciliation": [], "unattributed": [],
    })  # fmt: skip
    # the validation result as validation/run.py writes it next to its page
    runs = gx / "gx" / "uncommitted" / "data_docs" / "local_site" / "runs"
    runs.mkdir(parents=True)
    (runs / f"dt={D1}.json").write_text(
        json.dumps({"ds": D1, "warehouse": str(wh), "success": False, "evaluated": 30,
                    "critical_failures": ["lifecycles.key_unique"], "warning_failures": ["unattributed.none"]})
    )  # fmt: skip
    (runs / f"dt={D1}.html").write_text("<h1>ok</h1>")
    ledger_file = wh / "compensation.db"
    with Ledger.open(f"sqlite:///{ledger_file}") as ledger:
        ledger.register(
            [
                Registration("G1", "M1", D1, "T1", "log-only", "BK-1"),
                Registration("G1", "M2", D1, "T1", "log-only", "BK-2"),
            ]
            + [Registration("G3", m, D2, "T3", "log-only", None) for m in paged[:10]]
        )
        claim = ledger.claim("G1", "M1", worker="w1", run_id="scheduled__2026-11-20", handler="log-only")
        assert claim is not None
        ledger.fail(claim, "HTTP 503", permanent=False, handler="log-only")
        claim = ledger.claim("G1", "M1", worker="w1", run_id="scheduled__2026-11-20", handler="log-only")
        assert claim is not None
        ledger.complete(claim, "logged", handler="log-only")
    return {"warehouse": wh, "config": config, "gx": gx, "ledger": ledger_file}
