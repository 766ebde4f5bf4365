"""The Data Docs as a browser sees them through the plugin: in Debian's headless Chromium, a page that carries
markup from the data (as GX 1.x would write an unescaped sample value) runs none of it, and cannot reach Airflow's
origin. The escaping that keeps such markup out of the pages is tested in test_validation_suites.py."""

from __future__ import annotations

import contextlib
import html
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rocketmq_retry.validation.docs_safety import SECURITY_HEADERS

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>docs</title>
<script>document.title = "inline-ran";</script>
<script src="https://cdn.jsdelivr.net/npm/vega@5"></script>
</head><body><table><tr><td><div class="show-scrollbars">
<img src=x onerror="document.body.setAttribute('data-pwned', 'img')">
<svg onload="document.body.setAttribute('data-pwned', 'svg')"></svg>
</div></td></tr></table>
<script src="own.js"></script>
</body></html>"""

# In a sandbox without allow-same-origin the document has an opaque origin: reading document.cookie throws.
OWN_JS = """let jar;
try { jar = document.cookie === "" ? "empty" : "cookie"; } catch (e) { jar = "opaque-origin"; }
document.body.setAttribute("data-own-script", jar);
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve_app(app: Any, what: str = "the app") -> Iterator[str]:
    """``app`` (ASGI) served by uvicorn on a free 127.0.0.1 port for the length of the block: its base URL."""
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, f"{what} did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@contextlib.contextmanager
def serve(docs: pathlib.Path) -> Iterator[str]:
    """The plugin's app over ``docs`` on 127.0.0.1 (no authentication: the browser has no Airflow session)."""
    from rocketmq_retry.airflow.plugin import create_app

    with serve_app(create_app(docs, authenticate=False), "the docs app") as url:
        yield url


@pytest.fixture
def docs_server(tmp_path: pathlib.Path) -> Iterator[str]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.html").write_text(PAGE)
    (docs / "own.js").write_text(OWN_JS)
    with serve(docs) as url:
        yield url


def _dom(url: str, profile: pathlib.Path, net_log: pathlib.Path | None = None) -> str:
    """The DOM after the page ran, in headless Chromium. With ``net_log``, every name lookup fails except
    127.0.0.1's (the network is off) and Chromium's net log of every request is written there."""
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: make setup installs Debian's chromium for the browser tests")
        pytest.skip("Debian's chromium is not installed (make setup installs it when run as root)")
    offline = (
        ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", f"--log-net-log={net_log}"] if net_log else []
    )
    args = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", "--virtual-time-budget=3000", *offline, "--dump-dom", url,
    ]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


# Chromium's own background calls (component updates, its clock, account checks) go to these hosts whatever the page
# is; no page of ours names them (test_validation_docs.py checks the files for any foreign URL).
_BROWSER_SERVICES = re.compile(r"^https?://([a-z0-9-]+\.)*(google\.com|googleapis\.com|gvt1\.com)(/|$)")


def requested_urls(net_log: pathlib.Path) -> set[str]:
    """Every URL Chromium asked for on behalf of a page, from its net log (a JSON document of events, each with
    its params)."""
    events = json.loads(net_log.read_text()).get("events", [])
    urls = {str(e["params"]["url"]) for e in events if isinstance(e.get("params"), dict) and "url" in e["params"]}
    return {u for u in urls if not _BROWSER_SERVICES.match(u)}


def _body_tag(dom: str) -> str:
    """The opening ``<body …>`` tag: where the page's handlers would leave their mark."""
    start = dom.index("<body")
    return dom[start : dom.index(">", start) + 1]


@pytest.mark.browser
def test_markup_from_the_data_runs_nothing_in_a_served_docs_page(docs_server: str, tmp_path: pathlib.Path) -> None:
    dom = _dom(f"{docs_server}/data-docs/page.html", tmp_path / "profile")
    body = _body_tag(dom)
    assert "<table>" in dom  # the page itself rendered
    assert "data-pwned" not in body  # no event handler ran
    assert "<title>docs</title>" in dom  # no inline script ran
    # Scripts the plugin serves still run, but in a sandbox with an opaque origin: no cookie of Airflow's.
    assert 'data-own-script="opaque-origin"' in body


@pytest.mark.browser
def test_the_same_page_without_the_policy_would_run_the_markup(tmp_path: pathlib.Path) -> None:
    """The control: opened from disk (no CSP header), the very page runs its handlers, so the test above can fail."""
    page = tmp_path / "page.html"
    page.write_text(PAGE)
    dom = _dom(page.as_uri(), tmp_path / "profile")
    assert "data-pwned" in _body_tag(dom) and "<title>inline-ran</title>" in dom


def test_the_browse_entry_before_any_run_says_what_to_run_and_where_the_docs_appear(tmp_path: pathlib.Path) -> None:
    """A fresh deployment has no index.html yet: the Browse entry answers with a page, not {"detail":"not found"}."""
    from fastapi.testclient import TestClient

    from rocketmq_retry.airflow.plugin import create_app

    docs = tmp_path / "a<b>docs"  # the configured folder is shown on the page: as text
    client = TestClient(create_app(docs, authenticate=False))
    first = client.get("/data-docs/index.html")
    assert first.status_code == 200 and first.headers["content-type"].startswith("text/html")
    assert first.headers["content-security-policy"] == SECURITY_HEADERS["Content-Security-Policy"]
    assert "No validation has run yet" in first.text
    assert "<code>make demo</code>" in first.text and "<code>rocketmq_retry_daily</code>" in first.text
    assert f"<code>{html.escape(str(docs.resolve()))}</code>" in first.text and "a<b>docs" not in first.text
    # A run whose validate task failed before writing its page: its Data Docs button still opens something useful.
    run = client.get("/data-docs/runs/dt=2026-11-20.html")
    assert run.status_code == 200 and "The date 2026-11-20 has no validation pages yet" in run.text
    assert 'href="/rocketmq-retry/ops/runs/2026-11-20"' in run.text
    assert client.get("/data-docs/runs/dt=2026-11-20.json").status_code == 404
    assert client.get("/data-docs/validations/x.html").status_code == 404
    # As registered (authenticated): no Airflow token, no page, not even this one.
    assert TestClient(create_app(docs)).get("/data-docs/index.html").status_code in (401, 403)


@pytest.mark.browser
def test_the_pre_first_run_page_in_a_browser_with_the_network_off(tmp_path: pathlib.Path) -> None:
    docs = tmp_path / "docs"
    with serve(docs) as url:
        dom = _dom(f"{url}/data-docs/index.html", tmp_path / "profile", net_log=tmp_path / "net.json")
    assert "<h1>RocketMQ retry Data Docs</h1>" in dom and "make demo" in dom and "rocketmq_retry_daily" in dom
    assert {u for u in requested_urls(tmp_path / "net.json") if not u.startswith(url)} == set()


def test_the_links_every_page_shares() -> None:
    from rocketmq_retry.urls import message_url, run_page, run_url

    assert run_url("2026-11-20") == "/rocketmq-retry/ops/runs/2026-11-20"
    assert run_page("2026-11-20") == "runs/dt=2026-11-20.html"
    assert message_url("M1") == "/rocketmq-retry/ops/messages/M1"
    assert message_url("a/b?<x>", "GID a&b") == "/rocketmq-retry/ops/messages/a%2Fb%3F%3Cx%3E?group=GID+a%26b"


class _TaskInstance:
    """What the worker hands DataDocsLink.get_link in Airflow 3: a task instance that pulls XComs."""

    task_id = "validate"

    def __init__(self, xcoms: dict[tuple[str, str], object]) -> None:
        self.xcoms = xcoms

    def xcom_pull(self, task_ids: str, key: str = "return_value") -> object:
        return self.xcoms.get((task_ids, key))


def test_the_data_docs_button_has_a_target_even_when_validate_failed_before_writing_its_page() -> None:
    """The UI hides an extra link whose stored value is empty; the link falls back to the run's date."""
    from rocketmq_retry.airflow.links import DataDocsLink
    from rocketmq_retry.urls import XCOM_DOCS_PATH

    link = DataDocsLink()
    resolved = {("resolve_run", "return_value"): {"ds": "2026-11-20", "warehouse": "/w"}}
    pushed = {**resolved, ("validate", XCOM_DOCS_PATH): "runs/dt=2026-11-20.html"}
    assert link.get_link(None, ti_key=_TaskInstance(pushed)) == "/rocketmq-retry/data-docs/runs/dt=2026-11-20.html"  # type: ignore[arg-type]
    assert link.get_link(None, ti_key=_TaskInstance(resolved)) == "/rocketmq-retry/data-docs/runs/dt=2026-11-20.html"  # type: ignore[arg-type]
    assert link.get_link(None, ti_key=_TaskInstance({})) == ""  # type: ignore[arg-type]
