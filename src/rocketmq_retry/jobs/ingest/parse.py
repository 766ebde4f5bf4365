"""Pure transforms from numbered lines to classified lines, events, quarantine rows and the ingest report.

Input (``ingest.read.read_lines``): ``source, source_file, line_no, line, tz, group_hint``.

``classify(lines, ds)`` gives one row per input line (the accounting unit) with ``category`` in
``event | ignored | continuation | quarantined | other_date``, the ignored ``kind`` or quarantine ``reason``,
and ``events``: the array of event structs the line yields (a batch ``Msgs: [...]`` line or a trace body can
yield several). ``events_of``, ``quarantine_of`` and ``report_of`` derive the three output tables from it.
The classifiers live by family: ``ingest.logs`` (log formats), ``ingest.records`` (trace files and message
dumps), over the line struct of ``ingest.event``.

Everything is built-in Spark expressions (no Python UDFs). Spark 4 runs in ANSI mode, so every cast, index
and timestamp parse on input-derived values uses the ``try_`` form: hostile input becomes a null and then a
quarantine reason, never a task failure. See docs/ingest.md for the event_type table.
"""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING

from pyspark.sql import Column, Window
from pyspark.sql import functions as F

from rocketmq_retry import contract
from rocketmq_retry.config import FRAMEWORK_PACKAGES
from rocketmq_retry.jobs.ingest.event import BAD_STRUCT_DDL, BIND_DDL, EVENT_FIELDS, EVENT_STRUCT_DDL, Keep, same
from rocketmq_retry.jobs.ingest.logs import classify_log_lines, log_parts, utc_day_range
from rocketmq_retry.jobs.ingest.records import classify_dump_lines, classify_trace_lines
from rocketmq_retry.logformats import (
    BROKER,
    BROKER_STATS,
    CLIENT_4X,
    CLIENT_5X,
    GRPC_CLIENT,
    PYTHON_CLIENT,
    SPRING_LISTENER,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from rocketmq_retry.jobs.ingest.read import SourceFile

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

LOG_FORMATS = (CLIENT_4X, CLIENT_5X, GRPC_CLIENT, PYTHON_CLIENT, SPRING_LISTENER, BROKER, BROKER_STATS)
EVENT_COLUMNS = contract.columns("events")
# Event types about one consumer group, and a group's per-minute counters (the data contract).
GROUP_EVENTS = contract.GROUP_EVENT_TYPES
COUNTER_EVENTS = contract.COUNTER_EVENT_TYPES
# ingest_report/dt=D, one row per file (DESIGN §4); see report_of
REPORT_COLUMNS = contract.columns("ingest_report")


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
    frameworks: tuple[str, ...] = FRAMEWORK_PACKAGES,
) -> DataFrame:
    """All formats: one row per input line (LINE_COLUMNS). ``ds`` is a calendar day in ``day_zone``.

    ``zones``: the values of ``lines.tz`` when known (faster log timestamps, see ``ingest.screen``);
    ``frameworks``: the packages whose stack frames are not the application's (``causes.framework_packages``).
    """
    by_family = {
        fam: lines.filter(F.col("source").isin(*LOG_FORMATS) if fam == "log" else F.col("source") == fam)
        for fam in families
    }
    return classify_families(by_family, ds, day_zone, zones, frameworks=frameworks)


def classify_families(
    lines_by_family: dict[str, DataFrame],
    ds: str,
    day_zone: str = "UTC",
    zones: tuple[str, ...] = (),
    keep: Keep | None = None,
    frameworks: tuple[str, ...] = FRAMEWORK_PACKAGES,
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
            q, r = log_parts(lines, ds, day_zone, zones, keep, frameworks)
            quiet.append(q)
            rest.append(r)
        else:
            rest.append(CLASSIFIERS[fam](lines, ds, day_zone))
    rest_df = keep(reduce(lambda a, b: a.unionByName(b), rest), "classifying events, multi-line records and traces")
    return reduce(lambda a, b: a.unionByName(b), [*quiet, rest_df])


def events_of(classified: DataFrame, instances: DataFrame | None = None) -> DataFrame:
    """The events table (DESIGN §4) with ``event_id`` naming a line of a file's content (``event_id_of``).

    ``instances``: ``source_file, instance[, fingerprint]`` (``ingest.read.instance_table``); without it
    ``instance`` is null, and without a ``fingerprint`` column the file's path stands in for it (the pure
    transform tests: every job run passes the fingerprints).
    """
    ev = classified.filter(F.size("events") > 0).select(
        "source_file", "line_no", "line_hash", F.explode("events").alias("e")
    )
    if instances is not None:
        ev = ev.join(F.broadcast(instances), "source_file", "left")
    else:
        ev = ev.withColumn("instance", F.lit(None).cast("string"))
    if instances is None or "fingerprint" not in instances.columns:
        ev = ev.withColumn("fingerprint", F.col("source_file"))
    cols = {n: F.col(f"e.{n}") for n, _ in EVENT_FIELDS}
    cols.update(
        {
            "event_id": event_id_of(
                F.col("instance"), F.col("fingerprint"), F.col("line_no"), F.col("e.rec"), F.col("line_hash")
            ),
            "source_file": F.col("source_file"),
            "line_no": F.col("line_no"),
            "instance": F.col("instance"),
        }
    )
    return ev.select(*(cols[c].alias(c) for c in EVENT_COLUMNS))


def event_id_of(instance: Column, fingerprint: Column, line_no: Column, rec: Column, line_hash: Column) -> Column:
    """First 32 hex of SHA-256 over the file's application instance, its content fingerprint (``ingest.check``),
    the line's number, the record's index in the line and the line's own text (its xxhash64), NUL-separated: a
    line of a file's content, whatever the file's name, compression or date folder.

    The fingerprint makes ids differ between files that rolled between two collections (the same path and line
    numbers, other lines); the line's text makes them differ between two files that open with the same line; the
    instance (the host folder, the same in every date's folder and across rotation) between two hosts that wrote
    the same lines at the same place (two brokers' stats lines carry no broker name, and the simulated brokers'
    files open with the same line). A missing part is a bug upstream, never a shorter key: the job stops.
    """

    def part(c: Column, what: str) -> Column:
        missing = F.raise_error(F.concat(F.lit(f"ingest: event without {what} in "), F.col("source_file")))
        return F.coalesce(c.cast("string"), missing.cast("string"))

    key = F.concat_ws(
        "\u0000",
        F.coalesce(instance, F.lit("")),  # null only in the pure transform tests (no instance table)
        part(fingerprint, "a file fingerprint"),
        part(line_no, "a line number"),
        part(rec, "a record index"),
        part(line_hash, "a line hash"),
    )
    return F.substring(F.sha2(key, 256), 1, 32)


def shared_fingerprints(files: list[SourceFile], fingerprints: dict[str, str]) -> list[str]:
    """The files (``source_file``) whose instance and fingerprint another file of the day has: the only ones whose
    lines may carry an ``event_id`` that another file's line also carries (the same file collected twice, or two
    files of one instance that open with the same line). Sorted; empty on a usual day."""
    by_fp: dict[tuple[str, str], list[str]] = {}
    for f in files:
        if f.rel in fingerprints:
            by_fp.setdefault((f.instance, fingerprints[f.rel]), []).append(f.rel)
    return sorted(f for files in by_fp.values() if len(files) > 1 for f in files)


def dedup_events(events: DataFrame, shared: list[str], keep: Keep | None = None) -> tuple[DataFrame, DataFrame | None]:
    """(events with each ``event_id`` once, per-file duplicates) when the same content came in twice.

    Only the rows of ``shared`` files (``shared_fingerprints``) can repeat an id, so only they are ranked; of the
    rows with one id the first by ``source_file`` is kept. The duplicates (``source_file, duplicate_events,
    duplicate_of``: how many rows were not written and which files' rows were kept instead) go into the ingest
    report: nothing is dropped silently. A normal line is never quarantined for being a copy. With no shared
    file (the usual day) nothing is ranked and the duplicates are None.
    """
    if not shared:
        return events, None
    is_shared = F.col("source_file").isin(*shared)
    first = F.min("source_file").over(Window.partitionBy("event_id"))
    ranked = (keep or same)(
        events.filter(is_shared).withColumn("_kept_in", first), "ranking the events of files seen twice"
    )
    kept = ranked.filter(F.col("source_file") == F.col("_kept_in")).drop("_kept_in")
    dups = (
        ranked.filter(F.col("source_file") != F.col("_kept_in"))
        .groupBy("source_file")
        .agg(
            F.count(F.lit(1)).cast("long").alias("duplicate_events"),
            F.sort_array(F.collect_set("_kept_in")).alias("duplicate_of"),
        )
    )
    return events.filter(~is_shared).unionByName(kept), dups


def with_duplicates(report: DataFrame, dups: DataFrame | None) -> DataFrame:
    """The report with each file's duplicate rows (``dedup_events``) moved from ``event_rows`` to
    ``duplicate_events``: ``event_rows`` stays the rows the file has in the events table."""
    if dups is None:
        return report
    d = F.coalesce(F.col("d.duplicate_events"), F.lit(0)).cast("long")
    cols = {c: F.col(f"r.{c}") for c in REPORT_COLUMNS}
    cols.update(
        {
            "event_rows": F.col("r.event_rows") - d,
            "duplicate_events": d,
            "duplicate_of": F.col("d.duplicate_of"),
        }
    )
    on = F.col("r.source_file") == F.col("d.source_file")
    joined = report.alias("r").join(F.broadcast(dups).alias("d"), on, "left")
    return joined.select(*(cols[c].alias(c) for c in REPORT_COLUMNS)).orderBy("source", "source_file")


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
        F.lit(0).cast("long").alias("duplicate_events"),
        F.lit(None).cast("array<string>").alias("duplicate_of"),
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
