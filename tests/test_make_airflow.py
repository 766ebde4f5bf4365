"""``make airflow`` in CI's conditions: ``scripts/airflow-local.sh start`` (what the Makefile's ``airflow`` target
runs after setup) over a home outside the checkout, a fresh PostgreSQL database of its own (dropped afterwards) and
a free port, with none of the test process's Airflow or Spark settings: only what a shell that ran ``make`` has.

Then the UI it brings must answer: Airflow's login page (its HTML, and the form the page draws in headless
Chromium, through which the test logs in), the DAG list through Airflow's REST API with a token from
``POST /auth/token`` and the password the script points to (the three DAGs), the operator's landing page and the
example day's run overview (its lifecycles, the same counts as tests/test_pages_example_day.py). Screenshots of the
Assets view (list and one table's graph) go to ``$PAGES_SCREENSHOTS`` when set. A second ``start`` reuses what
runs (no new component, run or backfill); ``stop`` (``make airflow-stop``) ends every process the deployment
started: the recorded components, their descendants, and anything else whose environment names its home.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

import test_backfill_scheduler as backfill
from conftest import ROOT
from pages_cdp import Browser, Page
from test_backfill_scheduler import _free_port, _tails, _wait

metadata_db = backfill.metadata_db  # a fresh PostgreSQL database, dropped afterwards (also after a failure)

pytestmark = [pytest.mark.slow, pytest.mark.airflow, pytest.mark.spark, pytest.mark.browser]

SCRIPT = ROOT / "scripts" / "airflow-local.sh"
DS = "2026-11-20"  # the committed example day the script runs through the daily DAG
RUN_ID = f"manual__example_{DS}"
DAGS = {"rocketmq_retry_daily", "rocketmq_retry_redrive", "rocketmq_retry_compensate"}
# The example day's overview. The script simulates 2026-11-18..19 into the landing before the example day runs, and
# that run's reconstruction reads the look-back dates' events: 93 lifecycles, among them a 2026-11-19
# GID_order_fulfilment message whose story ends UNKNOWN (SILENT_LOSS), where the example day alone has 91
# (tests/test_pages_example_day.py). The simulated days are seeded, so these are exact.
EXAMPLE_COUNTS = {
    "lifecycles": "93",
    "CONSUMED": "73",
    "DEAD_LETTERED": "12",
    "IN_RETRY": "1",
    "DROPPED": "6",
    "UNKNOWN": "1",
    "dead-letters": "12",
}
# The triggered run's Spark steps on 2 loaded cores take minutes (tests/test_scheduler_no_wait.py budgets the same).
# Measured: the whole test 5.5 min (start 4.6 min, second start 11 s, stop 30 s) on 2 cores at load average 5-7;
# start alone took 5-6 min at load average 12-14.
RUN_SECONDS = 1200


def _script_env(home: pathlib.Path, db: str) -> dict[str, str]:
    """A shell after ``make``: the test process's Airflow, Spark-submit and product settings are not inherited
    (the script's environment file sets its own), the deployment is isolated by the script's AIRFLOW_LOCAL_*."""
    from sqlalchemy.engine import make_url

    pg = make_url(backfill.PG_BASE_URL)
    dropped = ("AIRFLOW", "PYSPARK_SUBMIT_ARGS", "ROCKETMQ_RETRY_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    return {
        **env,
        "AIRFLOW_LOCAL_HOME": str(home),
        "AIRFLOW_LOCAL_DB": db,
        "AIRFLOW_LOCAL_PORT": str(_free_port()),
        "AIRFLOW_LOCAL_PG_PORT": str(pg.port or 5432),
        "AIRFLOW_LOCAL_PG_USER": pg.username or "postgres",
        "AIRFLOW_LOCAL_WAIT_SECONDS": str(RUN_SECONDS),
    }


def _script(local: dict[str, Any], command: str, timeout: float) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", str(SCRIPT), command],
        env=local["env"],
        cwd=local["work"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    print(f"--- airflow-local.sh {command} (exit {done.returncode})\n{done.stdout}{done.stderr}", flush=True)
    return done


def _started_at(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat): with the pid, it names
    one process, not a later one that reused the number. None when it is gone, or has ended and waits only for
    init to reap it (a zombie: the components' parent, the script, has exited)."""
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else fields[19]


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in pathlib.Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def _deployment_processes(home: pathlib.Path, pids: list[int]) -> dict[int, str]:
    """Every live process of the deployment: the recorded components, their descendants, and any process whose
    environment names this AIRFLOW_HOME (a task or a Spark JVM that left the components' tree); pid -> start time."""
    found: set[int] = set()
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid not in found and _started_at(pid) is not None:
            found.add(pid)
            todo += _children(pid)
    marker = f"AIRFLOW_HOME={home}".encode()
    for proc in pathlib.Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker in (proc / "environ").read_bytes().split(b"\0"):
                    found.add(int(proc.name))
            except OSError:
                continue
    return {pid: start for pid in found if (start := _started_at(pid)) is not None}


@pytest.fixture(scope="module")
def local(metadata_db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``airflow-local.sh start`` once for the module; ``stop`` at the end whatever happened (the test stops it
    itself to check it; a second stop answers "not started")."""
    from sqlalchemy.engine import make_url

    base = tmp_path_factory.mktemp("make-airflow")
    home, work = base / "home", base / "work"  # work: the components' cwd (Spark's stray files land there)
    work.mkdir()
    local: dict[str, Any] = {"home": home, "work": work, "env": _script_env(home, str(make_url(metadata_db).database))}
    local["url"] = f"http://127.0.0.1:{local['env']['AIRFLOW_LOCAL_PORT']}"
    try:
        t0 = time.monotonic()
        local["start"] = _script(local, "start", timeout=RUN_SECONDS + 900)
        local["start_seconds"] = time.monotonic() - t0
        print(f"airflow-local.sh start: {local['start_seconds']:.0f} s, load average {os.getloadavg()}", flush=True)
        yield local
    finally:
        _script(local, "stop", timeout=180)


def _login_token(local: dict[str, Any]) -> str:
    import httpx

    passwords = json.loads((local["home"] / "simple_auth_manager_passwords.json.generated").read_text())
    answer = httpx.post(
        f"{local['url']}/auth/token", json={"username": "admin", "password": passwords["admin"]}, timeout=60
    )
    assert answer.status_code == 201, answer.text
    token: str = answer.json()["access_token"]
    return token


def _until(page: Page, expression: str, what: str, timeout: float = 90) -> Any:
    """Poll ``expression`` in the page until it is truthy: the Airflow UI draws itself after the load event."""
    return _wait(what, lambda: page.eval(expression), timeout=timeout, interval=0.5)


def _shot(page: Page, name: str) -> None:
    folder = os.environ.get("PAGES_SCREENSHOTS")
    if folder:
        pathlib.Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(pathlib.Path(folder) / name)


def test_make_airflow_brings_a_ui_that_answers_and_stops_everything(
    local: dict[str, Any], tmp_path: pathlib.Path
) -> None:
    import httpx

    started, home, url = local["start"], local["home"], local["url"]
    logs = (home / "services").glob("*.log")
    assert started.returncode == 0, f"{started.stdout}\n{started.stderr}\n{_tails(logs)}"
    out = started.stdout
    assert f"triggered {RUN_ID}" in out and f"{RUN_ID}: success" in out, out
    assert "backfill created: 2026-11-18 .. 2026-11-19" in out, out
    assert f"UI: {url}   user: admin   password: in {home}/simple_auth_manager_passwords.json.generated" in out, out
    assert re.search(r"\[airflow\] ready in \d+ s", out), out

    # Airflow's login page: the simple auth manager's page is a script that draws the form
    login = httpx.get(f"{url}/auth/login", timeout=60)
    assert login.status_code == 200 and login.headers["content-type"].startswith("text/html"), login.text[:500]
    bundle = re.search(r'<script type="module" crossorigin src="\./(auth/static/assets/[^"]+\.js)"', login.text)
    assert bundle is not None, login.text
    assert httpx.get(f"{url}/{bundle.group(1)}", timeout=60).status_code == 200

    # the DAG list through Airflow's REST API, with a token from the generated admin password
    token = _login_token(local)
    bearer = {"Authorization": f"Bearer {token}"}
    dags = httpx.get(f"{url}/api/v2/dags", headers=bearer, timeout=60)
    assert dags.status_code == 200, dags.text
    assert {d["dag_id"] for d in dags.json()["dags"]} == DAGS
    assert httpx.get(f"{url}/api/v2/dags", timeout=60).status_code == 401  # and nothing without it

    # the operator's pages: the landing list of dates, then the example day's overview
    html = {**bearer, "accept": "text/html"}
    landing = httpx.get(f"{url}/rocketmq-retry/ops/", headers=html, timeout=120)
    assert landing.status_code == 200 and f"/runs/{DS}" in landing.text, landing.text[:2000]
    overview = httpx.get(f"{url}/rocketmq-retry/ops/runs/{DS}", headers=html, timeout=120)
    assert overview.status_code == 200, overview.text[:2000]
    counts = dict(re.findall(r'id="n-([A-Za-z_-]+)">(\d+)<', overview.text))
    assert counts == EXAMPLE_COUNTS
    # ...the same the script printed from the run's report
    printed = dict(re.findall(r"^\[airflow\]\s+(lifecycles|[A-Z_]+):?\s+(\d+)$", out, flags=re.M))
    assert {k: printed[k] for k in ("lifecycles", "CONSUMED", "DEAD_LETTERED", "IN_RETRY", "DROPPED")} == {
        k: counts[k] for k in ("lifecycles", "CONSUMED", "DEAD_LETTERED", "IN_RETRY", "DROPPED")
    }, printed
    assert httpx.get(f"{url}/rocketmq-retry/ops/", timeout=60).status_code in (401, 403)

    # In a browser: the login form Airflow draws, filled and sent as a user does; then the Assets view
    assets = httpx.get(f"{url}/api/v2/assets", headers=bearer, params={"limit": 100}, timeout=60).json()["assets"]
    by_name = {a["name"]: a for a in assets}
    assert {"rocketmq_retry.events", "rocketmq_retry.lifecycles", "rocketmq_retry.dead_letters"} <= set(by_name)
    browser = Browser(tmp_path / "chromium")
    try:
        page = browser.page()
        page.open(f"{url}/auth/login?next={url}/assets")
        _until(page, "!!document.querySelector('input[name=password]')", "the login form")
        _shot(page, "login.png")
        passwords = json.loads((home / "simple_auth_manager_passwords.json.generated").read_text())
        for field, value in (("username", "admin"), ("password", passwords["admin"])):
            page.eval(f"document.querySelector('input[name={field}]').focus()")
            page.call("Input.insertText", text=value)
        page.eval("document.querySelector('button[type=submit]').click()")
        _until(page, "location.pathname.startsWith('/assets')", "the redirect to /assets after logging in")
        listed = "document.body.innerText.includes('rocketmq_retry.dead_letters')"
        _until(page, listed, "the Assets view to list the tables")
        _shot(page, "assets.png")
        # one table's graph: its "Scheduling" graph is empty (no DAG is scheduled on it by default), its "Task
        # Dependencies" graph shows the daily DAG's task that commits it
        page.open(f"{url}/assets/{by_name['rocketmq_retry.dead_letters']['id']}")
        toggle = "Array.from(document.querySelectorAll('button')).find(b => b.innerText.trim() == 'Task Dependencies')"
        _until(page, f"!!{toggle}", "the asset page's graph toggle")
        page.eval(f"{toggle}.click()")
        nodes = "Array.from(document.querySelectorAll('.react-flow__node')).map(n => n.innerText.split('\\n'))"
        drawn = _until(page, f"(n => n.length >= 2 && n)({nodes})", "the asset's task graph")
        assert sorted(" ".join(n.split()) for n in (" ".join(node) for node in drawn)) == [
            "reconstruct rocketmq_retry_daily",
            "rocketmq_retry.dead_letters",
        ], drawn
        time.sleep(2)  # the graph's layout settles after its nodes appear
        _shot(page, "asset-dead-letters-graph.png")
        page.close()
    finally:
        browser.close()

    # a second start reuses everything: same components, no second trigger or backfill
    pids_file = home / "services.pids"
    pids = [int(p) for p in pids_file.read_text().split()]
    t0 = time.monotonic()
    again = _script(local, "start", timeout=600)
    print(f"second start: {time.monotonic() - t0:.0f} s")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "components already running" in again.stdout and "reusing them" in again.stdout, again.stdout
    assert "triggered" not in again.stdout and "backfill created" not in again.stdout, again.stdout
    assert [int(p) for p in pids_file.read_text().split()] == pids

    # stop (make airflow-stop): every process of the deployment is gone
    before = _deployment_processes(home, pids)
    assert set(pids) <= set(before), (pids, before)
    print(f"{len(before)} processes of the deployment before stop: {sorted(before)}")
    stopped = _script(local, "stop", timeout=180)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stdout + stopped.stderr
    # a process the stop killed may still be exiting when the script returns (its memory already gone: an empty
    # cmdline, not yet a zombie); it is given a few seconds to finish, then every one must be gone
    deadline = time.monotonic() + 15
    left = {pid: start for pid, start in before.items() if _started_at(pid) == start}
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = {pid: start for pid, start in left.items() if _started_at(pid) == start}
    assert left == {}, [(pid, pathlib.Path(f"/proc/{pid}/cmdline").read_bytes()[:120]) for pid in left]
    assert _deployment_processes(home, []) == {}
    assert not pids_file.exists()
    assert not _port_open(url), f"something still listens on {url}"


def _port_open(url: str) -> bool:
    import socket

    port = int(url.rsplit(":", 1)[1])
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
