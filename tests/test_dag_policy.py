"""One policy for every DAG in ``dags/``: it imports cleanly and cheaply, is owned and tagged, retries what a retry
can fix with back-off, and reports every failure through the project's callbacks."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from conftest import ROOT

DAG_FILES = sorted((ROOT / "dags").glob("*.py"))
# Tasks that must not be retried: bad params never fix themselves (they fail with AirflowFailException anyway),
# and a sensor's timeout is its whole waiting budget.
# approve_redrive: an answer is final, and a retry after the approval timeout would ask again for another day
# resolve_compensation: bad extras or params never fix themselves; wait_for_validation: its timeout is its budget
NOT_RETRIED = {"resolve_run", "wait_for_landing", "approve_redrive", "resolve_compensation", "wait_for_validation"}

PARSE_PROBE = """
import json, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
heavy = sorted(m for m in ("pyspark", "py4j", "great_expectations", "pandas", "pyarrow") if m in sys.modules)
print(json.dumps({"dags": sorted(bag.dags), "errors": {k: str(v) for k, v in bag.import_errors.items()},
                  "heavy": heavy}))
"""


@pytest.fixture(scope="module")
def dagbag() -> Any:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(ROOT / "dags"))
    assert bag.import_errors == {}
    return bag


def test_every_dag_file_defines_one_dag() -> None:
    assert [f.name for f in DAG_FILES] == [
        "rocketmq_retry_compensate.py",
        "rocketmq_retry_daily.py",
        "rocketmq_retry_redrive.py",
    ]


@pytest.mark.parametrize("dag_file", DAG_FILES, ids=lambda p: p.stem)
def test_parsing_a_dag_file_does_no_work(dag_file: Any, tmp_path: Any) -> None:
    """A fresh interpreter parses the file alone: no import error, and no Spark, GE, pandas or Arrow loaded (Airflow
    itself brings SQLAlchemy and httpx, so those say nothing about this project)."""
    out = subprocess.run(
        [sys.executable, "-c", PARSE_PROBE, str(dag_file)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={**__import__("os").environ, "AIRFLOW_HOME": str(tmp_path)},
    )
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    assert probe == {"dags": [dag_file.stem], "errors": {}, "heavy": []}
    written = sorted(p.name for p in tmp_path.iterdir() if p.name not in ("airflow.cfg", "logs"))  # Airflow's own
    assert written == [], "parsing wrote files"


@pytest.mark.parametrize("dag_id", [f.stem for f in DAG_FILES])
def test_dag_policy(dagbag: Any, dag_id: str) -> None:
    dag = dagbag.dags[dag_id]
    assert "rocketmq-retry" in dag.tags
    assert dag.on_failure_callback is not None
    assert dag.catchup is False
    assert dag.doc_md
    for task in dag.tasks:
        assert task.owner == "rocketmq-ops", task.task_id
        assert task.on_failure_callback, task.task_id
        if task.task_id in NOT_RETRIED:
            assert task.retries == 0, task.task_id
        else:
            assert task.retries == 3 and task.retry_exponential_backoff == 2.0, task.task_id


def test_redrive_dag_is_manual_only(dagbag: Any) -> None:
    dag = dagbag.dags["rocketmq_retry_redrive"]
    assert type(dag.timetable).__name__ == "NullTimetable" and not dag.timetable.can_be_scheduled
