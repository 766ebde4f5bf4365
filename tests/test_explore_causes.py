"""The read layer's causes (docs/causes.md, docs/explore.md) on the literal causes day (pages_causes_support.py):
the ranking, the words, the incidents, the minutes, the example message, each failed delivery of a story, the
dead-letter filters and export by cause and kind, the safe re-drive set and the advice of chosen rows, and a date
written before the causes, which reads as "no cause recorded"."""

from __future__ import annotations

import csv
import io
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest

import pages_causes_support as day
from rocketmq_retry import contract
from rocketmq_retry.explore import DeadLetterFilter, ExploreError, open_warehouse

D = day.DAY


@pytest.fixture(scope="module")
def ex(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    warehouse, config = day.build(tmp_path_factory.mktemp("causes"))
    with open_warehouse(warehouse, config) as explorer:
        yield explorer


def test_causes_ranked_by_dead_letters_then_failures(ex: Any) -> None:
    page = ex.causes(D)
    assert [(c.consumer_group, c.fingerprint, c.dead_letters, c.failures) for c in page.causes] == [
        (day.ORDERS, day.FP_DB, 3, 9),
        (day.PAY, day.TIMEOUT, 1, 6),
        (day.ORDERS, day.FP_JSON, 1, 3),
        (day.ORDERS, day.UNKNOWN, 0, 1),
    ]
    assert page.failures == 19 and page.groups == [day.ORDERS, day.PAY] and page.written
    assert page.unknown == {day.UNKNOWN_REASON: 1}
    db, timeout, parse, unknown = page.causes
    assert db.label == "ConnectException: Connection refused (<host>:<n>)" and db.code_text is None
    assert db.rule_text == contract.KIND_RULES["outage-window"] and db.failure_kind == "outage"
    assert timeout.label == day.TIMEOUT and timeout.code_text == contract.CAUSE_CODES[day.TIMEOUT]
    assert parse.example_message == day.HOSTILE_MESSAGE and parse.app_frame == day.APP_FRAME
    assert unknown.code_text == contract.CAUSE_CODES[day.UNKNOWN]
    # the example line is O2's first failure: O2 is the example message, not O1 (the first to fail)
    assert (db.example_msg_id, db.example_source_file, db.example_line_no) == ("O2", day.LOG, 101)
    assert parse.example_msg_id == "P1" and unknown.example_msg_id == "O7"


def test_minutes_and_incidents(ex: Any) -> None:
    page = ex.causes(D, day.ORDERS)
    assert [c.fingerprint for c in page.causes] == [day.FP_DB, day.FP_JSON, day.UNKNOWN] and page.failures == 13
    db = page.causes[0]
    # minutes from 00:00 UTC (the config's zone): 03:00:10 and 03:00:59 would share minute 180
    assert db.per_minute == [(180, 1), (181, 1), (182, 1), (183, 1), (184, 1), (185, 1), (186, 1), (187, 1), (192, 1)]
    assert page.causes[1].per_minute == [(480, 3)]
    assert [(i.incident_id, i.state, i.ended_at.isoformat()) for i in db.incidents] == [
        (day.INC_DB, "ended", "2026-11-21T03:15:00+00:00")
    ]
    assert [i.incident_id for i in page.incidents] == [day.INC_DB]
    everything = ex.causes(D)
    # open incidents first
    assert [(i.incident_id, i.state, i.cause_label) for i in everything.incidents] == [
        (day.INC_PAY, "open", day.TIMEOUT),
        (day.INC_DB, "ended", "ConnectException: Connection refused (<host>:<n>)"),
    ]
    assert str(everything.day_start) == "2026-11-21 00:00:00+00:00"


def test_overview_leads_with_top_causes_and_open_incidents(ex: Any) -> None:
    o = ex.run_overview(D)
    assert [c.fingerprint for c in o.top_causes] == [day.FP_DB, day.TIMEOUT, day.FP_JSON, day.UNKNOWN]
    assert [i.incident_id for i in o.open_incidents] == [day.INC_PAY] and o.failures == 19


def test_each_failed_delivery_of_a_story(ex: Any) -> None:
    (story,) = ex.story("O2")
    assert story.failure_kind == "outage" and story.incident_id == day.INC_DB and story.causes == [day.FP_DB]
    assert [(f.reconsume_times, f.failed_at.strftime("%H:%M:%S"), f.cause, f.cause_evidence, f.source_file,
             f.line_no, f.label) for f in story.failures] == [
        (0, "03:01:00", day.FP_DB, "stack-trace", day.LOG, 101, "ConnectException: Connection refused (<host>:<n>)"),
        (1, "03:04:00", day.FP_DB, "stack-trace", day.LOG, 104, "ConnectException: Connection refused (<host>:<n>)"),
    ]  # fmt: skip
    assert story.failures[0].evidence_text == contract.CAUSE_EVIDENCE["stack-trace"]
    assert story.dead_letter is not None and story.dead_letter.redrive_advice == "safe"
    (unknown,) = ex.story("O7")[0].failures
    assert (unknown.cause, unknown.cause_evidence, unknown.event_id, unknown.source_file) == (
        day.UNKNOWN, day.UNKNOWN_REASON, None, None,
    )  # fmt: skip


def test_dead_letters_filter_by_cause_kind_incident_and_advice(ex: Any) -> None:
    def ids(**f: Any) -> list[str]:
        return [r.msg_id for r in ex.dead_letters(D, D, DeadLetterFilter(**f)).rows]

    assert ids(cause=day.FP_DB) == ["O1", "O2", "O3"]
    assert ids(cause=day.TIMEOUT) == ["Q1"]
    assert ids(failure_kind="poison") == ["P1"]
    assert ids(failure_kind="outage", group=day.PAY) == ["Q1"]
    assert ids(incident_id=day.INC_DB, redrive_advice="safe") == ["O1", "O2", "O3"]
    assert ids(redrive_advice="will-fail-again") == ["P1"]
    assert ids(cause="5d41402abc") == []  # exact, not a prefix
    row = ex.dead_letters(D, D, DeadLetterFilter(msg_id="P1")).rows[0]
    assert (row.cause_fingerprint, row.failure_kind, row.kind_rule, row.redrive_advice, row.incident_id) == (
        day.FP_JSON, "poison", "poison-every-delivery", "will-fail-again", None,
    )  # fmt: skip
    with pytest.raises(ExploreError, match="failure kind 'bad' is not one of"):
        ex.dead_letters(D, D, DeadLetterFilter(failure_kind="bad"))
    with pytest.raises(ExploreError, match="re-drive advice 'maybe' is not one of"):
        ex.dead_letters(D, D, DeadLetterFilter(redrive_advice="maybe"))


def test_csv_exports_the_cause_columns(ex: Any) -> None:
    text = "".join(ex.dead_letters_csv(D, D, DeadLetterFilter(failure_kind="poison")))
    (row,) = list(csv.DictReader(io.StringIO(text)))
    assert row["cause"] == f"com.fasterxml.jackson.core.JsonParseException: {day.HOSTILE_MESSAGE}"  # quoted, whole
    assert (row["cause_fingerprint"], row["failure_kind"], row["redrive_advice"], row["incident_id"]) == (
        day.FP_JSON, "poison", "will-fail-again", "",
    )  # fmt: skip


def test_safe_set_of_an_ended_outage_and_the_advice_of_chosen_rows(ex: Any) -> None:
    redrivable = ("FAILED", "GAVE_UP", "SKIPPED")
    (safe,) = ex.safe_sets(D, D, None, redrivable, 1000)
    assert (safe.incident_id, safe.consumer_group, safe.safe, safe.more) == (day.INC_DB, day.ORDERS, 3, False)
    assert safe.picks == [(D, day.ORDERS, m) for m in ("O1", "O2", "O3")]
    assert str(safe.ended_at) == "2026-11-21 03:15:00+00:00"
    (cut,) = ex.safe_sets(D, D, day.ORDERS, redrivable, 2)
    assert len(cut.picks) == 2 and cut.more
    assert ex.safe_sets(D, D, day.PAY, redrivable, 1000) == []  # its outage is still open
    assert ex.safe_sets(D, D, None, ("DONE",), 1000)[0].picks == []  # none of them is in a re-drivable state
    advice = ex.advice_of([(D, day.ORDERS, "P1"), (D, day.ORDERS, "O1"), (D, day.ORDERS, "NOPE")])
    assert {k[2]: v["redrive_advice"] for k, v in advice.items()} == {"P1": "will-fail-again", "O1": "safe"}


def test_a_date_written_before_the_causes(ex: Any) -> None:
    old = day.OLD_DAY
    (row,) = ex.dead_letters(old, old).rows
    assert row.msg_id == "OLD1" and row.cause is None and row.redrive_advice is None
    assert ex.dead_letters(None, None, DeadLetterFilter(cause=day.FP_DB)).total == 3  # both dates read together
    page = ex.causes(old)
    assert (page.causes, page.incidents, page.failures, page.written) == ([], [], 0, False)
    assert ex.run_overview(old).top_causes == [] and ex.story("OLD1")[0].failures == []
    text = "".join(ex.dead_letters_csv(old, old))
    (row,) = list(csv.DictReader(io.StringIO(text)))
    assert row["cause"] == ""


def test_explain_prints_the_causes(ex: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from rocketmq_retry.explore.explain import main

    root = pathlib.Path(ex.warehouse).parent
    assert main(["O7", "--warehouse", str(ex.warehouse), "--config", str(root / "rocketmq-retry.yaml")]) == 0
    out = capsys.readouterr().out
    why = out[out.index("why it failed:") : out.index("expected path")]
    assert why.rstrip().splitlines() == [
        "why it failed:",
        f"  kind unknown: {contract.KIND_RULES['no-rule']}",
        "  r  failed at                cause    established by  line",
        "  0  2026-11-21 09:00:00.000  UNKNOWN  trace-cut       -",
        f"  UNKNOWN: {contract.CAUSE_CODES['UNKNOWN']}",
        f"  trace-cut: {contract.CAUSE_EVIDENCE['trace-cut']}",
    ]
    main(["O2", "--warehouse", str(ex.warehouse), "--config", str(root / "rocketmq-retry.yaml")])
    out = capsys.readouterr().out
    assert f"  re-drive: safe: {contract.REDRIVE_ADVICE['safe']}" in out
    assert f"app-1/logs/app.log:104\n  at {day.APP_FRAME}" in out
