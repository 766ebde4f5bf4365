"""The groups page's what-if of each group's current incident, through the pages' FastAPI app on the literal
causes day (pages_causes_support.py) with order-consumer at maxReconsumeTimes 2, a quiet configured group without
an incident, and a group whose name and message id carry markup:

- order-consumer: outage 03:00:10 to 03:15 (14m50s): the retries of the default table come at 10 s, 40 s, 1m40,
  3m40, 6m40, 10m40, 15m40 after the first, so maxReconsumeTimes 7; O1-O3 (dead-lettered) are consumed under it.
- pay-consumer (RocketMQ's defaults): CONSUME_TIMEOUT outage still open since 14:50, the end of observation 15:00;
  a timed-out message is sent back at level 3 (10 s) every time (§1.6), so 60 retries.
- HOSTILE (not configured: 16 retries, 4h45m40s): an outage 06:00 to 11:00 needs the 17th (6h45m40s).

Then the same page in headless Chromium at 1280x800 (screenshot to ``$PAGES_SCREENSHOTS``)."""

from __future__ import annotations

import datetime as dt
import pathlib
import re
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

import pages_causes_support as day
from pages_cdp import WIDTH, Browser
from rocketmq_retry import contract
from test_docs_browser import serve_app
from test_pages_support import _arrow_type, html_client

D = day.DAY
QUIET = "quiet-consumer"
HOSTILE = 'ops<script>alert(1)</script>&"x'
HOSTILE_MSG = "m<b>1</b>"
INC_H = "f" * 32


def _t(hh: int, mm: int = 0, ss: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, 21, hh, mm, ss, tzinfo=dt.UTC)


def _add(warehouse: pathlib.Path, table: str, rows: list[dict[str, Any]]) -> None:
    """A second file in D's partition of ``table``, as a second writer task leaves one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(n, _arrow_type(t)) for n, t in contract.SCHEMAS[table]])
    full = [{n: r.get(n) for n in schema.names} for r in rows]
    pq.write_table(pa.Table.from_pylist(full, schema=schema), contract.partition_dir(warehouse, table, D) / "x.parquet")


def _hostile(warehouse: pathlib.Path) -> None:
    outage = {"failure_kind": day.OUTAGE, "incident_id": INC_H, "kind_rule": "outage-window"}
    _add(warehouse, "failures", [{"consumer_group": HOSTILE, "msg_id": HOSTILE_MSG, "reconsume_times": 0,
                                  "failed_at": _t(6), "cause": day.FP_DB, **outage}])  # fmt: skip
    _add(warehouse, "lifecycles", [{"consumer_group": HOSTILE, "msg_id": HOSTILE_MSG, "first_seen": _t(6),
                                    "last_seen": _t(10, 45, 40), "deliveries": 17, "final_state": "DEAD_LETTERED",
                                    **outage}])  # fmt: skip
    _add(warehouse, "dead_letters", [{"consumer_group": HOSTILE, "msg_id": HOSTILE_MSG, "dlq_at": _t(10, 45, 40)}])
    _add(warehouse, "incidents", [{"consumer_group": HOSTILE, "incident_id": INC_H, "fingerprint": day.FP_DB,
                                   "started_at": _t(6), "last_failure_at": _t(6), "ended_at": _t(11),
                                   "state": contract.ENDED}])  # fmt: skip


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, pathlib.Path]:
    warehouse, config = day.build(
        tmp_path_factory.mktemp("groups-whatif"), {day.ORDERS: {"max_reconsume_times": 2}, QUIET: {}}
    )
    _hostile(warehouse)
    return warehouse, config


@pytest.fixture(scope="module")
def client(site: tuple[pathlib.Path, pathlib.Path]) -> TestClient:
    return html_client(*site)


def _sections(html: str) -> dict[str, str]:
    """group -> its what-if section's HTML."""
    out = {}
    for article in html.split('<article class="group" ')[1:]:
        group = re.match(r'data-group="([^"]*)"', article)
        assert group is not None
        if '<section class="whatif"' in article:
            out[group.group(1)] = article[article.index('<section class="whatif"') : article.index("</section>")]
    return out


def test_only_groups_with_an_incident_get_a_what_if(client: TestClient) -> None:
    answer = client.get("/groups", params={"to": D})
    assert answer.status_code == 200, answer.text
    sections = _sections(answer.text)
    assert sorted(sections) == sorted([day.ORDERS, day.PAY, str(escape(HOSTILE))])
    assert f'data-group="{QUIET}"' in answer.text  # listed, without a what-if


def test_the_proposal_its_effect_and_the_command(client: TestClient) -> None:
    s = _sections(client.get("/groups", params={"to": D}).text)[day.ORDERS]
    assert f'data-incident="{day.INC_DB}"' in s
    causes = f"/causes?date={D}&amp;group={day.ORDERS}"
    label = "ConnectException: Connection refused (&lt;host&gt;:&lt;n&gt;)"
    assert f'<a class="cause-label" href="{causes}" title="{day.FP_DB}">{label}</a>' in s
    assert "2026-11-21T03:00:10Z to 2026-11-21T03:15:00Z: <strong>14m50s</strong>" in s
    assert (
        '<p class="proposal">maxReconsumeTimes 2 → 7: a message that first fails when the incident starts is consumed '
        "on delivery 8, 15m40s after the first, when the incident (14m50s) is over; under the configured policy it "
        "is dead-lettered after 3 deliveries, 40s after the first.</p>"
    ) in s
    # observed: O1-O3 and the poison P1; under 7 only P1
    assert re.search(r'id="whatif-\d+-dead-letters"><span class="n">4 → 1</span>', s)
    assert re.findall(r'href="/messages/(\w+)\?group=order-consumer&amp;from=2026-11-21&amp;to=2026-11-21"', s) == [
        "O1",
        "O2",
        "O3",
    ]
    # the configured policy replayed: 23 deliveries, 15 schedule-topic writes; under 7: 55 and 47
    assert re.search(r'-deliveries"><span class="n">\+32</span>', s) and re.search(
        r'-schedule"><span class="n">\+32<', s
    )
    assert "<tr><th>SCHEDULE_TOPIC_XXXX writes</th>" in s
    assert "<summary>Assumptions</summary>" in s and "keeps failing" in s
    command = f"rocketmq-retry whatif --group {day.ORDERS} --from {D} --to {D} --max-reconsume-times 7"
    assert f'<pre class="command"><code>{command}</code></pre>' in s


def test_an_open_incident_counts_to_the_end_of_observation(client: TestClient) -> None:
    s = _sections(client.get("/groups", params={"to": D}).text)[day.PAY]
    assert 'still open, <strong class="warn">10m</strong> to the end of observation' in s
    assert f'title="{day.TIMEOUT}">{day.TIMEOUT}</a>' in s
    assert '<p class="proposal">maxReconsumeTimes -1 (16) → 60: ' in s
    assert "under the configured policy it is dead-lettered after 17 deliveries, 2m40s after the first." in s
    assert re.search(r'-dead-letters"><span class="n">1 → 0</span>', s)
    assert "still open at the end of observation (2026-11-21T15:00:00Z)" in s


def test_what_comes_from_the_logs_is_text(client: TestClient) -> None:
    html = client.get("/groups", params={"to": D}).text
    assert "<script>" not in html and "<b>1</b>" not in html
    s = _sections(html)[str(escape(HOSTILE))]
    assert '<p class="proposal">maxReconsumeTimes -1 (16) → 17: ' in s
    assert f">{escape(HOSTILE_MSG)}</a>" in s and "/messages/m%3Cb%3E1%3C/b%3E?group=ops%3Cscript%3E" in s
    # quoted for a shell, then escaped for HTML
    assert "--group &#39;ops&lt;script&gt;alert(1)&lt;/script&gt;&amp;&#34;x&#39;" in s


def test_the_range_is_the_pages(client: TestClient) -> None:
    # the day before holds no incident: nothing to show, and nothing read for the day after
    assert _sections(client.get("/groups", params={"to": day.OLD_DAY, "days": 1}).text) == {}
    assert len(_sections(client.get("/groups", params={"to": D, "days": 1}).text)) == 3


def test_a_failed_read_is_a_sentence_not_an_error_page(
    site: tuple[pathlib.Path, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    warehouse = tmp_path / "warehouse"
    shutil.copytree(site[0], warehouse)
    # D's failures are gone (reconstructed before the table existed): each group's what-if says so
    shutil.rmtree(contract.partition_dir(warehouse, "failures", D))
    html = html_client(warehouse, site[1]).get("/groups", params={"to": D})
    assert html.status_code == 200
    s = _sections(html.text)[day.ORDERS]
    assert f'<p class="err whatif-error">The failures of {D}..{D} could not be read: no failures partition for {D}' in s
    assert f"<code>rocketmq-retry whatif --group {day.ORDERS} --from {D} --to {D}</code>" in s
    # an incidents file that is not Parquet: no what-if at all, one sentence, the rest of the page stands
    (contract.partition_dir(warehouse, "incidents", D) / "x.parquet").write_text("not parquet")
    broken = html_client(warehouse, site[1]).get("/groups", params={"to": D})
    assert broken.status_code == 200 and _sections(broken.text) == {}
    assert f'<p class="err whatif-error">The incidents of 2026-11-08..{D} could not be read' in broken.text
    assert f'data-group="{day.ORDERS}"' in broken.text


@pytest.fixture(scope="module")
def server(site: tuple[pathlib.Path, pathlib.Path]) -> Iterator[str]:
    from rocketmq_retry.airflow.pages import app as pages

    app = pages.create_pages_app(lambda: pages.Source(*site), authenticate=False)
    with serve_app(app, "the pages app") as url:
        yield url


@pytest.mark.browser
def test_the_what_if_at_1280_by_800(server: str, tmp_path: pathlib.Path, shots: pathlib.Path) -> None:
    browser = Browser(tmp_path / "profile")
    page = browser.page()
    try:
        page.open(f"{server}/groups?to={D}")
        found = page.eval(
            """(() => {
          const s = document.querySelector('article[data-group="order-consumer"] section.whatif');
          s.scrollIntoView();
          const boxes = [...document.querySelectorAll('section.whatif, section.whatif table, pre.command')];
          return {
            pageWidth: document.documentElement.scrollWidth,
            widest: Math.max(...boxes.map(b => b.getBoundingClientRect().right)),
            sections: document.querySelectorAll('section.whatif').length,
            proposal: s.querySelector('p.proposal').innerText,
            command: s.querySelector('pre.command').innerText,
            scripts: document.scripts.length,
            title: document.title,
          };
        })()"""
        )
        assert found["pageWidth"] <= WIDTH and found["widest"] <= WIDTH, found
        assert found["sections"] == 3 and found["scripts"] == 0 and "pwned" not in found["title"], found
        assert found["proposal"].startswith("maxReconsumeTimes 2 → 7: "), found
        assert found["command"].endswith("--max-reconsume-times 7"), found
        page.screenshot(shots / "groups-whatif-1280x800.png")
    finally:
        page.close()
        browser.close()
