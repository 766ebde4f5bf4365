"""The tables the daily DAG writes, as Airflow Assets: declared here once, emitted by the task that commits them.

Each table of the warehouse (``events``, ``lifecycles``, ``dead_letters``, ..., and the run reports) is one Asset
named ``rocketmq_retry.<table>`` whose URI is the table's folder (``file://<warehouse root>/<table>``). The task
that commits a table lists it in its ``outlets`` and, on success, gives the event the partition it committed::

    {"ds": "2026-11-20", "table": "dead_letters", "partition": "<warehouse>/dead_letters/dt=2026-11-20",
     "warehouse": "<warehouse>", "config": "<config file or null>"}

The date goes in the event's ``extra``, not in Airflow's ``partition_key``: an asset event with a partition key
queues only DAGs on a partitioned asset timetable and no plain ``schedule=[asset]`` DAG (``airflow.assets.manager``:
``_queue_dagruns`` returns before the non-partitioned DAGs when the key is set), which would keep exactly the other
teams' DAGs that want to react to new dead letters from ever running.

Another DAG reacts to a table with ``schedule=[Asset.ref(name="rocketmq_retry.dead_letters")]`` (or
``table_asset("dead_letters")`` from this module, in a deployment with the same warehouse root) and reads the date
from ``triggering_asset_events``. Extras are data, not authority: the REST API lets a user with asset permissions
create events, so a consumer checks ``warehouse`` and ``config`` against its roots before using them
(``rocketmq_retry.airflow.settings.run_warehouse``/``run_config``, as the DAGs' own params are checked).

Ingest may also commit earlier dates' events (its catch-up of look-back dates, docs/airflow.md "Backfilling"); the
event names the run's own date only.
"""

from __future__ import annotations

import pathlib
from typing import Any

from airflow.sdk import Asset

from rocketmq_retry.contract import partition_dir
from rocketmq_retry.warehouse.partitions import JOB_TABLES

ASSET_PREFIX = "rocketmq_retry."
ASSET_GROUP = "rocketmq-retry"  # the Assets view groups them under this
REPORT_TABLE = "run_reports"  # what the daily DAG's report task commits (airflow/tasks.py)
# The daily DAG's task that commits each table: the two Spark jobs (each commits its tables of a date together)
# and the report.
TASK_TABLES: dict[str, tuple[str, ...]] = {**JOB_TABLES, "report": (REPORT_TABLE,)}


def asset_name(table: str) -> str:
    return f"{ASSET_PREFIX}{table}"


def table_asset(table: str, warehouse_root: str | None = None) -> Asset:
    """The Asset of ``table`` under the deployment's warehouse root (``airflow.warehouse_root``)."""
    if warehouse_root is None:
        from rocketmq_retry.airflow.settings import load_airflow_settings

        warehouse_root = str(load_airflow_settings().warehouse)
    uri = (pathlib.Path(warehouse_root) / table).as_uri()
    return Asset(name=asset_name(table), uri=uri, group=ASSET_GROUP)


def task_outlets(task_id: str, warehouse_root: str) -> list[Asset]:
    """The Assets ``task_id`` of the daily DAG commits (none for a task that commits no table)."""
    return [table_asset(table, warehouse_root) for table in TASK_TABLES.get(task_id, ())]


def partition_extra(paths: dict[str, Any], table: str) -> dict[str, Any]:
    """What one asset event says: the date and where its partition is (the run's own warehouse, which may be a
    sub-folder of the root given by the run's ``warehouse`` param)."""
    return {
        "ds": paths["ds"],
        "table": table,
        "partition": str(partition_dir(paths["warehouse"], table, paths["ds"])),
        "warehouse": paths["warehouse"],
        "config": paths.get("config") or None,
    }


def emit_partitions(context: Any, paths: dict[str, Any]) -> list[str]:
    """Give each of the running task's table outlets this run's partition as its event's extra; the events are
    recorded by Airflow when the task succeeds (and only then). Returns the tables named."""
    events = context["outlet_events"]
    named = []
    for outlet in getattr(context["task"], "outlets", None) or ():
        name = getattr(outlet, "name", "")
        if isinstance(outlet, Asset) and name.startswith(ASSET_PREFIX):
            table = name[len(ASSET_PREFIX) :]
            events[outlet].extra = partition_extra(paths, table)
            named.append(table)
    return named
