"""Record lines -> LINE_COLUMNS rows: ``trace`` files (each line one RMQ_SYS_TRACE_TOPIC body, §7.2) and
``message-dump`` JSON Lines (a dump of the trace topic is read as trace records). A line is dated by its records'
own times; only the records of the day are its events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from rocketmq_retry.engine.model import REVIVE_TOPIC_PREFIX
from rocketmq_retry.jobs.ingest import patterns as P
from rocketmq_retry.jobs.ingest.dump import dump_event_sql
from rocketmq_retry.jobs.ingest.event import EVENT_FIELDS, capped, no_bad, no_bind, no_events, null_if_empty
from rocketmq_retry.jobs.ingest.revive import revive_body_sql, revive_events_sql, revive_reason_sql
from rocketmq_retry.jobs.ingest.sql import epoch_ms
from rocketmq_retry.jobs.ingest.trace import trace_bad_sql, trace_good_sql, trace_records_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

TRACE_TOPICS_RX = r"^(RMQ_SYS_TRACE_TOPIC|rmq_sys_TRACE_DATA_.*)$"

# ----------------------------------------------------------------------------------------------------- trace


def trace_records(body: str, fallback_time: str, source_name: str) -> Column:
    """Every record of one trace payload (§7.2) parsed, from SQL text over the line's columns (see
    ``ingest.trace``); ``trace_events`` splits it into events and bad records."""
    return F.expr(trace_records_sql(body, fallback_time, source_name, EVENT_FIELDS))


def trace_events(records: str) -> tuple[Column, Column]:
    """(events, bad records) of a column of ``trace_records``. Read it from a column of its own: each of the two
    would otherwise parse the payload again."""
    return F.expr(trace_good_sql(records)), F.expr(trace_bad_sql(records))


def _finish_record_lines(df: DataFrame, ds: str, day_zone: str) -> DataFrame:
    """Shared tail for trace and dump lines: date filter per event, accounting category per line."""
    d = F.lit(ds).cast("date")
    in_day = F.filter(F.col("all_events"), lambda e: F.to_date(F.from_utc_timestamp(e["event_time"], day_zone)) == d)
    first_time = F.array_min(F.transform(F.col("all_events"), lambda e: e["event_time"]))
    df = df.withColumn("events", in_day).withColumn(
        "line_date",
        F.when(F.size(in_day) > 0, d).otherwise(
            F.coalesce(F.to_date(F.from_utc_timestamp(first_time, day_zone)), F.col("own_date"), d)
        ),
    )
    category = (
        F.when(F.col("q_reason").isNotNull(), F.lit("quarantined"))
        .when(F.col("line_date") != d, F.lit("other_date"))
        .when(F.size("events") > 0, F.lit("event"))
        .when(F.size("bad") > 0, F.lit("quarantined"))
        .otherwise(F.lit("ignored"))
    )
    df = df.withColumn("category", category)
    is_q = F.col("category") == "quarantined"
    return df.select(
        "source",
        "source_file",
        "line_no",
        "line_date",
        "category",
        F.when(F.col("category") == "ignored", F.coalesce(F.col("ignored_kind"), F.lit("no event records"))).alias(
            "kind"
        ),
        F.when(
            is_q, F.coalesce(F.col("q_reason"), F.concat(F.lit("no valid record: "), F.col("bad")[0]["reason"]))
        ).alias("reason"),
        F.when(is_q, F.col("raw0")).alias("raw"),
        F.when(F.col("category") == "event", F.col("events")).otherwise(no_events()).alias("events"),
        F.when(F.col("category") == "event", F.col("line_hash")).alias("line_hash"),
        F.when(F.col("category").isin("event", "quarantined"), F.col("bad")).otherwise(no_bad()).alias("bad"),
        (F.size("all_events") - F.size("events")).alias("other_date_events"),
        no_bind(),
    )


def _hostile(line: Column) -> Column:
    return (
        F.when(F.length(line) >= P.MAX_LINE_CHARS, P.LONG_LINE_REASON)
        .when(line.contains("\u0000"), "NUL byte in line")
        .when(~F.is_valid_utf8(line), "invalid UTF-8")
    )


def classify_trace_lines(lines: DataFrame, ds: str, day_zone: str = "UTC") -> DataFrame:
    """``trace`` files: each line is one RMQ_SYS_TRACE_TOPIC message body (one or more records)."""
    line = F.col("line")
    hostile = _hostile(line)
    lines = lines.withColumn("_trace_body", F.when(hostile.isNull(), line).otherwise(F.lit("")))
    lines = lines.withColumn("_trace_records", trace_records("_trace_body", "CAST(NULL AS TIMESTAMP)", "'trace'"))
    good, bad = trace_events("_trace_records")
    df = lines.select(
        "source",
        "source_file",
        "line_no",
        F.when(hostile.isNull() & (F.trim(line) == ""), F.lit("blank line")).alias("ignored_kind"),
        hostile.alias("q_reason"),
        capped(F.make_valid_utf8(F.substring(line, 1, P.RAW_CAP))).alias("raw0"),
        F.xxhash64(line).alias("line_hash"),  # the line's own text in event_id (nulled unless it is an event)
        good.alias("all_events"),
        bad.alias("bad"),
        F.lit(None).cast("date").alias("own_date"),
    )
    return _finish_record_lines(df, ds, day_zone)


# -------------------------------------------------------------------------------------------- message dumps

DUMP_SCHEMA = (
    "dumpTopic string, topic string, queueId string, queueOffset string, msgId string, offsetMsgId string, "
    "uniqKey string, bornTimestamp string, bornHost string, storeTimestamp string, storeHost string, "
    "reconsumeTimes string, tags string, properties struct<UNIQ_KEY:string, KEYS:string, TAGS:string, "
    "RETRY_TOPIC:string, REAL_TOPIC:string, REAL_QID:string, DELAY:string, ORIGIN_MESSAGE_ID:string, "
    "`1ST_POP_TIME`:string>, body string"
)


def dump_event() -> Column:
    """One stored message of a dump line as an event struct (SQL text, see ``ingest.dump``)."""
    return F.expr(dump_event_sql(EVENT_FIELDS))


def classify_dump_lines(lines: DataFrame, ds: str, day_zone: str = "UTC") -> DataFrame:
    """``message-dump`` JSON Lines; a dump of the trace topic is read as ``trace`` records, one of the revive log
    topic as POP checkpoints and acks (``ingest.revive``: a body that is no such record quarantines its line)."""
    line = F.col("line")
    hostile = _hostile(line)
    safe = F.when(hostile.isNull(), line)
    df = lines.select(
        "source",
        "source_file",
        "line_no",
        hostile.alias("hostile"),
        capped(F.make_valid_utf8(F.substring(line, 1, P.RAW_CAP))).alias("raw0"),
        F.xxhash64(line).alias("line_hash"),  # the line's own text in event_id (nulled unless it is an event)
        F.from_json(safe, DUMP_SCHEMA, {"mode": "PERMISSIVE"}).alias("j"),
        (F.trim(F.coalesce(safe, F.lit("x"))) == "").alias("blank"),
    )
    j = F.col("j")
    topic = F.coalesce(null_if_empty(j["topic"]), null_if_empty(j["dumpTopic"]))
    df = df.withColumn("topic_", topic)
    store_time = F.expr(epoch_ms("j.storeTimestamp"))
    is_trace = F.coalesce(topic.rlike(TRACE_TOPICS_RX), F.lit(False))
    is_revive = F.coalesce(topic.startswith(REVIVE_TOPIC_PREFIX), F.lit(False))
    df = df.withColumn("rv", F.when(is_revive, F.expr(revive_body_sql())))
    revive_reason = F.when(is_revive, F.expr(revive_reason_sql("rv")))
    q_reason = (
        F.when(F.col("hostile").isNotNull(), F.col("hostile"))
        .when(F.col("blank"), F.lit(None))
        .when(j.isNull() | topic.isNull(), F.lit("not a message-dump JSON object (no topic)"))
        .when(store_time.isNull(), F.lit("dump line without a valid storeTimestamp"))
        .when(revive_reason.isNotNull(), revive_reason)
        .when(
            ~is_trace
            & F.coalesce(
                null_if_empty(j["properties"]["UNIQ_KEY"]), null_if_empty(j["uniqKey"]), null_if_empty(j["msgId"])
            ).isNull(),
            F.lit("dump line without a message id"),
        )
    )
    df = df.select("*", q_reason.alias("q_reason"), is_trace.alias("is_trace"), is_revive.alias("is_revive"))
    records = trace_records("coalesce(j.body, '')", epoch_ms("j.storeTimestamp"), "'trace'")
    df = df.withColumn("_trace_records", F.when(F.col("q_reason").isNull() & F.col("is_trace"), records))
    t_good, t_bad = trace_events("_trace_records")
    q_reason, is_trace = F.col("q_reason"), F.col("is_trace")
    df = df.select(
        "source",
        "source_file",
        "line_no",
        "raw0",
        "line_hash",
        F.when(F.col("blank"), F.lit("blank line")).alias("ignored_kind"),
        q_reason.alias("q_reason"),
        F.when(q_reason.isNotNull() | F.col("blank"), no_events())
        .when(is_trace, t_good)
        .when(F.col("is_revive"), F.expr(revive_events_sql(EVENT_FIELDS, "rv")))
        .otherwise(F.array(dump_event()))
        .alias("all_events"),
        F.when(q_reason.isNull() & is_trace, t_bad).otherwise(no_bad()).alias("bad"),
        F.to_date(F.from_utc_timestamp(store_time, day_zone)).alias("own_date"),
    )
    return _finish_record_lines(df, ds, day_zone)
