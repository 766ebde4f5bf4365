"""The backlog page laid out by Debian's headless Chromium at 1280×800 (pages_cdp.py) over twelve literal dates of six
groups: nothing wider than the window, the table's rows one line each, the long group name cut with its whole name in
the title. Screenshot: ``backlog.png`` in ``$PAGES_SCREENSHOTS`` (else the test's temporary folder)."""

from __future__ import annotations

import datetime as dt
import pathlib
from collections.abc import Iterator

import pytest

from explore_literal import at, commit, dead
from pages_cdp import WIDTH, Page, open_tab, serve_pages
from rocketmq_retry.compensation.ledger import Ledger, Registration

pytestmark = [pytest.mark.browser]
LONG = "GID_settlement_reconciliation_nightly_batch_consumer"
# group -> dead letters per date (oldest date first); each group's first half of every date gets compensated
GROUPS = {
    "GID_order_consumer": [3, 0, 4, 2, 0, 1, 6, 2, 3, 5, 4, 8],
    "GID_payment_notify": [0, 0, 0, 0, 0, 0, 1, 0, 2, 9, 14, 22],
    "GID_refund_validator": [5, 5, 5, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    "GID_inventory_sync": [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2],
    LONG: [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1],
    "GID_audit_log": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],  # no dead letter: no row
}
FIRST = dt.date(2026, 11, 10)
ONE_LINE_PX = 28


def build(base: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    wh, config = base / "wh", base / "c.yaml"
    config.write_text("timezone: UTC\nbrokers:\n  b2: {file_reserved_time_hours: 48}\n"
                      "groups:\n  GID_payment_notify: {broker: b2}\n", encoding="utf-8")  # fmt: skip
    done: list[Registration] = []
    for i in range(12):
        ds = (FIRST + dt.timedelta(days=i)).isoformat()
        rows = []
        for group, counts in GROUPS.items():
            for n in range(counts[i]):
                msg_id = f"{group[-6:]}{ds.replace('-', '')}{n:04d}"
                rows.append(dead(group, msg_id, dlq_at=at(f"{ds}T{(3 * n) % 24:02d}:{n % 60:02d}:00")))
                if n < counts[i] // 2 and i < 9:
                    done.append(Registration(group, msg_id, ds, "T1", "log-only", None))
        commit(wh, ds, {"dead_letters": rows})
    with Ledger.open(f"sqlite:///{wh}/compensation.db") as led:
        led.register(done)
        for r in done:
            claim = led.claim(r.consumer_group, r.msg_id, worker="w")
            assert claim is not None and led.complete(claim, "ok")
    return wh, config


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve_pages(*build(tmp_path_factory.mktemp("backlog-browser"))) as url:
        yield url


@pytest.fixture()
def page(tmp_path: pathlib.Path) -> Iterator[Page]:
    with open_tab(tmp_path / "profile") as tab:
        yield tab


def test_backlog_fits_1280_by_800(server: str, page: Page, shots: pathlib.Path) -> None:
    page.open(f"{server}/backlog")
    layout = page.eval("""(() => {
      const rows = [...document.querySelectorAll('#backlog tbody tr')];
      const cell = document.querySelector('#backlog tr[data-group="LONG"] td.keys');
      return {
        rows: rows.length,
        tallest: Math.max(...rows.map(r => r.getBoundingClientRect().height)),
        pageWidth: document.documentElement.scrollWidth,
        tableRight: document.querySelector('#backlog').getBoundingClientRect().right,
        tableBottom: document.querySelector('#backlog').getBoundingClientRect().bottom,
        longTitle: cell.title,
        heading: document.querySelector('h1').textContent,
      };
    })()""".replace("LONG", LONG))  # fmt: skip
    page.screenshot(shots / "backlog.png")
    assert layout["heading"] == "Dead-letter backlog as of 2026-11-21"
    assert layout["rows"] == 5 and layout["tallest"] < 1.5 * ONE_LINE_PX, layout  # one line each
    assert layout["pageWidth"] <= WIDTH and layout["tableRight"] <= WIDTH, layout
    assert layout["longTitle"] == LONG
