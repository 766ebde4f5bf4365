"""The Data Docs as a browser sees them through the plugin: in Debian's headless Chromium, a page that carries
markup from the data (as GX 1.x would write an unescaped sample value) runs none of it, and cannot reach Airflow's
origin. The escaping that keeps such markup out of the pages is tested in test_validation_suites.py."""

from __future__ import annotations

import os
import pathlib
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest

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


@pytest.fixture
def docs_server(tmp_path: pathlib.Path) -> Iterator[str]:
    import uvicorn

    from rocketmq_retry.airflow.plugin import create_app

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.html").write_text(PAGE)
    (docs / "own.js").write_text(OWN_JS)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(docs, authenticate=False), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the docs app did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def _dom(url: str, profile: pathlib.Path) -> str:
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: make setup installs Debian's chromium for the browser tests")
        pytest.skip("Debian's chromium is not installed (make setup installs it when run as root)")
    args = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", "--virtual-time-budget=3000", "--dump-dom", url,
    ]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


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
