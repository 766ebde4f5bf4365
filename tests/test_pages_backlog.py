"""The backlog page and its CSV through the pages' FastAPI app, over the literal dates of test_explore_backlog.py plus
a date whose group name is hostile HTML: counts as the read layer gives them, every value escaped, formulas
neutralised in the CSV, bad dates refused, and both routes behind the read guard."""

from __future__ import annotations

import csv
import html
import io
import pathlib
import re

import markupsafe
import pytest
from fastapi.testclient import TestClient

from explore_literal import at, commit, dead
from test_explore_backlog import D22, FORMULA, build
from test_pages_support import html_client

HOSTILE = '<script>alert("x")</script>&amp;'


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    wh, config = build(tmp_path_factory.mktemp("backlog"))
    commit(wh, "2026-11-21", {"dead_letters": [dead(HOSTILE, "h1", dlq_at=at("2026-11-21T08:00:00"))]})
    return html_client(wh, config)


def test_the_page_shows_each_groups_backlog_by_age_escaped(client: TestClient) -> None:
    answer = client.get("/backlog", params={"as_of": D22})
    assert answer.status_code == 200, answer.text
    page = answer.text
    assert answer.headers["content-security-policy"].startswith("default-src 'none'")
    assert '<a href="/backlog" class="here">Backlog</a>' in page
    assert '<span class="n" id="n-backlog">8</span> not compensated of 9' in page
    assert '<span class="n" id="n-retention">3</span> past the broker' in page
    # G1 holds 5 of 8
    assert re.search(r'id="card-concentration"[^>]*><span class="n">62\.5 %</span> in G1</a>', page)
    rows = re.findall(r'<tr data-group="([^"]*)">(.*?)</tr>', page, re.S)
    assert [html.unescape(g) for g, _ in rows] == ["G1", "G2", HOSTILE, FORMULA]
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", rows[0][1], re.S)]
    assert cells == ["G1", "default", "6", "5", "2", "1", "1", "1", "2026-11-12 (10 d 14 h)", "2 (1 undated)",
                     "62.5 %"]  # fmt: skip
    # the hostile name is text everywhere: in the cell, its title, the bar chart and the link's query
    assert "<script>" not in page and HOSTILE not in page
    assert str(markupsafe.escape(HOSTILE)) in page  # as Jinja escapes it
    assert "group=%3Cscript%3Ealert%28%22x%22%29%3C/script%3E%26amp%3B" in page


def test_the_as_of_date_defaults_to_the_newest_and_bad_dates_are_refused(client: TestClient) -> None:
    page = client.get("/backlog").text
    assert '<span class="date">as of 2026-11-23</span>' in page and "the newest committed date" in page
    for bad in ("2026-13-01", "20261122", "../x", "2026-11-22\x00"):
        answer = client.get("/backlog", params={"as_of": bad})
        assert answer.status_code in (400, 422), bad
        assert "<script>" not in answer.text
    assert client.get("/backlog", params={"as_of": "2026-11-01"}).status_code == 404


def test_the_csv_is_the_page_with_formulas_neutralised(client: TestClient) -> None:
    answer = client.get("/backlog.csv", params={"as_of": D22})
    assert answer.status_code == 200
    assert answer.headers["content-disposition"] == 'attachment; filename="dead-letter-backlog-2026-11-22.csv"'
    rows = list(csv.reader(io.StringIO(answer.text)))
    assert [r[0] for r in rows] == ["consumer_group", "G1", "G2", HOSTILE, "'" + FORMULA]
    assert rows[2][:5] == ["G2", "short", "1", "0", "1"]


def test_both_routes_are_behind_the_read_guard(tmp_path: pathlib.Path) -> None:
    from rocketmq_retry.airflow.pages import app as pages

    app = pages.create_pages_app(lambda: pages.Source(tmp_path, None), authenticate=True)
    guarded = {
        route.path: [d.dependency.__qualname__ for d in route.dependencies]  # type: ignore[attr-defined]
        for route in app.routes
        if getattr(route, "path", "") in ("/backlog", "/backlog.csv", "/dead-letters")
    }
    assert guarded["/backlog"] == guarded["/backlog.csv"] == guarded["/dead-letters"]
    assert guarded["/backlog"] == ["requires_access_dag.<locals>.inner"]
