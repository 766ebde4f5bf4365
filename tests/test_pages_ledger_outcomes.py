"""Outcome reasons and re-drive loops on the operator's pages: a day with a failing handler, and a business key
compensated on one date that dead-letters again on the next (literal partitions, the real compensate command and
SQLite ledger, the pages' FastAPI app)."""

from __future__ import annotations

import csv
import io
import pathlib
import re

import pytest
from fastapi.testclient import TestClient

from explore_literal import at, commit, dead, life
from rocketmq_retry.cli import main as rocketmq_retry
from test_pages_support import html_client

D1, D2 = "2026-11-20", "2026-11-21"


def day(ds: str, order: str, pay: str) -> dict[str, list[dict[str, object]]]:
    letters = [
        dead("G1", order, business_key="ORD-1", keys="ORD-1", dlq_at=at(f"{ds}T02:00:00")),
        dead("G2", pay, business_key=f"PAY-{pay}", keys=f"PAY-{pay}", dlq_at=at(f"{ds}T03:00:00")),
    ]
    lives = [
        life("G1", order, "DEAD_LETTERED", business_key="ORD-1", keys="ORD-1"),
        life("G2", pay, "DEAD_LETTERED", business_key=f"PAY-{pay}", keys=f"PAY-{pay}"),
    ]
    return {"dead_letters": letters, "lifecycles": lives}


def build(base: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """Two dates compensated by the real command: G1's ORD-1 done on D1 and again on D2 (a loop), G2's handler
    failing with ValueError on both."""
    wh, config = base / "wh", base / "c.yaml"
    config.write_text(
        "timezone: UTC\n"
        "compensation:\n"
        "  routes: [{group: G1, handler: log-only}, {group: G2, handler: buggy}]\n"
        "  handlers:\n"
        "    log-only: {type: python, callable: 'rocketmq_retry.compensation.handlers:log_only'}\n"
        "    buggy: {type: python, callable: 'test_compensation_support:broken'}\n",
        encoding="utf-8",
    )
    commit(wh, D1, day(D1, "m1", "p1"))
    commit(wh, D2, day(D2, "m2", "p2"))
    for ds in (D1, D2):  # 1: G2's handler fails
        assert rocketmq_retry(["compensate", "--date", ds, "--warehouse", str(wh), "--config", str(config)]) == 1
    return wh, config


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    return html_client(*build(tmp_path_factory.mktemp("outcomes")))


def test_the_dead_letter_page_counts_filters_and_shows_reasons_and_loops(client: TestClient) -> None:
    page = client.get("/dead-letters", params={"from": D2, "to": D2}).text
    reasons = re.search(r'<p class="muted" id="reasons">(.*?)</p>', page, re.S)
    assert reasons is not None
    text = re.sub(r"<[^>]+>", "", reasons.group(1))
    assert text == f"Compensation outcomes by reason ({D2} … {D2}): handler_exception:ValueError 1 · ok 1"
    assert '<option value="handler_exception:ValueError" >handler_exception:ValueError (1)</option>' in page
    # G1's m2: ORD-1 was compensated on D1 and dead-lettered again on D2
    row = re.search(r'<tr data-msg-id="m2"[^>]*>(.*?)</tr>', page, re.S)
    assert row is not None and '<span class="loop"' in row.group(1) and ">loop 1</span>" in row.group(1)
    assert '<dd class="loop-count">1: its business key was compensated on 1 earlier date</dd>' in page
    failed = re.search(r'<tr data-msg-id="p2"[^>]*>(.*?)</tr>', page, re.S)
    assert failed is not None and '<span class="muted reason">handler_exception:ValueError</span>' in failed.group(1)
    assert "loop" not in re.sub(r'class="[^"]*"', "", failed.group(1))
    only = client.get("/dead-letters", params={"from": D1, "to": D2, "reason": "handler_exception:ValueError"}).text
    assert re.findall(r'<tr data-msg-id="([^"]*)"', only) == ["p2", "p1"]
    assert client.get("/dead-letters", params={"reason": "<script>"}).status_code == 400


def test_the_csv_carries_reason_and_loops(client: TestClient) -> None:
    rows = list(csv.DictReader(io.StringIO(client.get("/dead-letters.csv", params={"from": D1, "to": D2}).text)))
    assert {(r["date"], r["msg_id"], r["reason"], r["loops"]) for r in rows} == {
        (D1, "m1", "ok", "0"),
        (D1, "p1", "handler_exception:ValueError", "0"),
        (D2, "m2", "ok", "1"),
        (D2, "p2", "handler_exception:ValueError", "0"),
    }


def test_the_message_page_says_the_loop_and_the_reason(client: TestClient) -> None:
    page = client.get("/messages/m2", params={"group": "G1"}).text
    assert '<tr><th>outcome reason</th><td class="reason">ok</td></tr>' in page
    assert (
        '<tr class="loop"><th>re-drive loop</th><td>1: business key ORD-1 was compensated on 1 earlier date</td></tr>'
        in page
    )
    failed = client.get("/messages/p2", params={"group": "G2"}).text
    assert '<td class="reason">handler_exception:ValueError</td>' in failed and 'class="loop"' not in failed
