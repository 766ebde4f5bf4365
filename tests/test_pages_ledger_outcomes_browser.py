"""The dead-letter page with its outcome reasons and a re-drive loop, and the looped message's page, in Debian's
headless Chromium at 1280×800 (pages_cdp.py), over test_pages_ledger_outcomes.py's two dates: nothing wider than the
window. Screenshots ``dead-letters-reasons.png`` and ``message-loop.png`` in ``$PAGES_SCREENSHOTS``."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from pages_cdp import WIDTH, Page, open_tab, serve_pages
from test_pages_ledger_outcomes import D1, D2, build

pytestmark = [pytest.mark.browser]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve_pages(*build(tmp_path_factory.mktemp("outcomes-browser"))) as url:
        yield url


@pytest.fixture()
def page(tmp_path: pathlib.Path) -> Iterator[Page]:
    with open_tab(tmp_path / "profile") as tab:
        yield tab


def test_reasons_and_the_loop_fit_1280_by_800(server: str, page: Page, shots: pathlib.Path) -> None:
    page.open(f"{server}/dead-letters?from={D1}&to={D2}")
    seen = page.eval("""(() => ({
      width: document.documentElement.scrollWidth,
      reasons: document.querySelector('#reasons').innerText,
      loop: document.querySelector('tr[data-msg-id="m2"] .loop').innerText,
    }))()""")
    page.screenshot(shots / "dead-letters-reasons.png")
    assert seen["width"] <= WIDTH, seen
    assert seen["reasons"].endswith("handler_exception:ValueError 2 · ok 2") and seen["loop"] == "loop 1", seen
    page.open(f"{server}/messages/m2?group=G1")
    width = page.eval("document.documentElement.scrollWidth")
    loop = page.eval("(() => { const t = document.querySelector('table.ledger'); t.scrollIntoView(); "
                     "return t.querySelector('tr.loop').innerText; })()")  # fmt: skip
    page.screenshot(shots / "message-loop.png")
    assert width <= WIDTH
    assert loop == "re-drive loop\t1: business key ORD-1 was compensated on 1 earlier date"
