"""Measure a page in Debian's headless Chromium through the DevTools protocol: open a URL in a 1280×800 viewport
and evaluate an expression in it (row heights, where a sticky header sits after scrolling, how wide the table
is). The pages themselves run no script (their CSP has no script-src); DevTools evaluation is the browser's,
not the page's, so it measures the page exactly as an operator's browser lays it out."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from test_docs_browser import CHROMIUM

WIDTH, HEIGHT = 1280, 800


class Page:
    def __init__(self, ws_url: str) -> None:
        from websockets.sync.client import connect

        self._stack = contextlib.ExitStack()
        self._ws = self._stack.enter_context(connect(ws_url, max_size=None, open_timeout=30))
        self._ids = itertools.count(1)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        call_id = next(self._ids)
        self._ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv(timeout=60))
            if message.get("id") == call_id:
                assert "error" not in message, message
                result: dict[str, Any] = message.get("result", {})
                return result

    def wait_for(self, event: str) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if json.loads(self._ws.recv(timeout=60)).get("method") == event:
                return
        raise AssertionError(f"no {event}")

    def open(self, url: str) -> None:
        self.call("Page.enable")
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def eval(self, expression: str) -> Any:
        answer = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in answer, answer
        return answer["result"].get("value")

    def screenshot(self, path: os.PathLike[str] | str) -> None:
        import base64

        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))

    def close(self) -> None:
        self._stack.close()


class Browser:
    """One headless Chromium with a DevTools port; ``page()`` is its first tab at 1280×800."""

    def __init__(self, profile: os.PathLike[str] | str) -> None:
        if not os.path.exists(CHROMIUM):
            if os.environ.get("CI"):
                pytest.fail("chromium is missing: make setup installs Debian's chromium for the browser tests")
            pytest.skip("Debian's chromium is not installed (make setup installs it when run as root)")
        args = [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={profile}", "--remote-debugging-port=0", f"--window-size={WIDTH},{HEIGHT}",
            "about:blank",
        ]  # fmt: skip
        self._proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        assert self._proc.stderr is not None
        port = None
        deadline = time.monotonic() + 60
        while port is None and time.monotonic() < deadline:
            line = self._proc.stderr.readline()
            found = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            port = found.group(1) if found else None
        assert port, "Chromium did not open its DevTools port"
        self._port = port

    def page(self) -> Page:
        with urllib.request.urlopen(f"http://127.0.0.1:{self._port}/json/list", timeout=30) as answer:
            targets = json.load(answer)
        tab = next(t for t in targets if t.get("type") == "page")
        page = Page(tab["webSocketDebuggerUrl"])
        page.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1, mobile=False)
        return page

    def close(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()


@contextlib.contextmanager
def open_tab(profile: os.PathLike[str] | str) -> Iterator[Page]:
    """A 1280×800 tab of a headless Chromium of its own, closed with its browser."""
    browser = Browser(profile)
    tab = browser.page()
    try:
        yield tab
    finally:
        tab.close()
        browser.close()


@contextlib.contextmanager
def serve_pages(warehouse: os.PathLike[str] | str, config: Any) -> Iterator[str]:
    """The operator's pages over ``warehouse`` on 127.0.0.1, without Airflow's authentication; their base URL."""
    from rocketmq_retry.airflow.pages import app as pages
    from test_docs_browser import serve_app

    app = pages.create_pages_app(lambda: pages.Source(warehouse, config), authenticate=False)
    with serve_app(app, "the pages app") as url:
        yield url
