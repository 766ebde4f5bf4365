"""The one place a SparkSession is built, with settings that suit a 2-core machine by default."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def build_spark_session(
    app_name: str,
    *,
    master: str | None = None,
    driver_memory: str = "1g",
    shuffle_partitions: int = 4,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Build (or reuse) a session. Under spark-submit the master comes from the command line, so pass None."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # else Spark binds the first non-loopback address
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    settings = {
        "spark.driver.memory": driver_memory,
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": "UTC",  # every timestamp column is UTC (DESIGN §4)
        "spark.log.level": "WARN",
        # Progress bars are carriage-return animations: noise in job output and Airflow task logs.
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        # Parsers with many CASE branches generate methods over HotSpot's 8 kB JIT limit; without this flag
        # those run interpreted (measured: ingest ~40x slower).
        "spark.driver.extraJavaOptions": "-XX:-DontCompileHugeMethods",
        "spark.executor.extraJavaOptions": "-XX:-DontCompileHugeMethods",
        # Above HotSpot's 8 kB limit Spark falls back from whole-stage code to per-operator projections, whose
        # expression code is split into small methods the JIT compiles well; that suits the large event-building
        # stages. The ingest run raises it for its small, hot per-line screen (jobs/ingest.py).
        "spark.sql.codegen.hugeMethodLimit": "8000",
        # One ingest run generates ~106 classes; with the default cache of 100, a second run in the same session
        # (tests, a backfill loop) compiled them all again and the JIT started over on the new classes
        # (measured at 1.2 M lines: 81 recompiles, 18.2 s warm run; with this, 0 recompiles and 14.1 s).
        "spark.sql.codegen.cache.maxEntries": "1000",
        # Spark renders every executed plan as text for its listeners, each cached frame with its whole plan:
        # the reconstruction's plan strings reached hundreds of MB and ran a 1g driver out of heap.
        "spark.sql.maxPlanStringLength": "1000000",
    }
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
