"""A re-drive over ``compensation.approval_threshold`` waits for Airflow's approval (Browse -> Required Actions).

Real ``dag.test()`` runs of ``rocketmq_retry_redrive`` on a real ledger; the approver answers through Airflow's own
REST API (``PATCH /api/v2/dags/{dag}/dagRuns/{run}/taskInstances/approve_redrive/-1/hitlDetails``, a JWT from the
auth manager), from a thread, while ``dag.test()`` keeps the run alive waiting for the answer as a scheduler would.
A rejection leaves the ledger and the handlers' effects exactly as they were; an approval re-drives exactly what the
approver was shown, and the run and the ledger rows say who approved it.
"""

from __future__ import annotations

import pathlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pendulum
import pytest

from conftest import ROOT
from rocketmq_retry.compensation.batches import compensate_batch, plan_batches
from rocketmq_retry.compensation.ledger import Ledger
from test_compensation_support import dead_letter_rows, effects, write_config, write_partition

pytestmark = [pytest.mark.airflow]
DAG_ID = "rocketmq_retry_redrive"
DATE = "2026-11-20"
GROUPS = ("order-consumer", "pay-consumer")
HITL = "/api/v2/dags/{dag}/dagRuns/{run}/taskInstances/approve_redrive/-1/hitlDetails"
ANSWER_WITHIN_SECONDS = 240


@pytest.fixture(scope="module")
def api() -> Iterator[Any]:
    from airflow.utils import db
    from fastapi.testclient import TestClient

    db.initdb()
    from airflow.api_fastapi.main import app

    yield TestClient(app)


@pytest.fixture(scope="module")
def redrive_dag(api: Any) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(ROOT / "dags" / "rocketmq_retry_redrive.py"))
    assert bag.import_errors == {}
    return bag.dags[DAG_ID]


def _auth(name: str) -> dict[str, str]:
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    token = get_auth_manager().generate_jwt(SimpleAuthManagerUser(username=name, role="user"))
    return {"Authorization": f"Bearer {token}"}


class Approver(threading.Thread):
    """Waits for a run's ``approve_redrive`` to park in AWAITING_INPUT, reads its detail and answers, through the
    REST API. Should anything go wrong it fails the run, so that ``dag.test()`` (which waits for an answer for as
    long as the run lives) ends and the test reports the error instead of hanging."""

    def __init__(self, api: Any, user: str, choice: str) -> None:
        super().__init__(daemon=True)
        self.api, self.user, self.choice = api, user, choice
        self.run_id: str | None = None
        self.detail: dict[str, Any] = {}
        self.status: int | None = None
        self.error: BaseException | None = None
        self.seen = _awaiting_runs()  # runs of other tests already waiting are not ours

    def run(self) -> None:
        try:
            deadline = time.monotonic() + ANSWER_WITHIN_SECONDS
            while self.run_id is None and time.monotonic() < deadline:
                self.run_id = next(iter(_awaiting_runs() - self.seen), None)
                time.sleep(0.5)
            assert self.run_id, f"no approve_redrive awaited input within {ANSWER_WITHIN_SECONDS} s"
            url = HITL.format(dag=DAG_ID, run=self.run_id)
            anonymous = self.api.patch(url, json={"chosen_options": [self.choice], "params_input": {}})
            assert anonymous.status_code == 401, anonymous.text  # nobody answers without logging in
            got = self.api.get(url, headers=_auth(self.user))
            assert got.status_code == 200, got.text
            self.detail = got.json()
            answer = self.api.patch(
                url, headers=_auth(self.user), json={"chosen_options": [self.choice], "params_input": {}}
            )
            self.status = answer.status_code
            assert answer.status_code == 200, answer.text
        except BaseException as exc:
            self.error = exc
            _fail_runs({self.run_id} if self.run_id else _running_runs())


def _awaiting_runs() -> set[str]:
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from airflow.utils.state import TaskInstanceState
    from sqlalchemy import select

    with create_session() as session:
        return set(
            session.scalars(
                select(TaskInstance.run_id).where(
                    TaskInstance.dag_id == DAG_ID,
                    TaskInstance.task_id == "approve_redrive",
                    TaskInstance.state == TaskInstanceState.AWAITING_INPUT,
                )
            )
        )


def _running_runs() -> set[str]:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        return set(session.scalars(select(DagRun.run_id).where(DagRun.dag_id == DAG_ID, DagRun.state == "running")))


def _fail_runs(run_ids: set[str]) -> None:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import update

    with create_session() as session:
        session.execute(
            update(DagRun).where(DagRun.dag_id == DAG_ID, DagRun.run_id.in_(run_ids)).values(state="failed")
        )


def _states(run: Any) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in run.get_task_instances() if ti.map_index <= 0}


def _ledger(warehouse: pathlib.Path) -> list[dict[str, Any]]:
    with Ledger.open(f"sqlite:///{warehouse}/compensation.db") as ledger:
        return [r.as_dict() for r in ledger.rows()]


def _without_run_line(body: str) -> list[str]:
    return [line for line in body.splitlines() if not line.startswith("Run ")]


def _run_answered(dag: Any, api: Any, user: str, choice: str, hour: int, conf: dict[str, Any]) -> tuple[Any, Approver]:
    approver = Approver(api, user, choice)
    approver.start()
    run = dag.test(logical_date=pendulum.datetime(2026, 11, 22, hour, tz="UTC"), run_conf=conf)
    approver.join(timeout=30)
    if approver.error:
        raise approver.error
    return run, approver


def test_over_the_threshold_a_rejection_does_nothing_and_an_approval_redrives_what_was_shown(
    redrive_dag: Any, api: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "warehouse-root"
    warehouse = root / "prod"
    letters = dead_letter_rows(30, DATE, groups=GROUPS)
    write_partition(warehouse, DATE, letters)
    monkeypatch.setenv("ROCKETMQ_RETRY_WAREHOUSE_ROOT", str(root))
    monkeypatch.setenv("ROCKETMQ_RETRY_CONFIG_ROOT", str(tmp_path))
    monkeypatch.setenv("RMQ_TEST_EFFECTS", str(tmp_path / "effects.log"))
    config = write_config(
        tmp_path / "config.yaml",
        {
            "approval_threshold": 10,
            "routes": [{"topic": "payments", "handler": "tickets"}, {"handler": "refunds"}],
            "handlers": {
                "refunds": {"type": "python", "callable": "test_compensation_support:flaky"},
                "tickets": {"type": "python", "callable": "test_compensation_support:record_effect"},
            },
        },
    )
    # The daily compensation ran while the refund system was down: the 15 order-consumer letters FAILED.
    monkeypatch.setenv("RMQ_TEST_FLAKY", "1")
    for batch in plan_batches(DATE, warehouse, config):
        compensate_batch(batch, "scheduled__2026-11-20", str(config))
    monkeypatch.delenv("RMQ_TEST_FLAKY")
    before = _ledger(warehouse)
    assert sum(1 for r in before if r["state"] == "FAILED") == 15 and sum(effects().values()) == 15
    conf = {"date_from": DATE, "date_to": DATE, "warehouse": "prod", "config": str(config), "max_batches": 3}

    # 15 > 10: the run waits; bob reads what would be re-driven and rejects it.
    rejected, bob = _run_answered(redrive_dag, api, "bob", "Reject", 1, conf)
    assert rejected.state == "success", _states(rejected)
    assert _states(rejected) == {
        "preview_redrive": "success",
        "approve_redrive": "success",  # an answer, whatever it is, is the task's success (Airflow's convention)
        "plan_redrive": "skipped",
        "compensate": "skipped",
        "compensation_summary": "skipped",
    }
    detail = bob.detail
    assert detail["subject"] == "Re-drive 15 dead letters?"
    assert detail["options"] == ["Approve", "Reject"]
    body = detail["body"]
    assert "**15 dead letters** would be re-driven, more than `compensation.approval_threshold` (10)." in body
    assert "| order\\-consumer | refunds | 15 |" in body  # count per group and handler, markdown-escaped
    assert "pay\\-consumer" not in body  # DONE rows are not re-driven, so not shown
    assert body.count("| 2026\\-11\\-20 | order\\-consumer |") == 10  # the first 10 rows of 15
    assert "downstream unavailable" in body  # each row's last error
    decision = rejected.get_task_instance("approve_redrive").xcom_pull(task_ids="approve_redrive", key="decision")
    assert decision["chosen_options"] == ["Reject"] and decision["responded_by_user"]["name"] == "bob"
    assert _ledger(warehouse) == before  # nothing reopened, claimed or executed
    assert sum(effects().values()) == 15

    # The same re-drive again; alice approves: exactly the 15 rows shown are re-driven, once.
    approved, alice = _run_answered(redrive_dag, api, "alice", "Approve", 2, conf)
    assert approved.state == "success", _states(approved)
    assert _without_run_line(alice.detail["body"]) == _without_run_line(body)  # the same selection shown
    decision = approved.get_task_instance("approve_redrive").xcom_pull(task_ids="approve_redrive", key="decision")
    assert decision["chosen_options"] == ["Approve"] and decision["responded_by_user"] == {
        "id": "alice",
        "name": "alice",
    }
    summary = approved.get_task_instance("compensation_summary").xcom_pull(task_ids="compensation_summary")
    assert (summary["batches"], summary["executed"], summary["done"]) == (3, 15, 15)
    assert summary["notes"][0] == (
        f"approval: 15 dead letter(s) approved by alice (id alice) at {decision['responded_at']} (threshold 10)"
    )
    assert effects() == {f"{r['consumer_group']}/{r['msg_id']}": 1 for r in letters}
    after = {(r["consumer_group"], r["msg_id"]): r for r in _ledger(warehouse)}
    assert {r["state"] for r in after.values()} == {"DONE"}
    # each re-driven row names the approved run, whose approve_redrive XCom names the approver
    assert {k for k, r in after.items() if r["airflow_run_id"] == approved.run_id} == {
        (r["consumer_group"], r["msg_id"]) for r in before if r["state"] == "FAILED"
    }


def test_a_grown_selection_is_refused_after_the_approval(
    redrive_dag: Any, api: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Approved for what the preview showed; if more rows qualify by the time the plan runs, nothing is reopened."""
    from rocketmq_retry.airflow import compensation_tasks

    root = tmp_path / "root"
    warehouse = root / "prod"
    write_partition(warehouse, DATE, dead_letter_rows(4, DATE))
    monkeypatch.setenv("ROCKETMQ_RETRY_WAREHOUSE_ROOT", str(root))
    monkeypatch.setenv("ROCKETMQ_RETRY_CONFIG_ROOT", str(tmp_path))
    config = write_config(tmp_path / "config.yaml", {"approval_threshold": 2})
    plan_batches(DATE, warehouse, config)  # 4 PENDING rows in the ledger
    real = compensation_tasks.redrive_preview
    calls: list[int] = []

    def growing(*args: Any, **kwargs: Any) -> dict[str, Any]:
        preview = real(*args, **kwargs)
        calls.append(preview["count"])
        if len(calls) > 1:  # the plan's second count: one more row appeared meanwhile
            preview["count"] += 1
        return preview

    monkeypatch.setattr(compensation_tasks, "redrive_preview", growing)
    before = _ledger(warehouse)
    conf = {"date_from": DATE, "date_to": DATE, "warehouse": "prod", "config": str(config), "states": ["FAILED"]}
    conf["msg_ids"] = [r["msg_id"] for r in before]
    run, _ = _run_answered(redrive_dag, api, "alice", "Approve", 3, conf)
    assert run.state == "failed"
    assert _states(run)["plan_redrive"] == "failed" and calls == [4, 4]
    assert _ledger(warehouse) == before
