"""spark_session.local_frame: the driver's own rows as a frame whose plan holds them (no Python worker), with the
values ``createDataFrame`` would give."""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rocketmq_retry import contract
from rocketmq_retry.spark_session import local_frame

pytestmark = pytest.mark.spark

DDL = "s string, t timestamp, m map<string,bigint>, a array<bigint>, b boolean, i int, n bigint, d date"
ROWS = [
    (
        "it's \\ a\nline\x00 é",
        datetime.datetime(2026, 11, 20, 23, 59, 1),  # naive: the driver's local time, as createDataFrame reads it
        {"consume message": 2, "none": None},
        [3, None],
        True,
        7,
        2**40,
        datetime.date(2026, 11, 20),
    ),
    (None, datetime.datetime(2026, 3, 29, 1, 30, tzinfo=datetime.UTC), None, None, None, None, None, None),
]


@pytest.fixture
def berlin() -> Iterator[None]:
    """The driver's Python in a zone that is not UTC (and changes its offset on 2026-03-29)."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Europe/Berlin"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


def _class_of_plan(df: Any) -> str:
    return df._jdf.queryExecution().optimizedPlan().getClass().getSimpleName()


def test_the_rows_come_back_as_create_data_frame_gives_them(spark: Any, berlin: None) -> None:
    from pyspark.sql.types import StructType

    schema = StructType.fromDDL(DDL)
    assert local_frame(spark, ROWS, schema).collect() == spark.createDataFrame(ROWS, schema).collect()
    assert local_frame(spark, ROWS, schema).collect()[0]["t"] == datetime.datetime(2026, 11, 20, 23, 59, 1)


def test_the_plan_holds_the_rows_so_no_python_worker_reads_them(spark: Any) -> None:
    report = local_frame(spark, [], contract.struct_type("ingest_report"))
    assert _class_of_plan(report) == "LocalRelation"
    assert report.schema == contract.struct_type("ingest_report")
    assert report.count() == 0
    quarantine = local_frame(spark, [("broker", "b.log", 3, "x", "truncated", 17)], contract.struct_type("quarantine"))
    assert _class_of_plan(quarantine) == "LocalRelation"
    # what it replaced: Python rows pickled into an RDD that Python workers unpickle
    pickled = spark.createDataFrame([("broker", "b.log", 3, "x", "truncated", 17)], contract.struct_type("quarantine"))
    assert _class_of_plan(pickled) == "LogicalRDD"
    assert quarantine.collect() == pickled.collect()


def test_a_row_of_the_wrong_width_is_an_error_naming_it(spark: Any) -> None:
    with pytest.raises(ValueError, match="row 1 has 5 values, the schema 6 columns"):
        local_frame(spark, [("a",) * 6, ("a",) * 5], contract.struct_type("quarantine"))
