"""``rocketmq-retry reconstruct``: events/dt=D (+ a bounded look-back) -> transitions, lifecycles, dead_letters,
reconciliation for D (DESIGN §4), with the retry engine supplying what each hop should have been.

Thin entrypoint (docs/reconstruction.md has the operator's view): arguments, the Spark session, reading the events
partitions, writing the five tables atomically and printing the run's summary. The transform itself is
``reconstruct.pipeline.reconstruct``, a chain of pure ``DataFrame -> DataFrame`` steps:

1. ``reconstruct.events``: events conformed to the DESIGN §4 contract, identities linked (offset ids and
   ORIGIN_MESSAGE_ID resolved to UNIQ_KEY, groups from %RETRY%/%DLQ% topics), each event classified as an
   evidence kind about one delivery attempt (its reconsume_times).
2. ``reconstruct.facts``: one aggregation per (group, msg_id, attempt) and per lifecycle, so evidence of one
   delivery from several sources is joined, never counted twice.
3. ``reconstruct.tables``: the driver asks the engine once per (group, reconsume_times, failure variant) and
   broadcasts the answers (``lifecycle_schedule``); ``reconstruct.attempts`` joins them to every attempt,
   observed or inferred.
4. ``reconstruct.transitions`` explodes each attempt into its hops; ``reconstruct.lifecycles`` derives final and
   expected states, evidence class and anomalies; ``reconstruct.dead_letters`` and ``reconciliation`` follow.

No Python runs per row: built-in functions, window functions and one broadcast join carry the engine's answers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time
from zoneinfo import ZoneInfo

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from rocketmq_retry.config import load_config
from rocketmq_retry.contract import CauseCode, partition_dir
from rocketmq_retry.dates import parse_duration_ms, partition_date
from rocketmq_retry.errors import NOT_RETRYABLE_EXIT_CODE, InputError, UserError
from rocketmq_retry.jobs import lifecycle_schedule as sched
from rocketmq_retry.jobs.ingest.catchup import date_ranges, lookback_dates
from rocketmq_retry.jobs.reconstruct.attribution import REASONS, read_bindings
from rocketmq_retry.jobs.reconstruct.events import CONSUMER_KINDS
from rocketmq_retry.jobs.reconstruct.lifecycles import Thresholds
from rocketmq_retry.jobs.reconstruct.pipeline import Outputs, day_bounds, reconstruct
from rocketmq_retry.jobs.reconstruct.reconciliation import CAUSES
from rocketmq_retry.warehouse.partitions import JOB_TABLES, committed, write_partitions

__all__ = [
    "TABLES",
    "Outputs",
    "Thresholds",
    "cli",
    "main",
    "parse_duration_ms",
    "read_events",
    "reconstruct",
    "write_tables",
]

TABLES = JOB_TABLES["reconstruct"]


# --------------------------------------------------------------------------------------------------------------
# entrypoint: read partitions, write atomically, summarize


def read_events(spark: SparkSession, warehouse: str, day: str, lookback_ms: int, zone: str = "UTC") -> DataFrame:
    """events/dt=D plus the partitions the look-back reaches, the latter cut to the look-back window."""
    d0, _ = day_bounds(day, zone)
    start = dt.datetime.fromtimestamp((d0 - lookback_ms) / 1000, tz=ZoneInfo(zone)).date()
    target = dt.date.fromisoformat(day)
    if not committed(warehouse, "events", day).is_dir():
        missing = partition_dir(warehouse, "events", day)
        raise InputError(f"no events for {day}: {missing} does not exist (run ingest first)")
    frames: list[DataFrame] = []
    cur = start
    while cur <= target:
        ds = cur.isoformat()
        path = committed(warehouse, "events", ds)
        if path.is_dir():
            df = spark.read.parquet(str(path)).withColumn("dt", F.lit(ds))
            if ds != day:
                df = df.where(F.unix_millis("event_time") >= F.lit(d0 - lookback_ms))
            frames.append(df)
        cur += dt.timedelta(days=1)
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f, allowMissingColumns=True)
    return out


SORT_KEYS = {
    "transitions": ["consumer_group", "msg_id", "hop"],
    "lifecycles": ["consumer_group", "msg_id"],
    "dead_letters": ["consumer_group", "msg_id"],
    "reconciliation": ["consumer_group", "minute"],
    "unattributed": ["source_file", "event_type", "topic", "reason"],
    "failures": ["consumer_group", "msg_id", "reconsume_times"],
    "failure_causes": ["consumer_group", "fingerprint"],
    "incidents": ["consumer_group", "started_at", "incident_id"],
}


def write_tables(tables: dict[str, DataFrame], warehouse: str, day: str, files: int = 1) -> str:
    """Write the tables as ``files`` sorted Parquet files each and commit them together (warehouse/partitions.py):
    a crash leaves every table of D from the previous run or every one from this run; returns the run id."""
    return write_partitions(
        warehouse,
        day,
        {t: df.repartition(files).sortWithinPartitions(*SORT_KEYS[t]) for t, df in tables.items()},
        job="reconstruct",
        log=lambda what: print(f"  {what} …", flush=True),
    )


def summarize(spark: SparkSession, warehouse: str, day: str) -> dict[str, object]:
    """The run summary, read back from the committed tables: one aggregation per table (eight Spark actions; each
    action on a small day costs more in job set-up than in rows)."""
    life = spark.read.parquet(str(committed(warehouse, "lifecycles", day)))
    dead = spark.read.parquet(str(committed(warehouse, "dead_letters", day)))
    trans = spark.read.parquet(str(committed(warehouse, "transitions", day)))
    recon = spark.read.parquet(str(committed(warehouse, "reconciliation", day)))

    def tally(rows: list[Row], col: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in rows:
            out[r[col]] = out.get(r[col], 0) + int(r["n"])
        return dict(sorted(out.items(), key=lambda kv: (kv[0] is not None, kv[0] or "")))

    states = (
        life.groupBy("final_state", "evidence_class", F.col("deliveries").isNull().alias("no_deliveries"))
        .agg(F.count(F.lit(1)).alias("n"))
        .collect()
    )
    anomalies = life.select(F.explode("anomalies").alias("a")).groupBy("a").agg(F.count(F.lit(1)).alias("n")).collect()
    d = dead.agg(
        F.count(F.lit(1)).alias("n"),
        F.count(F.when(F.col("dlq_inferred"), 1)).alias("inferred"),
        F.count(F.when(~F.col("compensable"), 1)).alias("review"),
    ).collect()[0]
    t = trans.agg(F.count(F.lit(1)).alias("n"), F.count(F.when(F.col("inferred"), 1)).alias("inferred")).collect()[0]
    causes = recon.where(F.col("cause").isNotNull()).groupBy("cause").agg(F.count(F.lit(1)).alias("n")).collect()
    fails = spark.read.parquet(str(committed(warehouse, "failures", day)))
    f = fails.agg(
        F.count(F.lit(1)).alias("n"),
        F.count(F.when(F.col("cause") != CauseCode.UNKNOWN, 1)).alias("known"),
        F.size(F.collect_set("cause")).alias("causes"),
    ).collect()[0]
    kinds = dead.groupBy("failure_kind", "redrive_advice").agg(F.count(F.lit(1)).alias("n")).collect()
    incidents = spark.read.parquet(str(committed(warehouse, "incidents", day)))
    inc = incidents.groupBy("state").agg(F.count(F.lit(1)).alias("n")).collect()
    return {
        "lifecycles": sum(int(r["n"]) for r in states),
        "final_state": tally(states, "final_state"),
        "evidence_class": tally(states, "evidence_class"),
        # lifecycles known only by their end (a DLQ line, a DLQ copy): no source recorded a delivery of theirs
        "deliveries_unknown": tally([r for r in states if r["no_deliveries"]], "final_state"),
        "anomalies": tally(anomalies, "a"),
        "dead_letters": int(d["n"]),
        "dead_letters_inferred": int(d["inferred"]),
        "transitions": int(t["n"]),
        "inferred_hops": int(t["inferred"]),
        "dead_letters_for_review": int(d["review"]),
        "reconciliation_minutes_with_diff": sum(int(r["n"]) for r in causes),
        "reconciliation_causes": tally(causes, "cause"),
        "failures": int(f["n"]),
        "failures_with_known_cause": int(f["known"]),
        "distinct_causes": int(f["causes"]),
        "dead_letters_by_kind": tally(kinds, "failure_kind"),
        "dead_letters_by_advice": tally(kinds, "redrive_advice"),
        "incidents": tally(inc, "state"),
    }


def evidence_report(obs: DataFrame) -> dict[str, int]:
    """Rows the reconstruction could not place: no msg_id after linking, or no consumer group (the latter are
    the ``unattributed`` table's rows)."""
    lifecycle_kinds = (*CONSUMER_KINDS, "DLQ", "SCHED", "READY")
    scoped = obs.where(F.col("kind").isin(*lifecycle_kinds) & F.col("in_day"))
    row = scoped.agg(
        F.count(F.when(F.col("msg_id").isNull(), 1)).alias("unlinked"),
        F.count(F.when(F.col("consumer_group").isNull() & F.col("msg_id").isNotNull(), 1)).alias("unattributed"),
        F.count(F.when(F.col("linked_by").isin("offset_msg_id", "origin_msg_id"), 1)).alias("linked"),
    ).collect()[0]
    return {k: int(row[k]) for k in ("unlinked", "unattributed", "linked")}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rocketmq-retry reconstruct", description=__doc__.split("\n\n")[0])
    p.add_argument("--date", required=True, help="partition date YYYY-MM-DD")
    p.add_argument("--warehouse", required=True, help="warehouse root holding events/dt=D")
    p.add_argument("--config", default=None, help="configuration YAML (default: $ROCKETMQ_RETRY_CONFIG or defaults)")
    p.add_argument(
        "--lookback",
        default=None,
        help="how far before D to read events of lifecycles that began earlier (e.g. 1d6h); default: the longest "
        "configured always-failing schedule plus its longest wait twice, plus reconstruct.lookback_margin",
    )
    p.add_argument("--late-min", default="30s", help="LATE_REDELIVERY: minimum drift (default 30s)")
    p.add_argument("--late-factor", type=float, default=1.0, help="LATE_REDELIVERY: drift above factor x delay")
    p.add_argument(
        "--settle-after",
        default="60s",
        help="how late a scheduled, re-published, local or orderly redelivery may be before its silence settles "
        "the lifecycle (silently consumed, or lost when its sources record deliveries; default 60s)",
    )
    p.add_argument("--orderly-block", default="60s", help="ORDERLY_QUEUE_BLOCKED threshold (default 60s)")
    p.add_argument(
        "--clock-skew",
        default="2s",
        help="DELIVERY_AFTER_DLQ: how much later than the DLQ arrival a delivery must be, for the clock skew "
        "between consumer hosts and the broker and the broker log's whole seconds (default 2s)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        partition_date(args.date, what="--date")  # exit status 2 with the one parser's message
        return _run(args)
    except UserError as exc:
        print(f"rocketmq-retry reconstruct: {exc}", file=sys.stderr)
        return exc.exit_code


def cli(argv: list[str] | None = None) -> int:
    """``main`` for spark-submit (spark/reconstruct.py): a user error exits NOT_RETRYABLE_EXIT_CODE, as the
    ingest's does, so the Airflow task fails at once instead of retrying what only a fixed config or input mends."""
    code = main(argv)
    return NOT_RETRYABLE_EXIT_CODE if code in (UserError.exit_code, InputError.exit_code) else code


def _run(args: argparse.Namespace) -> int:
    from rocketmq_retry.spark_session import build_spark_session, session_settings, small_input_settings

    config = load_config(args.config)
    th = Thresholds(
        late_min_ms=parse_duration_ms(args.late_min, what="--late-min"),
        late_factor=args.late_factor,
        orderly_block_ms=parse_duration_ms(args.orderly_block, what="--orderly-block"),
        clock_skew_ms=parse_duration_ms(args.clock_skew, what="--clock-skew"),
        settle_after_ms=parse_duration_ms(args.settle_after, what="--settle-after"),
    )
    t0 = time.monotonic()
    if not committed(args.warehouse, "events", args.date).is_dir():
        raise InputError(f"no events for {args.date} under {args.warehouse}/events (run ingest first)")
    lookback_ms = (
        parse_duration_ms(args.lookback) if args.lookback else sched.configured_lookback_ms(config, th.late_factor)
    )
    s = config.spark
    spark = build_spark_session(
        "rocketmq-retry-reconstruct",
        master=None if os.environ.get("SPARK_SUBMIT") else s.master,
        driver_memory=s.driver_memory,
        shuffle_partitions=s.shuffle_partitions,
        conf=s.conf,
    )
    print(f"reconstruct {args.date}: look-back {lookback_ms // 1000}s")
    earlier = lookback_dates(config, args.date, lookback_ms)
    unread = [d for d in earlier if not committed(args.warehouse, "events", d).is_dir()]
    if unread:
        print(
            f"reconstruct {args.date}: note: no events for the earlier dates {date_ranges(unread)} (not ingested, or "
            "nothing collected then): lifecycles begun then, and start-up lines written then, are not seen"
        )
    events = read_events(spark, args.warehouse, args.date, lookback_ms, config.timezone)
    bindings = read_bindings(spark, args.warehouse, args.date, config.attribution.lookback_days)
    # a small day runs on Spark's interpreted expressions: compiling its plans' code would cost more than its rows
    rows = events.count() if s.interpreted_below_rows else 0  # a limit of 0 never asks: no job to count them
    settings = small_input_settings(rows, s.interpreted_below_rows, s.conf)
    if settings:
        below = s.interpreted_below_rows
        print(f"reconstruct {args.date}: {rows} events read (spark.interpreted_below_rows: {below}): interpreted")
    with session_settings(spark, settings):
        out = reconstruct(spark, events, config, args.date, thresholds=th, bindings=bindings)
        try:
            write_tables({t: getattr(out, t) for t in TABLES}, args.warehouse, args.date)
            unplaced = evidence_report(out.observations)
        finally:
            out.release()
        summary = summarize(spark, args.warehouse, args.date)
    print(f"reconstruct {args.date}: done in {time.monotonic() - t0:.1f}s")
    print(f"  lifecycles: {summary['lifecycles']}  by final state: {summary['final_state']}")
    print(f"  evidence: {summary['evidence_class']}  (FULL = every hop seen, PARTIAL = inferred hops, "
          "UNDETERMINABLE = final state unknown)")  # fmt: skip
    print(f"  anomalies: {summary['anomalies'] or 'none'}")
    unknown = summary["deliveries_unknown"]
    if unknown:
        print(
            f"  deliveries not established: {sum(unknown.values())} lifecycles {unknown}: only their end was seen "
            "(the broker's DLQ line or a DLQ copy); no collected source records a delivery of theirs (the client "
            "log, the message trace, the retry-topic or revive-log dumps): deliveries left empty, not guessed"
        )
    print(f"  dead letters: {summary['dead_letters']} ({summary['dead_letters_inferred']} inferred from the engine)")
    print(f"  transitions: {summary['transitions']} ({summary['inferred_hops']} inferred)")
    print(f"  reconciliation group-minutes with a difference: {summary['reconciliation_minutes_with_diff']}")
    for cause, n in summary["reconciliation_causes"].items():
        print(f"    {n} x {cause}: {CAUSES[cause]}")
    print(
        f"  evidence not placed: {unplaced['unlinked']} rows without a resolvable msg_id, "
        f"{unplaced['unattributed']} without a consumer group; {unplaced['linked']} linked through offset ids"
    )
    print(f"  dead letters held for review (not compensated): {summary['dead_letters_for_review']}")
    n_fail, known = summary["failures"], summary["failures_with_known_cause"]
    share = f" ({100 * known / n_fail:.0f} % with a known cause)" if n_fail else ""
    print(f"  failures: {n_fail}{share}, {summary['distinct_causes']} distinct causes (docs/causes.md)")
    print(f"  incidents (outages): {summary['incidents'] or 'none'}")
    print(f"  dead letters by kind: {summary['dead_letters_by_kind'] or 'none'}; re-drive advice: "
          f"{summary['dead_letters_by_advice'] or 'none'}")  # fmt: skip
    for line in unattributed_lines(spark, args.warehouse, args.date):
        print(line)
    return 0


def unattributed_lines(spark: SparkSession, warehouse: str, day: str) -> list[str]:
    """The run summary's account of the lines no evidence gave a group: per source file and reason, with the
    config key that would settle them (docs/reconstruction.md, "Attribution")."""
    rows = (
        spark.read.parquet(str(committed(warehouse, "unattributed", day)))
        .groupBy("source_file", "reason", "fix")
        .agg(
            F.sum("lines").alias("lines"),
            F.array_sort(F.array_distinct(F.flatten(F.collect_list("candidates")))).alias("candidates"),
            F.array_sort(F.collect_set("topic")).alias("topics"),
        )
        .orderBy("source_file", "reason")
        .collect()
    )
    if not rows:
        return ["  unattributed lines: none (every consumer line's group is established)"]
    out = [f"  unattributed lines: {sum(int(r['lines']) for r in rows)} (never placed in a lifecycle)"]
    for r in rows:
        cands = f"; candidates {', '.join(r['candidates'])}" if r["candidates"] else ""
        out.append(
            f"    {r['source_file']}: {r['lines']} line(s), {REASONS[r['reason']]} "
            f"(topic {', '.join(t or '?' for t in r['topics'])}{cands}) -> set {r['fix']}"
        )
    return out
