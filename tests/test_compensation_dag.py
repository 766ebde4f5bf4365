"""``rocketmq_retry_redrive`` end to end with ``dag.test()`` (real Airflow, real ledger, real handler effects):
FAILED dead letters of a date range are re-driven once; running the DAG again does nothing new."""

from __future__ import annotations

import pathlib
from typing import Any

import pendulum
import pytest

from conftest import ROOT
from rocketmq_retry.compensation.batches import compensate_batch, plan_batches
from rocketmq_retry.compensation.ledger import Ledger
from test_compensation_support import EffectServer, dead_letter_rows, effects, write_config, write_partition

DATE = "2026-11-20"


@pytest.fixture(scope="module")
def airflow_db() -> None:
    from airflow.utils import db

    db.initdb()


@pytest.fixture(scope="module")
def redrive_dag(airflow_db: None) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(ROOT / "dags" / "rocketmq_retry_redrive.py"))
    assert bag.import_errors == {}
    return bag.dags["rocketmq_retry_redrive"]


def _summary(run: Any) -> dict[str, Any]:
    ti = run.get_task_instance("compensation_summary")
    assert ti is not None and ti.state == "success"
    return ti.xcom_pull(task_ids="compensation_summary")


def test_dag_parses_into_plan_mapped_compensate_summary(redrive_dag: Any) -> None:
    assert type(redrive_dag.timetable).__name__ == "NullTimetable"  # triggered by an operator, never scheduled
    # usable as installed: a trigger from the dead-letter page runs instead of queueing on a paused DAG
    assert redrive_dag.is_paused_upon_creation is False
    assert [t.task_id for t in redrive_dag.topological_sort()] == [
        "preview_redrive",
        "approve_redrive",
        "plan_redrive",
        "compensate",
        "compensation_summary",
    ]
    assert redrive_dag.get_task("compensate").max_active_tis_per_dagrun == 4
    # Airflow's own approval (Browse -> Required Actions); a skipped approval (under the threshold) lets the plan run
    from airflow.providers.standard.operators.hitl import ApprovalOperator

    assert isinstance(redrive_dag.get_task("approve_redrive"), ApprovalOperator)
    assert redrive_dag.get_task("plan_redrive").trigger_rule == "none_failed"
    assert redrive_dag.get_task("plan_redrive").upstream_task_ids == {"approve_redrive"}


def test_redrive_of_failed_dead_letters_runs_once(
    redrive_dag: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "warehouse-root"
    warehouse = root / "prod"
    write_partition(warehouse, DATE, dead_letter_rows(30, DATE, groups=("order-consumer", "pay-consumer")))
    monkeypatch.setenv("ROCKETMQ_RETRY_WAREHOUSE_ROOT", str(root))
    monkeypatch.setenv("ROCKETMQ_RETRY_CONFIG_ROOT", str(tmp_path))  # the run's config param must lie under it
    monkeypatch.setenv("RMQ_TEST_EFFECTS", str(tmp_path / "effects.log"))
    config = write_config(
        tmp_path / "config.yaml",
        {
            "max_attempts": 3,
            "routes": [{"topic": "payments", "handler": "tickets"}, {"handler": "refunds"}],
            "handlers": {
                "refunds": {"type": "python", "callable": "test_compensation_support:flaky"},
                "tickets": {"type": "python", "callable": "test_compensation_support:record_effect"},
            },
        },
    )
    # The daily compensation ran while the refund system was down: the order-consumer letters FAILED.
    monkeypatch.setenv("RMQ_TEST_FLAKY", "1")
    summaries = [
        compensate_batch(b, "scheduled__2026-11-20", str(config)) for b in plan_batches(DATE, warehouse, config)
    ]
    assert sum(s["failed"] for s in summaries) == 15 and sum(s["done"] for s in summaries) == 15
    assert sum(effects().values()) == 15
    monkeypatch.delenv("RMQ_TEST_FLAKY")

    conf = {"date_from": DATE, "date_to": DATE, "warehouse": "prod", "config": str(config), "max_batches": 3}
    run = redrive_dag.test(logical_date=pendulum.datetime(2026, 11, 21, 1, tz="UTC"), run_conf=conf)
    assert run.state == "success"
    summary = _summary(run)
    assert (summary["batches"], summary["executed"], summary["done"]) == (3, 15, 15)
    assert summary["handlers"] == {"refunds": {"done": 15}}
    # 15 <= the default compensation.approval_threshold (100): no approval asked, the run went straight on
    assert run.get_task_instance("approve_redrive").state == "skipped"
    assert summary["notes"][0] == "approval: not needed (15 dead letter(s), threshold 100)"
    assert effects() == {
        f"{r['consumer_group']}/{r['msg_id']}": 1
        for r in dead_letter_rows(30, DATE, ("order-consumer", "pay-consumer"))
    }

    with Ledger.open(f"sqlite:///{warehouse}/compensation.db") as ledger:
        rows = ledger.rows()
        assert ledger.counts() == {"DONE": 30}
        redriven = [r for r in rows if r.redrives]
        assert len(redriven) == 0  # FAILED rows with attempts left are simply claimed again
        assert {r.airflow_run_id for r in rows if r.consumer_group == "order-consumer"} == {run.run_id}

    # Run it again: nothing is FAILED any more, nothing is executed, no effect repeats.
    again = redrive_dag.test(logical_date=pendulum.datetime(2026, 11, 21, 2, tz="UTC"), run_conf=conf)
    assert again.state == "success"
    summary = _summary(again)
    assert (summary["executed"], summary["done"]) == (0, 0)
    assert sum(effects().values()) == 30

    # Choosing a DONE message explicitly is refused, not re-fired.
    chosen = dead_letter_rows(1, DATE)[0]["msg_id"]
    third = redrive_dag.test(
        logical_date=pendulum.datetime(2026, 11, 21, 3, tz="UTC"),
        run_conf={"msg_ids": [chosen], "warehouse": "prod", "config": str(config)},
    )
    assert third.state == "success"
    summary = _summary(third)
    assert summary["executed"] == 0 and any("already DONE" in n for n in summary["notes"])
    assert sum(effects().values()) == 30


def test_a_warehouse_outside_the_root_fails_the_run(redrive_dag: Any, tmp_path: pathlib.Path, monkeypatch) -> None:
    monkeypatch.setenv("ROCKETMQ_RETRY_WAREHOUSE_ROOT", str(tmp_path / "root"))
    run = redrive_dag.test(
        logical_date=pendulum.datetime(2026, 11, 21, 4, tz="UTC"),
        run_conf={"date_from": DATE, "date_to": DATE, "warehouse": "../elsewhere"},
    )
    assert run.state == "failed"


def test_a_config_outside_the_config_root_fails_the_run_once(
    redrive_dag: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config from elsewhere could route every FAILED row to ``log-only`` (marking it DONE with no effect) or
    name any callable: the plan refuses it, and the task fails without retrying, before any ledger is opened."""
    root = tmp_path / "root"
    write_partition(root / "prod", DATE, dead_letter_rows(2, DATE))
    monkeypatch.setenv("ROCKETMQ_RETRY_WAREHOUSE_ROOT", str(root))
    monkeypatch.setenv("ROCKETMQ_RETRY_CONFIG_ROOT", str(tmp_path / "configs"))
    evil = write_config(tmp_path / "evil.yaml", {"routes": [{"handler": "log-only"}]})
    run = redrive_dag.test(
        logical_date=pendulum.datetime(2026, 11, 21, 5, tz="UTC"),
        run_conf={"date_from": DATE, "date_to": DATE, "warehouse": "prod", "config": str(evil)},
    )
    assert run.state == "failed"
    ti = run.get_task_instance("preview_redrive")  # the first task that reads the params
    assert ti is not None and ti.state == "failed" and ti.try_number == 1
    assert run.get_task_instance("plan_redrive").state == "upstream_failed"
    assert not (root / "prod" / "compensation.db").exists()


WIRING_DAG = """
from __future__ import annotations

import json
import os

import pendulum
from airflow.sdk import DAG, task

from rocketmq_retry.airflow.compensation_tasks import compensate, compensation_summary, plan_compensation

with DAG("compensation_wiring_test", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):

    @task
    def resolve_run() -> dict[str, str]:
        return json.loads(os.environ["RMQ_TEST_RUN_PATHS"])  # read when the task runs, like the daily DAG's

    batches = plan_compensation(resolve_run(), batch_size=25)
    compensation_summary(compensate.expand(batch=batches))
"""


def test_daily_wiring_mapped_over_batches_twice_fires_each_effect_once(
    airflow_db: None, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daily DAG's compensate step exactly as docs/compensation.md wires it, run twice for the same date.
    dag.test() only runs DAGs of a configured bundle, so this one lives in a bundle of its own."""
    import json

    from airflow.dag_processing.dagbag import DagBag

    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "compensation_wiring_test.py").write_text(WIRING_DAG)
    bundles = [
        {"name": "dags-folder", "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle", "kwargs": {}},
        {
            "name": "compensation-wiring-test",
            "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
            "kwargs": {"path": str(bundle)},
        },
    ]
    monkeypatch.setenv("AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST", json.dumps(bundles))
    warehouse = tmp_path / "wh"
    letters = dead_letter_rows(60, DATE, groups=("order-consumer", "pay-consumer"))
    write_partition(warehouse, DATE, letters)
    with EffectServer(status=201) as server:
        config = write_config(
            tmp_path / "config.yaml",
            {"routes": [{"handler": "refund-api"}], "handlers": {"refund-api": {"type": "http", "url": server.url}}},
        )
        paths = {"ds": DATE, "warehouse": str(warehouse), "config": str(config)}
        monkeypatch.setenv("RMQ_TEST_RUN_PATHS", json.dumps(paths))
        bag = DagBag(dag_folder=str(bundle))
        assert bag.import_errors == {}
        dag = bag.dags["compensation_wiring_test"]

        first = dag.test(logical_date=pendulum.datetime(2026, 11, 21, 1, tz="UTC"))
        assert first.state == "success"
        summary = _summary(first)
        assert (summary["batches"], summary["executed"], summary["done"]) == (3, 60, 60)
        # A second run of the same date (a retry, a backfill) finds the work done.
        second = dag.test(logical_date=pendulum.datetime(2026, 11, 21, 2, tz="UTC"))
        assert second.state == "success"
        summary = _summary(second)
        assert (summary["batches"], summary["executed"], summary["already_done"]) == (1, 0, 60)
    assert server.total == 60 and set(server.requests.values()) == {1}
    with Ledger.open(f"sqlite:///{warehouse}/compensation.db") as ledger:
        assert {r.airflow_run_id for r in ledger.rows()} == {first.run_id}


def test_compensate_dag_by_hand_compensates_the_date(
    airflow_db: None, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rocketmq_retry_compensate triggered with a date (no asset event): the date's dead letters, once."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(ROOT / "dags" / "rocketmq_retry_compensate.py"))
    assert bag.import_errors == {}
    dag = bag.dags["rocketmq_retry_compensate"]
    root = tmp_path / "root"
    letters = dead_letter_rows(12, DATE, groups=("order-consumer", "pay-consumer"))
    write_partition(root / "prod", DATE, letters)
    monkeypatch.setenv("ROCKETMQ_RETRY_WAREHOUSE_ROOT", str(root))
    monkeypatch.setenv("ROCKETMQ_RETRY_CONFIG_ROOT", str(tmp_path))
    monkeypatch.setenv("RMQ_TEST_EFFECTS", str(tmp_path / "effects.log"))
    config = write_config(
        tmp_path / "config.yaml",
        {
            "routes": [{"handler": "tickets"}],
            "handlers": {"tickets": {"type": "python", "callable": "test_compensation_support:record_effect"}},
        },
    )
    conf = {"date": DATE, "warehouse": "prod", "config": str(config)}
    run = dag.test(logical_date=pendulum.datetime(2026, 11, 21, 6, tz="UTC"), run_conf=conf)
    assert run.state == "success"
    assert run.get_task_instance("wait_for_validation").state == "success"  # by hand: the operator's word
    summary = _summary(run)
    assert (summary["dates"], summary["executed"], summary["done"]) == ([DATE], 12, 12)
    assert effects() == {f"{r['consumer_group']}/{r['msg_id']}": 1 for r in letters}


class _Event:
    def __init__(self, source_dag_id: str | None, source_run_id: str | None) -> None:
        self.source_dag_id, self.source_run_id, self.extra = source_dag_id, source_run_id, {"ds": DATE}


class _TaskInstance:
    """What the sensor asks of Airflow's task instance: the validate states of the events' runs."""

    def __init__(self, states: dict[str, str]) -> None:
        self.states = states
        self.log = __import__("logging").getLogger("test")

    def get_task_states(self, dag_id: str, task_ids: list[str], run_ids: list[str]) -> dict[str, Any]:
        assert dag_id == "rocketmq_retry_daily" and task_ids == ["validate"]
        return {r: {"validate": self.states[r]} for r in run_ids if r in self.states}


def test_compensation_on_the_asset_waits_for_the_dates_validation() -> None:
    """reconstruct emits dead_letters before validate runs: the asset's run compensates only once the source
    run's validate succeeded, and never when it failed or when the event comes from elsewhere."""
    from airflow.sdk import Asset
    from airflow.sdk.exceptions import AirflowFailException

    from rocketmq_retry.airflow.compensation_tasks import validation_passed

    asset = Asset(name="rocketmq_retry.dead_letters", uri="file:///wh/dead_letters")

    def context(states: dict[str, str], *events: _Event) -> dict[str, Any]:
        return {"triggering_asset_events": {asset: list(events)}, "ti": _TaskInstance(states)}

    ours = _Event("rocketmq_retry_daily", "scheduled__2026-11-20")
    assert validation_passed(context({"scheduled__2026-11-20": "running"}, ours)) is False
    assert validation_passed(context({}, ours)) is False  # not started yet
    assert validation_passed(context({"scheduled__2026-11-20": "success"}, ours)) is True
    for ended in ("failed", "upstream_failed"):
        with pytest.raises(AirflowFailException, match=f"ended {ended}"):
            validation_passed(context({"scheduled__2026-11-20": ended}, ours))
    with pytest.raises(AirflowFailException, match="not from a rocketmq_retry_daily run"):
        validation_passed(context({}, _Event(None, None)))
    assert validation_passed({"triggering_asset_events": {}, "ti": _TaskInstance({})}) is True  # by hand
