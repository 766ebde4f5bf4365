"""The read layer and ``explain`` on the committed example day: examples/landing for 2026-11-20 ingested and
reconstructed once for the module with the real jobs (the session ``spark``), its dead letters compensated into a
real SQLite ledger by ``rocketmq-retry compensate``; then every answer is read back without Spark."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator

import pytest

from conftest import ROOT
from rocketmq_retry.cli import main as rocketmq_retry
from rocketmq_retry.explore import DeadLetterFilter, Explorer, open_warehouse

pytestmark = pytest.mark.spark

DS = "2026-11-20"
CONFIG = ROOT / "examples" / "rocketmq-retry.yaml"
# One message, two groups: consumed by GID_crm_sync, dead-lettered by GID_welcome_email (max_reconsume_times 2).
MSG = "0A000229645E6A11028F62C88B210001"


@pytest.fixture(scope="module")
def ex(example_day: pathlib.Path) -> Iterator[Explorer]:
    with open_warehouse(example_day, CONFIG) as explorer:
        yield explorer


def test_overview_of_the_example_day(ex: Explorer) -> None:
    assert ex.dates() == [DS]
    o = ex.run_overview(DS)
    assert o.lifecycles == 91
    assert o.final_states == {"CONSUMED": 72, "DEAD_LETTERED": 12, "IN_RETRY": 1, "DROPPED": 6, "UNKNOWN": 0}
    assert (o.dead_letters, o.held_for_review, o.unattributed_lines) == (12, 0, 0)
    assert (o.anomalies, o.reconciliation_gaps, o.unattributed) == ([], [], [])
    dead = {g.consumer_group: g.dead_letters for g in o.groups if g.dead_letters}
    assert dead == {
        "GID_audit_simple": 3, "GID_coupon_audit": 1, "GID_invoice_reminder": 1, "GID_loyalty_spring": 1,
        "GID_order_fulfilment": 1, "GID_refund_validator": 3, "GID_welcome_email": 2,
    }  # fmt: skip
    assert {g.consumer_group: g.dead_letter_rate for g in o.groups}["GID_refund_validator"] == 0.6
    assert len(o.groups) == 17
    i = o.ingest
    assert i is not None
    assert (i.files, i.lines_read, i.events, i.ignored, i.continuation, i.quarantined) == (64, 2623, 682, 1623, 318, 0)
    assert i.lines_read == i.events + i.ignored + i.continuation + i.quarantined
    assert o.validation is None  # not validated with this config's Data Docs


def test_dead_letters_of_the_example_day(ex: Explorer) -> None:
    page = ex.dead_letters(DS, DS, DeadLetterFilter(), 1, 5)
    assert (page.total, page.pages, len(page.rows)) == (12, 3, 5)
    assert len(ex.dead_letters(DS, DS, DeadLetterFilter(), 3, 5).rows) == 2
    done = ex.dead_letters(DS, DS, DeadLetterFilter(compensation_state="DONE"), 1, 50)
    assert done.total == 12 and {(r.attempts, r.handler) for r in done.rows} == {(1, "log-only")}
    assert ex.dead_letters(DS, DS, DeadLetterFilter(compensation_state="NOT_REGISTERED"), 1, 50).total == 0
    welcome = ex.dead_letters(DS, DS, DeadLetterFilter(group="GID_welcome_email"), 1, 50)
    assert welcome.total == 2 and MSG in [r.msg_id for r in welcome.rows]
    by_key = ex.dead_letters(DS, DS, DeadLetterFilter(key="USR-100075"), 1, 50)
    assert [(r.consumer_group, r.msg_id, r.reconsume_times) for r in by_key.rows] == [("GID_welcome_email", MSG, 3)]
    csv_text = "".join(ex.dead_letters_csv(DS, DS))
    assert len(csv_text.strip().split("\r\n")) == 13  # header + every dead letter


def test_story_of_a_dead_lettered_message(ex: Explorer) -> None:
    stories = ex.story(MSG)
    assert [(s.consumer_group, s.final_state) for s in stories] == [
        ("GID_crm_sync", "CONSUMED"),
        ("GID_welcome_email", "DEAD_LETTERED"),
    ]
    s = stories[1]
    rq, sched, dlq = "%RETRY%GID_welcome_email", "SCHEDULE_TOPIC_XXXX", "%DLQ%GID_welcome_email"
    assert [
        (h.hop, h.from_state, h.to_state, h.physical_topic, h.queue_id, h.delay_level, h.reconsume_times, h.inferred,
         h.drift_ms)
        for h in s.hops
    ] == [
        (0, "PUBLISHED", "DELIVERED", "USER_REGISTERED", None, None, 0, False, None),
        (1, "DELIVERED", "FAILED", None, None, None, 0, False, None),
        (2, "FAILED", "SENT_BACK", rq, None, 3, 0, False, -141),
        (3, "SENT_BACK", "SCHEDULED", sched, 2, 3, 1, False, -141),
        (4, "SCHEDULED", "READY", rq, 0, 3, 1, False, 22),
        (5, "READY", "DELIVERED", rq, None, None, 1, False, 170),
        (6, "DELIVERED", "FAILED", None, None, None, 1, False, None),
        (7, "FAILED", "SENT_BACK", rq, None, 4, 1, False, -140),
        (8, "SENT_BACK", "SCHEDULED", sched, 3, 4, 2, False, -140),
        (9, "SCHEDULED", "READY", rq, 0, 4, 2, False, 58),
        (10, "READY", "DELIVERED", rq, None, None, 2, False, 209),
        (11, "DELIVERED", "FAILED", None, None, None, 2, False, None),
        (12, "FAILED", "SENT_BACK", rq, None, None, 2, True, None),
        (13, "SENT_BACK", "DEAD_LETTERED", dlq, 0, None, 3, False, -145),
    ]  # fmt: skip
    lines = [(f"{e.source_file}:{e.line_no}", e.event_type) for e in s.evidence]
    assert len(lines) == 17
    assert lines[0] == ("dumps/schedule-topic.jsonl:4", "SEND_BACK")
    assert ("dumps/dlq-topics.jsonl:1", "DEAD_LETTERED") in lines
    assert ("trace/RMQ_SYS_TRACE_TOPIC.trace.1.gz:14", "CONSUME_FAILED") in lines
    assert [(x.delay_level, x.delay_ms) for x in s.expected_path.steps] == [(3, 10_000), (4, 30_000)]
    assert s.dead_letter is not None and (s.dead_letter.reconsume_times, s.dead_letter.compensable) == (3, True)
    assert s.compensation is not None and (s.compensation.state, s.compensation.attempts) == ("DONE", 1)
    # the consuming group's story holds only its own two hops and lines
    assert [h.to_state for h in stories[0].hops] == ["DELIVERED", "CONSUMED"] and stories[0].dead_letter is None
    # found by the offset msg id of its DLQ copy: that group only
    assert [(f.consumer_group, f.matched_by) for f in ex.find("0A00000B00002A9F00000000000030EB")] == [
        ("GID_welcome_email", "offset_msg_id")
    ]


def test_explain_on_the_example_day(example_day: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    where = ["--warehouse", str(example_day), "--config", str(CONFIG)]
    assert rocketmq_retry(["explain", MSG, "--group", "GID_welcome_email", "--date", DS, *where]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"msg_id {MSG}, consumer group GID_welcome_email (date {DS})"
    assert any(
        line.split()[:4] == ["13", "SENT_BACK", "->", "DEAD_LETTERED"] and line.endswith("-145ms") for line in out
    )
    assert any("dumps/dlq-topics.jsonl:1" in line and line.endswith("hop 13") for line in out)
    assert "dead letter: %DLQ%GID_welcome_email at 2026-11-19 20:22:30.086, reconsume times 3, compensable" in out
    assert rocketmq_retry(["explain", MSG, "--format", "json", *where]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["consumer_group"] for s in data] == ["GID_crm_sync", "GID_welcome_email"]
    assert rocketmq_retry(["explain", "0A0000000000000000000000DEADBEEF", *where]) == 2
    err = capsys.readouterr().err
    assert "msg_id '0A0000000000000000000000DEADBEEF' not found in lifecycles of every date under" in err
    assert "(searched 1 date(s): 2026-11-20..2026-11-20; also as an offset msg id)" in err


def test_groups_of_the_example_day(ex: Explorer) -> None:
    views = {g.consumer_group: g for g in ex.groups(DS, days=7)}
    assert len(views) == 17
    welcome = views["GID_welcome_email"]
    assert [(t.date, t.lifecycles, t.dead_lettered) for t in welcome.trend][-1] == (DS, 5, 2)
    assert [t.dead_letter_rate for t in welcome.trend][:-1] == [None] * 6
    assert ("max_reconsume_times", "2") in welcome.settings
    # two failing messages, each retried at levels 3 and 4 (3 + reconsume_times) before the DLQ
    assert [(x.delay_level, x.retries) for x in welcome.retries_by_level] == [(3, 2), (4, 2)]
