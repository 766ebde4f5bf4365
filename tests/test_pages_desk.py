"""The dead-letters page as a desk to work at (issue 34), through the pages' FastAPI app on the desk's literal
day (pages_desk_support.py: 50 dead letters with long values, one of them compensated): sorting by any column
(the server sorts: the pages run no script), the time each letter has spent in the DLQ, long values whole in
each cell's title and the row's detail, ISO text in the date filters. The same page laid out in Chromium at
1280×800 and inside a frame is test_pages_desk_browser.py."""

from __future__ import annotations

import datetime as dt
import pathlib
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

import pages_desk_support as desk
from rocketmq_retry.explore.values import duration_text
from test_pages_support import html_client

DAY = desk.DAY


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, pathlib.Path]:
    return desk.build(tmp_path_factory.mktemp("desk"))


@pytest.fixture(scope="module")
def client(site: tuple[pathlib.Path, pathlib.Path]) -> TestClient:
    return html_client(*site)


def _rows(html: str) -> list[str]:
    return re.findall(r'<tr data-msg-id="([^"]*)"', html)


def _page(client: TestClient, **params: Any) -> str:
    answer = client.get("/dead-letters", params=params)
    assert answer.status_code == 200, answer.text
    return answer.text


def test_durations_read_as_an_operator_says_them() -> None:
    assert duration_text(4 * 3600 + 46 * 60 + 40) == "4 h 46 min"
    assert [duration_text(s) for s in (0, 42, 60, 3600, 86_400 + 3600 + 61, -5)] == [
        "0 s", "42 s", "1 min", "1 h", "1 d 1 h", "0 s",
    ]  # fmt: skip


def test_every_column_sorts_on_the_server(client: TestClient) -> None:
    default = _rows(_page(client))
    assert len(default) == 50 and default[0] == desk.msg_id(2)  # the first group, then msg_id
    # longest in the DLQ first: the earliest DLQ time; the 17-retry message went last (05:45:42)
    age = _rows(_page(client, sort="age", dir="desc"))
    assert age[0] == desk.msg_id(1) and age[-1] == desk.RETRIED
    assert _rows(_page(client, sort="age", dir="asc"))[0] == desk.RETRIED
    assert _rows(_page(client, sort="dlq_at", dir="desc"))[0] == desk.RETRIED
    # the ledger's state decides: DONE before GAVE_UP
    assert _rows(_page(client, sort="compensation_state", dir="asc"))[0] == desk.RETRIED
    assert _rows(_page(client, sort="compensation_state", dir="desc"))[-1] == desk.RETRIED
    by_group = _rows(_page(client, sort="consumer_group", dir="desc", page_size=25))
    assert by_group == [desk.msg_id(i) for i in range(1, 50, 2)]  # GID_refund_validator, then msg_id
    assert client.get("/dead-letters", params={"sort": "keys; DROP TABLE x"}).status_code == 400


def test_sort_links_keep_the_filters_and_flip_the_direction(client: TestClient) -> None:
    html = _page(client, group="GID_refund_validator", sort="age", dir="desc")
    # the sorted column says so, and its link turns the order round; other columns start ascending
    assert '<th class="c-age" aria-sort="descending">' in html
    filters = "/dead-letters?from=2026-11-21&amp;to=2026-11-21&amp;group=GID_refund_validator"
    assert f'href="{filters}&amp;sort=age&amp;dir=asc&amp;page=1"' in html
    assert f'href="{filters}&amp;sort=keys&amp;dir=asc&amp;page=1"' in html
    # the filter form carries the order, so filtering again keeps it
    assert '<input type="hidden" name="sort" value="age"><input type="hidden" name="dir" value="desc">' in html


def test_time_in_the_dlq(client: TestClient, site: tuple[pathlib.Path, pathlib.Path]) -> None:
    from rocketmq_retry.explore import open_warehouse

    html = _page(client, sort="dlq_at", dir="desc")
    with open_warehouse(*site) as ex:
        record = ex.story(desk.RETRIED)[0].compensation
    assert record is not None and record.state == "DONE" and record.completed_at is not None
    dlq_at = dt.datetime(2026, 11, 21, 5, 45, 42, tzinfo=dt.UTC)
    done = duration_text((record.completed_at - dlq_at).total_seconds())
    completed = record.completed_at.replace(microsecond=0).isoformat().replace("+00:00", "Z")
    # a compensated letter waited until its compensation was done ...
    assert f'title="compensated {completed}, {done} after the DLQ move">{done}</td>' in html
    # ... the others are still waiting: their age, as of the time the page says
    now = re.search(r"time in the DLQ as of (\S+)Z\.", html)
    assert now is not None
    as_of = dt.datetime.fromisoformat(now.group(1)).replace(tzinfo=dt.UTC)
    age = as_of - dt.datetime(2026, 11, 21, 1, 1, tzinfo=dt.UTC)
    expected = duration_text(age.total_seconds())
    assert f'title="in the DLQ since 2026-11-21T01:01:00Z, not compensated">{expected}</td>' in html


def test_long_values_are_whole_in_the_title_and_the_rows_detail(client: TestClient) -> None:
    html = _page(client, sort="age", dir="desc", page_size=1)
    keys = desk.long_keys(1)
    assert f'<td class="cut keys" title="{keys} (ORD-261121000001)">{keys} <span' not in html  # no markup in a title
    assert f'<td class="cut keys" title="{keys} (ORD-261121000001)">{keys} (ORD-261121000001)</td>' in html
    detail = html[html.index('<tr class="detail" id="detail-1">') :]
    assert f"<dt>keys</dt><dd>{keys}</dd>" in detail and "<dt>business key</dt><dd>ORD-261121000001</dd>" in detail
    assert "warehouse-api answered 503 Service Unavailable " + "(retry-after unknown) " * 11 in detail
    assert '<a href="#detail-1" title="every value of this row in full">more</a>' in html
    # one date shown: no date column repeating it (the detail keeps it)
    assert '<th class="c-date"' not in html and f"<dt>date</dt><dd>{DAY}</dd>" in detail
    two_days = _page(client, **{"from": "2026-11-20", "to": DAY})
    assert '<th class="c-date"' in two_days


def test_dlq_time_to_the_second_and_msg_ids_cut_at_their_start(client: TestClient) -> None:
    # was 2026-11-21T05:45:42+00:00 cut after the T: one date's page shows the time, a range's the date too
    one_day = _page(client, sort="dlq_at", dir="desc", page_size=1)
    assert '<td class="cut" title="2026-11-21T05:45:42Z">05:45:42</td>' in one_day
    two_days = _page(client, sort="dlq_at", dir="desc", page_size=1, **{"from": "2026-11-20", "to": DAY})
    assert '<td class="cut" title="2026-11-21T05:45:42Z">05:45:42</td>' in two_days  # the date column has the date
    assert '<col class="w-clock">' in two_days
    # every msg_id of the page starts 0A00023727274624: its end tells them apart, so that is the end shown
    assert f'<td class="cut tail" dir="rtl" title="{desk.RETRIED}"><a href=' in one_day
    assert f'<bdi dir="ltr">{desk.RETRIED}</bdi></a></td>' in one_day


def test_date_filters_are_iso_text(client: TestClient) -> None:
    for url in ("/dead-letters", f"/messages?q=x&from={DAY}&to={DAY}", f"/groups?to={DAY}"):
        html = client.get(url).text
        assert 'type="date"' not in html, url  # a date input shows the browser's locale (11/21/2026)
        assert f'value="{DAY}" pattern="\\d{{4}}-\\d{{2}}-\\d{{2}}" placeholder="YYYY-MM-DD"' in html, url


def _summary(html: str) -> str:
    found = re.search(r'<p class="summary" id="summary-1">(.*?)</p>', html)
    assert found is not None
    return found.group(1)


def test_message_page_opens_with_one_sentence(client: TestClient, site: tuple[pathlib.Path, pathlib.Path]) -> None:
    from rocketmq_retry.explore import open_warehouse

    with open_warehouse(*site) as ex:
        record = ex.story(desk.RETRIED)[0].compensation
    assert record is not None and record.completed_at is not None
    done = record.completed_at.strftime("%Y-%m-%d %H:%M")  # another day than the DLQ move's: the date is said
    error = "IllegalStateException: shipment-service unavailable for orderId=ORD-26112100058"
    assert _summary(client.get(f"/messages/{desk.RETRIED}").text) == (
        f'Failed 17 times with <code title="{error}">{error}</code>, dead-lettered 4 h 45 min after its first '
        f'delivery, compensated by <code title="refund-api">refund-api</code> at {done}.'
    )


def test_the_sentence_says_only_what_is_established(site: tuple[pathlib.Path, pathlib.Path]) -> None:
    import dataclasses

    from rocketmq_retry.explore import open_warehouse
    from rocketmq_retry.explore.summary import exception_of, summary

    def text(story: Any) -> str:
        return "".join(f"`{p.text}`" if p.code else p.text for p in summary(story))

    with open_warehouse(*site) as ex:
        story = ex.story(desk.RETRIED)[0]
        other = ex.story(desk.msg_id(1))[0]
    # no line shows the DLQ move's time: no span is measured
    hops = [
        dataclasses.replace(h, observed_at=None, inferred=True) if h.to_state == "DEAD_LETTERED" else h
        for h in story.hops
    ]
    assert "dead-lettered (the move is inferred: no line shows its time)" in text(dataclasses.replace(story, hops=hops))
    # failures whose lines carry no exception: no "with"
    bare = dataclasses.replace(story, evidence=[dataclasses.replace(e, detail=None) for e in story.evidence])
    assert text(bare).startswith("Failed 17 times, dead-lettered 4 h 45 min after")
    # a letter without hops in the warehouse (the other 49) and a ledger that gave up
    assert text(other) == "Dead-lettered at 2026-11-21 01:01, compensation by `warehouse-api` gave up after 1 attempt."
    unregistered = dataclasses.replace(other, compensation=None)
    assert text(unregistered) == "Dead-lettered at 2026-11-21 01:01, not registered for compensation yet."
    assert exception_of("java.lang.IllegalStateException: down, com.example.A.b(A.java:74)") == (
        "IllegalStateException: down"
    )
    assert exception_of("com.example.Boom") == "Boom" and exception_of("  ") is None
    assert exception_of("timeout after 3000 ms, see a.b.C") == "timeout after 3000 ms, see a.b.C"


def test_search_by_prefix_in_any_case(client: TestClient) -> None:
    def found(q: str) -> list[str]:
        html = client.get("/messages", params={"q": q}).text
        return re.findall(r'<a href="/messages/([0-9A-F]+)\?group=', html)

    assert found("ord-26112100058") == [desk.RETRIED]  # the business key, typed in lower case
    assert found("trace-9F86") == sorted(desk.msg_id(i) for i in range(1, 50))  # one of the KEYS, by its start
    assert found("0a00023727274624be") == [desk.RETRIED]  # the start of a msg_id
    assert found("9f86d081") == []  # the middle of a key is not its start
    html = client.get("/messages", params={"q": "ORD-2611210"}).text
    assert '<p class="muted" id="found-count">50 lifecycles match <q>ORD-2611210</q>' in html


@pytest.mark.parametrize("path", ["/%00", "/static/ops.css%00", "/no-such-page", "/dead-letters/x"])
def test_an_unknown_path_gets_the_pages_error_page(client: TestClient, path: str) -> None:
    # was Starlette's {"detail":"Not Found"}: the router's own 404 is no FastAPI HTTPException
    answer = client.get(path)
    assert answer.status_code == 404 and answer.headers["content-type"].startswith("text/html")
    assert '<p class="error" id="error-detail">Not Found</p>' in answer.text
    assert answer.headers["content-security-policy"].startswith("default-src 'none'")
    # an API client keeps the JSON shape
    assert client.get(path, headers={"accept": "application/json"}).json() == {"detail": "Not Found"}


def test_a_nul_byte_in_a_path_or_parameter_is_no_server_error(client: TestClient) -> None:
    assert client.get("/messages/abc%00").status_code == 404
    assert client.get(f"/runs/{DAY}%00").status_code == 400
    for params in ({"group": "\x00"}, {"key": "\x00x"}):
        assert client.get("/dead-letters", params=params).status_code == 200
    assert client.get("/messages", params={"q": "\x00"}).status_code == 200


def _trend_site(root: pathlib.Path, warning_only: bool) -> TestClient:
    """Three committed days of GID_a in the last 14 (2, 0 and 3 dead letters of 4 lifecycles each) and a
    validation result of the last day with warnings only (or a critical failure)."""
    import json

    from test_pages_support import write_table

    warehouse, gx = root / "warehouse", root / "gx"
    for ds, dead in (("2026-11-08", 2), ("2026-11-18", 0), (DAY, 3)):
        rows = [
            {"consumer_group": "GID_a", "msg_id": f"M{ds}{i}", "original_topic": "T", "anomalies": [],
             "final_state": "DEAD_LETTERED" if i < dead else "CONSUMED", "attribution": ["line"]}
            for i in range(4)
        ]  # fmt: skip
        write_table(warehouse, "lifecycles", ds, rows)
    write_table(warehouse, "lifecycles", "2026-11-01", [{"consumer_group": "GID_a", "msg_id": "OLD",
                "final_state": "DEAD_LETTERED", "anomalies": [], "attribution": ["line"]}])  # fmt: skip
    config = root / "c.yaml"
    config.write_text(f"validation: {{context_root: {json.dumps(str(gx))}}}\n", encoding="utf-8")
    runs = gx / "gx" / "uncommitted" / "data_docs" / "local_site" / "runs"
    runs.mkdir(parents=True)
    result = {"ds": DAY, "warehouse": str(warehouse), "success": warning_only, "evaluated": 30,
              "critical_failures": [] if warning_only else ["lifecycles.key_unique"],
              "warning_failures": ["unattributed.none"]}  # fmt: skip
    (runs / f"dt={DAY}.json").write_text(json.dumps(result), encoding="utf-8")
    return html_client(warehouse, config)


def test_overview_trend_of_the_last_14_days_per_group(tmp_path: pathlib.Path) -> None:
    html = _trend_site(tmp_path, warning_only=True).get(f"/runs/{DAY}").text
    cell = html.split('<td class="trend"', 1)[1].split("</td>", 1)[0]
    # 2026-11-08..2026-11-21: 11-01 is outside the window; a day without a partition is no zero
    assert (
        'title="dead letters a day of GID_a, 2026-11-08..2026-11-21: 2, –, –, –, –, –, –, –, –, –, 0, –, –, 3"' in cell
    )
    assert cell.count('<circle class="dot"') == 3
    assert 'href="/groups?to=2026-11-21"' in cell
    assert "3 today, 1 a day before" in cell  # the mean of the earlier committed days of the window


def test_overview_says_the_validation_in_one_vocabulary(tmp_path: pathlib.Path) -> None:
    # was "passed" in green next to a warning (the Data Docs said "passed with warnings", the index "Failed")
    warned = _trend_site(tmp_path / "w", warning_only=True).get(f"/runs/{DAY}").text
    assert re.search(r'id="validation-status" class="warn">\s*passed with warnings', warned)
    failed = _trend_site(tmp_path / "f", warning_only=False).get(f"/runs/{DAY}").text
    assert re.search(r'id="validation-status" class="bad">\s*failed', failed)


def test_the_csv_export_writes_no_live_formula(tmp_path: pathlib.Path) -> None:
    """The issue's key, through the page's own export: a spreadsheet shows it as logged, never runs it."""
    import csv
    import io

    from test_pages_support import write_table

    hyperlink = '=HYPERLINK("http://evil.example/")'
    letter = {"consumer_group": "@G", "msg_id": "M1", "original_topic": "-T", "keys": hyperlink, "tags": "+t",
              "business_key": "\tBK", "compensable": True, "dlq_inferred": False, "attribution": ["line"],
              "evidence": [], "dlq_at": dt.datetime(2026, 11, 21, 1, tzinfo=dt.UTC), "reconsume_times": 16}  # fmt: skip
    write_table(tmp_path / "warehouse", "dead_letters", DAY, [letter])
    write_table(tmp_path / "warehouse", "lifecycles", DAY, [{"consumer_group": "@G", "msg_id": "M1",
                "final_state": "DEAD_LETTERED", "anomalies": [], "attribution": ["line"]}])  # fmt: skip
    answer = html_client(tmp_path / "warehouse", None).get("/dead-letters.csv", params={"from": DAY, "to": DAY})
    assert answer.status_code == 200
    header, row = list(csv.reader(io.StringIO(answer.text, newline="")))
    cells = dict(zip(header, row, strict=True))
    assert cells["keys"] == "'" + hyperlink and cells["consumer_group"] == "'@G"
    assert cells["topic"] == "'-T" and cells["tag"] == "'+t" and cells["business_key"] == "'\tBK"
    assert cells["msg_id"] == "M1" and cells["reconsume_times"] == "16"  # a number stays a number


def test_the_lifecycles_list_shows_times_to_the_second_and_msg_id_ends(client: TestClient) -> None:
    html = client.get(f"/runs/{DAY}/lifecycles", params={"group": desk.GROUP}).text
    row = html.split(f'<tr data-msg-id="{desk.RETRIED}">', 1)[1].split("</tr>", 1)[0]
    assert f'<td class="cut tail" dir="rtl" title="{desk.RETRIED}">' in row
    assert '<td class="cut" title="2026-11-21T01:00:00Z">2026-11-21 01:00:00</td>' in row  # was ...T01:00:00Z cut
    assert '<td class="cut" title="2026-11-21T05:45:42Z">2026-11-21 05:45:42</td>' in row


def test_a_dlq_time_of_another_utc_date_than_its_partition_is_whole(tmp_path: pathlib.Path) -> None:
    """A partition date in Asia/Shanghai holds DLQ moves of the UTC day before: the time alone would say the
    wrong day."""
    from test_pages_support import write_table

    late = {"consumer_group": "G", "msg_id": "M1", "original_topic": "T", "compensable": True,
            "dlq_inferred": False, "attribution": ["line"], "evidence": [],
            "dlq_at": dt.datetime(2026, 11, 20, 17, 30, tzinfo=dt.UTC)}  # fmt: skip
    write_table(tmp_path / "warehouse", "dead_letters", DAY, [late])
    write_table(tmp_path / "warehouse", "lifecycles", DAY, [{"consumer_group": "G", "msg_id": "M1",
                "final_state": "DEAD_LETTERED", "anomalies": [], "attribution": ["line"]}])  # fmt: skip
    html = html_client(tmp_path / "warehouse", None).get("/dead-letters", params={"from": DAY, "to": DAY}).text
    assert '<td class="cut" title="2026-11-20T17:30:00Z">2026-11-20 17:30:00</td>' in html
    assert '<col class="w-time">' in html
