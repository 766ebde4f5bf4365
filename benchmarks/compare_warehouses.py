"""Compare one date's tables of two warehouses row by row (not a test): the proof that a change of the jobs'
code kept their output, e.g. a restructuring run against a baseline written before it.

    .venv/bin/python benchmarks/compare_warehouses.py BASE AFTER --date D [--tables transitions,lifecycles,...]

Per table: both row counts and ``exceptAll`` both ways (duplicates count, column order and types must agree; a MAP
column is compared as its sorted entries). Works for any table, e.g. the ingest job's
``--tables events,quarantine,ingest_report,bindings``.
Exits 1 when any table differs or is missing on one side, printing up to five differing rows each way.
"""

from __future__ import annotations

import argparse
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import MapType

from rocketmq_retry.spark_session import build_spark_session
from rocketmq_retry.warehouse.partitions import JOB_TABLES, committed

# every table the reconstruction commits (failures, failure_causes and incidents came after this script)
RECONSTRUCT_TABLES = JOB_TABLES["reconstruct"]


def _comparable(df: DataFrame) -> DataFrame:
    """Set operations refuse MAP columns (ingest_report's per-kind counts): compare their sorted entries instead."""
    return df.select(
        *(
            F.array_sort(F.map_entries(df[f.name])).alias(f.name) if isinstance(f.dataType, MapType) else df[f.name]
            for f in df.schema.fields
        )
    )


def compare(spark: SparkSession, base: str, after: str, day: str, tables: tuple[str, ...]) -> bool:
    same = True
    for table in tables:
        left_path, right_path = committed(base, table, day), committed(after, table, day)
        if not (left_path.is_dir() and right_path.is_dir()):
            print(f"{table}: missing ({left_path} exists: {left_path.is_dir()}, {right_path} exists: "
                  f"{right_path.is_dir()})")  # fmt: skip
            same = False
            continue
        left, right = spark.read.parquet(str(left_path)), spark.read.parquet(str(right_path))
        if left.schema != right.schema:
            print(f"{table}: schemas differ\n  {left.schema.simpleString()}\n  {right.schema.simpleString()}")
            same = False
            continue
        left, right = _comparable(left), _comparable(right)
        only_left, only_right = left.exceptAll(right), right.exceptAll(left)
        n_left, n_right, n_only_left, n_only_right = left.count(), right.count(), only_left.count(), only_right.count()
        ok = n_left == n_right and n_only_left == 0 and n_only_right == 0
        print(f"{table}: {n_left} vs {n_right} rows, only in base {n_only_left}, only in after {n_only_right}"
              f" -> {'identical' if ok else 'DIFFERENT'}")  # fmt: skip
        for label, rows in (("base", only_left), ("after", only_right)):
            for row in rows.limit(5).collect():
                print(f"  only in {label}: {row}")
        same = same and ok
    return same


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("base")
    p.add_argument("after")
    p.add_argument("--date", required=True)
    p.add_argument("--tables", default=",".join(RECONSTRUCT_TABLES), help="comma-separated table names")
    args = p.parse_args(argv)
    spark = build_spark_session("compare-warehouses", master="local[2]", shuffle_partitions=4)
    spark.sparkContext.setLogLevel("ERROR")
    tables = tuple(t for t in args.tables.split(",") if t)
    return 0 if compare(spark, args.base, args.after, args.date, tables) else 1


if __name__ == "__main__":
    sys.exit(main())
