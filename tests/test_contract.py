"""The data contract (rocketmq_retry/contract.py) is the one spelling of the tables: every writer's output columns
and types, the expectation suites' column sets and enumerations, the compensation reader's fields and the
engine's final states are held to it here, so a column renamed in one place fails loudly."""

from __future__ import annotations

import dataclasses
import datetime as dt
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from rocketmq_retry import contract
from rocketmq_retry.compensation.model import ROW_FIELDS, DeadLetter
from rocketmq_retry.dates import DateError
from rocketmq_retry.engine import FinalState
from rocketmq_retry.validation import suites

DS = "2026-11-20"


def _shape(schema: Any) -> list[tuple[str, str]]:
    """Column names, order and types (element nullability aside: Parquet keeps it, the contract does not)."""
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


def _contract_shape(table: str) -> list[tuple[str, str]]:
    return _shape(contract.struct_type(table))


def test_importable_without_spark() -> None:
    # The compensation tasks and the Airflow report run on workers without a Spark session.
    code = "import sys, rocketmq_retry.contract as c; c.columns('events'); print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_struct_type_is_the_ddl() -> None:
    for table, fields in contract.SCHEMAS.items():
        assert list(fields) == _contract_shape(table), table
        assert contract.columns(table) == tuple(n for n, _ in fields)
    with pytest.raises(KeyError, match="no table 'event'"):
        contract.columns("event")


def test_partition_dir_goes_through_the_date_parser(tmp_path: Any) -> None:
    assert contract.partition_dir(tmp_path, "events", DS) == tmp_path / "events" / f"dt={DS}"
    assert contract.partition_dir(str(tmp_path), "lifecycles", dt.date(2026, 11, 20)).name == f"dt={DS}"
    with pytest.raises(DateError, match="events partition date '20261120' is not a date"):
        contract.partition_dir(tmp_path, "events", "20261120")


def test_suites_check_the_contract() -> None:
    for table in suites.TABLES:
        assert suites.COLUMNS[table] == contract.columns(table), table
    assert suites.EVENT_TYPES == contract.EVENT_TYPES
    assert suites.FINAL_STATES == contract.FINAL_STATES
    assert suites.ANOMALY_CODES == contract.ANOMALY_CODES


def test_engine_final_states_map_to_table_values() -> None:
    assert {s.value: contract.final_state_of(s) for s in FinalState} == {
        "DEAD_LETTERED": "DEAD_LETTERED",
        "DROPPED": "DROPPED",
        "RETRYING_FOREVER": "IN_RETRY",
        "CONSUMED": "CONSUMED",
    }
    with pytest.raises(ValueError, match="'PAUSED' has no table value"):
        contract.final_state_of("PAUSED")


def test_dead_letter_reader_fields_are_contract_columns() -> None:
    fields = {f.name for f in dataclasses.fields(DeadLetter)} - {"dlq_date"}
    assert set(ROW_FIELDS) == fields
    assert fields <= set(contract.columns("dead_letters"))
    assert contract.KEY == ("consumer_group", "msg_id")


# The two checks that run the writers need the session's Spark (12-17 s in make test, 75-112 s beside two other Spark
# sessions on 2 cores); the checks above need none.
@pytest.mark.spark
def test_ingest_writers_write_the_contract(spark: Any) -> None:
    from rocketmq_retry.jobs.ingest import parse

    line = "2026-11-20 10:00:00,000 INFO some line the parser does not know"
    lines = spark.createDataFrame(
        [("rocketmq-client-4x", "h1/rocketmq_client.log", 1, line, "UTC", None)],
        "source string, source_file string, line_no long, line string, tz string, group_hint string",
    )
    instances = spark.createDataFrame([("h1/rocketmq_client.log", "h1")], "source_file string, instance string")
    classified = parse.classify(lines, DS, day_zone="UTC")
    groups = parse.line_groups(classified)
    outputs = {
        "events": parse.events_of(classified, instances),
        "quarantine": parse.quarantine_of(classified),
        "ingest_report": parse.report_of(groups),
        "bindings": parse.bindings_of(groups, instances),
    }
    for table, df in outputs.items():
        assert _shape(df.schema) == _contract_shape(table), table


@pytest.mark.spark
def test_reconstruct_writers_write_the_contract(spark: Any) -> None:
    from rocketmq_retry.config import Config
    from rocketmq_retry.jobs.reconstruct.job import TABLES
    from rocketmq_retry.jobs.reconstruct.pipeline import reconstruct

    t0 = dt.datetime(2026, 11, 20, 10, 0, 0)
    base = dict.fromkeys(contract.columns("events"))
    rows = [
        {**base, "event_id": "e1", "event_time": t0, "source": "trace", "source_file": "f", "line_no": 1,
         "event_type": "DELIVERED", "consumer_group": "G", "msg_id": "M", "topic": "T", "reconsume_times": 0},
        {**base, "event_id": "e2", "event_time": t0 + dt.timedelta(milliseconds=5), "source": "trace",
         "source_file": "f", "line_no": 2, "event_type": "CONSUME_FAILED", "consumer_group": "G", "msg_id": "M",
         "topic": "T", "reconsume_times": 0},
    ]  # fmt: skip
    events = spark.createDataFrame(rows, contract.struct_type("events"))
    out = reconstruct(spark, events, Config(), DS)
    try:
        for table in TABLES:
            assert _shape(getattr(out, table).schema) == _contract_shape(table), table
    finally:
        out.release()


def test_design_shows_the_contract_as_contract_py_spells_it() -> None:
    """DESIGN §4's tables are generated (``python -m rocketmq_retry.contract --write docs/DESIGN.md``): a column or
    value added, renamed or reordered in contract.py and not regenerated fails here."""
    design = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    assert contract.document_with_markdown(design) == design
    assert "| `ingest_report` | `source_file` string," in design and "`dlq_inferred` boolean" in design


def test_the_generated_block_changes_with_the_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    before = contract.markdown()
    monkeypatch.setitem(contract.SCHEMAS, "bindings", (*contract.SCHEMAS["bindings"], ("extra", "string")))
    assert contract.markdown() != before and "`lines` bigint, `extra` string |" in contract.markdown()
