"""Great Expectations suites against literal DataFrames that follow DESIGN §4, written as a real warehouse.

Real GE (file data context copied from expectations/), real local Spark. Good data passes; each broken rule
fails the check it belongs to, at the severity configured for it.
"""

from __future__ import annotations

import datetime as dt
import html
import os
import pathlib
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import pytest

from conftest import ROOT
from rocketmq_retry import contract

DS = "2026-11-20"
T0 = dt.datetime(2026, 11, 20, 1, 0, 0)

# the written tables' schemas, from the data contract (the suites check the same column sets)
TABLES = (
    "events", "transitions", "lifecycles", "dead_letters", "unattributed", "failures", "failure_causes", "incidents"
)  # fmt: skip
SCHEMAS = {table: contract.ddl(table) for table in TABLES}
FP = "0123456789abcdef0123456789abcdef"  # a fingerprint (jobs/ingest/causes.py: sha2 hex cut to 32)
FP_EARLIER = "00000000000000000000000000000000"  # the cause of a failure before DS


def _at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def good_rows() -> dict[str, list[dict[str, Any]]]:
    """One message consumed on its second delivery, one dead-lettered after 16 retries (group defaults)."""
    events = [
        {"event_id": f"e{i}", "event_time": _at(i), "source": "rocketmq-client-4x", "source_file": "client.log",
         "line_no": i, "event_type": t, "consumer_group": "GID_orders", "msg_id": "M1", "topic": "orders",
         "original_topic": "orders", "reconsume_times": r}
        for i, (t, r) in enumerate([("DELIVERED", 0), ("CONSUME_FAILED", 0), ("DELIVERED", 1), ("CONSUME_OK", 1)])
    ]  # fmt: skip
    events.append(
        {"event_id": "agg", "event_time": _at(60), "source": "broker-stats", "source_file": "stats.log", "line_no": 9,
         "event_type": "SEND_BACK_COUNT", "consumer_group": "GID_orders"}
    )  # fmt: skip
    transitions = [
        {"consumer_group": "GID_orders", "msg_id": "M1", "hop": 0, "from_state": "PUBLISHED", "to_state": "DELIVERED",
         "observed_at": _at(0), "reconsume_times": 0, "physical_topic": "orders", "inferred": False,
         "evidence": ["e0"]},
        {"consumer_group": "GID_orders", "msg_id": "M1", "hop": 1, "from_state": "DELIVERED", "to_state": "SCHEDULED",
         "observed_at": _at(1), "expected_at": _at(1), "drift_ms": 0, "delay_level": 3, "reconsume_times": 1,
         "physical_topic": "SCHEDULE_TOPIC_XXXX", "inferred": True, "evidence": []},
        {"consumer_group": "GID_orders", "msg_id": "M1", "hop": 2, "from_state": "SCHEDULED", "to_state": "CONSUMED",
         "observed_at": _at(11), "expected_at": _at(11.5), "drift_ms": -500, "reconsume_times": 1,
         "physical_topic": "%RETRY%GID_orders", "inferred": False, "evidence": ["e2", "e3"]},
    ]  # fmt: skip
    for hop in range(17):
        transitions.append(
            {"consumer_group": "GID_orders", "msg_id": "M2", "hop": hop, "from_state": "READY", "to_state": "DELIVERED",
             "observed_at": _at(100 + hop), "reconsume_times": hop,
             "physical_topic": "orders" if hop == 0 else "%RETRY%GID_orders", "inferred": False}
        )  # fmt: skip
    transitions.append(
        {"consumer_group": "GID_orders", "msg_id": "M2", "hop": 17, "from_state": "SENT_BACK",
         "to_state": "DEAD_LETTERED", "observed_at": _at(200), "reconsume_times": 16,
         "physical_topic": "%DLQ%GID_orders", "inferred": False}
    )  # fmt: skip
    lifecycles = [
        {"consumer_group": "GID_orders", "msg_id": "M1", "original_topic": "orders", "first_seen": _at(0),
         "last_seen": _at(11), "deliveries": 2, "final_state": "CONSUMED", "expected_final_state": "CONSUMED",
         "max_reconsume_times": 1, "anomalies": [], "attribution": ["line"], "instances": ["app-01"],
         "causes": [FP], "last_cause": FP, "failure_kind": "unknown", "kind_rule": "no-rule"},
        {"consumer_group": "GID_orders", "msg_id": "M2", "original_topic": "orders", "first_seen": _at(100),
         "last_seen": _at(200), "deliveries": 17, "final_state": "DEAD_LETTERED",
         "expected_final_state": "DEAD_LETTERED", "max_reconsume_times": 16, "anomalies": ["LATE_REDELIVERY"],
         "attribution": ["container", "line"], "instances": ["app-01"], "causes": ["RETURNED_NULL"],
         "last_cause": "RETURNED_NULL", "failure_kind": "outage", "incident_id": "I1", "kind_rule": "outage-window"},
        # carried over from the day before, where it last failed, in that day's incident I0
        {"consumer_group": "GID_orders", "msg_id": "M9", "original_topic": "orders", "first_seen": _at(-3600),
         "last_seen": _at(30), "deliveries": 17, "final_state": "DEAD_LETTERED",
         "expected_final_state": "DEAD_LETTERED", "max_reconsume_times": 16, "anomalies": [], "attribution": ["line"],
         "instances": ["app-01"], "causes": [FP_EARLIER], "last_cause": FP_EARLIER, "failure_kind": "outage",
         "incident_id": "I0", "kind_rule": "outage-window"},
    ]  # fmt: skip
    dead_letters = [
        {"consumer_group": "GID_orders", "msg_id": "M2", "original_topic": "orders", "dlq_at": _at(200),
         "reconsume_times": 16, "compensation_handler": "log-only", "dlq_inferred": False, "evidence": ["e9"],
         "attribution": ["container", "line"], "compensable": True, "cause_fingerprint": "RETURNED_NULL",
         "cause": "RETURNED_NULL", "failure_kind": "outage", "incident_id": "I1", "kind_rule": "outage-window",
         "redrive_advice": "outage-open"},
        # dead-lettered on DS after its last failure on the day before (an inferred DLQ move): its cause and its
        # incident are in that day's failure_causes and incidents, not in DS's
        {"consumer_group": "GID_orders", "msg_id": "M9", "original_topic": "orders", "dlq_at": _at(30),
         "reconsume_times": 16, "compensation_handler": "log-only", "dlq_inferred": True, "evidence": [],
         "attribution": ["line"], "compensable": True, "cause_fingerprint": FP_EARLIER, "cause": "E: earlier",
         "failure_kind": "outage", "incident_id": "I0", "kind_rule": "outage-window", "redrive_advice": "safe"},
    ]  # fmt: skip
    failure = {"consumer_group": "GID_orders", "source": "rocketmq-client-4x", "failure_kind": "unknown",
               "kind_rule": "no-rule"}  # fmt: skip
    failures = [
        {**failure, "msg_id": "M1", "reconsume_times": 0, "failed_at": _at(1), "cause": FP,
         "cause_evidence": "stack-trace", "event_id": "e1"},
        *({**failure, "msg_id": "M2", "reconsume_times": r, "failed_at": _at(100 + r), "cause": "RETURNED_NULL",
           "cause_evidence": "client-line", "failure_kind": "outage", "incident_id": "I1",
           "kind_rule": "outage-window"} for r in range(17)),
    ]  # fmt: skip
    cause = {"consumer_group": "GID_orders", "failure_kind": "unknown", "kind_rule": "no-rule", "incidents": []}
    failure_causes = [
        {**cause, "fingerprint": FP, "exception_class": "java.lang.IllegalStateException", "failures": 1,
         "messages": 1, "dead_letters": 0, "recovered": 1, "first_failure": _at(1), "last_failure": _at(1)},
        {**cause, "fingerprint": "RETURNED_NULL", "failures": 17, "messages": 1, "dead_letters": 1, "recovered": 0,
         "first_failure": _at(100), "last_failure": _at(116), "failure_kind": "outage",
         "kind_rule": "outage-window", "incidents": ["I1"]},
    ]  # fmt: skip
    incidents = [
        {"consumer_group": "GID_orders", "incident_id": "I1", "fingerprint": "RETURNED_NULL", "started_at": _at(100),
         "last_failure_at": _at(116), "state": "open", "failures": 17, "messages": 1, "dead_letters": 1,
         "recovered": 0, "failure_share": 1.0, "rule": "outage-window"},
    ]  # fmt: skip
    return {"events": events, "transitions": transitions, "lifecycles": lifecycles, "dead_letters": dead_letters,
            "unattributed": [], "failures": failures, "failure_causes": failure_causes,
            "incidents": incidents}  # fmt: skip


def write_warehouse(spark: Any, warehouse: pathlib.Path, tables: dict[str, list[dict[str, Any]]], ds: str = DS) -> None:
    from pyspark.sql.types import _parse_datatype_string

    for table, rows in tables.items():
        schema = _parse_datatype_string(SCHEMAS[table])
        ordered = [tuple(row.get(f.name) for f in schema.fields) for row in rows]
        spark.createDataFrame(ordered, schema).coalesce(1).write.mode("overwrite").parquet(
            str(contract.partition_dir(warehouse, table, ds))
        )


@pytest.fixture(scope="module")
def gx_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    """A writable copy of the committed project, so tests never write Data Docs into the checkout. Module-scoped:
    the variable it sets names this project to every validation in the process until it is restored, and a later
    module of the same pytest worker (test_validation_docs.py's own project) would validate into this one."""
    root = tmp_path_factory.mktemp("gx") / "expectations"
    shutil.copytree(ROOT / "expectations", root, ignore=shutil.ignore_patterns("uncommitted"))
    previous = os.environ.get("ROCKETMQ_RETRY_GX_ROOT")
    os.environ["ROCKETMQ_RETRY_GX_ROOT"] = str(root)
    yield root
    if previous is None:
        os.environ.pop("ROCKETMQ_RETRY_GX_ROOT", None)
    else:
        os.environ["ROCKETMQ_RETRY_GX_ROOT"] = previous


def _validate(spark: Any, tmp_path: pathlib.Path, tables: dict[str, list[dict[str, Any]]], **settings: Any) -> Any:
    from rocketmq_retry.config import Config
    from rocketmq_retry.validation.run import validate_partition
    from rocketmq_retry.validation.settings import ValidationSettings

    warehouse = tmp_path / "warehouse"
    write_warehouse(spark, warehouse, tables)
    return validate_partition(DS, str(warehouse), Config(), ValidationSettings(**settings), spark)


def _failed(summary: Any) -> dict[str, str]:
    return {r.check: r.severity for r in summary.results if not r.success}


@pytest.mark.spark
def test_good_partition_passes_through_the_cli_and_writes_data_docs(
    spark: Any, gx_root: pathlib.Path, tmp_path: pathlib.Path, capsys: Any
) -> None:
    """`rocketmq-retry validate` (run.main): exit 0, every check met, a run page linking the three tables."""
    import json

    from rocketmq_retry.validation.run import main

    warehouse = tmp_path / "warehouse"
    write_warehouse(spark, warehouse, good_rows())
    assert main(["--date", DS, "--warehouse", str(warehouse), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [r["check"] for r in summary["results"] if not r["success"]] == []
    assert summary["success"] and summary["rows"] == {
        "events": 5, "transitions": 21, "lifecycles": 3, "dead_letters": 2, "unattributed": 0, "failures": 18,
        "failure_causes": 2, "incidents": 1,
    }  # fmt: skip
    assert summary["evaluated"] == len(summary["results"]) > 60
    page = pathlib.Path(summary["docs_page"])
    assert page == gx_root / "gx" / "uncommitted" / "data_docs" / "local_site" / "runs" / f"dt={DS}.html"
    assert f'Validation of dt={DS} <span class="rr-status rr-passed">passed</span>' in page.read_text()
    assert set(summary["validation_pages"]) == set(TABLES)
    for path in summary["validation_pages"].values():
        assert pathlib.Path(path).is_file()
    assert (page.parent.parent / "index.html").is_file()

    assert main(["--date", "2026-11-21", "--warehouse", str(warehouse)]) == 3
    assert "no events partition for 2026-11-21" in capsys.readouterr().err
    assert main(["--date", "20261120", "--warehouse", str(warehouse)]) == 2


@pytest.mark.spark
def test_broken_rules_fail_their_checks_at_their_configured_severity(
    spark: Any, gx_root: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    tables = good_rows()
    t = tables["transitions"]
    t[2]["reconsume_times"] = 0  # M1 goes 1 -> 0: reconsume times must never decrease
    t[2]["drift_ms"] = 2_000  # beyond the 1 s tolerance configured below, and made critical there
    t.append({"consumer_group": "GID_orders", "msg_id": "M2", "hop": 18, "from_state": "READY", "to_state": "DELIVERED",
              "observed_at": _at(300), "reconsume_times": 16, "physical_topic": "%RETRY%GID_orders"})  # fmt: skip
    # M3 reaches the DLQ after one retry (its group's max is 16); M4 too, but its consumer asked for it.
    t.extend(
        {"consumer_group": "GID_orders", "msg_id": msg, "hop": h, "from_state": "X", "to_state": "X",
         "observed_at": _at(400 + h),
         "reconsume_times": h, "delay_level": level, "physical_topic": topic}
        for msg, level in (("M3", None), ("M4", -1))
        for h, topic in ((0, "orders"), (1, "%RETRY%GID_orders"), (2, "%DLQ%GID_orders"))
    )  # fmt: skip
    tables["lifecycles"][0]["final_state"] = "LOST"
    tables["lifecycles"][1]["anomalies"] = ["NOT_A_CODE"]
    tables["lifecycles"][1]["attribution"] = ["guess"]  # a group not established by a known method
    tables["events"][0]["event_id"] = "e1"  # duplicate id
    # a dead letter marked for compensation while it is held for review, and one held for review
    tables["dead_letters"][0]["review_reason"] = "DLQ inferred, but the failure of the last delivery was not observed"
    tables["dead_letters"].append(
        {"consumer_group": "GID_orders", "msg_id": "M5", "attribution": ["thread"], "compensable": False,
         "review_reason": "DLQ inferred, but the failure of the last delivery was not observed"}
    )  # fmt: skip
    tables["unattributed"] = [
        {"source": "spring-listener", "source_file": "app-02/logs/app.log", "instance": "app-02",
         "event_type": "CONSUME_FAILED", "topic": "orders", "reason": "no-evidence", "candidates": [],
         "fix": "sources[0].consumer_group", "lines": 3, "example_line_no": 17}
    ]  # fmt: skip

    summary = _validate(
        spark, tmp_path, tables, drift_tolerance_ms=1_000, severities={"transitions.drift_within_tolerance": "critical"}
    )
    assert _failed(summary) == {
        "transitions.reconsume_times_increasing": "critical",
        "transitions.drift_within_tolerance": "critical",
        "transitions.nothing_delivered_after_dlq": "warning",
        "transitions.dlq_at_max_or_override": "warning",
        "lifecycles.final_state_allowed": "critical",
        "lifecycles.anomaly_codes_allowed": "warning",
        "lifecycles.group_established": "critical",
        "events.event_id_unique": "critical",
        "dead_letters.compensable_established": "critical",
        "dead_letters.none_held_for_review": "warning",
        "unattributed.none": "warning",
    }
    dlq = next(r for r in summary.results if r.check == "transitions.dlq_at_max_or_override")
    assert dlq.observed == 1  # M3 only: M4's delay level -1 is the consumer's override
    assert not summary.success
    assert (
        f'Validation of dt={DS} <span class="rr-status rr-failed">failed</span>'
        in pathlib.Path(summary.docs_page).read_text()
    )


@pytest.mark.spark
def test_broken_causes_fail_their_checks(spark: Any, gx_root: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """failures, failure_causes and incidents (docs/causes.md): each table's vocabulary, their agreement with each
    other and with lifecycles and dead_letters, and the share of known causes per source format."""
    tables = good_rows()
    failures, causes, incidents = tables["failures"], tables["failure_causes"], tables["incidents"]
    lifecycles, dead_letters = tables["lifecycles"], tables["dead_letters"]
    pay = {"consumer_group": "GID_pay", "failure_kind": "unknown", "kind_rule": "no-rule"}
    # a failure with a cause, evidence, kind and rule no contract names, in an incident DS does not have
    failures.append(
        {**failures[0], "reconsume_times": 1, "failed_at": _at(5), "cause": "not-a-cause", "cause_evidence": "guessed",
         "failure_kind": "bad-luck", "kind_rule": "hunch", "incident_id": "I9"}
    )  # fmt: skip
    causes.append({**causes[0], "fingerprint": "not-a-cause", "dead_letters": 0, "recovered": 0})
    # coverage per source: no line 0 of 2 known, spring-listener 2 of 3, rocketmq-client-4x 19 of 19
    failures += [
        {**pay, "msg_id": "M7", "reconsume_times": r, "failed_at": _at(300 + r), "source": None, "cause": "UNKNOWN",
         "cause_evidence": "no-client-evidence"} for r in range(2)
    ]  # fmt: skip
    failures += [
        {**pay, "msg_id": "M8", "reconsume_times": r, "failed_at": _at(400 + r), "source": "spring-listener",
         "cause": cause, "cause_evidence": evidence, "incident_id": "I7" if r == 2 else None}
        for r, (cause, evidence) in enumerate([(FP, "stack-trace"), (FP, "stack-trace"), ("UNKNOWN", "trace-cut")])
    ]  # fmt: skip
    failures[-1]["failed_at"] = None
    incidents.append({**incidents[0], "consumer_group": "GID_pay", "incident_id": "I7", "fingerprint": "UNKNOWN"})
    causes += [
        # the UNKNOWN failures of GID_pay split over two rows (3 in all): the key repeats, the sum still agrees
        {**pay, "fingerprint": "UNKNOWN", "failures": 1, "messages": 1, "dead_letters": 0},
        {**pay, "fingerprint": "UNKNOWN", "failures": 2, "messages": None, "dead_letters": 0},
        {**pay, "fingerprint": FP, "failures": 2, "messages": 1, "dead_letters": 0, "failure_kind": "chaos",
         "kind_rule": "hunch"},
    ]  # fmt: skip
    causes[0]["failures"] = 2  # GID_orders has 1 failure with FP
    causes[1]["dead_letters"] = 2  # and 1 dead letter with RETURNED_NULL
    # M8 failed on DS: its lifecycle's and dead letter's incident must be DS's, its cause in failure_causes
    lifecycles.append(
        {**lifecycles[0], **pay, "msg_id": "M8", "failure_kind": "chaos", "incident_id": "I8", "kind_rule": "hunch"}
    )
    dead_letters.append(
        {**dead_letters[0], **pay, "msg_id": "M8", "cause_fingerprint": "fedcba9876543210fedcba9876543210",
         "failure_kind": "chaos", "kind_rule": "hunch", "incident_id": "I8", "redrive_advice": "yolo"}
    )  # fmt: skip
    incidents += [
        {**incidents[0], **pay, "incident_id": "I6", "state": "closed", "rule": "hunch"},
        {**incidents[0], **pay, "incident_id": "I6", "started_at": None},
    ]

    summary = _validate(spark, tmp_path, tables, cause_coverage_floor=0.7)
    assert _failed(summary) == {
        "failures.not_null": "critical",
        "failures.cause_known": "critical",
        "failures.cause_evidence_allowed": "critical",
        "failures.failure_kind_allowed": "critical",
        "failures.kind_rule_allowed": "critical",
        "failures.incident_exists": "critical",
        "failures.cause_coverage": "warning",
        "failure_causes.not_null": "critical",
        "failure_causes.key_unique": "critical",
        "failure_causes.failure_kind_allowed": "critical",
        "failure_causes.kind_rule_allowed": "critical",
        "failure_causes.failures_match": "critical",
        "failure_causes.dead_letters_match": "critical",
        "incidents.not_null": "critical",
        "incidents.incident_id_unique": "critical",
        "incidents.state_allowed": "critical",
        "incidents.rule_allowed": "critical",
        "lifecycles.failure_kind_allowed": "critical",
        "lifecycles.incident_exists": "critical",
        "dead_letters.failure_kind_allowed": "critical",
        "dead_letters.kind_rule_allowed": "critical",
        "dead_letters.redrive_advice_allowed": "critical",
        "dead_letters.cause_in_failure_causes": "critical",
        "dead_letters.incident_exists": "critical",
        "lifecycles.kind_rule_allowed": "critical",
    }
    observed = {r.check: r.observed for r in summary.results if not r.success and r.observed is not None}
    assert observed == {
        "failures.cause_known": 1,  # not-a-cause
        "failures.incident_exists": 1,  # I9
        "failures.cause_coverage": 2,  # (no line) 0.0 and spring-listener 0.667 below 0.7
        "failure_causes.failures_match": 1,  # GID_orders FP: 2 against 1
        "failure_causes.dead_letters_match": 2,  # GID_orders RETURNED_NULL 2 against 1; GID_pay M8's cause
        "lifecycles.incident_exists": 1,  # M8's I8 (M9's I0 is the day before's: M9 has no failure on DS)
        "dead_letters.cause_in_failure_causes": 1,  # M8 (M9's cause is the day before's)
        "dead_letters.incident_exists": 1,  # M8's I8
    }
    unexpected = {r.check: r.unexpected for r in summary.results if not r.success and r.unexpected is not None}
    assert unexpected == {
        "failures.not_null": 1,
        "failures.cause_evidence_allowed": 1,
        "failures.failure_kind_allowed": 1,
        "failures.kind_rule_allowed": 1,
        "failure_causes.not_null": 1,
        "failure_causes.key_unique": 2,
        "failure_causes.failure_kind_allowed": 1,
        "failure_causes.kind_rule_allowed": 1,
        "incidents.not_null": 1,
        "incidents.incident_id_unique": 2,
        "incidents.state_allowed": 1,
        "incidents.rule_allowed": 1,
        "lifecycles.failure_kind_allowed": 1,
        "lifecycles.kind_rule_allowed": 1,
        "dead_letters.failure_kind_allowed": 1,
        "dead_letters.kind_rule_allowed": 1,
        "dead_letters.redrive_advice_allowed": 1,
    }
    # the coverage warning's page lists the sources below the floor: failures, known causes, share, source
    page = pathlib.Path(summary.validation_pages["failures"]).read_text()
    assert "<th>failures</th><th>known_cause</th><th>share</th><th>source</th>" in page
    assert "<td>2</td><td>0</td><td>0.0</td><td>(no line)</td>" in page
    assert "<td>3</td><td>2</td><td>0.667</td><td>spring-listener</td>" in page


@pytest.mark.spark
def test_cause_coverage_floor_is_the_configured_one(spark: Any, gx_root: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """The good day's one source has 18 of 18 failures with a known cause; one UNKNOWN more makes it 18 of 19
    (0.947): a floor of 0.95 warns, the default 0.5 does not, and the severity is the configured one."""
    tables = good_rows()
    tables["failures"].append({**tables["failures"][0], "reconsume_times": 1, "cause": "UNKNOWN",
                               "cause_evidence": "trace-cut"})  # fmt: skip
    tables["failure_causes"].append({**tables["failure_causes"][0], "fingerprint": "UNKNOWN", "recovered": 0})
    assert _failed(_validate(spark, tmp_path / "default", tables)) == {}
    summary = _validate(
        spark, tmp_path / "floor", tables, cause_coverage_floor=0.95,
        severities={"failures.cause_coverage": "critical"},
    )  # fmt: skip
    assert _failed(summary) == {"failures.cause_coverage": "critical"} and not summary.success


HOSTILE = "<img src=x onerror=alert(1)>"


class _Markup(HTMLParser):
    """Every event-handler attribute (GX's own buttons have some), and every inline script's text."""

    def __init__(self) -> None:
        super().__init__()
        self.handlers: list[tuple[str, str, str]] = []
        self.inline_scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handlers += [(tag, name, value or "") for name, value in attrs if name.startswith("on")]
        self._in_script = tag == "script" and not dict(attrs).get("src")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.inline_scripts.append(data)


@pytest.mark.spark
def test_values_from_logs_never_reach_a_data_docs_page_as_markup(
    spark: Any, gx_root: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """GX 1.x writes a failing expectation's sample values into the page as raw HTML; keys, topics and group names
    come from logs. The stored results are escaped before the pages are built, so the value shows as text."""
    tables = good_rows()
    tables["events"][0]["event_type"] = HOSTILE  # not an allowed event type: a sample value on the events page
    tables["events"][1]["event_type"] = "<script>alert(2)</script>"
    tables["lifecycles"][0]["final_state"] = '"><svg onload=alert(3)>'

    summary = _validate(spark, tmp_path, tables)
    assert {"events.event_type_allowed", "lifecycles.final_state_allowed"} <= set(_failed(summary))
    pages = list((gx_root / "gx" / "uncommitted" / "data_docs").rglob("*.html"))
    events_page = pathlib.Path(summary.validation_pages["events"]).read_text()
    assert html.escape(HOSTILE) in events_page  # rendered, as text
    for page in pages:
        text = page.read_text()
        assert HOSTILE not in text and "<script>alert(2)" not in text and "<svg onload" not in text, page
        markup = _Markup()
        markup.feed(text)
        assert not [h for h in markup.handlers if "alert(" in h[2]], (page, markup.handlers)
        assert not any("alert(" in script for script in markup.inline_scripts), page


@pytest.mark.spark
def test_a_run_works_in_its_own_copy_and_never_changes_the_committed_project(
    spark: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no project configured, a run seeds a working copy under $AIRFLOW_HOME from the committed one; a config
    whose drift tolerance differs rewrites the copy's suite, never a tracked file."""
    import hashlib

    from rocketmq_retry.config import Config
    from rocketmq_retry.validation.run import validate_partition
    from rocketmq_retry.validation.settings import ValidationSettings

    def fingerprint() -> dict[str, str]:
        files = sorted(p for p in (ROOT / "expectations").rglob("*") if p.is_file() and "uncommitted" not in p.parts)
        return {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}

    monkeypatch.delenv("ROCKETMQ_RETRY_GX_ROOT", raising=False)
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "airflow"))
    before = fingerprint()
    warehouse = tmp_path / "warehouse"
    write_warehouse(spark, warehouse, good_rows())
    summary = validate_partition(DS, str(warehouse), Config(), ValidationSettings(drift_tolerance_ms=1234), spark)
    assert summary.success
    assert fingerprint() == before
    copy = tmp_path / "airflow" / "rocketmq-retry" / "expectations"
    suite = (copy / "gx" / "expectations" / "rocketmq_retry_transitions.json").read_text()
    assert '"max_value": 1234' in suite and pathlib.Path(summary.docs_page).is_relative_to(copy)


@pytest.mark.spark
def test_a_small_partition_is_cached_once_and_a_large_one_not_at_all(
    spark: Any, gx_root: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A partition under ``CACHE_BELOW_BYTES`` of Parquet is cached for all of GE's metric queries; a larger one is
    read from Parquet by each check, and GE's datasource does not cache it either (GE's default persists every
    frame it validates)."""
    from rocketmq_retry.config import Config
    from rocketmq_retry.validation import run as validation_run
    from rocketmq_retry.validation.settings import ValidationSettings

    warehouse = tmp_path / "warehouse"
    write_warehouse(spark, warehouse, good_rows())
    size = {
        t: sum(f.stat().st_size for f in contract.partition_dir(warehouse, t, DS).glob("*.parquet")) for t in TABLES
    }
    assert max(size, key=size.__getitem__) == "events"  # the widest table: its Parquet is the largest here too
    monkeypatch.setattr(validation_run, "CACHE_BELOW_BYTES", size["events"])  # events at the limit: not cached
    cached: dict[str, bool] = {}
    validated: dict[str, Any] = {}
    validate_frames = validation_run._validate_frames

    def after_great_expectations(frames: dict[str, Any], *args: Any) -> Any:
        summary = validate_frames(frames, *args)
        cached.update({t: f.storageLevel.useMemory for t, f in frames.items()})
        validated.update(frames)
        return summary

    monkeypatch.setattr(validation_run, "_validate_frames", after_great_expectations)
    assert validation_run.validate_partition(DS, str(warehouse), Config(), ValidationSettings(), spark).success
    assert cached == {t: t != "events" for t in TABLES}
    assert not any(f.storageLevel.useMemory for f in validated.values())  # released after the run


def test_a_project_whose_datasource_persists_frames_is_changed_to_leave_caching_to_the_run(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A working project seeded before the datasource stopped persisting: opening it turns that off, on disk."""
    from rocketmq_retry.config import Config
    from rocketmq_retry.validation.project import DATASOURCE, open_project
    from rocketmq_retry.validation.settings import ValidationSettings

    monkeypatch.delenv("ROCKETMQ_RETRY_GX_ROOT", raising=False)  # it would name another project
    root = tmp_path / "expectations"
    shutil.copytree(ROOT / "expectations", root, ignore=shutil.ignore_patterns("uncommitted"))
    yml = root / "gx" / "great_expectations.yml"
    assert "    persist: false\n" in yml.read_text()
    yml.write_text(yml.read_text().replace("    persist: false\n", ""))  # GE's default: persist
    context = open_project(Config(), ValidationSettings(context_root=str(root)))
    assert context.data_sources.get(DATASOURCE).persist is False
    assert "    persist: false\n" in yml.read_text()


def test_an_installed_package_without_a_project_is_told_where_to_point(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rocketmq_retry.config import Config
    from rocketmq_retry.errors import InputError
    from rocketmq_retry.validation import project
    from rocketmq_retry.validation.settings import ValidationSettings

    monkeypatch.setattr(project, "gx_template", lambda: None)
    monkeypatch.delenv("ROCKETMQ_RETRY_GX_ROOT", raising=False)
    with pytest.raises(InputError, match=r"set validation.context_root or \$ROCKETMQ_RETRY_GX_ROOT"):
        project.open_project(Config(), ValidationSettings(context_root=str(tmp_path / "none")))
    assert not (tmp_path / "none").exists()


def test_unknown_check_in_severities_is_a_config_error(tmp_path: pathlib.Path) -> None:
    from rocketmq_retry.errors import ConfigError
    from rocketmq_retry.validation.settings import load_validation_settings

    cfg = tmp_path / "c.yaml"
    cfg.write_text("validation:\n  severities: {transitions.drift: critical}\n")
    with pytest.raises(ConfigError, match=r"validation\.severities: unknown check\(s\) transitions\.drift"):
        load_validation_settings(cfg)


def test_committed_project_matches_the_code(gx_root: pathlib.Path) -> None:
    """expectations/ is generated by `python -m rocketmq_retry.validation.project`; keep it in step."""
    import great_expectations as gx

    from rocketmq_retry.config import Config
    from rocketmq_retry.validation.project import _fingerprint, checkpoint_name, validation_definition_name
    from rocketmq_retry.validation.settings import ValidationSettings
    from rocketmq_retry.validation.suites import TABLES, expectations_for, suite_name

    context = gx.get_context(mode="file", project_root_dir=str(ROOT / "expectations"))
    for table in TABLES:
        stored = context.suites.get(suite_name(table))
        assert _fingerprint(stored.expectations) == _fingerprint(
            expectations_for(table, Config(), ValidationSettings())
        )
        assert context.validation_definitions.get(validation_definition_name(table)).suite.name == suite_name(table)
        # No UpdateDataDocsAction: it would render raw sample values; run.py publishes escaped results instead.
        assert context.checkpoints.get(checkpoint_name(table)).actions == []
    types = {e.expectation_type for t in TABLES for e in context.suites.get(suite_name(t)).expectations}
    assert {"unexpected_rows_expectation", "expect_column_pair_values_a_to_be_greater_than_b"} <= types


def test_every_event_type_the_ingest_job_emits_is_allowed() -> None:
    """events.event_type_allowed must follow the ingest job's vocabulary, not just DESIGN's starting list."""
    from rocketmq_retry.jobs.ingest import patterns as ingest_patterns
    from rocketmq_retry.validation.suites import EVENT_TYPES

    emitted = {statement.event_type for statement in ingest_patterns.STATEMENTS}
    assert emitted - set(EVENT_TYPES) == set()


def test_validate_starts_its_own_session_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session validate starts itself logs errors only, from its first line (log4j2.properties), and draws no
    progress bar; the deployment's spark.conf still wins. A session that already runs is used as it is."""
    from rocketmq_retry import spark_session
    from rocketmq_retry.config import Config
    from rocketmq_retry.validation import run as validation_run

    built: dict[str, Any] = {}

    class Session:
        def stop(self) -> None:
            built["stopped"] = True

    def build(name: str, **kwargs: Any) -> Session:
        built.update(kwargs, name=name)
        return Session()

    monkeypatch.setattr(spark_session, "active_session", lambda: None)
    monkeypatch.setattr(spark_session, "build_spark_session", build)
    monkeypatch.setattr(validation_run, "prefetch_great_expectations", lambda remote: None)
    monkeypatch.setattr(validation_run, "validate_partition", lambda *args: "summary")
    config = Config.model_validate({"spark": {"conf": {"spark.log.level": "WARN"}}})
    assert validation_run.run(DS, "wh", config) == "summary" and built["stopped"]
    # the driver's flags (with the class archive when set-up wrote one), then the quiet log4j configuration
    options = f"{spark_session.driver_java_options()} -Dlog4j2.configurationFile={validation_run.LOG4J2.as_uri()}"
    assert built["conf"] == {
        "spark.log.level": "WARN",  # the deployment's
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": options,
    }
    log4j = validation_run.LOG4J2.read_text()
    assert "rootLogger.level = error" in log4j and "logger.pygateway.level = error" in log4j


@pytest.mark.spark
def test_a_validate_that_passes_writes_nothing_on_stderr_and_ends_with_the_page_url(
    spark: Any, gx_root: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """`rocketmq-retry validate` in its own process (its own Spark driver): Airflow logs a task's stderr as ERROR,
    so a run that passes writes nothing there but the JVM's own notice of the vector module Spark adds (no log4j
    level reaches it); its last line is the run page's URL."""
    import subprocess
    import sys

    warehouse = tmp_path / "warehouse"
    write_warehouse(spark, warehouse, good_rows())
    done = subprocess.run(
        [sys.executable, "-m", "rocketmq_retry.cli", "validate", "--date", DS, "--warehouse", str(warehouse)],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "ROCKETMQ_RETRY_GX_ROOT": str(gx_root)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert set(done.stderr.splitlines()) <= {"WARNING: Using incubator modules: jdk.incubator.vector"}, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"validation dt={DS}: passed (")
    assert lines[-1] == f"  Data Docs: /rocketmq-retry/data-docs/runs/dt={DS}.html"
