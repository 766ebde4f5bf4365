"""Log lines (clients, Spring, broker, stats) -> LINE_COLUMNS rows (docs/ingest.md, "How the log lines flow").

The per-line screen (``ingest.screen``) runs once over every line; only the lines that need their neighbours
(continuations, damaged lines, statement candidates) and the head lines next to them go through the per-file
window here, where they are dated, settled and, for event statements, turned into event structs.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from typing import TYPE_CHECKING

from pyspark.sql import Column, Window, WindowSpec
from pyspark.sql import functions as F

from rocketmq_retry import contract
from rocketmq_retry.config import FRAMEWORK_PACKAGES
from rocketmq_retry.jobs.ingest import causes
from rocketmq_retry.jobs.ingest import patterns as P
from rocketmq_retry.jobs.ingest.event import (
    Keep,
    capped,
    event,
    extract,
    message_fields,
    no_bad,
    no_bind,
    no_events,
    no_line_hash,
    same,
)
from rocketmq_retry.jobs.ingest.screen import screen_log_lines, settle_candidates
from rocketmq_retry.jobs.ingest.sql import sql_str
from rocketmq_retry.logformats import timefmt

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


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
    message = _by_stmt({i: f"substring({rx(s.message_rx)}, 1, {P.RAW_CAP})" for i, s in st_list if s.message_rx})
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
    event_type = F.when(resend, F.lit(contract.EventType.PUBLISH_RETRY)).otherwise(event_type)
    is_event = F.col("cat0") == "event"
    fields = {
        "_e_type": event_type,
        "_e_group": F.when(
            event_type.isin(*contract.GROUP_EVENT_TYPES, *contract.COUNTER_EVENT_TYPES),
            F.coalesce(group, F.col("group_hint")),
        ),
        "_e_attribution": F.when(
            event_type.isin(*contract.GROUP_EVENT_TYPES) & group.isNull() & F.col("group_hint").isNotNull(),
            F.lit("config"),
        ),
        "_e_msg_id": msg_id,
        "_e_reconsume": reconsume,
        "_e_topic": topic,
        "_e_line_original_topic": extract(msg, r"originalTopic=([^,]*),"),  # §6.3 L-B7/L-B8
        "_e_status": status,
        "_e_detail": detail,
        "_e_message": message,
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
        return event(
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
            **{name: F.col(f"_c_{name}") for name in causes.CAUSE_FIELDS} | causes.message_cause("_e_message"),
        )

    return F.transform(F.col("_e_renderings"), lambda r, i: build(r, i))


def classify_log_lines(
    lines: DataFrame,
    ds: str,
    day_zone: str = "UTC",
    zones: tuple[str, ...] = (),
    frameworks: tuple[str, ...] = FRAMEWORK_PACKAGES,
) -> DataFrame:
    """Classify lines of the log formats (clients, Spring, broker, stats). See module doc and ``log_parts``."""
    quiet, rest = log_parts(lines, ds, day_zone, zones, frameworks=frameworks)
    return quiet.unionByName(rest)


# Lines whose category needs other lines of the file: lines without their own timestamp (continuations, damaged
# or hostile lines take the date of the head line before them) and statement candidates (the 4.9.4 L-P1 pairing,
# §12). Every other line is a head line of known noise, classified by its own timestamp.
NEEDS_NEIGHBOURS = "ts IS NULL OR cat0 = 'candidate'"


def log_parts(
    lines: DataFrame,
    ds: str,
    day_zone: str = "UTC",
    zones: tuple[str, ...] = (),
    keep: Keep | None = None,
    frameworks: tuple[str, ...] = FRAMEWORK_PACKAGES,
) -> tuple[DataFrame, DataFrame]:
    """(quiet, rest): LINE_COLUMNS rows of the noise head lines and of all other lines; together, every line once.

    The per-line screen (``ingest.screen``) runs once; the per-file window then sees only the few lines that need
    their neighbours, plus the head lines next to each run of lines without a timestamp, instead of a shuffle and
    sort of every line of the day. ``keep`` materialises the screen, which three steps read (see
    ``classify_families``). ``frameworks``: the packages whose stack frames are not the application's
    (``causes.framework_packages``, each ending in ".").
    """
    pre = (keep or same)(screen_log_lines(lines, ds, zones), "screening log lines")
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
        no_events().alias("events"),
        no_line_hash(),
        no_bad().alias("bad"),
        F.lit(0).alias("other_date_events"),
        # bindings are read on every date: a start-up line names its instance's groups whatever day it is on
        "bind",
    )
    return quiet, _date_log_lines(pre, ds, day_zone, frameworks)


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


def _date_log_lines(pre: DataFrame, ds: str, day_zone: str, frameworks: tuple[str, ...]) -> DataFrame:
    """The lines that need their neighbours: continuation lines take their head's date, orphans, L-P1 pairing,
    and a failure's cause from the stack trace after it (``ingest.causes``)."""
    settled = settle_candidates(_neighbour_values(_needy_rows(pre)))
    trace_line = (F.col("cat0") == "continuation") & ~_unwrapped()
    w = _with_log_event_fields(causes.with_causes(settled, frameworks, trace_line))
    return _dated_log_lines(w, ds, day_zone)


def _unwrapped() -> Column:
    """A wrapped-text line whose nearest line above that is not wrapped text is no head, exception or Caused by
    line: it continues nothing (quarantined)."""
    return (F.col("cont") == "text") & ~F.coalesce(F.col("wraps").isin("head", "exception", "cause"), F.lit(False))


def _by_file() -> WindowSpec:
    return Window.partitionBy("source_file").orderBy("line_no")


def _needy_rows(pre: DataFrame) -> DataFrame:
    """The screened lines that need their neighbours, plus each run's anchors (``_anchor``): the head line before
    each run of lines without a timestamp and the line after it, when the file has one (it tells a cause that the
    trace was not cut by the end of the file, ``ingest.causes``; for a run that opens the file it is the file's
    first head line)."""
    by_file = _by_file()
    # the anchors are the only noise lines a window value needs
    untimed = pre.filter(F.col("ts").isNull()).select(
        "source_file",
        "line_no",
        F.lag("line_no").over(by_file).alias("prev_untimed"),
        F.lead("line_no").over(by_file).alias("next_untimed"),
    )
    starts = (F.col("line_no") > 1) & F.coalesce(F.col("prev_untimed") != F.col("line_no") - 1, F.lit(True))
    # The line after a run, unless it is also the line before the next run (that run's start names it): each
    # anchor once, or the join below repeats a line (a file opening with the end of a trace, then one head line
    # and its own trace, counted that head line twice). A run's last line + 1 past the end of the file joins no
    # line. The window values do not change with the extra anchors: each run still has its head line before it.
    ends = F.coalesce(~F.col("next_untimed").isin(F.col("line_no") + 1, F.col("line_no") + 2), F.lit(True))
    anchor_keys = (
        untimed.filter(starts | ends)
        .select(
            "source_file",
            F.explode(
                F.array_compact(F.array(F.when(starts, F.col("line_no") - 1), F.when(ends, F.col("line_no") + 1)))
            ).alias("line_no"),
        )
        .withColumn("_anchor", F.lit(True))
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
            *causes.neighbour_fields(upto, by_file),
            F.last(head_ts, ignorenulls=True).over(upto).alias("prev_head_ts"),
            F.first(head_ts, ignorenulls=True).over(whole).alias("first_head_ts"),
            F.max(F.col("is_head").cast("int")).over(upto).alias("head_seen"),
            F.last(F.col("lp1_msg"), ignorenulls=True).over(before).alias("last_lp1_msg"),
            # what the nearest line above that is not wrapped text is: a wrapped line needs a head line, an
            # exception line or a Caused by line there (a run's anchor is the head line just before it). A blank
            # line is passed over: a message may hold one (MySQL Connector/J's "Communications link failure",
            # a blank line, then "The last packet sent successfully …"), printed as is by Throwable.toString()
            F.last(
                F.when(F.col("cont").isin("text", "blank"), None)
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
    before_heads = (F.col("cat0") == "continuation") & (F.coalesce(F.col("head_seen"), F.lit(0)) == 0)
    # A blank line above the first head line continues nothing, and loses nothing: the line a console capture
    # opens with (the Spring Boot banner's first line) or a blank between two banners. Other lines there are damage.
    lead_blank = before_heads & (F.col("cont") == "blank")
    orphan = before_heads & ~lead_blank
    unwrapped = (F.col("cat0") == "continuation") & _unwrapped()
    cat = F.when(orphan | unwrapped, F.lit("quarantined")).when(lead_blank, F.lit("ignored")).otherwise(F.col("cat0"))
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
        F.when(F.col("category") == "ignored", F.when(lead_blank, F.lit(P.LEAD_BLANK)).otherwise(F.col("why"))).alias(
            "kind"
        ),
        F.when(is_q & orphan, F.lit("continuation line before any head line in the file"))
        .when(is_q & unwrapped, F.lit(P.NOT_CONTINUATION))
        .when(is_q, F.col("why"))
        .alias("reason"),
        F.when(is_q, F.col("raw")).alias("raw"),
        F.when(F.col("category") == "event", events).otherwise(no_events()).alias("events"),
        F.when(F.col("category") == "event", F.col("line_hash")).alias("line_hash"),
        no_bad().alias("bad"),
        F.lit(0).alias("other_date_events"),
        no_bind(),
    )


def _log_events_with_lp1() -> Column:
    """``_log_events``; on the 4.9.4 Message{...} line after L-P1 (§12), detail and topic from that L-P1 line."""
    lp1_detail = capped(extract(F.col("last_lp1_msg"), r"^sendKernelImpl exception, (.*)$"))
    lp1_topic = extract(F.col("last_lp1_msg"), r"Broker: MessageQueue \[topic=([^,\]]*)")
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
