"""The operator's pages in Debian's headless Chromium, served by uvicorn on 127.0.0.1 from the literal warehouse
of test_pages_support.py: the overview's counts, the dead-letter filter narrowing the table, the message page's
SVG timeline, a hostile key shown as text with no script run, and not one request leaving 127.0.0.1 (Chromium's
own network log). Screenshots of each page are written for review (``$PAGES_SCREENSHOTS``, else the test's
temporary folder) and checked to be real PNG renders. Authentication is proven in test_pages_auth.py."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
from collections.abc import Iterator

import pytest
from fastapi.responses import HTMLResponse

import test_pages_support as lit
from test_docs_browser import CHROMIUM, _body_tag, serve_app

pytestmark = [pytest.mark.browser]
DAY = lit.DAY
PAGE_ORIGIN = "http://127.0.0.1:"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:

    from rocketmq_retry.airflow.pages import app as pages

    warehouse, config = lit.build(tmp_path_factory.mktemp("browser"))
    app = pages.create_pages_app(lambda: pages.Source(warehouse, config), authenticate=False)
    # The control for the network check: a page of this test only, naming an image on another host.
    app.add_api_route("/control", lambda: HTMLResponse('<p>x</p><img src="http://192.0.2.7/pixel.png">'))
    with serve_app(app, "the pages app") as url:
        yield url


def _chromium(url: str, profile: pathlib.Path, *extra: str) -> tuple[str, list[str]]:
    """The page's DOM after load, and every URL Chromium's network log shows it requesting."""
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: make setup installs Debian's chromium for the browser tests")
        pytest.skip("Debian's chromium is not installed (make setup installs it when run as root)")
    netlog = profile / "netlog.json"
    args = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-default-apps", "--disable-domain-reliability", "--no-pings",
        f"--user-data-dir={profile}", f"--log-net-log={netlog}", "--virtual-time-budget=3000", *extra, url,
    ]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, _requested_urls(netlog)


def _requested_urls(netlog: pathlib.Path) -> list[str]:
    """URLs the page asked for: the navigation itself, and every request whose initiator is a page from
    127.0.0.1 (a stylesheet, image or script it names, wherever that points). The browser's own services
    (network time, component updates, autofill queries about a form) have no page as initiator and are left
    out rather than disabled one by one."""
    text = netlog.read_text(errors="replace").rstrip()
    try:
        log = json.loads(text)
    except ValueError:  # the log of a process that exited before closing its events list
        log = json.loads(text.rstrip(",") + "]}")
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for event in log.get("events", []):
        params = event.get("params") or {}
        if event.get("type") != start_job:
            continue
        if params.get("request_type") == "main frame" or str(params.get("initiator", "")).startswith(PAGE_ORIGIN):
            urls.append(str(params["url"]))
    return urls


def _dom(url: str, profile: pathlib.Path) -> tuple[str, list[str]]:
    return _chromium(url, profile, "--dump-dom")


def _screenshot(url: str, profile: pathlib.Path, png: pathlib.Path) -> None:
    """A PNG of the page as an operator sees it offline: every name lookup but 127.0.0.1's fails."""
    offline = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
    _chromium(url, profile, offline, f"--screenshot={png}", "--window-size=1280,1600", "--hide-scrollbars")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000, f"{png}: not a rendered page"


def _local_only(urls: list[str], base: str) -> None:
    foreign = [u for u in urls if not u.startswith(base + "/") and u != base]
    assert urls, "the network log recorded no request at all"
    assert foreign == [], foreign


def test_the_network_check_sees_a_foreign_request(server: str, tmp_path: pathlib.Path) -> None:
    _, urls = _dom(f"{server}/control", tmp_path / "p")
    assert "http://192.0.2.7/pixel.png" in urls
    with pytest.raises(AssertionError):
        _local_only(urls, server)


def test_overview_in_the_browser(server: str, tmp_path: pathlib.Path, shots: pathlib.Path) -> None:
    url = f"{server}/runs/{DAY}"
    dom, urls = _dom(url, tmp_path / "p")
    assert 'id="n-lifecycles">6<' in dom and 'id="n-DEAD_LETTERED">5<' in dom
    assert 'class="chart bars"' in dom
    _local_only(urls, server)
    assert f"{server}/static/ops.css" in urls  # the stylesheet came from the plugin itself
    _screenshot(url, tmp_path / "s", shots / "overview.png")


def test_dead_letter_filter_narrows_the_table(server: str, tmp_path: pathlib.Path, shots: pathlib.Path) -> None:
    every, _ = _dom(f"{server}/dead-letters", tmp_path / "a")
    narrowed, urls = _dom(f"{server}/dead-letters?group=order-consumer&state=GAVE_UP&tag=TagA", tmp_path / "b")
    assert every.count("<tr data-msg-id=") == 5
    assert narrowed.count("<tr data-msg-id=") == 2 and 'id="n-rows">2<' in narrowed
    _local_only(urls, server)
    _screenshot(f"{server}/dead-letters", tmp_path / "s", shots / "dead-letters.png")


def test_message_page_draws_the_timeline(server: str, tmp_path: pathlib.Path, shots: pathlib.Path) -> None:
    url = f"{server}/messages/{lit.PLAIN}4?from={DAY}&to={DAY}"
    dom, urls = _dom(url, tmp_path / "p")
    start = dom.index('<svg class="chart timeline"')
    svg = dom[start : dom.index("</svg>", start)]
    assert svg.count('class="observed"') == 4 and "drift +34.0 s" in svg
    assert "app-1/logs/rocketmq_client.log:103" in dom
    _local_only(urls, server)
    _screenshot(url, tmp_path / "s", shots / "message.png")


def test_hostile_values_render_as_text_and_run_nothing(server: str, tmp_path: pathlib.Path) -> None:
    shown = {
        "/dead-letters": "&lt;img src=x onerror=",  # the key
        f"/runs/{DAY}": "&lt;script&gt;document.title=",  # the group name
        f"/messages/{lit.PLAIN}4": "&lt;img src=x onerror=",  # the thread and detail of its evidence lines
    }
    for path, text in shown.items():
        dom, urls = _dom(server + path, tmp_path / path.strip("/").replace("/", "_"))
        body = _body_tag(dom)
        assert "data-pwned" not in body, path  # the <img onerror> in a key did not run
        assert "<title>pwned</title>" not in dom, path  # the <script> in a group name did not run
        assert text in dom, path  # ... and each shows as the text it is
        assert [u for u in urls if u.rsplit("/", 1)[-1] == "x"] == [], path  # no <img src=x> was fetched
        _local_only(urls, server)


def test_groups_page(server: str, tmp_path: pathlib.Path, shots: pathlib.Path) -> None:
    url = f"{server}/groups?to={DAY}&days=3"
    dom, urls = _dom(url, tmp_path / "p")
    assert dom.count('class="chart sparkline"') == 3
    _local_only(urls, server)
    _screenshot(url, tmp_path / "s", shots / "groups.png")
