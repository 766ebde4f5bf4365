"""The operator's pages through their FastAPI app on a tiny literal warehouse (test_pages_support.py): what each
page shows, the filters, paging and CSV export of the dead letters, every value from the logs escaped, bad dates
and path tricks refused, the re-drive form's CSRF guard. Authentication with real Airflow tokens is in
test_pages_auth.py; the pages in a browser in test_pages_browser.py."""

from __future__ import annotations

import csv
import io
import pathlib
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

import test_pages_support as lit
from rocketmq_retry.airflow.pages import app as pages
from rocketmq_retry.airflow.pages import guard
from test_pages_support import html_client

DAY = lit.DAY


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, pathlib.Path]:
    return lit.build(tmp_path_factory.mktemp("pages"))


@pytest.fixture(scope="module")
def client(site: tuple[pathlib.Path, pathlib.Path]) -> TestClient:
    return html_client(*site)


def _rows(html: str) -> list[str]:
    """msg_ids of the dead-letter table's rows, in page order."""
    return re.findall(r'<tr data-msg-id="([^"]*)"', html)


def test_landing_lists_the_committed_dates(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert f'<a href="/runs/{DAY}">{DAY}</a>' in page.text
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script" not in csp  # no script may run at all
    assert "<script" not in page.text


def test_landing_before_the_first_run(tmp_path: pathlib.Path) -> None:
    app = pages.create_pages_app(lambda: pages.Source(tmp_path / "not-yet", None), authenticate=False)
    page = TestClient(app, headers={"accept": "text/html"}).get("/")
    assert page.status_code == 200 and 'id="no-dates"' in page.text and "rocketmq_retry_daily" in page.text


def test_overview_counts_and_links(client: TestClient) -> None:
    page = client.get(f"/runs/{DAY}")
    assert page.status_code == 200
    text = page.text
    assert 'id="n-lifecycles">6<' in text and 'id="n-DEAD_LETTERED">5<' in text and 'id="n-CONSUMED">1<' in text
    assert 'id="n-dead-letters">5<' in text
    assert '<tr data-group="order-consumer">' in text and "75.0 %" in text  # 3 of 4 order lifecycles
    # the anomaly's example opens the message page for its group and date
    assert f'href="/messages/{lit.PLAIN}9?group=order-consumer&amp;from={DAY}&amp;to={DAY}"' in text
    assert 'id="validation-status" class="empty"' in text  # never validated: said so, no fake link
    assert "<svg" in text and 'class="chart bars"' in text
    assert ">75 %</text>" in text  # the bar says what the table says, with its unit


def test_bars_print_values_as_the_tables_do() -> None:
    from rocketmq_retry.airflow.pages import svg

    chart = str(svg.bars([("GID_a", 16.7), ("GID_b", 0.0), ("GID_c", 33.333)], unit=" %"))
    assert ">16.7 %</text>" in chart and ">0 %</text>" in chart and ">33.333 %</text>" in chart
    assert "16.700" not in chart


def test_values_from_logs_are_text_everywhere(client: TestClient) -> None:
    story = client.get(f"/messages/{lit.PLAIN}4", params={"from": DAY, "to": DAY})
    pages_ = {
        "overview": client.get(f"/runs/{DAY}").text,
        "dead letters": client.get("/dead-letters", params={"from": DAY, "to": DAY}).text,
        "story": story.text,
        "groups": client.get("/groups", params={"to": DAY, "days": 2}).text,
        "search": client.get("/messages", params={"q": lit.HOSTILE_KEY}).text,
    }
    for name, html in pages_.items():
        assert "<img src=x" not in html, name
        assert "<script>document.title" not in html, name
        assert '"onerror="alert(1)' not in html, name
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in pages_["overview"]
    assert "&lt;img src=x onerror=&#34;document.body.dataset.pwned=1&#34;&gt;" in pages_["dead letters"]
    assert "&#34;onerror=&#34;alert(1)" in pages_["dead letters"]
    assert "&lt;img src=x onerror=" in pages_["story"]  # thread and detail of the evidence lines
    assert "&lt;img src=x onerror=" in pages_["search"]  # the query echoed back
    assert "1 lifecycles match" in pages_["search"]  # found by business key
    # The checkbox value (JSON of date, group, msg_id) is escaped for its attribute too.
    html = client.get("/dead-letters", params={"group": lit.HOSTILE_GROUP}).text
    assert _rows(html) == [f"{lit.PLAIN}4"]


def test_dead_letter_filters_narrow_the_rows(client: TestClient) -> None:
    def ids(**params: Any) -> list[str]:
        page = client.get("/dead-letters", params=params)
        assert page.status_code == 200, page.text
        return _rows(page.text)

    everything = ids()
    assert sorted(everything) == [f"{lit.PLAIN}{i}" for i in range(5)]
    assert sorted(ids(group="order-consumer")) == [f"{lit.PLAIN}{i}" for i in range(3)]
    assert ids(topic="payments") == [f"{lit.PLAIN}3"]
    assert ids(tag="TagB") == [f"{lit.PLAIN}1"]
    assert ids(key="ORD-3") == [f"{lit.PLAIN}2"]
    assert sorted(ids(state="GAVE_UP")) == [f"{lit.PLAIN}{i}" for i in range(3)]  # the failing handler's rows
    assert sorted(ids(state="DONE")) == [f"{lit.PLAIN}3", f"{lit.PLAIN}4"]
    assert ids(attribution="config") == []
    assert ids(**{"from": "2026-11-22"}) == []
    page = client.get("/dead-letters", params={"group": "order-consumer"}).text
    assert 'id="n-rows">3<' in page and "GAVE_UP" in page and "refund service unavailable" in page
    assert '<td class="cut keys" title="ORD-2">ORD-2</td>' in page and "built-in method" not in page
    assert "<dt>keys</dt><dd>ORD-2</dd>" in page  # ... and in full in the row's detail


def test_paging(client: TestClient) -> None:
    first = client.get("/dead-letters", params={"page_size": 2}).text
    third = client.get("/dead-letters", params={"page_size": 2, "page": 3}).text
    assert len(_rows(first)) == 2 and len(_rows(third)) == 1
    assert "page 1 of 3" in first and 'id="next" href="/dead-letters?' in first and 'id="prev"' not in first
    assert 'id="prev"' in third and 'id="next"' not in third
    assert client.get("/dead-letters", params={"page_size": 5000}).status_code == 422


def test_csv_export_of_the_filtered_rows(client: TestClient) -> None:
    answer = client.get("/dead-letters.csv", params={"group": "order-consumer", "from": DAY, "to": DAY})
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/csv")
    assert answer.headers["content-disposition"] == f'attachment; filename="dead-letters-{DAY}_{DAY}.csv"'
    rows = list(csv.DictReader(io.StringIO(answer.text)))
    assert sorted(r["msg_id"] for r in rows) == [f"{lit.PLAIN}{i}" for i in range(3)]
    assert {r["compensation_state"] for r in rows} == {"GAVE_UP"} and {r["attempts"] for r in rows} == {"1"}
    hostile = list(csv.DictReader(io.StringIO(client.get("/dead-letters.csv", params={"key": "onerror"}).text)))
    assert [r["keys"] for r in hostile] == [lit.HOSTILE_KEY]  # the CSV keeps the value as it was, quoted


@pytest.mark.parametrize(
    "url",
    [
        "/runs/2026-13-01",
        "/runs/20261121",
        "/runs/..%2F..%2Fetc%2Fpasswd",
        "/runs/2026-11-21%2F..%2F..",
        "/dead-letters?from=../../etc",
        "/dead-letters?to=2026-02-30",
        "/dead-letters?from=2026-11-22&to=2026-11-21",
        "/dead-letters?state=DELETED",
        "/dead-letters?attribution=%3Cscript%3E",
        "/dead-letters.csv?from=%2Fetc%2Fpasswd",
        "/groups?to=..%2F..",
        "/messages?q=x&from=2026-W47-5",
    ],
)
def test_bad_dates_and_paths_are_refused(client: TestClient, url: str) -> None:
    answer = client.get(url)
    assert answer.status_code in (400, 404), (url, answer.status_code)
    assert "root:" not in answer.text


def test_unknown_date_and_message_are_404(client: TestClient) -> None:
    assert client.get("/runs/2026-11-19").status_code == 404
    missing = client.get("/messages/NOPE", params={"from": DAY, "to": DAY})
    assert missing.status_code == 404 and "NOPE" in missing.text


def test_story_page_has_the_timeline_evidence_and_ledger(client: TestClient) -> None:
    page = client.get(f"/messages/{lit.PLAIN}4", params={"group": lit.HOSTILE_GROUP, "from": DAY, "to": DAY})
    assert page.status_code == 200
    html = page.text
    svg = html[html.index('<svg class="chart timeline"') : html.index("</svg>", html.index("chart timeline"))]
    # one step per hop in hop order, each with the wait since the previous one written on its link
    assert svg.count('<g class="step"') == 4 and svg.count('class="observed"') == 4
    assert [int(h) for h in re.findall(r'data-hop="(\d+)"', svg)] == [0, 1, 2, 3]
    assert re.findall(r'class="wait"[^>]*>([^<]*)<', svg) == ["+1 s", "+44 s", "+13 min"]
    assert "drift +34.0 s" in svg  # the late redelivery
    assert "app-1/logs/rocketmq_client.log:102" in html  # evidence line with file:line
    assert "<th>ledger state</th><td>DONE</td>" in html
    assert "<th>tags / keys</th><td>TagX / &lt;img src=x" in html and "built-in method" not in html


def test_groups_page_has_policy_and_trend(client: TestClient) -> None:
    html = client.get("/groups", params={"to": DAY, "days": 3}).text
    assert '<article class="group" data-group="order-consumer">' in html
    assert html.count('class="chart sparkline"') == 3
    assert "message_delay_level" in html or "delay" in html


def test_redrive_needs_an_authenticated_user(client: TestClient) -> None:
    # The unauthenticated app (tests only) never offers or accepts a re-drive.
    assert 'name="selected"' not in client.get("/dead-letters").text
    assert client.post("/redrive", data={"selected": "x"}).status_code == 403


def test_one_redrive_run_per_group_with_the_chosen_rows_dates() -> None:
    picks = [("2026-11-21", "b", "m2"), ("2026-11-20", "a", "m1"), ("2026-11-21", "a", "m3")]
    assert pages.redrive_confs(picks) == [
        {"msg_ids": ["m1", "m3"], "consumer_group": "a", "date_from": "2026-11-20", "date_to": "2026-11-21"},
        {"msg_ids": ["m2"], "consumer_group": "b", "date_from": "2026-11-21", "date_to": "2026-11-21"},
    ]


class _Request:
    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers


def test_csrf_token_is_bound_to_user_time_and_origin() -> None:
    from fastapi import HTTPException

    own = _Request({"host": "airflow.example:8080", "origin": "http://airflow.example:8080"})
    token = guard.csrf_token("bob", now=1_000_000)
    guard.check_csrf(own, "bob", token, now=1_000_100)  # type: ignore[arg-type]
    refusals = [
        (own, "ana", token, 1_000_100),  # another user's token
        (own, "bob", token, 1_000_000 + guard.CSRF_TTL_SECONDS + 1),  # stale
        (own, "bob", "", 1_000_100),
        (own, "bob", token.replace(".", ".0"), 1_000_100),
        (_Request({"host": "airflow.example:8080", "origin": "http://airflow.example:9999"}), "bob", token, 1_000_100),
        (_Request({"host": "airflow.example:8080", "origin": "null"}), "bob", token, 1_000_100),
        (_Request({"host": "airflow.example:8080", "referer": "http://evil.example/x"}), "bob", token, 1_000_100),
    ]
    for request, user, tok, now in refusals:
        with pytest.raises(HTTPException) as err:
            guard.check_csrf(request, user, tok, now=now)  # type: ignore[arg-type]
        assert err.value.status_code == 403


def test_every_route_requires_dag_read_access(site: tuple[pathlib.Path, pathlib.Path]) -> None:
    """As the plugin registers it: each route of the pages depends on Airflow's DAG permission check, the
    re-drive on the trigger permission too."""
    from fastapi.routing import APIRoute

    from rocketmq_retry.airflow.plugin import RocketMQRetryPlugin

    root = RocketMQRetryPlugin.fastapi_apps[0]["app"]
    mounted = [r for r in root.routes if getattr(r, "path", "") == pages.OPS_ROUTE]
    assert len(mounted) == 1
    routes = [r for r in mounted[0].app.routes if isinstance(r, APIRoute)]
    assert {r.path for r in routes} >= {"/", "/runs/{date}", "/dead-letters", "/dead-letters.csv", "/redrive"}
    for route in routes:
        checks = [d.call.__qualname__ for d in route.dependant.dependencies]
        assert "requires_access_dag.<locals>.inner" in checks, route.path
    redrive = next(r for r in routes if r.path == "/redrive")
    redrive_checks = [d.call.__qualname__ for d in redrive.dependant.dependencies]
    assert redrive_checks.count("requires_access_dag.<locals>.inner") == 2


def test_bad_parameters_get_the_pages_error_page(client: TestClient) -> None:
    page = client.get("/dead-letters", params={"page_size": 5000, "dir": "up"})
    assert page.status_code == 422 and page.headers["content-type"].startswith("text/html")
    assert '<link rel="stylesheet" href="/static/ops.css">' in page.text  # the pages' own style, not raw JSON
    detail = re.search(r'<p class="error" id="error-detail">(.*?)</p>', page.text)
    assert detail is not None
    assert detail.group(1) == (
        "page_size: Input should be less than or equal to 1000; dir: Input should be &#39;asc&#39; or &#39;desc&#39;"
    )
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    # an API client (no text/html in its Accept) keeps FastAPI's JSON
    api = client.get("/dead-letters", params={"page_size": 5000}, headers={"accept": "application/json"})
    assert api.status_code == 422 and api.json()["detail"][0]["loc"] == ["query", "page_size"]
    refused = client.get("/runs/2026-13-01", headers={"accept": "application/json"})
    assert refused.status_code == 400
    assert refused.json() == {"detail": "date '2026-13-01' does not exist in the calendar"}
    page = client.get("/runs/2026-13-01")  # ... and a browser gets the same words on the error page
    assert page.status_code == 400 and "date &#39;2026-13-01&#39; does not exist in the calendar" in page.text


def test_overview_cards_link_their_filtered_lists(client: TestClient) -> None:
    html = client.get(f"/runs/{DAY}").text
    base = f"/runs/{DAY}/lifecycles"
    assert f'id="card-lifecycles" href="{base}"' in html
    assert f'id="card-DEAD_LETTERED" href="{base}?state=DEAD_LETTERED"' in html
    assert f'id="card-dead-letters" href="/dead-letters?from={DAY}&amp;to={DAY}"' in html
    assert f'<a href="{base}?anomaly=LATE_REDELIVERY">1</a>' in html  # the anomaly's count
    assert f'<a href="{base}?state=DEAD_LETTERED&amp;group=order-consumer">3</a>' in html  # a group's count

    def ids(**params: Any) -> list[str]:
        page = client.get(base, params=params)
        assert page.status_code == 200, page.text
        return _rows(page.text)

    assert len(ids()) == 6
    assert sorted(ids(state="DEAD_LETTERED")) == [f"{lit.PLAIN}{i}" for i in range(5)]
    assert ids(state="CONSUMED") == [f"{lit.PLAIN}9"] == ids(anomaly="LATE_REDELIVERY")
    assert ids(state="DEAD_LETTERED", group="order-consumer") == [f"{lit.PLAIN}{i}" for i in range(3)]
    assert ids(group=lit.HOSTILE_GROUP) == [f"{lit.PLAIN}4"]
    hostile = client.get(base, params={"group": lit.HOSTILE_GROUP}).text
    assert "<script>document.title" not in hostile and "&lt;script&gt;document.title" in hostile
    assert client.get(base, params={"state": "LOST"}).status_code == 400
    assert client.get("/runs/2026-11-19/lifecycles").status_code == 404
