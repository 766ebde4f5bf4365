"""Pure transforms from numbered lines to classified lines, events, quarantine rows and the ingest report.

Input (``ingest_read.read_lines``): ``source, source_file, line_no, line, tz, group_hint``.

``classify(lines, ds)`` gives one row per input line (the accounting unit) with ``category`` in
``event | ignored | continuation | quarantined | other_date``, the ignored ``kind`` or quarantine ``reason``,
and ``events``: the array of event structs the line yields (a batch ``Msgs: [...]`` line or a trace body can
yield several). ``events_of``, ``quarantine_of`` and ``report_of`` derive the three output tables from it.
The classifiers live by family: ``ingest_logs`` (log formats), ``ingest_records`` (trace files and message
dumps), over the line struct of ``ingest_event``.

Everything is built-in Spark expressions (no Python UDFs). Spark 4 runs in ANSI mode, so every cast, index
and timestamp parse on input-derived values uses the ``try_`` form: hostile input becomes a null and then a
quarantine reason, never a task failure. See docs/ingest.md for the event_type table.
"""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from rocketmq_retry import contract
from rocketmq_retry.jobs.ingest_event import BAD_STRUCT_DDL, BIND_DDL, EVENT_FIELDS, EVENT_STRUCT_DDL, Keep, same
from rocketmq_retry.jobs.ingest_logs import classify_log_lines, log_parts, utc_day_range
from rocketmq_retry.jobs.ingest_records import classify_dump_lines, classify_trace_lines
from rocketmq_retry.logformats import BROKER, BROKER_STATS, CLIENT_4X, CLIENT_5X, GRPC_CLIENT, SPRING_LISTENER

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# Re-exported: the tests and the job read the line structs and the per-family classifiers from this module.
__all__ = [
    "BAD_STRUCT_DDL",
    "BIND_DDL",
    "EVENT_STRUCT_DDL",
    "classify_dump_lines",
    "classify_log_lines",
    "classify_trace_lines",
    "log_parts",
    "utc_day_range",
]

LOG_FORMATS = (CLIENT_4X, CLIENT_5X, GRPC_CLIENT, SPRING_LISTENER, BROKER, BROKER_STATS)
EVENT_COLUMNS = contract.columns("events")
# Event types about one consumer group, and a group's per-minute counters (the data contract).
GROUP_EVENTS = contract.GROUP_EVENT_TYPES
COUNTER_EVENTS = contract.COUNTER_EVENT_TYPES
# ingest_report/dt=D, one row per file (DESIGN §4); see report_of
REPORT_COLUMNS = contract.columns("ingest_report")
REPORT_DDL = contract.ddl("ingest_report")
QUARANTINE_DDL = contract.ddl("quarantine")


CLASSIFIERS = {"log": classify_log_lines, "trace": classify_trace_lines, "message-dump": classify_dump_lines}


def family(source: str) -> str:
    """Which classifier reads a format."""
    return "log" if source in LOG_FORMATS else source


def classify(
    lines: DataFrame,
    ds: str,
    families: tuple[str, ...] = ("log", "trace", "message-dump"),
    day_zone: str = "UTC",
    zones: tuple[str, ...] = (),
) -> DataFrame:
    """All formats: one row per input line (LINE_COLUMNS). ``ds`` is a calendar day in ``day_zone``.

    ``zones``: the values of ``lines.tz`` when known (faster log timestamps, see ``ingest_screen``).
    """
    by_family = {
        fam: lines.filter(F.col("source").isin(*LOG_FORMATS) if fam == "log" else F.col("source") == fam)
        for fam in families
    }
    return classify_families(by_family, ds, day_zone, zones)


def classify_families(
    lines_by_family: dict[str, DataFrame],
    ds: str,
    day_zone: str = "UTC",
    zones: tuple[str, ...] = (),
    keep: Keep | None = None,
) -> DataFrame:
    """``classify`` over each family's own lines (a union over one read would scan every file per family).

    ``keep`` is applied to the intermediates that later steps read more than once: the log screen, and the union
    of everything but the log noise. A job passes a checkpoint (each is then computed once); by default Spark
    recomputes them for each reader, which only suits small inputs such as tests.
    """
    keep = keep or same
    quiet, rest = [], []
    for fam, lines in lines_by_family.items():
        if fam == "log":
            q, r = log_parts(lines, ds, day_zone, zones, keep)
            quiet.append(q)
            rest.append(r)
        else:
            rest.append(CLASSIFIERS[fam](lines, ds, day_zone))
    rest_df = keep(reduce(lambda a, b: a.unionByName(b), rest), "classifying events, multi-line records and traces")
    return reduce(lambda a, b: a.unionByName(b), [*quiet, rest_df])


def events_of(classified: DataFrame, instances: DataFrame | None = None) -> DataFrame:
    """The events table (DESIGN §4) with a stable event_id = hash(file relative to landing, line, record).

    ``instances``: ``source_file, instance`` (``ingest_read.instance_table``); without it ``instance`` is null.
    """
    ev = classified.filter(F.size("events") > 0).select("source_file", "line_no", F.explode("events").alias("e"))
    if instances is not None:
        ev = ev.join(F.broadcast(instances), "source_file", "left")
    else:
        ev = ev.withColumn("instance", F.lit(None).cast("string"))
    event_id = F.substring(
        F.sha2(
            F.concat_ws("\u0000", F.col("source_file"), F.col("line_no").cast("string"), F.col("e.rec").cast("string")),
            256,
        ),
        1,
        32,
    )
    cols = {n: F.col(f"e.{n}") for n, _ in EVENT_FIELDS}
    cols.update(
        {
            "event_id": event_id,
            "source_file": F.col("source_file"),
            "line_no": F.col("line_no"),
            "instance": F.col("instance"),
        }
    )
    return ev.select(*(cols[c].alias(c) for c in EVENT_COLUMNS))


def quarantine_of(classified: DataFrame) -> DataFrame:
    """Quarantined lines plus bad records inside otherwise good trace lines (reason says which record)."""
    lines = classified.filter(F.col("category") == "quarantined").select(
        "source", "source_file", "line_no", "raw", "reason", F.lit(None).cast("long").alias("byte_offset")
    )
    records = (
        classified.filter((F.size("bad") > 0) & (F.col("category") == "event"))
        .select("source", "source_file", "line_no", F.explode("bad").alias("b"))
        .select(
            "source",
            "source_file",
            "line_no",
            F.col("b.raw").alias("raw"),
            F.concat(F.lit("trace record #"), F.col("b.rec").cast("string"), F.lit(": "), F.col("b.reason")).alias(
                "reason"
            ),
            F.lit(None).cast("long").alias("byte_offset"),
        )
    )
    return lines.unionByName(records)


def line_groups(classified: DataFrame) -> DataFrame:
    """One pass over the lines, grouped by (file, category, kind, binding): the few rows ``report_of`` and
    ``bindings_of`` fold. The unattributed-event count looks inside ``events`` only where there are events (its
    lambda is interpreted, not generated, so it is kept off the millions of noise lines)."""
    cat = F.col("category")
    unattributed = F.when(
        F.size("events") > 0,
        F.size(F.filter(F.col("events"), lambda e: e["event_type"].isin(*GROUP_EVENTS) & e["consumer_group"].isNull())),
    ).otherwise(0)
    return classified.groupBy("source", "source_file", "category", "kind", "reason", "bind").agg(
        F.count(F.lit(1)).alias("n"),
        F.sum(F.size("events")).cast("long").alias("event_rows"),
        F.sum(unattributed).cast("long").alias("unattributed_events"),
        F.sum(F.when(cat == "event", F.size("bad")).otherwise(0)).cast("long").alias("bad_records"),
        F.sum("other_date_events").cast("long").alias("other_date_records"),
    )


def report_of(groups: DataFrame) -> DataFrame:
    """Per file: lines_read = events + ignored + continuation + quarantined (lines of other dates apart), from
    ``line_groups`` (a classified frame is grouped first)."""
    if "n" not in groups.columns:
        groups = line_groups(groups)
    cat = F.col("category")

    def n(c: str) -> Column:
        return F.sum(F.when(cat == c, F.col("n")).otherwise(0)).cast("long").alias("events" if c == "event" else c)

    kinds = F.collect_list(F.when(cat == "ignored", F.struct("kind", F.col("n").alias("count"))))
    reasons = F.collect_list(F.when(cat == "quarantined", F.struct("reason", F.col("n").alias("count"))))
    by_kind = groups.groupBy("source", "source_file", "category", "kind", "reason").agg(
        *(F.sum(c).alias(c) for c in ("n", "event_rows", "unattributed_events", "bad_records", "other_date_records"))
    )
    per_file = by_kind.groupBy("source", "source_file").agg(
        F.sum(F.when(cat != "other_date", F.col("n")).otherwise(0)).cast("long").alias("lines_read"),
        n("event"),
        n("ignored"),
        n("continuation"),
        n("quarantined"),
        n("other_date"),
        *(F.sum(c).cast("long").alias(c) for c in ("event_rows", "unattributed_events", "bad_records")),
        F.sum("other_date_records").cast("long").alias("other_date_records"),
        F.when(F.size(kinds) > 0, F.map_from_entries(F.sort_array(kinds))).alias("ignored_by_kind"),
        F.when(F.size(reasons) > 0, F.map_from_entries(F.sort_array(reasons))).alias("quarantined_by_reason"),
        F.lit("read").alias("file_status"),
        F.lit(None).cast("string").alias("file_reason"),
    )
    return per_file.select(*REPORT_COLUMNS).orderBy("source", "source_file")


# bindings/dt=D, one row per (file, kind, group, topic): what the day's start-up, rebalance and offset-flush lines
# say about which group consumes which topic in each application instance (docs/reconstruction.md, "Attribution")
BINDING_COLUMNS = contract.columns("bindings")
# RocketMQ's own name rules (TopicValidator / Validators: [%|a-zA-Z0-9_-]); anything else is not a name
_NAME_RX = r"^[%|a-zA-Z0-9_-]{1,255}$"
# a binding that names the instance's group for all its topics (the gRPC SDK's consume-service line)
ANY_TOPIC = "*"


def bindings_of(groups: DataFrame, instances: DataFrame | None = None) -> DataFrame:
    """The day's bindings from ``line_groups``: a group or topic that is not a RocketMQ name is not evidence."""
    b = groups.where(F.col("bind").isNotNull()).select(
        "source", "source_file", F.col("bind.kind").alias("kind"), F.col("bind.consumer_group").alias("consumer_group"),
        F.col("bind.topic").alias("topic"), "n",
    )  # fmt: skip
    b = b.where(
        F.col("consumer_group").rlike(_NAME_RX) & (F.col("topic").rlike(_NAME_RX) | (F.col("topic") == ANY_TOPIC))
    )
    b = b.groupBy("source", "source_file", "kind", "consumer_group", "topic").agg(
        F.sum("n").cast("long").alias("lines")
    )
    if instances is not None:
        b = b.join(F.broadcast(instances), "source_file", "left")
    else:
        b = b.withColumn("instance", F.lit(None).cast("string"))
    return b.select(*BINDING_COLUMNS)
