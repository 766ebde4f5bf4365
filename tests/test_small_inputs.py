"""A small input runs on Spark's interpreted expressions (``spark.interpreted_below_rows``, docs/scale.md "Small
days"): the choice, the session it leaves behind, and outputs identical row for row to generated code's."""

from __future__ import annotations

import pathlib

import pytest
import yaml
from pyspark.sql import functions as F
from pyspark.sql.types import MapType

from rocketmq_retry.config import Config
from rocketmq_retry.spark_session import INTERPRETED, session_settings, small_input_settings
from rocketmq_retry.warehouse.partitions import JOB_TABLES, committed

ROOT = pathlib.Path(__file__).resolve().parent.parent
DAY = "2026-11-20"


def test_below_the_limit_interpreted_at_or_above_generated() -> None:
    assert small_input_settings(199_999, 200_000, {}) == INTERPRETED
    assert small_input_settings(200_000, 200_000, {}) == {}
    assert small_input_settings(0, 0, {}) == {}  # 0: never


def test_a_setting_the_config_pins_is_left_to_it() -> None:
    pinned = {"spark.sql.codegen.wholeStage": "true"}
    assert small_input_settings(10, 200_000, pinned) == {"spark.sql.codegen.factoryMode": "NO_CODEGEN"}


def test_the_default_limit_is_documented() -> None:
    assert Config().spark.interpreted_below_rows == 200_000
    assert "interpreted_below_rows: 200000" in (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


def test_session_settings_restore_what_was_there(spark) -> None:  # type: ignore[no-untyped-def]
    key_unset, key_set = "spark.sql.codegen.factoryMode", "spark.sql.codegen.wholeStage"
    spark.conf.unset(key_unset)
    spark.conf.set(key_set, "true")
    try:
        with session_settings(spark, INTERPRETED):
            assert spark.conf.get(key_unset) == "NO_CODEGEN"
            assert spark.conf.get(key_set) == "false"
        assert spark.conf.get(key_unset, None) is None
        assert spark.conf.get(key_set) == "true"
        with pytest.raises(RuntimeError), session_settings(spark, INTERPRETED):
            raise RuntimeError("a failed step")
        assert spark.conf.get(key_set) == "true"  # restored on the way out of a failure too
    finally:
        spark.conf.unset(key_set)


def _comparable(df):  # type: ignore[no-untyped-def]
    # set operations refuse MAP columns (ingest_report's per-kind counts): their sorted entries instead
    return df.select(
        *(
            F.array_sort(F.map_entries(df[f.name])).alias(f.name) if isinstance(f.dataType, MapType) else df[f.name]
            for f in df.schema.fields
        )
    )


@pytest.mark.slow
def test_generated_code_writes_the_same_tables_as_interpreted(  # type: ignore[no-untyped-def]
    spark, example_day: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example day (2,623 lines, 878 events) is small: the session fixture's run was interpreted. Run again with
    the limit at 0 (generated code, as every large day runs), every table of both jobs must be the same rows.

    Slow (``make test-all``): two jobs with generated code, two minutes of a CI worker on a slow 2-core machine;
    ``make test``'s tests that call the reconstruction's transforms directly run generated code on the tests'
    session."""
    from rocketmq_retry.cli import main as rocketmq_retry

    config = yaml.safe_load((ROOT / "examples" / "rocketmq-retry.yaml").read_text(encoding="utf-8"))
    config.setdefault("spark", {})["interpreted_below_rows"] = 0
    path = tmp_path / "generated.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    warehouse = tmp_path / "warehouse"
    common = ["--date", DAY, "--warehouse", str(warehouse), "--config", str(path)]
    assert rocketmq_retry(["ingest", *common, "--landing", str(ROOT / "examples" / "landing")]) == 0
    assert rocketmq_retry(["reconstruct", *common]) == 0
    said = capsys.readouterr()
    assert "interpreted" not in said.out + said.err
    tables = JOB_TABLES["ingest"] + JOB_TABLES["reconstruct"]
    for table in tables:
        left = _comparable(spark.read.parquet(str(committed(example_day, table, DAY))))
        right = _comparable(spark.read.parquet(str(committed(warehouse, table, DAY))))
        assert left.schema == right.schema, table
        assert (left.count(), left.exceptAll(right).count(), right.exceptAll(left).count()) == (
            right.count(),
            0,
            0,
        ), table
    assert spark.read.parquet(str(committed(warehouse, "events", DAY))).count() == 878
