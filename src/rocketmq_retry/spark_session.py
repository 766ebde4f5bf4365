"""The one place a SparkSession is built, with settings that suit a 2-core machine by default: a classic session
(local, or the driver of a spark-submit), or a Spark Connect session when PySpark's own ``SPARK_REMOTE`` names a
server (``sc://host:port``; docs/airflow.md "A warm Spark Connect server")."""

from __future__ import annotations

import contextlib
import os
import pathlib
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


# the JVM flags of every driver and executor (also in spark/spark-defaults.conf, for spark-submit). The Tier4
# thresholds, three times HotSpot's defaults, keep C2 to the methods that stay hot: Spark generates new classes for
# every stage, and compiling them was 43 % of the 10 M-line reconstruction's CPU (docs/scale.md, "Where the night's
# A/Bs went": 5-6 % less wall time and 7 % less CPU for both jobs, three pairs).
JAVA_OPTIONS = (
    "-XX:-DontCompileHugeMethods -XX:+UseParallelGC "
    "-XX:Tier4InvocationThreshold=15000 -XX:Tier4CompileThreshold=45000 -XX:Tier4BackEdgeThreshold=120000"
)


def class_archive() -> pathlib.Path:
    """Where set-up writes the archive of the classes a Spark driver's JVM loads (``python -m
    rocketmq_retry.spark_classes``, which ``make setup`` runs): in this Python environment, whose PySpark jars
    it was made from."""
    return pathlib.Path(sys.prefix) / "share" / "rocketmq-retry" / "spark-classes.jsa"


def driver_java_options() -> str:
    """The driver's JVM flags: ``JAVA_OPTIONS``, and the class archive when set-up wrote one, so that the JVM maps
    Spark's classes from it instead of reading, parsing and verifying them from the jars again (HotSpot's class
    data sharing: one Spark start 11-12 -> 6 s, docs/scale.md "Spark starts"). HotSpot checks the archive
    against its own build and the class path and, should either differ (another Java, PySpark upgraded without a
    new set-up), starts without it and says nothing. Only the driver's: an executor of a cluster runs elsewhere,
    and in local mode the driver is the executor. A path with a blank is not passed (Spark splits these flags at
    blanks)."""
    archive = class_archive()
    if archive.is_file() and not any(c.isspace() for c in str(archive)):
        return f"{JAVA_OPTIONS} -XX:SharedArchiveFile={archive}"
    return JAVA_OPTIONS


def build_spark_session(
    app_name: str,
    *,
    master: str | None = None,
    driver_memory: str = "1g",
    shuffle_partitions: int = 4,
    conf: Mapping[str, str] | None = None,
    remote: str | None = None,
) -> SparkSession:
    """Build (or reuse) a session. Under spark-submit the master comes from the command line, so pass None.

    ``remote`` (default: ``$SPARK_REMOTE``) connects to a Spark Connect server instead of starting a JVM here: the
    settings below that belong to a session (``spark.sql.*``) are set on it; the server's own (memory, JVM flags)
    are the server's, and the client drops them without error."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # else Spark binds the first non-loopback address
    remote = _remote(remote)
    if remote:
        # Connect's own builder: the classic one refuses a remote session while a classic one runs in this process
        # (a test suite's). PySpark's functions (F.col, ...) build Connect columns only while this variable is set,
        # as the classic builder would set it; the Airflow task unsets it again (operators.spark_connect_client).
        from pyspark.sql.connect.session import SparkSession as RemoteSession

        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
        builder = RemoteSession.builder.remote(remote).appName(app_name)
    else:
        builder = SparkSession.builder.appName(app_name)
        if master:
            builder = builder.master(master)
    settings = default_settings(driver_memory, shuffle_partitions)
    settings.update(conf or {})
    if remote:
        # The server's JVM, memory and static settings are its own: only a session's SQL settings apply, and PySpark
        # warns once per other key it cannot set (seven warnings in every task log otherwise).
        settings = {k: v for k, v in settings.items() if k.startswith("spark.sql.")}
    for key, value in settings.items():
        builder = builder.config(key, value)
    with warnings.catch_warnings():
        if remote:  # a static SQL setting (the codegen cache size) is the server's too
            warnings.filterwarnings("ignore", message=r"Failed to set spark\.sql\..*CANNOT_MODIFY_STATIC_CONFIG")
        return builder.getOrCreate()


def default_settings(driver_memory: str = "1g", shuffle_partitions: int = 4) -> dict[str, str]:
    """The settings every session gets unless the config's ``spark.conf`` overrides them; spark-submit reads the
    same from ``spark/spark-defaults.conf`` (tests/test_spark_settings.py keeps the two the same)."""
    return {
        "spark.driver.memory": driver_memory,
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": "UTC",  # every timestamp column is UTC (DESIGN §4)
        "spark.log.level": "WARN",
        # Progress bars are carriage-return animations: noise in job output and Airflow task logs.
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        # Parsers with many CASE branches generate methods over HotSpot's 8 kB JIT limit; without the first flag
        # those run interpreted (measured: ingest ~40x slower). The throughput collector: these are batch jobs, and
        # on 2 cores G1's concurrent work competes with the tasks (10 M-line day, spark-submit: ingest 116.9 ->
        # 105.9 s, reconstruct 75.6 -> 70.1 s, and lower peaks; docs/scale.md).
        "spark.driver.extraJavaOptions": driver_java_options(),
        "spark.executor.extraJavaOptions": JAVA_OPTIONS,
        # Above HotSpot's 8 kB limit Spark falls back from whole-stage code to per-operator projections, whose
        # expression code is split into small methods the JIT compiles well; that suits the large event-building
        # stages. The ingest run raises it for its small, hot per-line screen (jobs/ingest/job.py).
        "spark.sql.codegen.hugeMethodLimit": "8000",
        # One ingest run generates ~106 classes; with the default cache of 100, a second run in the same session
        # (tests, a backfill loop) compiled them all again and the JIT started over on the new classes
        # (measured at 1.2 M lines: 81 recompiles, 18.2 s warm run; with this, 0 recompiles and 14.1 s).
        "spark.sql.codegen.cache.maxEntries": "1000",
        # Spark renders every executed plan as text for its listeners, each cached frame with its whole plan:
        # the reconstruction's plan strings reached hundreds of MB and ran a 1g driver out of heap.
        "spark.sql.maxPlanStringLength": "1000000",
        # Its default is "are we in Spark's own tests?", read from the environment each time it is asked, and
        # Spark 4.2 asks for every field of every aggregation buffer it creates (TypeOps.apply): ~4 % of the
        # 10 M-line reconstruction's CPU went to System.getenv. Set, it is read as a value (false is the default
        # outside Spark's tests, so nothing else changes).
        "spark.sql.types.framework.enabled": "false",
    }


def _remote(remote: str | None = None) -> str | None:
    return remote or os.environ.get("SPARK_REMOTE") or None


def is_remote() -> bool:
    """Whether ``build_spark_session`` builds a Spark Connect session here (``SPARK_REMOTE`` is set)."""
    return _remote() is not None


def active_session() -> SparkSession | None:
    """The session this process already has, of the kind ``build_spark_session`` would build now: with
    ``SPARK_REMOTE`` set a classic session (a test suite's) is not the one to use."""
    if _remote():
        from pyspark.sql.connect.session import SparkSession as RemoteSession

        return RemoteSession.getActiveSession()  # type: ignore[return-value]
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


# Spark's interpreted expressions instead of generated code. On a small input a step's time is mostly generating
# code and compiling it (Janino, then the JIT on the JVM's other threads), not rows: the example day's three CLI
# steps 171-181 s -> 140-153 s, their CPU 279-297 -> 222-237 s (docs/scale.md "Small days"). ``factoryMode`` is an
# internal setting of Spark's SQLConf (``CodegenObjectFactoryMode``), read as each plan's projections and
# predicates are built; results are the same either way (Spark's own tests run both modes), and the jobs' outputs
# were compared row for row (docs/scale.md).
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


@contextlib.contextmanager
def session_settings(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """``settings`` on the session for the block, the values before it restored after: a session that outlives
    the step (a test suite's, ``rocketmq-retry run``'s, a Connect server's) keeps its own."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def small_input_settings(rows: int, below: int, pinned: Mapping[str, str]) -> dict[str, str]:
    """The settings of a step over ``rows`` input rows: ``INTERPRETED`` when it has fewer than ``below``
    (``spark.interpreted_below_rows``; 0: never), less the keys the config's ``spark.conf`` sets itself."""
    if rows >= below:
        return {}
    return {key: value for key, value in INTERPRETED.items() if key not in pinned}


def release_checkpoint(df: DataFrame) -> None:
    """Free a local checkpoint's blocks now. They belong to the checkpoint's RDD, not to the cache manager that
    ``DataFrame.unpersist()`` asks; a session that outlives the run (tests, a notebook, a Connect server) would
    otherwise keep them per date it processed."""
    if df.is_cached:
        df.unpersist()
        return
    jdf = getattr(df, "_jdf", None)
    if jdf is not None:  # classic: the RDD behind the checkpointed plan
        jdf.queryExecution().logical().rdd().unpersist(False)
        return
    # Spark Connect: the server holds the checkpoint as a cached remote relation until the client releases it,
    # which the client does when the plan object is collected; release it now and only once.
    plan = getattr(df, "_plan", None)
    if plan is not None and getattr(plan, "_relation_id", None) is not None:
        plan.__del__()
        plan._relation_id = None


def local_frame(spark: SparkSession, rows: Sequence[Sequence[Any]], schema: StructType) -> DataFrame:
    """``rows`` (tuples in ``schema``'s column order, as ``createDataFrame`` takes them) as a DataFrame whose plan
    holds them: for the handful of rows the driver itself computes (an engine's schedule, a file's report row).

    ``spark.createDataFrame`` of Python rows pickles them into an RDD that Python workers unpickle: the first job
    that reads such a frame waits for ``pyspark.daemon`` to start, 1-2 s of a small step for a few rows, even for
    none (docs/scale.md "Spark starts"). As an Arrow table the rows reach the JVM as Arrow batches that Spark turns
    into a local relation on the driver (an RDD of the batches only above
    ``spark.sql.execution.arrow.localRelationThreshold``), with no Python worker; on Spark Connect the client sends
    the same batches. A naive ``datetime`` is read as the driver's local time, as ``createDataFrame`` reads one."""
    import datetime

    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import TimestampType

    arrow = to_arrow_schema(schema, timezone="UTC")
    width = len(schema.fields)
    for i, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"local_frame: row {i} has {len(row)} values, the schema {width} columns")

    def column(i: int) -> list[Any]:
        values = [row[i] for row in rows]
        if isinstance(schema.fields[i].dataType, TimestampType):
            # Arrow reads a naive datetime as UTC; createDataFrame (and a collected Row) as local time
            return [v.astimezone() if isinstance(v, datetime.datetime) and v.tzinfo is None else v for v in values]
        return values

    table = pa.Table.from_arrays([pa.array(column(i), type=arrow.field(i).type) for i in range(width)], schema=arrow)
    return spark.createDataFrame(table, schema)
