"""The API's answers through its FastAPI app on the pages' tiny literal warehouse (test_pages_support.py): each
route returns what the read layer returns to the page (the same object, JSON), the dead-letter filter is the
page's, values from the logs come back intact but with no markup in the body, bad parameters are a JSON 400/422
naming them, nothing writes, and every route carries the pages' read check. Tokens, the api-server and the
OpenAPI fuzz are in test_api_fuzz.py."""

from __future__ import annotations

import json
import pathlib
from typing import Annotated, Any

import pytest
from fastapi import Depends, FastAPI
from fastapi.testclient import TestClient

import test_pages_support as lit
from rocketmq_retry.airflow.dag_parts import DAG_ID
from rocketmq_retry.airflow.pages.api import create_api_app
from rocketmq_retry.airflow.pages.context import Source
from rocketmq_retry.airflow.pages.dead_letters import FilterQuery
from rocketmq_retry.explore import open_warehouse
from rocketmq_retry.explore.model import DeadLetterFilter

DAY = lit.DAY


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, pathlib.Path]:
    return lit.build(tmp_path_factory.mktemp("api"))


@pytest.fixture(scope="module")
def client(site: tuple[pathlib.Path, pathlib.Path]) -> TestClient:
    return TestClient(create_api_app(lambda: Source(*site), authenticate=False))


@pytest.fixture(scope="module")
def explorer(site: tuple[pathlib.Path, pathlib.Path]) -> Any:
    with open_warehouse(*site) as ex:
        yield ex


def test_each_route_answers_what_the_read_layer_gives_the_page(client: TestClient, explorer: Any) -> None:
    same = {
        f"/runs/{DAY}": explorer.run_overview(DAY),
        f"/runs/{DAY}/lifecycles?state=DEAD_LETTERED&page_size=2": explorer.lifecycles(
            DAY, "DEAD_LETTERED", None, None, 1, 2
        ),
        f"/dead-letters?from={DAY}&to={DAY}&state=GAVE_UP": explorer.dead_letters(
            DAY, DAY, DeadLetterFilter(compensation_state="GAVE_UP"), 1, 100
        ),
        f"/causes?date={DAY}": explorer.causes(DAY),
    }
    for url, result in same.items():
        answer = client.get(url)
        assert answer.status_code == 200, (url, answer.text)
        assert answer.json() == result.to_dict(), url
    stories = client.get(f"/messages/{lit.PLAIN}4").json()
    assert stories == [s.to_dict() for s in explorer.story(f"{lit.PLAIN}4")]
    assert client.get("/messages?q=ORD-1").json() == [m.to_dict() for m in explorer.find("ORD-1")]
    groups = client.get(f"/groups?to={DAY}&days=3").json()
    assert groups["date_from"] == "2026-11-19" and groups["groups"] == [g.to_dict() for g in explorer.groups(DAY, 3)]


def test_runs_list_the_dates_with_their_status(client: TestClient) -> None:
    runs = client.get("/runs").json()
    assert runs["total"] == 1 and runs["page"] == 1
    (run,) = runs["runs"]
    # the literal day was reconstructed (lifecycles/) and never ingested or validated here
    assert run == {
        "date": DAY,
        "status": "reconstructed",
        "ingested": False,
        "reconstructed": True,
        "lifecycles": 6,
        "dead_lettered": 5,
        "dead_letters": 5,
        "held_for_review": 0,
        "validation": None,
    }
    assert client.get("/runs?from=2026-11-22").json()["runs"] == []


def test_dead_letter_filters_are_the_pages(client: TestClient) -> None:
    """The same parameter names as the page and its CSV (a link's query string works on both), with the closed
    sets listed in the document."""
    probe = FastAPI()

    @probe.get("/page")
    def page(query: Annotated[FilterQuery, Depends()]) -> None:
        return None

    page_names = {p["name"] for p in probe.openapi()["paths"]["/page"]["get"]["parameters"]}
    document = client.app.openapi()  # type: ignore[attr-defined]
    api_names = {p["name"] for p in document["paths"]["/dead-letters"]["get"]["parameters"]}
    assert api_names == page_names | {"page", "page_size", "sort", "dir"}
    states = client.get(f"/dead-letters?from={DAY}&to={DAY}&state=GAVE_UP").json()
    assert sorted(r["msg_id"] for r in states["rows"]) == [f"{lit.PLAIN}{i}" for i in range(3)]
    assert states["filters"]["compensation_state"] == "GAVE_UP" and states["total"] == 3
    by_age = client.get(f"/dead-letters?from={DAY}&to={DAY}&sort=age&dir=desc&page_size=2").json()
    # the longest in the DLQ first = the earliest DLQ time, as the page sorts "age"
    assert [r["msg_id"] for r in by_age["rows"]] == [f"{lit.PLAIN}0", f"{lit.PLAIN}1"] and by_age["total"] == 5
    parameters = {p["name"]: p for p in document["paths"]["/dead-letters"]["get"]["parameters"]}
    assert "GAVE_UP" in json.dumps(parameters["state"]["schema"]) and "age" in json.dumps(parameters["sort"]["schema"])


def test_values_from_logs_come_back_intact_and_the_body_holds_no_markup(client: TestClient) -> None:
    for url in (f"/messages/{lit.PLAIN}4", f"/dead-letters?from={DAY}&to={DAY}", f"/runs/{DAY}", "/groups"):
        answer = client.get(url)
        assert answer.status_code == 200
        assert b"<" not in answer.content and b">" not in answer.content and b"&" not in answer.content, url
        assert answer.headers["content-type"] == "application/json"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert "default-src 'none'" in answer.headers["content-security-policy"]
    (story,) = client.get(f"/messages/{lit.PLAIN}4").json()
    assert story["consumer_group"] == lit.HOSTILE_GROUP
    assert story["keys"] == lit.HOSTILE_KEY and story["original_topic"] == lit.HOSTILE_TOPIC


@pytest.mark.parametrize(
    ("url", "status", "named"),
    [
        ("/runs/2026-13-01", 400, "does not exist in the calendar"),
        ("/runs/yesterday", 400, "expected YYYY-MM-DD"),
        ("/runs/2026-11-01", 404, "no lifecycles for 2026-11-01"),
        ("/dead-letters?from=2026-11-22&to=2026-11-01", 400, "date range 2026-11-22..2026-11-01 is empty"),
        ("/dead-letters?page_size=5000", 422, "query.page_size"),
        ("/dead-letters?state=LOST", 422, "query.state"),
        ("/dead-letters?dir=up", 422, "query.dir"),
        ("/dead-letters?stat=GAVE_UP", 422, "query.stat: unknown parameter"),
        ("/messages", 422, "query.q"),
        ("/messages/0A00000000000000", 404, "'0A00000000000000' not found"),
        ("/groups?days=0", 422, "query.days"),
        ("/causes?date=2026-02-30", 400, "does not exist in the calendar"),
    ],
)
def test_bad_parameters_are_json_naming_them(client: TestClient, url: str, status: int, named: str) -> None:
    answer = client.get(url)
    assert (answer.status_code, answer.headers["content-type"]) == (status, "application/json"), answer.text
    assert named in answer.json()["detail"]
    if status == 422:
        assert answer.json()["errors"][0]["parameter"] == named.split(":")[0]


def test_before_the_first_run(tmp_path: pathlib.Path) -> None:
    client = TestClient(create_api_app(lambda: Source(tmp_path / "not-yet", None), authenticate=False))
    assert client.get("/runs").json()["runs"] == []
    answer = client.get("/causes")
    assert answer.status_code == 404 and "no committed date" in answer.json()["detail"]


def test_nothing_writes(client: TestClient) -> None:
    document = client.app.openapi()  # type: ignore[attr-defined]
    assert {m for methods in document["paths"].values() for m in methods} == {"get"}
    assert client.post("/dead-letters").status_code == 405
    assert client.delete(f"/runs/{DAY}").status_code == 405


def test_every_route_needs_read_on_the_daily_dag() -> None:
    """The pages' rule (guard.require_read), the OpenAPI document included: Airflow's requires_access_dag("GET")
    on the daily DAG in each route's dependencies."""
    app = create_api_app(lambda: Source(pathlib.Path("/nonexistent"), None), authenticate=True)
    routes = [r for r in app.routes if getattr(r, "dependant", None) is not None]
    assert {r.path for r in routes} >= {"/openapi.json", "/runs", "/dead-letters", "/messages/{msg_id}"}
    for route in routes:
        checks = [_closure(d.call) for d in route.dependant.dependencies]
        assert {"method": "GET", "param_dag_id": DAG_ID, "access_entity": None} in checks, route.path


def _closure(call: Any) -> dict[str, Any]:
    names = getattr(getattr(call, "__code__", None), "co_freevars", ())
    cells = getattr(call, "__closure__", None) or ()
    return {n: c.cell_contents for n, c in zip(names, cells, strict=True) if n != "call"}
