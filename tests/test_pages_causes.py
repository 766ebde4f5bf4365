"""Why messages failed, in front of the operator (issue 30 part 5), through the pages' FastAPI app on the literal
causes day (pages_causes_support.py): the "Failures by cause" page, the overview's lead, the dead-letter page's
cause, kind and advice (filters, rows, export), the message page's failed deliveries, and a date written before
the causes. The re-drive of a safe set and the poison confirmation need Airflow's users: test_pages_auth.py; the
causes page in Chromium at 1280x800: test_pages_causes_browser.py."""

from __future__ import annotations

import csv
import io
import pathlib
import re

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

import pages_causes_support as day
from rocketmq_retry import contract
from test_pages_support import html_client

D = day.DAY


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    site: tuple[pathlib.Path, pathlib.Path] = day.build(tmp_path_factory.mktemp("causes-pages"))
    return html_client(*site)


def _get(client: TestClient, url: str, **params: str) -> str:
    answer = client.get(url, params=params)
    assert answer.status_code == 200, answer.text
    return answer.text


def test_causes_page_ranks_and_explains_each_cause(client: TestClient) -> None:
    html = _get(client, "/causes", date=D)
    ranked = re.findall(r'<article class="cause" id="cause-\d+" data-group="([^"]+)" data-cause="([^"]+)">', html)
    assert ranked == [(day.ORDERS, day.FP_DB), (day.PAY, day.TIMEOUT), (day.ORDERS, day.FP_JSON),
                      (day.ORDERS, day.UNKNOWN)]  # fmt: skip
    assert '<span id="n-failures">19</span> failed deliveries, 4 causes' in html
    first = html[html.index('id="cause-1"') : html.index('id="cause-2"')]
    assert '<code class="cause-label">ConnectException: Connection refused (&lt;host&gt;:&lt;n&gt;)</code>' in first
    assert (
        '<span class="kind kind-outage">outage</span>' in first
        and escape(contract.KIND_RULES["outage-window"]) in first
    )
    letters = f"/dead-letters?from={D}&amp;to={D}&amp;group={day.ORDERS}&amp;cause={day.FP_DB}"
    assert f'<a class="letters" href="{letters}"><span class="n-dead-letters">3</span> dead-lettered</a>' in first
    assert f'href="/messages/O2?group={day.ORDERS}&amp;from={D}&amp;to={D}">message O2</a>' in first
    assert f"line <code>{day.LOG}:101</code>" in first and f"<code>{day.APP_FRAME}</code>" in first
    # the timeline: a bar per failing minute, the incident's window shaded, ended
    svg = first[first.index("<svg") : first.index("</svg>")]
    assert svg.count('<rect class="bar"') == 9 and svg.count('<g class="incident">') == 1 and ">open<" not in svg
    timeout = html[html.index('id="cause-2"') : html.index('id="cause-3"')]
    assert f"<code>{day.TIMEOUT}</code>: {contract.CAUSE_CODES[day.TIMEOUT]}" in timeout
    assert '<g class="incident open">' in timeout and '<text class="open"' in timeout
    # the logged message is text, never markup
    parse = html[html.index('id="cause-3"') : html.index('id="cause-4"')]
    assert '<pre class="example">Unexpected character (&#39;&lt;&#39; (code 60)): &lt;script&gt;alert(1)' in parse
    assert "<script>" not in html
    # what the evidence does not establish is counted with its reason
    assert f"1 ({day.UNKNOWN_REASON}: {escape(contract.CAUSE_EVIDENCE[day.UNKNOWN_REASON])})" in html
    incidents = re.findall(r'<tr id="incident-\d+" class="([^"]*)" data-incident="([^"]+)">', html)
    assert incidents == [("warn", day.INC_PAY), ("", day.INC_DB)]


def test_causes_page_per_group_and_on_an_old_date(client: TestClient) -> None:
    html = _get(client, "/causes", date=D, group=day.PAY)
    assert re.findall(r'data-cause="([^"]+)">', html) == [day.TIMEOUT]
    assert f'<option value="{day.PAY}" selected>' in html
    assert _get(client, "/causes") == _get(client, "/causes", date=D)  # the newest date by default
    old = _get(client, "/causes", date=day.OLD_DAY)
    assert 'id="not-written"' in old and "data-cause" not in old
    assert client.get("/causes", params={"date": "../etc"}).status_code == 400
    assert client.get("/causes", params={"date": "2026-11-01"}).status_code == 404
    assert '<a href="/causes" class="here">Causes</a>' in old  # in the navigation like the other pages


def test_overview_leads_with_open_incidents_and_top_causes(client: TestClient) -> None:
    html = _get(client, f"/runs/{D}")
    assert html.index('<section class="lead" id="why">') < html.index('<section class="cards">')
    assert f'<a id="all-causes" href="/causes?date={D}">every cause</a>' in html
    (incident,) = re.findall(r'<ul id="open-incidents">(.*?)</ul>', html, re.S)
    assert f"in {day.PAY}: <code>{day.TIMEOUT}</code> since 2026-11-21T14:50:00Z" in incident
    assert f"incident={day.INC_PAY}" in incident
    top = html[html.index('<table id="top-causes">') : html.index("</table>", html.index('id="top-causes"'))]
    assert re.findall(r"<code>([^<]+)</code>", top) == [
        "ConnectException: Connection refused (&lt;host&gt;:&lt;n&gt;)",
        day.TIMEOUT,
        "JsonParseException: Unexpected character (&lt;q&gt; (code &lt;n&gt;)): &lt;script&gt;",
        day.UNKNOWN,
    ]
    old = _get(client, f"/runs/{day.OLD_DAY}")
    assert 'id="no-causes"' in old and 'id="n-lifecycles">1<' in old


def test_dead_letters_filter_and_show_cause_kind_and_advice(client: TestClient) -> None:
    def rows(**params: str) -> list[str]:
        return re.findall(r'<tr data-msg-id="([^"]*)"', _get(client, "/dead-letters", **params))

    assert rows(cause=day.FP_DB) == ["O1", "O2", "O3"]
    assert rows(kind="poison") == ["P1"]
    assert rows(incident=day.INC_DB, advice="safe") == ["O1", "O2", "O3"]
    assert rows(advice="outage-open") == ["Q1"]
    html = _get(client, "/dead-letters", kind="poison")
    assert '<tr data-msg-id="P1" id="row-1" class="poison">' in html
    cell = re.search(r'<td class="cut cause" title="([^"]*)">(.*?)</td>', html)
    assert cell is not None
    assert cell.group(2).startswith(
        '<span class="kind kind-poison advice-will-fail-again">poison · will-fail-again</span> '
        "JsonParseException: Unexpected character (&#39;&lt;&#39;"
    )
    assert contract.REDRIVE_ADVICE["will-fail-again"] in cell.group(1)
    assert '<dt>re-drive advice</dt><dd class="advice-will-fail-again">will-fail-again: ' in html
    assert '<option value="poison" selected>poison</option>' in html
    for bad in ({"kind": "bad"}, {"advice": "<script>"}):
        assert client.get("/dead-letters", params=bad).status_code == 400


def test_csv_export_by_cause(client: TestClient) -> None:
    text = client.get("/dead-letters.csv", params={"cause": day.FP_JSON, "from": D, "to": D}).text
    (row,) = list(csv.DictReader(io.StringIO(text)))
    assert row["msg_id"] == "P1" and row["cause"].endswith(day.HOSTILE_MESSAGE)
    assert row["redrive_advice"] == "will-fail-again" and row["failure_kind"] == "poison"
    both = list(csv.DictReader(io.StringIO(client.get("/dead-letters.csv", params={"kind": "outage"}).text)))
    assert [r["msg_id"] for r in both] == ["O1", "O2", "O3", "Q1"]


def test_message_page_shows_why_each_delivery_failed(client: TestClient) -> None:
    html = _get(client, "/messages/O2")
    why = html[html.index("<h3>Why it failed</h3>") : html.index("<h3>Hop timeline</h3>")]
    assert '<span class="kind kind-outage">outage</span>' in why and ">safe</span>" in why
    assert re.findall(r'<td class="file">([^<]*)<', why) == [f"{day.LOG}:101 ", f"{day.LOG}:104 "]
    assert why.count("<code>ConnectException: Connection refused (&lt;host&gt;:&lt;n&gt;)</code>") == 2
    summary = re.search(r'<p class="summary" id="summary-1">(.*?)</p>', html)
    assert summary is not None and summary.group(1).startswith("Failed 2 times with <code")
    unknown = _get(client, "/messages/O7")
    assert (
        f'{day.UNKNOWN_REASON} <span class="muted">({escape(contract.CAUSE_EVIDENCE[day.UNKNOWN_REASON])})' in unknown
    )
    old = _get(client, "/messages/OLD1")
    assert "No cause recorded" in old


def test_groups_page_shows_the_whatif_of_each_incident(client: TestClient) -> None:
    # both groups on RocketMQ's defaults: 16 retries outlast order-consumer's 14m50s (the 8th delivery comes 15m40s
    # after the first), not pay-consumer's timeouts, sent back at level 3 (10 s) each (test_pages_groups_whatif.py)
    html = _get(client, "/groups")
    assert html.count('<section class="whatif"') == 2
    assert (
        '<p class="proposal none">No change proposed: the configured policy already outlasts the incident: a message '
        "that first fails when it starts is consumed on delivery 8, 15m40s after the first.</p>"
    ) in html
    assert '<p class="proposal">maxReconsumeTimes -1 (16) → 60: ' in html
