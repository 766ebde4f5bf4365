"""The operator's pages inside the real api-server app (``airflow.api_fastapi.main``, plugins loaded from
plugins/, a real metadata database), with tokens minted by Airflow's own auth manager: no token is refused,
a viewer reads but cannot re-drive, a user re-drives through Airflow's API and the run is recorded under their
name with an audit log entry, and the CSRF guard refuses forged or foreign requests. The daily run's tab
finds the run's date."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient

import test_pages_support as lit

pytestmark = [pytest.mark.airflow]
OPS = "/rocketmq-retry/ops"
DAY = lit.DAY
GET_PAGES = [
    "/",
    f"/runs/{DAY}",
    "/dead-letters",
    "/dead-letters.csv",
    "/messages?q=ORD-1",
    f"/messages/{lit.PLAIN}0",
    "/groups",
    "/causes",
    "/static/ops.css",
    "/dag-runs/x",
]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with lit.airflow_api_app(*lit.build(tmp_path_factory.mktemp("auth"))) as app:
        yield TestClient(app)


def _token(name: str, role: str) -> str:
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    return get_auth_manager().generate_jwt(SimpleAuthManagerUser(username=name, role=role))


def _auth(name: str, role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {_token(name, role)}", "accept": "text/html"}


def test_no_token_no_page(api: TestClient) -> None:
    for url in [*GET_PAGES]:
        assert api.get(OPS + url).status_code == 401, url
    assert api.post(OPS + "/redrive", data={"selected": "x"}).status_code == 401
    forged = {"Authorization": "Bearer not-a-jwt"}
    assert api.get(OPS + "/dead-letters", headers=forged).status_code == 403


def test_signed_out_browser_goes_to_the_login_page_and_back(api: TestClient) -> None:
    """A shared link opened without a session: the browser is sent to Airflow's login route with the page as
    the return path (Airflow checks it and asks its auth manager for the login page); an API client still gets
    401 JSON (test_no_token_no_page)."""
    html = {"accept": "text/html,application/xhtml+xml"}
    answer = api.get(f"{OPS}/dead-letters?group=order-consumer&state=GAVE_UP", headers=html, follow_redirects=False)
    assert answer.status_code == 303
    back = "/rocketmq-retry/ops/dead-letters?group=order-consumer&state=GAVE_UP"
    assert answer.headers["location"] == "/api/v2/auth/login?" + urlencode({"next": back})
    login = api.get(answer.headers["location"], follow_redirects=False)
    assert login.status_code == 307 and login.headers["location"].endswith("?" + urlencode({"next": back}))
    assert "/auth/" in login.headers["location"]  # the auth manager's login page
    # a user without the permission gets the pages' error page, not a login loop
    forged = api.get(f"{OPS}/runs/{DAY}", headers={**html, "Authorization": "Bearer not-a-jwt"})
    assert forged.status_code == 403 and '<p class="error" id="error-detail">' in forged.text


def test_viewer_reads_but_cannot_redrive(api: TestClient) -> None:
    viewer = _auth("vera", "viewer")
    page = api.get(f"{OPS}/runs/{DAY}", headers=viewer)
    assert page.status_code == 200 and 'id="n-lifecycles">6<' in page.text
    # Inside Airflow the pages link the plugin's own Data Docs and their own prefix.
    assert 'href="/rocketmq-retry/data-docs/index.html"' in page.text
    assert f'href="{OPS}/dead-letters?from={DAY}&amp;to={DAY}"' in page.text
    letters = api.get(f"{OPS}/dead-letters", headers=viewer).text
    assert 'name="selected"' not in letters and 'id="redrive"' not in letters
    # The session cookie the UI sets works as well as a bearer token.
    api.cookies.set("_token", _token("vera", "viewer"))
    try:
        assert api.get(f"{OPS}/groups").status_code == 200
    finally:
        api.cookies.clear()
    refused = api.post(f"{OPS}/redrive", headers=viewer, data={"selected": "x"})
    assert refused.status_code == 403


def _form(api: TestClient, headers: dict[str, str]) -> tuple[str, list[str]]:
    html = api.get(f"{OPS}/dead-letters", headers=headers).text
    token = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert token is not None
    values = [
        v.replace("&#34;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&#39;", "'").replace("&amp;", "&")
        for v in re.findall(r'name="selected" value="([^"]+)"', html)
    ]
    return token.group(1), values


def test_redrive_is_guarded_against_csrf(api: TestClient) -> None:
    bob = _auth("bob", "user")
    # the session's metadata database also holds the runs other test modules made: count from here
    before = _redrive_runs()
    token, values = _form(api, bob)
    assert len(values) == 3  # only the GAVE_UP rows can be chosen; DONE rows never
    own = {**bob, "origin": "http://testserver"}
    assert api.post(f"{OPS}/redrive", headers=own, data={"selected": values}).status_code == 403
    other = guard_token_for("ana")
    assert api.post(f"{OPS}/redrive", headers=own, data={"csrf_token": other, "selected": values}).status_code == 403
    foreign = {**bob, "origin": "http://127.0.0.1:9999"}
    answer = api.post(f"{OPS}/redrive", headers=foreign, data={"csrf_token": token, "selected": values})
    assert answer.status_code == 403
    assert _redrive_runs() == before


def guard_token_for(user: str) -> str:
    from rocketmq_retry.airflow.pages import guard

    return guard.csrf_token(user)


def _redrive_runs() -> list[Any]:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        runs = session.scalars(select(DagRun).where(DagRun.dag_id == "rocketmq_retry_redrive")).all()
        return [(r.run_id, r.triggering_user_name, r.conf) for r in runs]


def test_user_redrives_through_airflows_api_audited(api: TestClient) -> None:
    from airflow.models.log import Log
    from airflow.utils.session import create_session
    from sqlalchemy import select

    bob = _auth("bob", "user")
    before = {run[0] for run in _redrive_runs()}  # other modules' dag.test() runs of the same DAG
    with create_session() as session:
        audited_before = len(session.scalars(select(Log).where(Log.event == "trigger_dag_run")).all())
    token, values = _form(api, bob)
    answer = api.post(
        f"{OPS}/redrive", headers={**bob, "origin": "http://testserver"}, data={"csrf_token": token, "selected": values}
    )
    assert answer.status_code == 200, answer.text
    runs = [run for run in _redrive_runs() if run[0] not in before]
    assert len(runs) == 1
    run_id, user, conf = runs[0]
    assert user == "bob"
    assert conf == {
        "msg_ids": [f"{lit.PLAIN}{i}" for i in range(3)],
        "consumer_group": "order-consumer",
        "date_from": DAY,
        "date_to": DAY,
    }
    assert f'href="/dags/rocketmq_retry_redrive/runs/{run_id.replace("+", "%2B").replace(":", "%3A")}"' in answer.text
    with create_session() as session:
        audit = session.scalars(select(Log).where(Log.event == "trigger_dag_run").order_by(Log.id)).all()
        assert [(entry.dag_id, entry.owner) for entry in audit[audited_before:]] == [("rocketmq_retry_redrive", "bob")]


def test_daily_run_tab_opens_the_runs_overview(api: TestClient) -> None:
    bob = _auth("bob", "user")
    created = api.post(
        "/api/v2/dags/rocketmq_retry_daily/dagRuns",
        headers=bob,
        # not midnight: another module's run of the daily DAG may hold {DAY}T00:00 (logical dates are unique)
        json={"logical_date": f"{DAY}T07:13:00+00:00", "dag_run_id": "manual__tab"},
    )
    assert created.status_code == 200, created.text
    tab = api.get(
        f"{OPS}/dag-runs/manual__tab", params={"dag_id": "rocketmq_retry_daily"}, headers=bob, follow_redirects=False
    )
    assert tab.status_code == 303 and tab.headers["location"] == f"{OPS}/runs/{DAY}"
    other = api.get(f"{OPS}/dag-runs/manual__tab", params={"dag_id": "rocketmq_retry_redrive"}, headers=bob)
    assert other.status_code == 404
    assert api.get(f"{OPS}/dag-runs/nope", headers=bob).status_code == 404


def test_plugin_registers_nav_entry_and_run_tab(api: TestClient) -> None:
    plugins = api.get("/api/v2/plugins", headers=_auth("vera", "viewer")).json()["plugins"]
    views = next(p for p in plugins if p["name"] == "rocketmq_retry")["external_views"]
    by_name = {v["name"]: v for v in views}
    assert by_name["RocketMQ retry lifecycles"]["href"] == f"{OPS}/"
    assert by_name["RocketMQ retry lifecycles"]["destination"] == "nav"
    tab = by_name["Retry lifecycles"]
    assert tab["destination"] == "dag_run" and tab["href"] == f"{OPS}/dag-runs/{{RUN_ID}}?dag_id={{DAG_ID}}"
    assert "RocketMQ retry Data Docs" in by_name  # the Data Docs entry stays


def _set_paused(api: TestClient, paused: bool) -> None:
    answer = api.patch("/api/v2/dags/rocketmq_retry_redrive", headers=_auth("ada", "admin"), json={"is_paused": paused})
    assert answer.status_code == 200, answer.text


def test_redrive_button_only_with_rows_to_redrive_and_select_all(api: TestClient) -> None:
    bob = _auth("bob", "user")
    page = api.get(f"{OPS}/dead-letters", headers=bob).text
    assert page.count('name="selected"') == 3 and " checked>" not in page and 'id="redrive"' in page
    # select-all without a script: the server ticks every re-drivable row of the page
    assert f'id="select-all" href="{OPS}/dead-letters?from={DAY}&amp;to={DAY}&amp;select=all&amp;page=1"' in page
    ticked = api.get(f"{OPS}/dead-letters", params={"select": "all"}, headers=bob).text
    assert ticked.count(" checked>") == 3 and 'id="select-none"' in ticked
    # only DONE rows: nothing can be re-driven, so no button (it answered 400 before) and the page says why
    done = api.get(f"{OPS}/dead-letters", params={"state": "DONE"}, headers=bob).text
    assert 'id="redrive"' not in done and 'name="selected"' not in done and 'id="nothing-to-redrive"' in done
    assert 'id="select-all"' not in done


def test_a_paused_redrive_dag_is_said_with_the_way_to_unpause(api: TestClient) -> None:
    bob = _auth("bob", "user")
    _set_paused(api, True)  # as Airflow creates it
    try:
        page = api.get(f"{OPS}/dead-letters", headers=bob).text
        assert '<p class="warn" id="redrive-paused">' in page
        assert "<code>airflow dags unpause rocketmq_retry_redrive</code>" in page
        token, values = _form(api, bob)
        answer = api.post(
            f"{OPS}/redrive",
            headers={**bob, "origin": "http://testserver"},
            data={"csrf_token": token, "selected": values},
        )
        assert answer.status_code == 200, answer.text
        assert "these runs stay queued and nothing is compensated until it is unpaused" in answer.text
        assert 'queued <span class="warn">(waits: the DAG is paused)</span>' in answer.text
        _set_paused(api, False)
        assert 'id="redrive-paused"' not in api.get(f"{OPS}/dead-letters", headers=bob).text
    finally:
        _set_paused(api, True)


def test_a_form_of_the_stated_maximum_is_accepted(api: TestClient) -> None:
    from rocketmq_retry.airflow.pages.redrive import MAX_REDRIVE

    bob = _auth("bob", "user")
    before = {run[0] for run in _redrive_runs()}
    token, _ = _form(api, bob)
    rows = [json.dumps([DAY, "order-consumer", f"M{i:04d}"]) for i in range(MAX_REDRIVE)]
    headers = {**bob, "origin": "http://testserver"}
    answer = api.post(f"{OPS}/redrive", headers=headers, data={"csrf_token": token, "selected": rows})
    assert answer.status_code == 200, answer.text[:500]  # was 400 "Too many fields. Maximum number of fields is 1000."
    runs = [run for run in _redrive_runs() if run[0] not in before]
    assert len(runs) == 1 and len(runs[0][2]["msg_ids"]) == MAX_REDRIVE
    over = api.post(
        f"{OPS}/redrive", headers=headers, data={"csrf_token": token, "selected": [*rows, json.dumps([DAY, "g", "x"])]}
    )
    assert over.status_code == 400 and "1001 rows selected; at most 1000 per form" in over.text


@pytest.fixture()
def causes_warehouse(tmp_path: Any) -> Iterator[None]:
    """The pages read the causes day (pages_causes_support.py) for one test: the deployment's warehouse and config
    are read from the environment at each request."""
    import pages_causes_support as causes

    warehouse, config = causes.build(tmp_path)
    env = {"ROCKETMQ_RETRY_WAREHOUSE_ROOT": str(warehouse), "ROCKETMQ_RETRY_CONFIG": str(config)}
    saved = {k: os.environ[k] for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.update(saved)


def test_safe_set_in_one_step_and_poison_rows_confirmed_first(api: TestClient, causes_warehouse: None) -> None:
    """The ended outage's safe dead letters are one form; a selection with a poison row is shown back with a
    warning and nothing is queued until the operator confirms (or drops the poison rows)."""
    import pages_causes_support as causes

    bob = {**_auth("bob", "user"), "origin": "http://testserver"}
    html = api.get(f"{OPS}/dead-letters", headers=bob).text
    token = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert token is not None
    safe = html[html.index('<form method="post" action="/rocketmq-retry/ops/redrive" class="safe-set"') :]
    safe = safe[: safe.index("</form>")]
    assert "Re-drive these 3</button>" in safe and "3 dead letters marked safe" in safe
    picks = [json.loads(v.replace("&#34;", '"')) for v in re.findall(r'name="selected" value="([^"]+)"', safe)]
    assert picks == [[causes.DAY, causes.ORDERS, m] for m in ("O1", "O2", "O3")]
    # the poison row is marked in the list
    assert '<tr data-msg-id="P1" id="row-4" class="poison">' in html
    before = {run[0] for run in _redrive_runs()}
    chosen = [json.dumps([causes.DAY, causes.ORDERS, m]) for m in ("O1", "P1")]
    form = {"csrf_token": token.group(1), "selected": chosen}
    asked = api.post(f"{OPS}/redrive", headers=bob, data=form)
    assert asked.status_code == 200 and '<p class="warn" id="poison-warning">Nothing was queued yet.' in asked.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in asked.text and "<script>alert" not in asked.text
    assert 'name="poison" value="confirm"' in asked.text and "Re-drive the other 1 only" in asked.text
    assert {run[0] for run in _redrive_runs()} == before
    # the safe set in one step: queued at once (no poison in it)
    done = api.post(f"{OPS}/redrive", headers=bob, data={"csrf_token": token.group(1), "selected": [
        json.dumps(p) for p in picks]})  # fmt: skip
    assert done.status_code == 200 and "poison-warning" not in done.text
    runs = [run for run in _redrive_runs() if run[0] not in before]
    assert [r[2]["msg_ids"] for r in runs] == [["O1", "O2", "O3"]]
    # confirmed: the poison row is queued too
    confirmed = api.post(f"{OPS}/redrive", headers=bob, data={**form, "poison": "confirm"})
    assert confirmed.status_code == 200 and "poison-warning" not in confirmed.text
    runs = [run for run in _redrive_runs() if run[0] not in before]
    assert sorted(r[2]["msg_ids"] for r in runs) == [["O1", "O2", "O3"], ["O1", "P1"]]
