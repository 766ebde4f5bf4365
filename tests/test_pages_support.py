"""A tiny literal warehouse for the operator's pages: a few rows per table, written with the data contract's
columns, some of them carrying markup the way a hostile producer could put it in a key, a topic or a group name.
The compensation ledger is filled by the real batch service, with a handler that fails for one topic so that
rows are FAILED (re-drivable) and others DONE."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import pathlib
from collections.abc import Iterator
from typing import Any

import yaml

from conftest import ROOT
from rocketmq_retry import contract

DAY = "2026-11-21"
HOSTILE_KEY = '<img src=x onerror="document.body.dataset.pwned=1">'
HOSTILE_TOPIC = '"onerror="alert(1)'
HOSTILE_GROUP = "<script>document.title='pwned'</script>"
PLAIN = "7F0000010000000000000000000000A"  # msg_ids: PLAIN + digit


def _arrow_type(dtype: str) -> Any:
    import pyarrow as pa

    atoms = {
        "string": pa.string(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "bigint": pa.int64(),
        "int": pa.int32(),
        "boolean": pa.bool_(),
        "double": pa.float64(),
    }
    if dtype in atoms:
        return atoms[dtype]
    if dtype.startswith("array<"):
        return pa.list_(_arrow_type(dtype[6:-1]))
    key, value = dtype[4:-1].split(",", 1)
    return pa.map_(_arrow_type(key), _arrow_type(value))


def write_table(warehouse: pathlib.Path, table: str, ds: str, rows: list[dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(name, _arrow_type(t)) for name, t in contract.SCHEMAS[table]])
    full = [{name: row.get(name) for name in schema.names} for row in rows]
    path = contract.partition_dir(warehouse, table, ds)
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(full, schema=schema), path / "part-00000.parquet")


def _t(minute: int, second: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, 21, 3, minute, second, tzinfo=dt.UTC)


def letters() -> list[dict[str, Any]]:
    """Five dead letters: three of order-consumer (topic orders, the FAILING handler), one of pay-consumer, one of
    the hostile group with the hostile key and topic."""
    rows = []
    specs = [
        ("order-consumer", "orders", "TagA", "ORD-1"),
        ("order-consumer", "orders", "TagB", "ORD-2"),
        ("order-consumer", "orders", "TagA", "ORD-3"),
        ("pay-consumer", "payments", "TagP", "PAY-9"),
        (HOSTILE_GROUP, HOSTILE_TOPIC, "TagX", HOSTILE_KEY),
    ]
    for i, (group, topic, tag, key) in enumerate(specs):
        rows.append(
            {
                "consumer_group": group,
                "msg_id": f"{PLAIN}{i}",
                "original_topic": topic,
                "dlq_at": _t(10 + i),
                "reconsume_times": 16,
                "keys": key,
                "tags": tag,
                "business_key": key,
                "body": '{"orderId": 1}',
                "dlq_inferred": False,
                "evidence": [f"ev-{i}-dlq"],
                "attribution": ["line"],
                "compensable": True,
            }
        )
    return rows


def lifecycles(dead: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = [
        {
            "consumer_group": d["consumer_group"],
            "msg_id": d["msg_id"],
            "original_topic": d["original_topic"],
            "keys": d["keys"],
            "tags": d["tags"],
            "business_key": d["business_key"],
            "first_seen": _t(0),
            "last_seen": d["dlq_at"],
            "deliveries": 17,
            "final_state": "DEAD_LETTERED",
            "expected_final_state": "DEAD_LETTERED",
            "max_reconsume_times": 16,
            "anomalies": [],
            "evidence_class": "FULL",
            "attribution": ["line"],
            "instances": ["app-1"],
        }
        for d in dead
    ]
    rows.append(
        {
            "consumer_group": "order-consumer",
            "msg_id": f"{PLAIN}9",
            "original_topic": "orders",
            "keys": "ORD-9",
            "tags": "TagA",
            "first_seen": _t(0),
            "last_seen": _t(0, 5),
            "deliveries": 2,
            "final_state": "CONSUMED",
            "expected_final_state": "CONSUMED",
            "max_reconsume_times": 16,
            "anomalies": ["LATE_REDELIVERY"],
            "evidence_class": "FULL",
            "attribution": ["line"],
            "instances": ["app-1"],
        }
    )
    return rows


def transitions_and_events(dead: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The hostile letter's path: delivered, failed, scheduled at level 3, redelivered late, then the DLQ."""
    d = dead[-1]
    key = {"consumer_group": d["consumer_group"], "msg_id": d["msg_id"]}
    hops = [
        ("NEW", "DELIVERED", d["original_topic"], _t(0), _t(0), 0, None, 0),
        ("DELIVERED", "SCHEDULED", "SCHEDULE_TOPIC_XXXX", _t(0, 1), _t(0, 1), 0, 3, 1),
        ("SCHEDULED", "DELIVERED", f"%RETRY%{d['consumer_group']}", _t(0, 45), _t(0, 11), 34_000, 3, 1),
        ("DELIVERED", "DEAD_LETTERED", f"%DLQ%{d['consumer_group']}", d["dlq_at"], d["dlq_at"], 0, None, 16),
    ]
    transitions, events = [], []
    for i, (src, dst, topic, observed, expected, drift, level, times) in enumerate(hops):
        event_id = f"ev-4-{i}"
        transitions.append(
            {
                **key,
                "hop": i,
                "from_state": src,
                "to_state": dst,
                "observed_at": observed,
                "expected_at": expected,
                "drift_ms": drift,
                "delay_level": level,
                "reconsume_times": times,
                "physical_topic": topic,
                "queue_id": 0,
                "inferred": False,
                "evidence": [event_id],
            }
        )
        events.append(
            {
                **key,
                "event_id": event_id,
                "event_time": observed,
                "source": "rocketmq-client-4x",
                "source_file": "app-1/logs/rocketmq_client.log",
                "line_no": 100 + i,
                "event_type": {"DELIVERED": "DELIVERED", "SCHEDULED": "SEND_BACK"}.get(dst, "DEAD_LETTERED"),
                "topic": topic,
                "original_topic": d["original_topic"],
                "keys": d["keys"],
                "reconsume_times": times,
                "thread": HOSTILE_KEY,
                "detail": HOSTILE_KEY,
            }
        )
    return transitions, events


def refuse(letter: Any) -> str:
    """A compensation handler whose downstream is down: the ledger records FAILED."""
    raise RuntimeError(f"refund service unavailable for {letter.msg_id}")


def build_site(
    root: pathlib.Path,
    tables: dict[str, list[dict[str, Any]]],
    routes: list[dict[str, str]],
    handlers: dict[str, str],
    settings: dict[str, Any] | None = None,
) -> tuple[pathlib.Path, pathlib.Path]:
    """(warehouse, config): ``tables`` written for DAY, then compensated once under a config of ``routes`` and
    python ``handlers`` (name -> callable), one attempt each, as the scheduled run of the next day would;
    ``settings``: other top-level config keys (``timezone``)."""
    from rocketmq_retry.compensation.batches import compensate_batch, plan_batches

    warehouse = root / "warehouse"
    for table, rows in tables.items():
        write_table(warehouse, table, DAY, rows)
    config = root / "rocketmq-retry.yaml"
    compensation = {
        "max_attempts": 1,
        "routes": routes,
        "handlers": {name: {"type": "python", "callable": target} for name, target in handlers.items()},
    }
    config.write_text(yaml.safe_dump({**(settings or {}), "compensation": compensation}), encoding="utf-8")
    for batch in plan_batches(DAY, warehouse, config):
        compensate_batch(batch, "scheduled__2026-11-21", str(config))
    return warehouse, config


def build(root: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """(warehouse, config): the literal day and its ledger (orders FAILED, the rest DONE)."""
    dead = letters()
    transitions, events = transitions_and_events(dead)
    return build_site(
        root,
        {"dead_letters": dead, "lifecycles": lifecycles(dead), "transitions": transitions, "events": events},
        [{"topic": "orders", "handler": "refunds"}, {"handler": "log-only"}],
        {"refunds": "test_pages_support:refuse", "log-only": "rocketmq_retry.compensation.handlers:log_only"},
    )


def html_client(warehouse: pathlib.Path, config: pathlib.Path) -> Any:
    """The pages over ``warehouse`` without Airflow's authentication, asking for HTML as a browser does."""
    from fastapi.testclient import TestClient

    from rocketmq_retry.airflow.pages import app as pages

    return TestClient(pages.create_pages_app(lambda: pages.Source(warehouse, config), authenticate=False),
                      headers={"accept": "text/html"})  # fmt: skip


@contextlib.contextmanager
def airflow_api_app(warehouse: pathlib.Path, config: pathlib.Path) -> Iterator[Any]:
    """Airflow's own api-server app (with the plugin's pages and API) over ``warehouse``: a metadata database with
    the DAGs in it, as the dag-processor would put them there (the pages' read check asks for the daily DAG); the
    deployment's environment restored afterwards."""
    from airflow.api_fastapi.main import app
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import BundleDagBag, sync_bag_to_db
    from airflow.utils import db

    env = {"ROCKETMQ_RETRY_WAREHOUSE_ROOT": str(warehouse), "ROCKETMQ_RETRY_CONFIG": str(config)}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        db.initdb()
        manager = DagBundlesManager()
        manager.sync_bundles_to_db()
        bundle = next(b for b in manager.get_all_dag_bundles() if b.name == "dags-folder")
        bundle.initialize()
        bag = BundleDagBag(dag_folder=str(ROOT / "dags"), bundle_path=bundle.path, bundle_name=bundle.name)
        assert bag.import_errors == {}
        sync_bag_to_db(bag, bundle.name, None)
        yield app
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
