"""Nothing waits behind a missing day, on a real scheduler (docs/airflow.md, "The UI, a triggered run").

A fresh PostgreSQL metadata database and the four components of ``scripts/airflow-services.sh``, configured as
installed (no ``max_active_runs`` or paused state set by the test). Unpausing the daily DAG creates the scheduled
run of yesterday, whose landing has no file: its ``wait_for_landing`` waits, deferred. The test makes that wait
certain whatever the time of day (an empty folder is "still filling" and is waited for the whole timeout; a
missing one would fail at once after 06:00 UTC, which would hide a stall). A run triggered for the example day
must then run to ``success`` while that scheduled run is still waiting; with ``max_active_runs: 1`` it stays
queued behind it and the test fails on its budget. The re-drive DAG, never unpaused here, must run a trigger.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest

import test_backfill_scheduler as backfill
from conftest import ROOT
from test_backfill_scheduler import Metadata, _airflow, _tails, _wait, _where

metadata_db = backfill.metadata_db  # the same fresh PostgreSQL database fixture, dropped afterwards

pytestmark = [pytest.mark.slow, pytest.mark.airflow, pytest.mark.spark]

DAG_ID = "rocketmq_retry_daily"
REDRIVE = "rocketmq_retry_redrive"
DS = "2026-11-20"  # the date of examples/landing
# The triggered run's five Spark-using steps on a 2-core machine shared with other jobs: a few minutes.
BUDGET_SECONDS = 1200


@pytest.fixture(scope="module")
def deployment(metadata_db: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("no-wait")
    roots = {name: base / name for name in ("landing", "warehouse", "config", "home", "work")}
    for path in roots.values():
        path.mkdir()
    shutil.copytree(ROOT / "examples" / "landing", roots["landing"] / DS)
    today = dt.datetime.now(dt.UTC).date()
    for day in (today - dt.timedelta(days=1), today):  # today too: the test may cross midnight
        (roots["landing"] / day.isoformat()).mkdir()
    config = roots["config"] / "rocketmq-retry.yaml"
    shutil.copy(ROOT / "examples" / "rocketmq-retry.yaml", config)
    gx_root = base / "expectations"
    shutil.copytree(ROOT / "expectations", gx_root, ignore=shutil.ignore_patterns("uncommitted"))
    env = backfill.deployment_env(roots, config, gx_root, metadata_db, parallelism=2)
    env.pop("ROCKETMQ_RETRY_MAX_ACTIVE_RUNS", None)  # the installed default is what is tested
    return {**roots, "env": env, "db": metadata_db}


# The components started and stopped as test_backfill_scheduler does, over this module's own deployment.
services = backfill.services


@pytest.fixture(scope="module")
def meta(deployment: dict[str, Any]) -> Iterator[Metadata]:
    reader = Metadata(deployment["db"])
    yield reader
    reader.engine.dispose()


def _run(meta: Metadata, run_id: str) -> dict[str, Any]:
    rows = meta.rows("SELECT run_id, state, run_type FROM dag_run WHERE run_id = :r", r=run_id)
    return rows[0] if rows else {}


def test_a_triggered_run_finishes_while_yesterday_waits_for_its_landing(
    services: dict[str, Any], meta: Metadata
) -> None:
    deployment = services
    t0 = time.monotonic()

    def parsed() -> bool:
        errors = meta.rows("SELECT filename, stacktrace FROM import_error")
        assert not errors, f"DAG import errors: {errors}"
        found = meta.rows("SELECT dag_id FROM serialized_dag WHERE dag_id IN (:d, :r)", d=DAG_ID, r=REDRIVE)
        return len(found) == 2

    _wait("the dag-processor to serialize both DAGs", parsed, timeout=240)
    paused = {r["dag_id"]: r["is_paused"] for r in meta.rows("SELECT dag_id, is_paused FROM dag")}
    # as installed: the daily DAG waits for the operator (its schedule creates runs); the re-drive DAG runs triggers,
    # and so does the compensate DAG (no schedule unless compensation.trigger is asset)
    assert paused == {DAG_ID: True, REDRIVE: False, "rocketmq_retry_compensate": False}, paused

    _airflow(deployment, "dags", "unpause", DAG_ID)

    def waiting() -> dict[str, Any] | None:
        for r in meta.runs():
            if r["run_type"] == "scheduled" and meta.tasks().get(r["run_id"], {}).get("wait_for_landing") == "deferred":
                return r
        return None

    scheduled = _wait("the scheduled run's wait_for_landing to defer", waiting, timeout=300)
    print(f"{time.monotonic() - t0:5.0f} s  scheduled run {scheduled['run_id']} waits for its landing (deferred)")

    triggered = f"manual__{DS}_while_yesterday_waits"
    _airflow(deployment, "dags", "trigger", DAG_ID, "--logical-date", f"{DS}T00:00:00+00:00", "--run-id", triggered)
    last = ""
    deadline = time.monotonic() + BUDGET_SECONDS
    while True:
        run = _run(meta, triggered)
        line = f"{run.get('state')}: {_where(meta.tasks().get(triggered, {}))}"
        if line != last:
            print(f"{time.monotonic() - t0:5.0f} s  {triggered} {line}", flush=True)
            last = line
        if run.get("state") in ("success", "failed"):
            break
        if time.monotonic() > deadline:
            pytest.fail(
                f"triggered run not finished after {BUDGET_SECONDS} s ({line}); scheduled run "
                f"{_run(meta, scheduled['run_id'])}\n" + _tails((deployment["home"] / "services").glob("scheduler.log"))
            )
        time.sleep(3)
    assert run["state"] == "success", (line, _tails((deployment["home"] / "logs").rglob("*.log"), lines=20))
    # ...and the scheduled run was waiting all along: the triggered run did not get its slot by its ending
    assert _run(meta, scheduled["run_id"])["state"] == "running"
    assert meta.tasks()[scheduled["run_id"]]["wait_for_landing"] == "deferred"
    assert (deployment["warehouse"] / "run_reports" / f"dt={DS}" / "summary.json").is_file()

    # the re-drive DAG, never unpaused, runs a trigger (a date range with nothing FAILED: plan, then nothing to do)
    redrive = "manual__redrive_as_installed"
    conf = json.dumps({"date_from": DS, "date_to": DS})
    _airflow(deployment, "dags", "trigger", REDRIVE, "--run-id", redrive, "--conf", conf)

    def redrive_ended() -> str | None:
        state = _run(meta, redrive).get("state")
        return state if state in ("success", "failed") else None

    ended = _wait(f"re-drive run {redrive}", redrive_ended, timeout=300)
    tasks = {
        r["task_id"]: r["state"]
        for r in meta.rows(
            "SELECT task_id, state FROM task_instance WHERE dag_id = :d AND run_id = :r", d=REDRIVE, r=redrive
        )
    }
    print(f"{time.monotonic() - t0:5.0f} s  {redrive}: {ended} {tasks}")
    assert ended == "success" and tasks.get("plan_redrive") == "success", tasks
