"""Benchmark of the reconstruction job (not a test): wall time, peak memory and growth with size.

Generates synthetic events for N lifecycles with Spark built-ins (trace SubBefore/SubAfter pairs, schedule and
retry copies, DLQ copies, published messages), writes them as events/dt=D, then times
``reconstruct`` + writing the four outputs. Mix per lifecycle i: i % 5 failed attempts before success, where 4
failures with max 3 dead-letters, over four groups (two concurrent, one orderly, one broadcasting).

    .venv/bin/python benchmarks/bench_reconstruct.py [N ...]        # default: 100000 1000000

Peak memory is the high-water RSS (VmHWM) of the driver JVM (local mode: driver and executors in one JVM) and of
this Python process. No Python runs per row (no UDF, no Arrow grouped function), so the Python side stays flat.
"""

from __future__ import annotations

import json
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rocketmq_retry.config import parse_config
from rocketmq_retry.contract import partition_dir
from rocketmq_retry.jobs.reconstruct import job as rc
from rocketmq_retry.jobs.reconstruct.events import EVENTS_SCHEMA
from rocketmq_retry.spark_session import build_spark_session

DAY = "2026-11-21"
FAST = "1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 11s 12s 13s 14s 15s 16s 17s 18s"
CONFIG = parse_config(
    {
        "brokers": {"default": {"message_delay_level": FAST}},
        "groups": {
            "g_conc_a": {"max_reconsume_times": 3},
            "g_conc_b": {"max_reconsume_times": 3},
            "g_orderly": {"max_reconsume_times": 3, "consume_mode": "orderly"},
            "g_bcast": {"message_model": "broadcasting"},
        },
    }
)
GROUPS = ["g_conc_a", "g_conc_b", "g_orderly", "g_bcast"]


def synthetic_events(spark: SparkSession, n: int) -> DataFrame:
    base_ms = 1_795_219_200_000 + 3_600_000  # 2026-11-21 01:00:00Z
    lc = spark.range(n).select(
        F.col("id"),
        F.element_at(F.array(*[F.lit(g) for g in GROUPS]), (F.col("id") % 4 + 1).cast("int")).alias("g"),
        F.format_string("M%012d", F.col("id")).alias("m"),
        (F.lit(base_ms) + (F.col("id") * 61) % 79_200_000).alias("t0"),  # spread over 22 h
        (F.col("id") % 5).cast("int").alias("k"),  # failed attempts
    )
    # broadcasting never retries: one failed or successful delivery
    lc = lc.withColumn("k", F.when(F.col("g") == "g_bcast", F.least("k", F.lit(1))).otherwise(F.col("k")))
    att = lc.select("*", F.explode(F.sequence(F.lit(0), F.least(F.col("k"), F.lit(3)))).alias("r"))
    # attempt r starts after the delays of levels 3..3+r-1 (fast table: level n = n s), or 1 s apart (orderly)
    start = F.col("t0") + F.when(F.col("g") == "g_orderly", F.col("r") * 1000).otherwise(
        F.expr("aggregate(sequence(0, r), 0L, (acc, x) -> acc + IF(x < r, (3 + x) * 1000 + 50, 0))")
    )
    att = att.withColumn("ts", start)
    fails = F.col("r") < F.col("k")

    def ev(
        kind: str, t: F.Column, et: F.Column, r: F.Column, topic: F.Column, src: str, **extra: F.Column
    ) -> DataFrame:
        cols = {f.name: F.lit(None).cast(f.dataType) for f in EVENTS_SCHEMA.fields}
        cols.update(
            event_id=F.concat_ws("-", F.lit(kind), F.col("m"), F.col("g"), F.col("r").cast("string")),
            event_time=F.timestamp_millis(t),
            source=F.lit(src),
            source_file=F.lit("bench"),
            line_no=F.col("id"),
            event_type=et,
            consumer_group=F.col("g"),
            msg_id=F.col("m"),
            topic=topic,
            reconsume_times=r.cast("int"),
        )
        for key, value in extra.items():
            cols[key] = value.cast(EVENTS_SCHEMA[key].dataType)
        return att.select(*[cols[f.name].alias(f.name) for f in EVENTS_SCHEMA.fields])

    before = ev("sb", F.col("ts"), F.lit("DELIVERED"), F.col("r"), F.lit(None), "trace")
    after = ev("sa", F.col("ts") + 10, F.when(fails, "CONSUME_FAILED").otherwise("CONSUME_OK"), F.lit(None),
               F.lit(None), "trace")  # fmt: skip
    conc = fails & F.col("g").startswith("g_conc") & (F.col("r") < 3)
    sched = ev("sc", F.col("ts") + 50, F.lit("SEND_BACK"), F.col("r") + 1, F.lit("SCHEDULE_TOPIC_XXXX"),
               "message-dump", delay_level=F.col("r") + 3).where(conc)  # fmt: skip
    ready = ev("rt", F.col("ts") + 50 + (F.col("r") + 3) * 1000, F.lit("RETRY_ENQUEUED"), F.col("r") + 1,
               F.concat(F.lit("%RETRY%"), F.col("g")), "message-dump", queue_id=F.lit(0)).where(conc)  # fmt: skip
    dead = F.col("r") == 3
    dlq = ev("dl", F.col("ts") + 60, F.lit("DEAD_LETTERED"),
             F.when(F.col("g") == "g_orderly", F.col("r")).otherwise(F.col("r") + 1),
             F.concat(F.lit("%DLQ%"), F.col("g")), "message-dump").where(fails & dead)  # fmt: skip
    return before.unionByName(after).unionByName(sched).unionByName(ready).unionByName(dlq)


def _jvm_hwm_kb() -> int:
    """Peak RSS of this process's java children (the Spark driver JVM)."""
    peak = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            status = pathlib.Path(f"/proc/{pid}/status").read_text()
            if f"PPid:\t{os.getpid()}\n" not in status or "Name:\tjava" not in status:
                continue
            peak = max(peak, int(status.split("VmHWM:")[1].split()[0]))
        except (OSError, IndexError):
            continue
    return peak


def run(n: int, root: pathlib.Path) -> dict[str, float]:
    spark = build_spark_session("bench-reconstruct", master="local[2]", driver_memory="6g", shuffle_partitions=8)
    wh = root / f"wh-{n}"
    t0 = time.monotonic()
    synthetic_events(spark, n).write.mode("overwrite").parquet(str(partition_dir(wh, "events", DAY)))
    gen_s = time.monotonic() - t0
    n_events = spark.read.parquet(str(partition_dir(wh, "events", DAY))).count()
    t1 = time.monotonic()
    events = rc.read_events(spark, str(wh), DAY, 0)
    out = rc.reconstruct(spark, events, CONFIG, DAY)
    rc.write_tables({t: getattr(out, t) for t in rc.TABLES}, str(wh), DAY)
    wall = time.monotonic() - t1
    lifecycles = spark.read.parquet(str(partition_dir(wh, "lifecycles", DAY))).count()
    result = {
        "lifecycles": lifecycles,
        "events": n_events,
        "generate_s": round(gen_s, 1),
        "reconstruct_wall_s": round(wall, 1),
        "us_per_lifecycle": round(wall / max(lifecycles, 1) * 1e6, 1),
        "jvm_peak_rss_mb": round(_jvm_hwm_kb() / 1024, 1),
        "python_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    spark.stop()
    return result


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        root = pathlib.Path(tempfile.mkdtemp(prefix="bench-reconstruct-"))
        print(json.dumps(run(int(argv[1]), root)), flush=True)
        shutil.rmtree(root, ignore_errors=True)
        return 0
    sizes = [int(a) for a in argv] or [100_000, 1_000_000]
    results = []
    for n in sizes:
        # one process (and JVM) per size, so each size's peak memory is its own
        proc = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True)
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        results.append(r)
        print(json.dumps(r), flush=True)
    if len(results) > 1:
        a, b = results[0], results[-1]
        growth = (b["reconstruct_wall_s"] / a["reconstruct_wall_s"]) / (b["lifecycles"] / a["lifecycles"])
        print(f"time growth relative to linear ({a['lifecycles']} -> {b['lifecycles']} lifecycles): {growth:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
