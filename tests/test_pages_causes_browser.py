"""The "Failures by cause" page, the dead-letter page filtered by cause and a message page with causes, laid out
by Debian's headless Chromium at 1280×800 (pages_cdp.py) on the literal causes day: nothing wider than the
window, the timelines drawn inside it with the incidents shaded, the hostile example as text, the dead letters one
line each with their cause. Screenshots go to ``$PAGES_SCREENSHOTS`` (else the test's temporary folder)."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

import pages_causes_support as day
from pages_cdp import WIDTH, Page, open_tab, serve_pages

pytestmark = [pytest.mark.browser]
D = day.DAY
ONE_LINE_PX = 28  # one line of the dead-letter table's 13 px text with its padding (test_pages_desk_browser.py)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve_pages(*day.build(tmp_path_factory.mktemp("causes-browser"))) as url:
        yield url


@pytest.fixture()
def page(tmp_path: pathlib.Path) -> Iterator[Page]:
    with open_tab(tmp_path / "profile") as tab:
        yield tab


def test_causes_page_at_1280_by_800(server: str, page: Page, shots: pathlib.Path) -> None:
    page.open(f"{server}/causes?date={D}")
    found = page.eval(
        """(() => {
      const charts = [...document.querySelectorAll('svg.chart.causes')];
      return {
        pageWidth: document.documentElement.scrollWidth,
        causes: document.querySelectorAll('article.cause').length,
        widest: Math.max(...charts.map(s => s.getBoundingClientRect().right)),
        bars: charts.map(s => s.querySelectorAll('rect.bar').length),
        shaded: charts.map(s => s.querySelectorAll('g.incident rect.window').length),
        open: charts.map(s => s.querySelectorAll('g.incident.open').length),
        shadeWidth: charts[0].querySelector('g.incident rect.window').getBoundingClientRect().width,
        example: document.querySelector('#cause-3 pre.example').innerText,
        scripts: document.scripts.length,
        nav: document.querySelector('header.top nav a.here').innerText,
      };
    })()"""
    )
    assert found["causes"] == 4 and found["pageWidth"] <= WIDTH and found["widest"] <= WIDTH, found
    assert found["bars"] == [9, 6, 1, 1] and found["shaded"] == [1, 1, 0, 0] and found["open"] == [0, 1, 0, 0]
    assert 4 <= found["shadeWidth"] < 20, found  # 12 minutes of a 24-hour axis about 1,100 px wide
    assert found["example"] == day.HOSTILE_MESSAGE and found["scripts"] == 0 and found["nav"] == "Causes"
    page.screenshot(shots / "causes-1280x800.png")


def test_dead_letters_by_cause_and_a_message_with_causes(server: str, page: Page, shots: pathlib.Path) -> None:
    page.open(f"{server}/dead-letters?from={D}&to={D}&group={day.ORDERS}&cause={day.FP_DB}")
    layout = page.eval(
        """(() => {
      const rows = [...document.querySelectorAll('#dead-letters tbody tr[data-msg-id]')];
      const cause = document.querySelector('#dead-letters tbody tr[data-msg-id] td.cause');
      return {
        rows: rows.map(r => r.dataset.msgId),
        tallest: Math.max(...rows.map(r => r.getBoundingClientRect().height)),
        pageWidth: document.documentElement.scrollWidth,
        causeWidth: cause.getBoundingClientRect().width,
        causeText: cause.innerText,
        errWidth: document.querySelector('#dead-letters thead th.c-err').getBoundingClientRect().width,
      };
    })()"""
    )
    assert layout["rows"] == ["O1", "O2", "O3"] and layout["tallest"] <= ONE_LINE_PX, layout
    assert layout["pageWidth"] <= WIDTH and layout["errWidth"] >= 120 and layout["causeWidth"] >= 130, layout
    assert layout["causeText"].startswith("outage · safe ConnectException"), layout
    page.screenshot(shots / "dead-letters-by-cause-1280x800.png")
    page.open(f"{server}/messages/O2")
    why = page.eval(
        "({width: document.documentElement.scrollWidth,"
        " rows: document.querySelectorAll('#failures-1 tbody tr').length,"
        " text: document.getElementById('why-1').innerText})"
    )
    assert why["width"] <= WIDTH and why["rows"] == 2 and why["text"].startswith("outage many distinct messages"), why
    page.eval("document.querySelector('h3').scrollIntoView()")  # the summary, the facts and why it failed
    page.screenshot(shots / "message-with-causes-1280x800.png")
