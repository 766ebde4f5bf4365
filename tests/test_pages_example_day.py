"""The operator's pages on the committed example day (examples/landing, 2026-11-20), rebuilt by the real ingest and
reconstruction jobs and compensated through the real ledger, in Debian's headless Chromium: the overview's counts
(91 lifecycles: 72 CONSUMED, 12 DEAD_LETTERED, 6 DROPPED, 1 IN_RETRY; 12 dead letters), the dead-letter filter,
a dead letter's message page with its hop timeline, nothing requested outside 127.0.0.1, and screenshots of each
page (``$PAGES_SCREENSHOTS``, else the test's temporary folder)."""

from __future__ import annotations

import pathlib
import re
from collections.abc import Iterator

import pytest

from conftest import ROOT
from test_docs_browser import serve_app
from test_pages_browser import _dom, _local_only, _screenshot

pytestmark = [pytest.mark.spark, pytest.mark.browser]
DAY = "2026-11-20"
CONFIG = ROOT / "examples" / "rocketmq-retry.yaml"
GROUP = "GID_order_fulfilment"  # its one dead letter took 16 scheduled retries: 84 hops, 83 of them observed
LETTER = "0A00022E651B0275A43862CED3300001"


@pytest.fixture(scope="module")
def server(example_day: pathlib.Path) -> Iterator[str]:

    from rocketmq_retry.airflow.pages import app as pages

    warehouse = example_day
    app = pages.create_pages_app(lambda: pages.Source(warehouse, CONFIG), authenticate=False)
    with serve_app(app, "the pages app") as url:
        yield url


def test_overview_of_the_example_day(server: str, tmp_path: pathlib.Path, shots: pathlib.Path) -> None:
    url = f"{server}/runs/{DAY}"
    dom, urls = _dom(url, tmp_path / "p")
    counts = dict(re.findall(r'id="n-([A-Za-z_-]+)">(\d+)<', dom))
    assert counts == {
        "lifecycles": "91",
        "CONSUMED": "72",
        "DEAD_LETTERED": "12",
        "IN_RETRY": "1",
        "DROPPED": "6",
        "UNKNOWN": "0",
        "dead-letters": "12",
    }
    assert dom.count("<tr data-group=") == 17
    _local_only(urls, server)
    _screenshot(url, tmp_path / "s", shots / "example-overview.png")


def test_dead_letters_filter_and_message_page(server: str, tmp_path: pathlib.Path, shots: pathlib.Path) -> None:
    every, _ = _dom(f"{server}/dead-letters?from={DAY}&to={DAY}", tmp_path / "a")
    assert every.count("<tr data-msg-id=") == 12
    narrowed, urls = _dom(f"{server}/dead-letters?from={DAY}&to={DAY}&group=GID_refund_validator", tmp_path / "b")
    assert narrowed.count("<tr data-msg-id=") == 3
    _local_only(urls, server)
    _screenshot(f"{server}/dead-letters?from={DAY}&to={DAY}", tmp_path / "s1", shots / "example-dead-letters.png")

    link = re.search(rf'href="(/messages/{LETTER}\?group={GROUP}&amp;from={DAY}&amp;to={DAY})"', every)
    assert link is not None  # the row links its message page
    url = server + link.group(1).replace("&amp;", "&")
    story, urls = _dom(url, tmp_path / "c")
    start = story.index('<svg class="chart timeline"')
    svg = story[start : story.index("</svg>", start)]
    assert svg.count('class="observed"') == 83 and svg.count("<g class=") == 84
    assert "DEAD_LETTERED" in story and "<th>ledger state</th><td>DONE</td>" in story
    _local_only(urls, server)
    _screenshot(url, tmp_path / "s2", shots / "example-message.png")
