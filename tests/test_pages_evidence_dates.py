"""A message's page shows its own date's log lines, never another date's that carry the same ``event_id``
(issue 34): one msg_id of one group dead-lettered on two dates, whose lines share their ids as the ids of files
collected under the same path repeated before ``event_id`` hashed the file's content (ingest/parse.py). The read
layer joins a line on its date partition and its id, never on the id alone."""

from __future__ import annotations

import datetime as dt
import pathlib
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from test_pages_support import html_client, write_table

D1, D2 = "2026-11-20", "2026-11-21"
GROUP = "GID_shipping"
MSG = "0A00023727274624BE3467AB29860003"  # the example
KEY = {"consumer_group": GROUP, "msg_id": MSG}


def _at(ds: str, hhmmss: str) -> dt.datetime:
    return dt.datetime.fromisoformat(f"{ds}T{hhmmss}").replace(tzinfo=dt.UTC)


def _day(warehouse: pathlib.Path, ds: str, line_base: int) -> None:
    """One lifecycle of MSG on ``ds``: delivered, failed, dead-lettered; its lines' ids are the same on both dates
    (``ev-deliver``, ``ev-fail``, ``ev-dlq``), their line numbers and texts are the date's own."""
    hops = [
        ("PUBLISHED", "DELIVERED", "03:00:00", "ev-deliver"),
        ("DELIVERED", "FAILED", "03:00:01", "ev-fail"),
        ("FAILED", "DEAD_LETTERED", "03:00:02", "ev-dlq"),
    ]
    write_table(
        warehouse,
        "transitions",
        ds,
        [
            {**KEY, "hop": i, "from_state": f, "to_state": t, "observed_at": _at(ds, when), "inferred": False,
             "evidence": [eid], "physical_topic": "%DLQ%" + GROUP if t == "DEAD_LETTERED" else "shipments"}
            for i, (f, t, when, eid) in enumerate(hops)
        ],
    )  # fmt: skip
    kinds = {"DELIVERED": "DELIVERED", "FAILED": "CONSUME_FAILED", "DEAD_LETTERED": "DEAD_LETTERED"}
    write_table(
        warehouse,
        "events",
        ds,
        [
            {**KEY, "event_id": eid, "event_time": _at(ds, when), "event_type": kinds[t], "source": "message-dump",
             "source_file": "dumps/dlq-topics.jsonl", "line_no": line_base + i, "topic": "shipments",
             "detail": f"line of {ds}", "offset_msg_id": f"OFF-{ds}" if t == "DEAD_LETTERED" else None}
            for i, (_, t, when, eid) in enumerate(hops)
        ],
    )  # fmt: skip
    write_table(
        warehouse,
        "lifecycles",
        ds,
        [{**KEY, "original_topic": "shipments", "final_state": "DEAD_LETTERED",
          "expected_final_state": "DEAD_LETTERED", "first_seen": _at(ds, "03:00:00"),
          "last_seen": _at(ds, "03:00:02"), "deliveries": 1, "anomalies": [], "attribution": ["line"]}],
    )  # fmt: skip
    write_table(
        warehouse,
        "dead_letters",
        ds,
        [{**KEY, "original_topic": "shipments", "dlq_at": _at(ds, "03:00:02"), "reconsume_times": 0,
          "compensable": True, "dlq_inferred": False, "attribution": ["line"], "evidence": ["ev-dlq"]}],
    )  # fmt: skip
    write_table(
        warehouse,
        "failures",
        ds,
        [{**KEY, "reconsume_times": 0, "failed_at": _at(ds, "03:00:01"), "cause": "UNKNOWN",
          "source": "message-dump", "event_id": "ev-fail"}],
    )  # fmt: skip


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    root = tmp_path_factory.mktemp("two-dates") / "warehouse"
    _day(root, D1, 1)
    _day(root, D2, 7)
    return root


@pytest.fixture(scope="module")
def client(warehouse: pathlib.Path) -> TestClient:
    return html_client(warehouse, None)


def _evidence(client: TestClient, **params: Any) -> list[str]:
    answer = client.get(f"/messages/{MSG}", params=params)
    assert answer.status_code == 200, answer.text
    table = answer.text.split('<table class="evidence">', 1)[1].split("</table>", 1)[0]
    return re.findall(r"dumps/dlq-topics\.jsonl:(\d+)", table)


def _failure_lines(client: TestClient, **params: Any) -> list[str]:
    html = client.get(f"/messages/{MSG}", params=params).text
    table = html.split('<table class="failures"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"dumps/dlq-topics\.jsonl:(\d+)", table)


def test_the_newest_date_shows_its_own_lines(client: TestClient) -> None:
    # was ['1', '2', '3']: the 2026-11-20 file's lines, found first by time, stood for the same ids
    assert _evidence(client) == ["7", "8", "9"]
    assert _evidence(client, **{"from": D2, "to": D2}) == ["7", "8", "9"]
    assert _failure_lines(client, **{"from": D2, "to": D2}) == ["8"]


def test_an_earlier_date_shows_its_own_lines(client: TestClient) -> None:
    assert _evidence(client, **{"from": D1, "to": D1}) == ["1", "2", "3"]
    assert _failure_lines(client, **{"from": D1, "to": D1}) == ["2"]


def test_the_read_layer_names_each_lines_date(warehouse: pathlib.Path) -> None:
    from rocketmq_retry.explore import open_warehouse

    ex = open_warehouse(warehouse, None)
    (story,) = ex.story(MSG, GROUP, D2, D2)
    assert [(e.date, e.event_id, e.line_no) for e in story.evidence] == [
        (D2, "ev-deliver", 7), (D2, "ev-fail", 8), (D2, "ev-dlq", 9),
    ]  # fmt: skip
    assert [(f.date, f.line_no) for f in story.failures] == [(D2, 8)]


def test_an_offset_msg_id_finds_the_date_of_its_line(warehouse: pathlib.Path) -> None:
    from rocketmq_retry.explore import open_warehouse

    ex = open_warehouse(warehouse, None)
    # was both dates: the 2026-11-21 hop cites the id the 2026-11-20 line with OFF-2026-11-20 has
    assert [(f.date, f.matched_by) for f in ex.find(f"OFF-{D1}", None, None)] == [(D1, "offset_msg_id")]
    assert [(f.date, f.matched_by) for f in ex.find(f"OFF-{D2}", None, None)] == [(D2, "offset_msg_id")]


def test_another_dates_lifecycle_of_the_msg_id_is_not_this_story(client: TestClient) -> None:
    # was D1's failure line ('2') on D2's page, and both dates as "its" dates: two lifecycles of one msg_id, each
    # first seen on its own date, are two stories (a lifecycle carried across midnight keeps its first_seen)
    assert _failure_lines(client) == ["8"]
    html = client.get(f"/messages/{MSG}").text
    assert f'<tr><th>dates</th><td><a href="/runs/{D2}">{D2}</a> </td></tr>' in html
    # the search lists both, each linked to its own date's story
    found = client.get("/messages", params={"q": MSG}).text
    for ds in (D2, D1):
        assert f'href="/messages/{MSG}?group={GROUP}&amp;from={ds}&amp;to={ds}"' in found
