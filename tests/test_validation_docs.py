"""The Data Docs a reviewer reads: a real site built by one small validation run (real GE, real Spark), checked as
files here and in Debian's headless Chromium in test_validation_docs_browser.py. Nothing in it may come from the
internet, each expectation says its status and severity in words, a failing one lists example rows whose msg_id
links to the operator's message page, and the pages link each other by run date."""

from __future__ import annotations

import html
import pathlib
import re
import shutil
from typing import Any

import pytest

from conftest import ROOT
from test_validation_suites import DS, HOSTILE, TABLES, good_rows, write_warehouse

FOREIGN_URL = re.compile(r"""(?:https?:)?//(?!127\.0\.0\.1[:/])[A-Za-z0-9.-]+""")


def build_site(spark: Any, base: pathlib.Path) -> tuple[Any, pathlib.Path]:
    """One validation run over a partition with a critical failure (an unknown final state, one of them on a message
    whose id is markup) and a warning (a message in %DLQ% after one retry)."""
    from rocketmq_retry.config import Config
    from rocketmq_retry.validation.run import validate_partition
    from rocketmq_retry.validation.settings import ValidationSettings

    root = base / "expectations"
    shutil.copytree(ROOT / "expectations", root, ignore=shutil.ignore_patterns("uncommitted"))
    tables = good_rows()
    tables["lifecycles"][0]["final_state"] = "LOST"
    tables["lifecycles"].append({**tables["lifecycles"][0], "msg_id": HOSTILE, "consumer_group": "GID_a&b"})
    tables["transitions"].extend(
        {"consumer_group": "GID_orders", "msg_id": "M3", "hop": h, "from_state": "X", "to_state": "X",
         "observed_at": tables["transitions"][0]["observed_at"], "reconsume_times": h, "physical_topic": topic}
        for h, topic in ((0, "orders"), (1, "%RETRY%GID_orders"), (2, "%DLQ%GID_orders"))
    )  # fmt: skip
    warehouse = base / "warehouse"
    write_warehouse(spark, warehouse, tables)
    summary = validate_partition(DS, str(warehouse), Config(), ValidationSettings(context_root=str(root)), spark)
    return summary, root / "gx" / "uncommitted" / "data_docs" / "local_site"


@pytest.fixture(scope="module")
def site(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, pathlib.Path]:
    return build_site(spark, tmp_path_factory.mktemp("docs-site"))


DS_WARNED = "2026-11-21"


@pytest.fixture(scope="module")
def warned(spark: Any, site: tuple[Any, pathlib.Path]) -> Any:
    """A second date in the same site whose only failure is a warning (a drift beyond the tolerance)."""
    from rocketmq_retry.config import Config
    from rocketmq_retry.validation.run import validate_partition
    from rocketmq_retry.validation.settings import ValidationSettings

    _, docs = site
    root = docs.parents[3]  # <root>/gx/uncommitted/data_docs/local_site
    tables = good_rows()
    tables["transitions"][2]["drift_ms"] = 120_000
    warehouse = root.parent / "warehouse"
    write_warehouse(spark, warehouse, tables, ds=DS_WARNED)
    return validate_partition(DS_WARNED, str(warehouse), Config(), ValidationSettings(context_root=str(root)), spark)


def _expectation(page: str, marker: str) -> str:
    """The markup of one expectation's row: from ``marker`` (in its Status cell) up to the next row's Status cell."""
    start = page.index(marker)
    end = page.find('<span class="rr-status', start + len(marker))
    return page[start : end if end > 0 else len(page)]


FAILED = '<span class="rr-status rr-failed">Failed</span> <span class="rr-severity'
# a run's or a table's status (validation/status.py)
GREEN = '<span class="rr-status rr-passed">passed</span>'
AMBER = '<span class="rr-status rr-warned">passed with warnings</span>'
RED = '<span class="rr-status rr-failed">failed</span>'
SUCCESS = '<span class="rr-status rr-success">Success</span> <span class="rr-severity'


@pytest.mark.spark
def test_no_page_or_stylesheet_names_anything_outside_the_server(site: tuple[Any, pathlib.Path]) -> None:
    _, docs = site
    served = [p for p in docs.rglob("*") if p.suffix in {".html", ".css", ".js", ".svg"}]
    assert len(served) >= 10
    for path in served:
        text = path.read_text(errors="replace")
        assert not FOREIGN_URL.findall(text), (path, FOREIGN_URL.findall(text)[:5])
        assert "<script" not in text, path  # no script at all: no CDN, nothing inline
        assert "fa-check-circle" not in text and "fa-times" not in text, path  # no icon font glyph for a status


@pytest.mark.spark
def test_the_index_lists_every_run_with_its_status_and_pages(site: tuple[Any, pathlib.Path]) -> None:
    _, docs = site
    index = (docs / "index.html").read_text()
    row = index[index.index(f"<tr><td>{DS}</td>") :]
    row = row[: row.index("</tr>")]
    assert f"<td>{DS}</td><td>{RED}</td>" in row
    assert f'href="runs/dt={DS}.html"' in row and f'href="/rocketmq-retry/ops/runs/{DS}"' in row
    for table in TABLES:
        assert f">{table}</a>" in row
    # each table's own status: lifecycles failed (critical), transitions only warned, the others passed
    assert f">lifecycles</a> {RED}" in row and f">transitions</a> {AMBER}" in row and f">events</a> {GREEN}" in row
    assert (docs / f"runs/dt={DS}.html").is_file()
    assert f'href="/rocketmq-retry/ops/runs/{DS}"' in (docs / f"runs/dt={DS}.html").read_text()


@pytest.mark.spark
def test_a_failing_expectation_says_so_in_words_with_its_severity_and_example_rows(
    site: tuple[Any, pathlib.Path],
) -> None:
    summary, _ = site
    page = pathlib.Path(summary.validation_pages["lifecycles"]).read_text()
    assert page.count(FAILED) == 1 and page.count(SUCCESS) >= 8
    row = _expectation(page, FAILED)
    assert row.startswith(FAILED + ' rr-critical">critical</span>')
    assert "2 unexpected row(s)" in row
    # msg_id linked to the message page, consumer group and the offending value beside it
    assert '<a class="rr-msg" href="/rocketmq-retry/ops/messages/M1?group=GID_orders">M1</a>' in row
    assert "<td>GID_orders</td><td>LOST</td>" in row
    # a msg_id that is markup: percent-encoded in the link, text on the page, never an element
    hostile = html.escape(HOSTILE, quote=True)
    link = "/rocketmq-retry/ops/messages/%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E?group=GID_a%26b"
    assert f'href="{link}">{hostile}</a></td><td>GID_a&amp;b</td>' in row
    assert HOSTILE not in page and "&amp;lt;" not in page
    assert f'href="../../../../runs/dt={DS}.html"' in page and f'href="/rocketmq-retry/ops/runs/{DS}"' in page


@pytest.mark.spark
def test_a_passing_expectation_is_stored_from_the_basic_pass_a_failing_one_from_the_summary_pass(
    site: tuple[Any, pathlib.Path],
) -> None:
    """run._run_checkpoint: SUMMARY's example values are fetched only for a failing expectation. The stored result of
    a passing column expectation is the BASIC one (no example counts at all), in a passing table and in a failing
    one alike; a failing expectation's is the SUMMARY one, with the rows its page lists (the test above)."""
    import json

    summary, site_dir = site
    stored = site_dir.parent.parent / "validations"

    def column_results(table: str, success: bool) -> list[dict[str, Any]]:
        (path,) = (stored / f"rocketmq_retry_{table}").rglob("*.json")
        results = json.loads(path.read_text())["results"]
        return [r["result"] for r in results if r["success"] is success and "unexpected_count" in r["result"]]

    assert {r.table for r in summary.results if not r.success} == {"lifecycles", "transitions"}
    for table in ("events", "dead_letters", "lifecycles"):  # unattributed has no column map expectation
        passing = column_results(table, True)
        assert passing and not any("partial_unexpected_counts" in r for r in passing), table
    failing = column_results("lifecycles", False)
    assert failing and all(r["partial_unexpected_counts"] and r["partial_unexpected_index_list"] for r in failing)


@pytest.mark.spark
def test_a_failing_row_query_says_its_warning_severity_and_lists_its_rows(site: tuple[Any, pathlib.Path]) -> None:
    summary, _ = site
    page = pathlib.Path(summary.validation_pages["transitions"]).read_text()
    row = _expectation(page, FAILED + ' rr-warning">warning</span>')
    # GX returns a row query's rows only under result_format COMPLETE, which its failing re-run asks for
    assert '<p class="rr-caption">1 unexpected row(s)</p>' in row
    # msg_id and group first, then the query's columns as stored (by name): delay_level, hop, physical_topic, ...
    assert (
        '<td><a class="rr-msg" href="/rocketmq-retry/ops/messages/M3?group=GID_orders">M3</a></td><td>GID_orders</td>'
        "<td></td><td>2</td><td>%DLQ%GID_orders</td><td>2</td>"
    ) in row


@pytest.mark.spark
def test_a_day_with_only_warnings_passed_with_warnings_everywhere(site: tuple[Any, pathlib.Path], warned: Any) -> None:
    """One vocabulary (validation/status.py): the index, the run page, the table's validation page, the validate
    task's summary and the run report all say "passed with warnings" of a day whose only failure is a warning, and
    "failed" of a day with a critical one."""
    from rocketmq_retry.airflow.tasks import render_report

    _, docs = site
    index = (docs / "index.html").read_text()
    row = index[index.index(f"<tr><td>{DS_WARNED}</td>") :]
    row = row[: row.index("</tr>")]
    assert f"<td>{DS_WARNED}</td><td>{AMBER}</td>" in row
    assert f">transitions</a> {AMBER}" in row and f">lifecycles</a> {GREEN}" in row
    assert index.index(f"<td>{DS_WARNED}</td>") < index.index(f"<td>{DS}</td>")  # newest first

    run_page = (docs / f"runs/dt={DS_WARNED}.html").read_text()
    assert f"Validation of dt={DS_WARNED} {AMBER}</h1>" in run_page
    transitions = run_page[run_page.index('">transitions</a>') :]
    transitions = transitions[: transitions.index("</tr>")]
    assert f"<td>{AMBER}</td>" in transitions
    assert "<code>transitions.drift_within_tolerance</code> (drift_ms)" in transitions
    assert '<span class="rr-severity rr-warning">warning</span> <span class="rr-caption">1 unexpected</span>' in (
        transitions
    )
    page = pathlib.Path(warned.validation_pages["transitions"]).read_text()
    assert f"Status: {AMBER}" in page and "Succeeded" not in page and "</strong> Failed" not in page

    assert warned.status == "passed with warnings" and warned.success
    assert warned.render().splitlines()[0].startswith(f"validation dt={DS_WARNED}: passed with warnings (")
    assert warned.render().splitlines()[-1] == f"  Data Docs: /rocketmq-retry/data-docs/runs/dt={DS_WARNED}.html"
    absolute = f"http://airflow.example:8080/rocketmq-retry/data-docs/runs/dt={DS_WARNED}.html"
    assert warned.render(absolute).splitlines()[-1] == f"  Data Docs: {absolute}"
    assert f"  page file: {docs / 'runs' / f'dt={DS_WARNED}.html'}" in warned.render()
    summary, _ = site
    assert summary.status == "failed" and summary.render().splitlines()[0].startswith(f"validation dt={DS}: failed (")
    assert f"Validation of dt={DS} {RED}</h1>" in (docs / f"runs/dt={DS}.html").read_text()

    report = {
        "ds": DS_WARNED, "lifecycles": 0, "lifecycles_by_final_state": {}, "dead_letters": 0,
        "dead_letters_by_group": {}, "dead_letters_held_for_review": 0, "dead_letters_by_attribution": {},
        "unattributed_lines": 0, "unattributed": [], "anomalies": {},
        "validation": {"success": True, "evaluated": 85, "critical_failures": [],
                       "warning_failures": ["transitions.drift_within_tolerance"], "data_docs": "x"},
    }  # fmt: skip
    assert "  validation: passed with warnings (85 expectations;" in render_report(report)
    report["validation"]["warning_failures"] = []
    assert "  validation: passed (85 expectations;" in render_report(report)
    report["validation"].update(success=False, critical_failures=["lifecycles.final_state_allowed"])
    assert "  validation: failed (85 expectations;" in render_report(report)


@pytest.mark.spark
def test_the_run_page_is_styled_like_the_site_and_lists_each_table(site: tuple[Any, pathlib.Path]) -> None:
    """The run page (what the Data Docs button opens) carries the site's stylesheet inline and its navigation bar,
    one row per table with its rows, status and failed checks, and links that stay inside the site."""
    summary, docs = site
    page = (docs / f"runs/dt={DS}.html").read_text()
    stylesheet = (ROOT / "src/rocketmq_retry/validation/docs_templates/rocketmq_retry_docs.css").read_text()
    assert f"<style>{stylesheet}</style>" in page and "<link" not in page and "<script" not in page
    assert '<nav class="rr-navbar"><a class="rr-home" href="../index.html">RocketMQ retry Data Docs</a>' in page
    body = page[page.index("<tbody>") :]
    assert body.count("<tr>") == len(TABLES)
    lifecycles = body[body.index('">lifecycles</a>') :]
    lifecycles = lifecycles[: lifecycles.index("</tr>")]
    assert f'<td class="rr-num">{summary.rows["lifecycles"]}</td><td>{RED}</td>' in lifecycles
    assert "<code>lifecycles.final_state_allowed</code> (final_state)" in lifecycles
    assert '<span class="rr-severity rr-critical">critical</span> <span class="rr-caption">2 unexpected</span>' in (
        lifecycles
    )
    events = body[body.index('">events</a>') :]
    assert events[: events.index("</tr>")].endswith(f'<td>{GREEN}</td><td><span class="rr-caption">all expectations '
                                                    "met</span></td>")  # fmt: skip


@pytest.mark.spark
@pytest.mark.browser
def test_the_site_in_a_browser_with_the_network_off(
    site: tuple[Any, pathlib.Path], tmp_path: pathlib.Path, shots: pathlib.Path
) -> None:
    """Index and a validation page, served by the plugin, rendered by Chromium with every lookup but 127.0.0.1's
    failing: the list of runs is there, statuses and severities in words, the example rows with their links, and
    no request went anywhere but the plugin."""
    from test_docs_browser import _dom, requested_urls, serve
    from test_pages_browser import _screenshot

    summary, docs = site
    page = pathlib.Path(summary.validation_pages["lifecycles"]).relative_to(docs).as_posix()
    with serve(docs) as url:
        index = _dom(f"{url}/data-docs/index.html", tmp_path / "p1", net_log=tmp_path / "index.json")
        lifecycles = _dom(f"{url}/data-docs/{page}", tmp_path / "p2", net_log=tmp_path / "page.json")
        # for review beside the operator's pages ($PAGES_SCREENSHOTS): what the index and a failing suite look like
        _screenshot(f"{url}/data-docs/index.html", tmp_path / "s1", shots / "data-docs-index.png")
        _screenshot(f"{url}/data-docs/{page}", tmp_path / "s2", shots / "data-docs-lifecycles.png")
    for log in ("index.json", "page.json"):
        assert {u for u in requested_urls(tmp_path / log) if not u.startswith(url)} == set(), log
    assert f"<td>{DS}</td><td>{RED}</td>" in index and f'href="runs/dt={DS}.html"' in index
    assert ">lifecycles</a>" in index
    assert FAILED + ' rr-critical">critical</span>' in lifecycles
    assert '<a class="rr-msg" href="/rocketmq-retry/ops/messages/M1?group=GID_orders">M1</a>' in lifecycles
    assert "&lt;img src=x onerror=alert(1)&gt;</a>" in lifecycles and "<img src" not in lifecycles


@pytest.mark.spark
@pytest.mark.browser
def test_the_index_and_run_pages_fit_a_1280x800_screen(
    site: tuple[Any, pathlib.Path], warned: Any, tmp_path: pathlib.Path, shots: pathlib.Path
) -> None:
    """At 1280×800 (the operator's laptop, the pages tests' viewport) the index shows both days with their status
    and a run page shows every table's row without scrolling sideways or down; screenshots for review."""
    from pages_cdp import HEIGHT, WIDTH, Browser
    from test_docs_browser import serve

    _, docs = site
    browser = Browser(tmp_path / "profile")
    try:
        page = browser.page()
        with serve(docs) as url:
            measured = {}
            for name, path in (
                ("data-docs-index.png", "index.html"),
                ("data-docs-run-failed.png", f"runs/dt={DS}.html"),
                ("data-docs-run-warned.png", f"runs/dt={DS_WARNED}.html"),
            ):
                page.open(f"{url}/data-docs/{path}")
                measured[path] = page.eval(
                    "({width: document.documentElement.scrollWidth, "
                    "bottom: document.querySelector('table').getBoundingClientRect().bottom, "
                    "statuses: [...document.querySelectorAll('.rr-status')].map(e => e.textContent + ':' + "
                    "getComputedStyle(e).backgroundColor)})"
                )
                page.screenshot(shots / name)
            page.close()
    finally:
        browser.close()
    for path, m in measured.items():
        assert m["width"] <= WIDTH, (path, m["width"])
        assert m["bottom"] <= HEIGHT, (path, m["bottom"])
    # the words in their colours: green, amber, red (docs_templates/rocketmq_retry_docs.css)
    index = set(measured["index.html"]["statuses"])
    assert {"passed:rgb(209, 231, 221)", "passed with warnings:rgb(255, 243, 205)", "failed:rgb(248, 215, 218)"} <= (
        index
    )
    assert measured[f"runs/dt={DS_WARNED}.html"]["statuses"][0] == "passed with warnings:rgb(255, 243, 205)"
