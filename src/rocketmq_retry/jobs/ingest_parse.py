"""Pure transforms from numbered lines to classified lines, events, quarantine rows and the ingest report.

Input (``ingest_read.read_lines``): ``source, source_file, line_no, line, tz, group_hint``.

``classify(lines, ds)`` gives one row per input line (the accounting unit) with ``category`` in
``event | ignored | continuation | quarantined | other_date``, the ignored ``kind`` or quarantine ``reason``,
and ``events``: the array of event structs the line yields (a batch ``Msgs: [...]`` line or a trace body can
yield several). ``events_of``, ``quarantine_of`` and ``report_of`` derive the three output tables from it.

Everything is built-in Spark expressions (no Python UDFs). Spark 4 runs in ANSI mode, so every cast, index
and timestamp parse on input-derived values uses the ``try_`` form: hostile input becomes a null and then a
quarantine reason, never a task failure. See docs/ingest.md for the event_type table.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Callable
from functools import reduce
from typing import TYPE_CHECKING

from pyspark.sql import Column, Window, WindowSpec
from pyspark.sql import functions as F

from rocketmq_retry import contract
from rocketmq_retry.jobs import ingest_patterns as P
from rocketmq_retry.jobs.ingest_dump import dump_event_sql
from rocketmq_retry.jobs.ingest_screen import screen_log_lines, settle_candidates
from rocketmq_retry.jobs.ingest_sql import epoch_ms, sql_str
from rocketmq_retry.jobs.ingest_trace import trace_bad_sql, trace_good_sql, trace_records_sql
from rocketmq_retry.logformats import timefmt

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

LOG_FORMATS = (
    "rocketmq-client-4x",
    "rocketmq-client-5x",
    "rocketmq-grpc-client",
    "spring-listener",
    "broker",
    "broker-stats",
)
TRACE_TOPICS_RX = r"^(RMQ_SYS_TRACE_TOPIC|rmq_sys_TRACE_DATA_.*)$"

# The struct a parsed line yields per record: the events columns (data contract) the line itself can tell, plus
# ``rec`` (the record's index in the line); events_of adds event_id, source_file, line_no and instance.
_EVENT_ADDED_BY_EVENTS_OF = ("event_id", "source_file", "line_no", "instance")
EVENT_FIELDS: tuple[tuple[str, str], ...] = (
    ("rec", "int"),
    *((n, t) for n, t in contract.SCHEMAS["events"] if n not in _EVENT_ADDED_BY_EVENTS_OF),
)
EVENT_STRUCT_DDL = "struct<" + ",".join(f"{n}:{t}" for n, t in EVENT_FIELDS) + ">"
BAD_STRUCT_DDL = "struct<rec:int,raw:string,reason:string>"
EVENT_COLUMNS = contract.columns("events")
# Event types about one consumer group, and a group's per-minute counters (the data contract).
GROUP_EVENTS = contract.GROUP_EVENT_TYPES
COUNTER_EVENTS = contract.COUNTER_EVENT_TYPES
# ingest_report/dt=D, one row per file (DESIGN §4); see report_of
REPORT_COLUMNS = contract.columns("ingest_report")
REPORT_DDL = contract.ddl("ingest_report")
QUARANTINE_DDL = contract.ddl("quarantine")
LINE_COLUMNS = (
    "source",
    "source_file",
    "line_no",
    "line_date",
    "category",
    "kind",
    "reason",
    "raw",
    "events",
    "bad",
    "other_date_events",
    "bind",
)
BIND_DDL = "struct<kind:string,consumer_group:string,topic:string>"


# materialises an intermediate that several later steps read; the string says what it is (progress output)
Keep = Callable[["DataFrame", str], "DataFrame"]


def _same(df: DataFrame, what: str) -> DataFrame:
    return df


def _nz(c: Column) -> Column:
    """'' (what regexp_extract gives for no match) -> null."""
    return F.when(c != "", c)


def _rx(c: Column, rx: str, idx: int = 1) -> Column:
    return _nz(F.regexp_extract(c, rx, idx))


def _int(c: Column) -> Column:
    return c.try_cast("int")


def _event(**fields: Column | None) -> Column:
    """A struct with every event field in EVENT_FIELDS order; missing fields are typed nulls."""
    unknown = set(fields) - {n for n, _ in EVENT_FIELDS}
    if unknown:
        raise ValueError(f"unknown event fields {unknown}")
    cols = []
    for name, dtype in EVENT_FIELDS:
        value = fields.get(name)
        cols.append((value if value is not None else F.lit(None)).cast(dtype).alias(name))
    return F.struct(*cols)


def _no_events() -> Column:
    return F.array().cast(f"array<{EVENT_STRUCT_DDL}>")


def _no_bad() -> Column:
    return F.array().cast(f"array<{BAD_STRUCT_DDL}>")


def _no_bind() -> Column:
    return F.lit(None).cast(BIND_DDL).alias("bind")


def _cap(c: Column) -> Column:
    return F.substring(c, 1, P.RAW_CAP)


def decode_body_bytes(byte_list: Column) -> Column:
    """``123, 34, -17, …`` (Java's ``byte[]`` rendered by ``Arrays.toString``) -> UTF-8 text, or null if not UTF-8."""
    parts = F.split(byte_list, ", ")
    hexed = F.transform(parts, lambda x: F.lpad(F.hex(F.pmod(x.try_cast("int"), F.lit(256))), 2, "0"))
    text = F.unhex(F.array_join(hexed, "")).cast("string")
    return F.when((byte_list != "") & F.is_valid_utf8(text), _cap(text))


def message_fields(rendering: Column, props: Column | None = None) -> dict[str, Column]:
    """Fields of one ``MessageExt [...]`` or ``Message{...}`` rendering (§6.2): ids, topic, properties, body.

    ``props``: the rendering's ``properties={...}`` text when the caller has already cut it out (inside a lambda,
    where nothing is computed once for several readers).
    """
    if props is None:
        props = F.regexp_extract(rendering, P.RX_PROPERTIES, 1)
    topic = _rx(rendering, P.RX_TOPIC)
    retry_topic = _rx(props, P.rx_property("RETRY_TOPIC"))
    return {
        "offset_msg_id": _rx(rendering, P.RX_OFFSET_MSG_ID),
        "queue_id": _int(_rx(rendering, P.RX_QUEUE_ID)),
        "reconsume_times": _int(_rx(rendering, P.RX_RECONSUME)),
        "topic": topic,
        # the consumer resets the topic to RETRY_TOPIC before the listener (§2.5); keep both views
        "original_topic": F.coalesce(retry_topic, F.when(~topic.rlike("^%(RETRY|DLQ)%"), topic)),
        "msg_id": _rx(props, P.rx_property("UNIQ_KEY")),
        "origin_msg_id": _rx(props, P.rx_property("ORIGIN_MESSAGE_ID")),
        "delay_level": _int(_rx(props, P.rx_property("DELAY"))),
        "keys": _rx(props, P.rx_property("KEYS")),
        "tags": _rx(props, P.rx_property("TAGS")),
        "body": decode_body_bytes(F.regexp_extract(rendering, P.RX_BODY, 1)),
        "broker": _rx(rendering, P.RX_BROKER),
        "client_host": _rx(rendering, P.RX_BORN_HOST),
    }


# ------------------------------------------------------------------------------------------------- log lines


def _by_stmt(pick: dict[int, str]) -> Column:
    """``CASE stmt WHEN i THEN pick[i] ... END`` from SQL text: one py4j call instead of one per node."""
    return F.expr("CASE stmt " + " ".join(f"WHEN {i} THEN {v}" for i, v in pick.items()) + " END")


def _with_log_event_fields(df: DataFrame) -> DataFrame:
    """Add the line-level event fields (``_e_*``) of event lines, each computed once per line.

    ``_log_events`` reads them inside its per-message lambda; lambdas are interpreted and evaluate every
    expression they contain once per element, so a batch line's statement regexes would otherwise run once per
    rendered message.
    """
    msg = F.col("msg")
    st_list = list(enumerate(P.STATEMENTS))

    def rx(pattern: str) -> str:
        return f"nullif(regexp_extract(msg, {sql_str(pattern)}, 1), '')"

    event_type = _by_stmt({i: sql_str(s.event_type) for i, s in st_list})
    group = _by_stmt({i: rx(s.group_rx) for i, s in st_list if s.group_rx})
    topic = _by_stmt({i: rx(s.topic_rx) for i, s in st_list if s.topic_rx})
    msg_id = _by_stmt({i: rx(s.msg_id_rx) for i, s in st_list if s.msg_id_rx})
    reconsume = _by_stmt({i: f"try_cast({rx(s.reconsume_rx)} AS INT)" for i, s in st_list if s.reconsume_rx})
    status = _by_stmt({i: sql_str(s.status) for i, s in st_list if s.status})
    detail = _by_stmt({i: f"substring({rx(s.detail_rx)}, 1, {P.RAW_CAP})" for i, s in st_list if s.detail_rx})
    renderings = _by_stmt(
        {
            i: (
                f"split(regexp_extract(msg, {sql_str(s.msgs_rx)}, 1), {sql_str(P.MSGEXT_SPLIT)})"
                if s.msgs_list
                else f"array(regexp_extract(msg, {sql_str(s.msgs_rx)}, 1))"
            )
            for i, s in st_list
            if s.msgs_rx
        }
    )
    # 4.9.4 L-P1 (§12): the event lives on the Message{...} line that follows; detail from the L-P1 line.
    resend = F.col("resend_of_lp1")
    renderings = F.when(resend, F.array(msg)).otherwise(F.coalesce(renderings, F.array(F.lit(""))))
    event_type = F.when(resend, F.lit(contract.event_type("PUBLISH_RETRY"))).otherwise(event_type)
    is_event = F.col("cat0") == "event"
    fields = {
        "_e_type": event_type,
        "_e_group": F.when(event_type.isin(*GROUP_EVENTS, *COUNTER_EVENTS), F.coalesce(group, F.col("group_hint"))),
        "_e_attribution": F.when(
            event_type.isin(*GROUP_EVENTS) & group.isNull() & F.col("group_hint").isNotNull(), F.lit("config")
        ),
        "_e_msg_id": msg_id,
        "_e_reconsume": reconsume,
        "_e_topic": topic,
        "_e_line_original_topic": _rx(msg, r"originalTopic=([^,]*),"),  # §6.3 L-B7/L-B8
        "_e_status": status,
        "_e_detail": detail,
        "_e_renderings": F.transform(
            renderings, lambda r: F.struct(r.alias("r"), F.regexp_extract(r, P.RX_PROPERTIES, 1).alias("props"))
        ),
    }
    return df.select("*", *(F.when(is_event, c).alias(name) for name, c in fields.items()))


def _log_events() -> Column:
    """The events array of a log line that is an event statement (one per rendered message)."""
    topic = F.col("_e_topic")

    def build(rendering: Column, idx: Column) -> Column:
        m = message_fields(rendering["r"], rendering["props"])
        return _event(
            rec=idx,
            source=F.col("source"),
            event_time=F.col("ts"),
            event_type=F.col("_e_type"),
            consumer_group=F.col("_e_group"),
            msg_id=F.coalesce(F.col("_e_msg_id"), m["msg_id"]),
            offset_msg_id=m["offset_msg_id"],
            origin_msg_id=m["origin_msg_id"],
            topic=F.coalesce(topic, m["topic"]),
            original_topic=F.coalesce(
                F.col("_e_line_original_topic"),
                m["original_topic"],
                F.when(~F.coalesce(topic, F.lit("")).rlike("^%(RETRY|DLQ)%"), topic),
            ),
            queue_id=m["queue_id"],
            reconsume_times=F.coalesce(m["reconsume_times"], F.col("_e_reconsume")),
            delay_level=m["delay_level"],
            keys=m["keys"],
            tags=m["tags"],
            body=m["body"],
            status_code=F.col("_e_status"),
            broker=m["broker"],
            client_host=m["client_host"],
            thread=F.col("thread"),
            detail=F.col("_e_detail"),
            attribution=F.col("_e_attribution"),
        )

    return F.transform(F.col("_e_renderings"), lambda r, i: build(r, i))


def classify_log_lines(lines: DataFrame, ds: str, day_zone: str = "UTC", zones: tuple[str, ...] = ()) -> DataFrame:
    """Classify lines of the log formats (clients, Spring, broker, stats). See module doc and ``log_parts``."""
    quiet, rest = log_parts(lines, ds, day_zone, zones)
    return quiet.unionByName(rest)


# Lines whose category needs other lines of the file: lines without their own timestamp (continuations, damaged
# or hostile lines take the date of the head line before them) and statement candidates (the 4.9.4 L-P1 pairing,
# §12). Every other line is a head line of known noise, classified by its own timestamp.
NEEDS_NEIGHBOURS = "ts IS NULL OR cat0 = 'candidate'"


def log_parts(
    lines: DataFrame, ds: str, day_zone: str = "UTC", zones: tuple[str, ...] = (), keep: Keep | None = None
) -> tuple[DataFrame, DataFrame]:
    """(quiet, rest): LINE_COLUMNS rows of the noise head lines and of all other lines; together, every line once.

    The per-line screen (``ingest_screen``) runs once; the per-file window then sees only the few lines that need
    their neighbours, plus the head lines next to each run of lines without a timestamp, instead of a shuffle and
    sort of every line of the day. ``keep`` materialises the screen, which three steps read (see
    ``classify_families``).
    """
    pre = (keep or _same)(screen_log_lines(lines, ds, zones), "screening log lines")
    d = F.lit(ds).cast("date")
    # a noise head line always has its own timestamp: it is ignored on the date, other_date elsewhere
    quiet = pre.filter(f"NOT ({NEEDS_NEIGHBOURS})").select(
        "source",
        "source_file",
        "line_no",
        "ts",
        F.to_date(F.from_utc_timestamp(F.col("ts"), day_zone)).alias("line_date"),
        "why",
        "bind",
    )
    # The report reads the category of every noise line; a range test on the UTC timestamp decides it without
    # converting each line to local time (that conversion was a fifth of the report's CPU at 10 M lines).
    day = utc_day_range(ds, day_zone)
    on_day = (
        (F.col("ts") >= F.expr(f"timestamp_millis({day[0]})")) & (F.col("ts") < F.expr(f"timestamp_millis({day[1]})"))
        if day
        else F.col("line_date") == d
    )
    quiet = quiet.select(
        "source",
        "source_file",
        "line_no",
        "line_date",
        F.when(on_day, F.lit("ignored")).otherwise(F.lit("other_date")).alias("category"),
        F.when(on_day, F.col("why")).alias("kind"),
        F.lit(None).cast("string").alias("reason"),
        F.lit(None).cast("string").alias("raw"),
        _no_events().alias("events"),
        _no_bad().alias("bad"),
        F.lit(0).alias("other_date_events"),
        # bindings are read on every date: a start-up line names its instance's groups whatever day it is on
        "bind",
    )
    return quiet, _date_log_lines(pre, ds, day_zone)


def utc_day_range(ds: str, day_zone: str) -> tuple[int, int] | None:
    """Epoch ms [start, end) of the calendar day ``ds`` in ``day_zone`` when the zone keeps one UTC offset from
    the day before to the day after (then a UTC instant is on the day exactly when it is in the range); None
    when the offset changes then (a DST switch), or the zone is not in the tz database, so the caller converts."""
    day = dt.date.fromisoformat(ds)
    try:
        zone = zoneinfo.ZoneInfo(day_zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None
    midnight = dt.datetime.combine(day, dt.time())
    offsets = {(midnight + dt.timedelta(hours=h)).replace(tzinfo=zone).utcoffset() for h in range(-24, 49)}
    return timefmt.day_bounds_ms(day, day_zone) if len(offsets) == 1 else None


def _date_log_lines(pre: DataFrame, ds: str, day_zone: str) -> DataFrame:
    """The lines that need their neighbours: continuation lines take their head's date, orphans, L-P1 pairing."""
    w = _with_log_event_fields(settle_candidates(_neighbour_values(_needy_rows(pre))))
    return _dated_log_lines(w, ds, day_zone)


def _by_file() -> WindowSpec:
    return Window.partitionBy("source_file").orderBy("line_no")


def _needy_rows(pre: DataFrame) -> DataFrame:
    """The screened lines that need their neighbours, plus each run's anchor (``_anchor``): the head line before
    each run of lines without a timestamp, and for a run that opens the file the head line after it."""
    by_file = _by_file()
    # the anchors are the only noise lines a window value needs
    untimed = pre.filter(F.col("ts").isNull()).select(
        "source_file",
        "line_no",
        F.lag("line_no").over(by_file).alias("prev_untimed"),
        F.lead("line_no").over(by_file).alias("next_untimed"),
        F.row_number().over(by_file).alias("nth"),
    )
    starts = (F.col("line_no") > 1) & F.coalesce(F.col("prev_untimed") != F.col("line_no") - 1, F.lit(True))
    # the last line of the run that starts at line 1 (its lines are numbered 1..n)
    opening_end = (F.col("nth") == F.col("line_no")) & F.coalesce(
        F.col("next_untimed") != F.col("line_no") + 1, F.lit(True)
    )
    anchor_keys = untimed.filter(starts | opening_end).select(
        "source_file",
        F.when(starts, F.col("line_no") - 1).otherwise(F.col("line_no") + 1).alias("line_no"),
        F.lit(True).alias("_anchor"),
    )
    # One scan of the screen keeps the needy lines and the anchors. The broadcast is explicit: a checkpointed
    # screen has no size estimate, and a sort-merge join would shuffle it whole.
    return pre.join(F.broadcast(anchor_keys), ["source_file", "line_no"], "left").filter(
        f"({NEEDS_NEIGHBOURS}) OR _anchor"
    )


def _neighbour_values(rows: DataFrame) -> DataFrame:
    """What each needy line learns from the lines above it in its file (and the file's first head line); the
    anchors are dropped once read."""
    by_file = _by_file()
    before = by_file.rowsBetween(Window.unboundedPreceding, -1)
    upto = by_file.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    # a whole-file frame is evaluated once per file; a frame from the current row to the end would be evaluated
    # again for every row (quadratic: 50 s for one partition of 61 k rows at 10 M lines)
    whole = by_file.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    head_ts = F.when(F.col("is_head"), F.col("ts"))
    # Over these rows the values equal those over the whole file: the last timestamp before a line is on the
    # line itself or on its run's anchor, a head line before a run shows in head_seen through that anchor, the
    # file's first head line is the anchor after the run that opens it, and every L-P1 line is a candidate.
    return (
        rows.select(
            "*",
            F.last(head_ts, ignorenulls=True).over(upto).alias("prev_head_ts"),
            F.first(head_ts, ignorenulls=True).over(whole).alias("first_head_ts"),
            F.max(F.col("is_head").cast("int")).over(upto).alias("head_seen"),
            F.last(F.col("lp1_msg"), ignorenulls=True).over(before).alias("last_lp1_msg"),
            # what the nearest line above that is not wrapped text is: a wrapped line needs a head line, an
            # exception line or a Caused by line there (a run's anchor is the head line just before it)
            F.last(
                F.when(F.col("cont") == "text", None)
                .when(F.col("is_head") & F.col("ts").isNotNull(), F.lit("head"))
                .otherwise(F.coalesce(F.col("cont"), F.lit("other"))),
                ignorenulls=True,
            )
            .over(before)
            .alias("wraps"),
        )
        .filter(NEEDS_NEIGHBOURS)
        .drop("_anchor")
    )


def _dated_log_lines(w: DataFrame, ds: str, day_zone: str) -> DataFrame:
    """LINE_COLUMNS of the settled needy lines: date, final category (orphans and unwrapped text quarantined),
    reason and events."""
    d = F.lit(ds).cast("date")
    # a line before the file's first head line is dated by that head line
    line_ts = F.coalesce(F.col("ts"), F.col("prev_head_ts"), F.col("first_head_ts"))
    line_date = F.coalesce(F.to_date(F.from_utc_timestamp(line_ts, day_zone)), d)
    orphan = (F.col("cat0") == "continuation") & (F.coalesce(F.col("head_seen"), F.lit(0)) == 0)
    unwrapped = (
        (F.col("cat0") == "continuation")
        & (F.col("cont") == "text")
        & ~F.coalesce(F.col("wraps").isin("head", "exception", "cause"), F.lit(False))
    )
    cat = F.when(orphan | unwrapped, F.lit("quarantined")).otherwise(F.col("cat0"))
    w = w.withColumn("line_date", line_date).withColumn(
        "category", F.when(F.col("line_date") != d, F.lit("other_date")).otherwise(cat)
    )
    events = _log_events_with_lp1()
    is_q = F.col("category") == "quarantined"
    return w.select(
        "source",
        "source_file",
        "line_no",
        "line_date",
        "category",
        F.when(F.col("category") == "ignored", F.col("why")).alias("kind"),
        F.when(is_q & orphan, F.lit("continuation line before any head line in the file"))
        .when(is_q & unwrapped, F.lit(P.NOT_CONTINUATION))
        .when(is_q, F.col("why"))
        .alias("reason"),
        F.when(is_q, F.col("raw")).alias("raw"),
        F.when(F.col("category") == "event", events).otherwise(_no_events()).alias("events"),
        _no_bad().alias("bad"),
        F.lit(0).alias("other_date_events"),
        _no_bind(),
    )


def _log_events_with_lp1() -> Column:
    """``_log_events``; on the 4.9.4 Message{...} line after L-P1 (§12), detail and topic from that L-P1 line."""
    lp1_detail = _cap(_rx(F.col("last_lp1_msg"), r"^sendKernelImpl exception, (.*)$"))
    lp1_topic = _rx(F.col("last_lp1_msg"), r"Broker: MessageQueue \[topic=([^,\]]*)")
    events0 = _log_events()
    return F.when(
        F.col("resend_of_lp1"),
        F.transform(
            events0,
            lambda e: (
                e.withField("detail", lp1_detail)
                .withField("topic", F.coalesce(lp1_topic, e["topic"]))
                .withField("original_topic", F.coalesce(e["original_topic"], lp1_topic))
            ),
        ),
    ).otherwise(events0)


# ----------------------------------------------------------------------------------------------------- trace


def trace_records(body: str, fallback_time: str, source_name: str) -> Column:
    """Every record of one trace payload (§7.2) parsed, from SQL text over the line's columns (see
    ``ingest_trace``); ``trace_events`` splits it into events and bad records."""
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
        F.when(F.col("category") == "event", F.col("events")).otherwise(_no_events()).alias("events"),
        F.when(F.col("category").isin("event", "quarantined"), F.col("bad")).otherwise(_no_bad()).alias("bad"),
        (F.size("all_events") - F.size("events")).alias("other_date_events"),
        _no_bind(),
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
        _cap(F.make_valid_utf8(F.substring(line, 1, P.RAW_CAP))).alias("raw0"),
        good.alias("all_events"),
        bad.alias("bad"),
        F.lit(None).cast("date").alias("own_date"),
    )
    return _finish_record_lines(df, ds, day_zone)


# -------------------------------------------------------------------------------------------- message dumps

DUMP_SCHEMA = (
    "dumpTopic string, topic string, queueId string, queueOffset string, msgId string, offsetMsgId string, "
    "uniqKey string, bornTimestamp string, bornHost string, storeTimestamp string, storeHost string, "
    "reconsumeTimes string, properties struct<UNIQ_KEY:string, KEYS:string, TAGS:string, RETRY_TOPIC:string, "
    "REAL_TOPIC:string, REAL_QID:string, DELAY:string, ORIGIN_MESSAGE_ID:string>, body string"
)


def dump_event() -> Column:
    """One stored message of a dump line as an event struct (SQL text, see ``ingest_dump``)."""
    return F.expr(dump_event_sql(EVENT_FIELDS))


def classify_dump_lines(lines: DataFrame, ds: str, day_zone: str = "UTC") -> DataFrame:
    """``message-dump`` JSON Lines; a dump of the trace topic is read as ``trace`` records."""
    line = F.col("line")
    hostile = _hostile(line)
    safe = F.when(hostile.isNull(), line)
    df = lines.select(
        "source",
        "source_file",
        "line_no",
        hostile.alias("hostile"),
        _cap(F.make_valid_utf8(F.substring(line, 1, P.RAW_CAP))).alias("raw0"),
        F.from_json(safe, DUMP_SCHEMA, {"mode": "PERMISSIVE"}).alias("j"),
        (F.trim(F.coalesce(safe, F.lit("x"))) == "").alias("blank"),
    )
    j = F.col("j")
    topic = F.coalesce(_nz(j["topic"]), _nz(j["dumpTopic"]))
    df = df.withColumn("topic_", topic)
    store_time = F.expr(epoch_ms("j.storeTimestamp"))
    is_trace = F.coalesce(topic.rlike(TRACE_TOPICS_RX), F.lit(False))
    q_reason = (
        F.when(F.col("hostile").isNotNull(), F.col("hostile"))
        .when(F.col("blank"), F.lit(None))
        .when(j.isNull() | topic.isNull(), F.lit("not a message-dump JSON object (no topic)"))
        .when(store_time.isNull(), F.lit("dump line without a valid storeTimestamp"))
        .when(
            ~is_trace & F.coalesce(_nz(j["properties"]["UNIQ_KEY"]), _nz(j["uniqKey"]), _nz(j["msgId"])).isNull(),
            F.lit("dump line without a message id"),
        )
    )
    df = df.select("*", q_reason.alias("q_reason"), is_trace.alias("is_trace"))
    records = trace_records("coalesce(j.body, '')", epoch_ms("j.storeTimestamp"), "'trace'")
    df = df.withColumn("_trace_records", F.when(F.col("q_reason").isNull() & F.col("is_trace"), records))
    t_good, t_bad = trace_events("_trace_records")
    q_reason, is_trace = F.col("q_reason"), F.col("is_trace")
    df = df.select(
        "source",
        "source_file",
        "line_no",
        "raw0",
        F.when(F.col("blank"), F.lit("blank line")).alias("ignored_kind"),
        q_reason.alias("q_reason"),
        F.when(q_reason.isNotNull() | F.col("blank"), _no_events())
        .when(is_trace, t_good)
        .otherwise(F.array(dump_event()))
        .alias("all_events"),
        F.when(q_reason.isNull() & is_trace, t_bad).otherwise(_no_bad()).alias("bad"),
        F.to_date(F.from_utc_timestamp(store_time, day_zone)).alias("own_date"),
    )
    return _finish_record_lines(df, ds, day_zone)


# ------------------------------------------------------------------------------------------------ top level


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
    keep = keep or _same
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
