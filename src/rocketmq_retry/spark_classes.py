"""Write the archive of the classes a Spark driver's JVM loads (HotSpot's class data sharing), which every later
driver JVM of this environment maps instead of reading, parsing and verifying Spark's classes from its jars:
one Spark start 11-12 -> 6 s on 2 cores (docs/scale.md "Spark starts"). ``make setup`` runs this once per
install; ``spark_session.driver_java_options`` passes the archive to every driver when it is there.

    python -m rocketmq_retry.spark_classes [--force]

The archive belongs to one Java build and one set of PySpark jars, so a stamp of both sits beside it, and a run
with the same stamp does nothing. HotSpot checks the archive itself too, and starts without it when either
differs. The classes are those of a JVM that starts a session and runs the kinds of query the jobs run (text
and gzip reads, splits and regular expressions, JSON, windows, hash and object-hash aggregations, joins, a local
checkpoint, a cache, a Parquet round trip), with generated code and with interpreted expressions, the two modes a
step runs in (``spark_session.small_input_settings``).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rocketmq_retry.spark_session import INTERPRETED, JAVA_OPTIONS, build_spark_session, class_archive, session_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PROG = "python -m rocketmq_retry.spark_classes"
# HotSpot writes the archive as the JVM exits: a few seconds for ~20,000 classes, far longer on a loaded machine
EXIT_TIMEOUT_S = 300


def stamp_path(archive: pathlib.Path) -> pathlib.Path:
    return archive.with_name(archive.name + ".stamp")


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(pathlib.Path(home) / "bin" / "java") if home else "java"


def environment_stamp() -> str:
    """What the archive was made from: the Java build (``java -version``, the same ``java`` spark-submit runs) and
    the name, size and time of every jar PySpark puts on the class path."""
    import pyspark

    version = subprocess.run([_java(), "-version"], capture_output=True, text=True, check=True).stderr
    jars = sorted((pathlib.Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    listing = "".join(f"{jar.name} {jar.stat().st_size} {jar.stat().st_mtime_ns}\n" for jar in jars)
    return hashlib.sha256(f"{version}\n{listing}".encode()).hexdigest()


def up_to_date(archive: pathlib.Path, stamp: str) -> bool:
    marker = stamp_path(archive)
    return archive.is_file() and marker.is_file() and marker.read_text(encoding="utf-8").strip() == stamp


def exercise(spark: SparkSession, workdir: pathlib.Path) -> None:
    """Queries of the shapes the jobs run, so that the classes they load go into the archive."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    lines = [
        f"2026-11-20 10:00:{i % 60:02d},{i:03d} WARN ConsumeMessageThread_{i % 4} - consume message failed, "
        f'msgId=AC11000100002A9F0000000000{i:06d} {{"topic":"ORDER","reconsumeTimes":{i % 3}}}'
        for i in range(400)
    ]
    workdir.mkdir(parents=True)
    (workdir / "app.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with gzip.open(workdir / "app.log.1.gz", "wt", encoding="utf-8") as out:
        out.write("\n".join(lines[:100]) + "\n")
    text = spark.read.text([str(workdir / "app.log"), str(workdir / "app.log.1.gz")])
    parsed = text.select(
        F.col("_metadata.file_path").alias("file"),  # as the ingest reads it (jobs/ingest/read.py)
        F.monotonically_increasing_id().alias("line"),
        F.split(F.col("value"), " ", 5).alias("parts"),
        F.regexp_extract("value", r"msgId=([0-9A-F]+)", 1).alias("msg_id"),
        F.from_json(F.regexp_extract("value", r"(\{.*\})", 1), "topic STRING, reconsumeTimes INT").alias("body"),
    ).localCheckpoint()
    by_message = Window.partitionBy("msg_id").orderBy("line")
    hops = parsed.select(
        "msg_id",
        "line",
        F.col("parts")[2].alias("level"),
        F.row_number().over(by_message).alias("hop"),
        F.lag("line").over(by_message).alias("previous"),
        F.last(F.col("body.topic"), ignorenulls=True).over(by_message).alias("topic"),
    ).cache()
    facts = hops.groupBy("msg_id").agg(
        F.count("*").alias("n"),
        F.max("hop").alias("hops"),
        F.size(F.collect_set("level")).alias("levels"),
        F.min_by("topic", "line").alias("first_topic"),
    )
    joined = hops.join(facts, "msg_id", "left").filter(F.col("n") > 0)
    joined.write.mode("overwrite").partitionBy("level").parquet(str(workdir / "table"))
    spark.read.parquet(str(workdir / "table")).groupBy("level").agg(F.sum("n")).collect()
    hops.unpersist()


def stop_and_wait_for_jvm(spark: SparkSession, timeout_s: float = EXIT_TIMEOUT_S) -> int:
    """Stop ``spark`` and wait until the JVM this process started has exited, so that what HotSpot writes as it
    exits (the archive, a class-loading log) is complete; its exit status. Without this, the JVM exits only after
    Python does, while nobody waits for it."""
    from pyspark import SparkContext

    jvm = getattr(SparkContext._gateway, "proc", None)  # PySpark keeps the JVM's process only there
    spark.stop()
    if jvm is None or jvm.stdin is None:
        raise RuntimeError(f"{PROG}: PySpark did not start its JVM in this process")
    jvm.stdin.close()  # the gateway JVM exits when its stdin closes
    return jvm.wait(timeout=timeout_s)


def write_archive(archive: pathlib.Path) -> None:
    """Run ``exercise`` in a new JVM that writes its loaded classes as it exits, then put the archive in place."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(archive.name + ".partial")
    partial.unlink(missing_ok=True)
    flags = f"{JAVA_OPTIONS} -XX:ArchiveClassesAtExit={partial} -Xlog:cds=off,cds+dynamic=off"
    spark = build_spark_session("rocketmq-retry-class-archive", master="local[2]", conf={
        "spark.driver.extraJavaOptions": flags, "spark.log.level": "ERROR",
    })  # fmt: skip
    try:
        with tempfile.TemporaryDirectory(prefix="rocketmq-retry-classes-") as tmp:
            exercise(spark, pathlib.Path(tmp) / "generated")
            with session_settings(spark, INTERPRETED):
                exercise(spark, pathlib.Path(tmp) / "interpreted")
    finally:
        status = stop_and_wait_for_jvm(spark)
    if not partial.is_file():
        raise RuntimeError(f"{PROG}: the JVM exited ({status}) without writing {partial}")
    os.replace(partial, archive)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="write the archive even if its stamp is current")
    ns = parser.parse_args(argv)
    archive = class_archive()
    stamp = environment_stamp()
    if not ns.force and up_to_date(archive, stamp):
        print(f"class archive up to date: {archive}")
        return 0
    started = time.monotonic()
    stamp_path(archive).unlink(missing_ok=True)
    write_archive(archive)
    stamp_path(archive).write_text(stamp + "\n", encoding="utf-8")
    size_mb = archive.stat().st_size / 1e6
    print(f"class archive written: {archive} ({size_mb:.0f} MB, {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
