"""Events as the reconstruction reads them: the DESIGN §4 contract, identity linking and evidence kinds.

Everything here is ``DataFrame -> DataFrame`` or returns a ``Column``; no Python runs per row.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from rocketmq_retry import contract
from rocketmq_retry.contract import EventType
from rocketmq_retry.engine.message_const import PROPERTY_FIRST_POP_TIME, PROPERTY_REAL_TOPIC
from rocketmq_retry.engine.model import DLQ_TOPIC_PREFIX, RETRY_TOPIC_PREFIX, SCHEDULE_TOPIC
from rocketmq_retry.jobs.ingest.parse import COUNTER_EVENTS, GROUP_EVENTS
from rocketmq_retry.jobs.reconstruct.attribution import GrpcGroups, attribute
from rocketmq_retry.jobs.reconstruct.pops import resolve_pops

# DESIGN §4 events columns (the data contract). The ingest job owns the table; the reconstruction selects these
# names and nothing else, so extra columns in the real table are harmless.
EVENTS_SCHEMA = contract.struct_type("events")


# Event types written by a consumer about one delivery (§6.2, §6.4, §7.2): each proves the delivery happened.
CONSUMER_KINDS = ("DELIVERY", "OK", "FAIL", "SUSPEND", "TIMEOUT", "DROP", "LOCAL", "SBF", "SENDBACK")
_CONSUMER_EVENT_TYPES = (
    EventType.DELIVERED,
    EventType.CONSUME_OK,
    EventType.CONSUME_FAILED,
    EventType.CONSUME_TIMEOUT,
    EventType.ORDERLY_SUSPENDED,
    EventType.BROADCAST_DROPPED,
    EventType.POP_NACK,
    EventType.POP_DROPPED,
    EventType.LOCAL_RETRY,
    EventType.SEND_BACK_FAILED,
    EventType.DIRECT_CONSUME,
)


def conform(events: DataFrame, zone: str = "UTC") -> DataFrame:
    """Select the contract's columns with the contract's types; a missing column becomes null (and is reported)."""
    have = {f.name for f in events.schema.fields}
    cols = [
        (F.col(f.name).cast(f.dataType) if f.name in have else F.lit(None).cast(f.dataType)).alias(f.name)
        for f in EVENTS_SCHEMA.fields
    ]
    # dt=D is the day in the configuration's zone (ingest's partitioning); a frame without dt gets it that way
    local = F.from_utc_timestamp("event_time", zone)
    dt = F.col("dt").cast("string") if "dt" in have else F.date_format(local, "yyyy-MM-dd")
    return events.select(*cols, dt.alias("dt"))


def _group_from_topic(topic: Column) -> Column:
    # %RETRY%<group> / %DLQ%<group> name their group (§2.4). Pop retry topics (%RETRY%<g>_<t>) are ambiguous
    # because group names may contain '_', so only the plain forms are read here.
    return (
        F.when(topic.startswith(DLQ_TOPIC_PREFIX), F.expr("substring(topic, 6)"))
        .when(topic.startswith(RETRY_TOPIC_PREFIX) & ~topic.contains("+"), F.expr("substring(topic, 8)"))
        .otherwise(F.lit(None))
    )


def _real_topic_group(detail: Column) -> Column:
    # A schedule-topic copy names its destination in REAL_TOPIC (§3.2); dumps keep properties in `detail`.
    g = F.regexp_extract(detail, r"REAL_TOPIC\W{1,4}%(?:RETRY|DLQ)%([^,\"'}\s]+)", 1)
    return F.when(g != "", g)


def link_identities(events: DataFrame, known_groups: tuple[str, ...] = ()) -> DataFrame:
    """Resolve ``msg_id`` (UNIQ_KEY) and ``consumer_group`` where the row itself lacks them.

    Rows carrying only an offset msgId or ORIGIN_MESSAGE_ID (§2.5: the broker's ORIGIN_MESSAGE_ID is the offset
    id of the first stored copy) are linked through rows that carry both ids. An offset id that maps to more than
    one UNIQ_KEY is not used. Adds ``linked_by`` (``msg_id`` | ``offset_msg_id`` | ``origin_msg_id`` | null).
    """
    pairs = (
        events.where(F.col("msg_id").isNotNull() & F.col("offset_msg_id").isNotNull())
        .select(F.col("offset_msg_id").alias("_oid"), F.col("msg_id").alias("_mid"))
        .distinct()
        .groupBy("_oid")
        .agg(F.min("_mid").alias("_mid"), F.countDistinct("_mid").alias("_n"))
        .where(F.col("_n") == 1)
        .drop("_n")
    )
    by_offset = pairs.select(F.col("_oid").alias("_oid1"), F.col("_mid").alias("_mid1"))
    by_origin = pairs.select(F.col("_oid").alias("_oid2"), F.col("_mid").alias("_mid2"))
    need = events.where(F.col("msg_id").isNull())
    have = events.where(F.col("msg_id").isNotNull())
    resolved = (
        need.join(by_offset, need["offset_msg_id"] == by_offset["_oid1"], "left")
        .join(by_origin, need["origin_msg_id"] == by_origin["_oid2"], "left")
        .withColumn(
            "linked_by",
            F.when(F.col("_mid1").isNotNull(), F.lit("offset_msg_id")).when(
                F.col("_mid2").isNotNull(), F.lit("origin_msg_id")
            ),
        )
        .withColumn("msg_id", F.coalesce("_mid1", "_mid2"))
        .drop("_oid1", "_mid1", "_oid2", "_mid2")
    )
    out = have.withColumn("linked_by", F.lit("msg_id")).unionByName(resolved)
    group = F.coalesce(F.col("consumer_group"), _group_from_topic(F.col("topic")), _real_topic_group(F.col("detail")))
    out = out.withColumn("consumer_group", group)
    # A V1 pop retry topic %RETRY%<group>_<topic> (§2.4) read as %RETRY%<group> names "<group>_<topic>": strip the
    # business topic (RETRY_TOPIC) so the copy joins its lifecycle. Only a revived POP copy (it carries 1ST_POP_TIME,
    # §2.6) has such a topic: a remoting send-back copy of group GID_ORDERS consuming ORDERS is in %RETRY%GID_ORDERS
    # with RETRY_TOPIC=ORDERS, and its group is whole (engine.model.parse_retry_topic, rules 2 and 4).
    g, ot = F.col("consumer_group"), F.col("original_topic")
    revived = F.coalesce(F.col("detail").contains(f"{PROPERTY_FIRST_POP_TIME}="), F.lit(False))
    pop_copy = (
        F.col("topic").startswith(RETRY_TOPIC_PREFIX)
        & revived
        & ~g.isin(*known_groups)
        & ot.isNotNull()
        & g.endswith(F.concat(F.lit("_"), ot))
    )
    stripped = F.expr("substring(consumer_group, 1, length(consumer_group) - length(original_topic) - 1)")
    out = out.withColumn("consumer_group", F.when(pop_copy, stripped).otherwise(g))
    # A revived pop copy need not carry RETRY_TOPIC: then a configured group followed by "_" names the owner.
    known: Column = F.lit(None).cast("string")
    for name in sorted(known_groups, key=len):  # longest prefix wins (the last `when` applied is outermost)
        known = F.when(g.startswith(name + "_"), F.lit(name)).otherwise(known)
    retry_copy = (
        F.col("topic").startswith(RETRY_TOPIC_PREFIX) & ~g.isin(*known_groups) if known_groups else F.lit(False)
    )
    out = out.withColumn("consumer_group", F.when(retry_copy & known.isNotNull(), known).otherwise(g))
    # A consumer line that names no group (L-C4, a Spring or gRPC listener line) is attributed by evidence of its
    # own instance, never by the message's other groups (``attribution``).
    return out


def business_topic() -> Column:
    """``original_topic`` with a pop retry topic read back to its business topic: a gRPC dead letter's broker line
    names the revived copy's topic, ``%RETRY%<group>_<topic>`` (V1) or ``%RETRY%<group>+<topic>`` (V2, §2.4)."""
    ot, g = F.col("original_topic"), F.col("consumer_group")
    v1 = F.concat(F.lit(RETRY_TOPIC_PREFIX), g, F.lit("_"))
    return (
        F.when(ot.startswith(RETRY_TOPIC_PREFIX) & ot.contains("+"), F.substring_index(ot, "+", -1))
        .when(g.isNotNull() & ot.startswith(v1), F.expr("substring(original_topic, length(consumer_group) + 9)"))
        .otherwise(ot)
    )


def evidence_kind() -> Column:
    """What an event says about a lifecycle (docs/reconstruction.md, "Evidence kinds")."""
    et, topic = F.col("event_type"), F.col("topic")
    consumer = et.isin(*_CONSUMER_EVENT_TYPES)
    return (
        # Lines about topics or producers, not about a stored copy of a consumed message (L-B1, L-B4/5, L-P*).
        F.when(
            et.isin(
                EventType.TOPIC_CREATED, EventType.SCHEDULE_ERROR, EventType.PUBLISH_RETRY, EventType.PUBLISH_FAILED
            ),
            "OTHER",
        )
        # a revive-log checkpoint / ack (§2.6): about a pop of a stored copy, not the copy (``reconstruct.pops``)
        .when(et == EventType.POP_CHECKPOINT, "POP")
        .when(et == EventType.POP_ACK, "POPACK")
        .when(et == EventType.DELIVERED, "DELIVERY")
        .when(et == EventType.CONSUME_OK, "OK")
        .when(et.isin(EventType.CONSUME_FAILED, EventType.POP_NACK), "FAIL")
        .when(et == EventType.ORDERLY_SUSPENDED, "SUSPEND")
        .when(et == EventType.CONSUME_TIMEOUT, "TIMEOUT")
        .when(et.isin(EventType.BROADCAST_DROPPED, EventType.POP_DROPPED), "DROP")
        .when(et == EventType.LOCAL_RETRY, "LOCAL")
        .when(et == EventType.SEND_BACK_FAILED, "SBF")
        .when(et == EventType.DIRECT_CONSUME, "DIRECT")
        .when(et.isin(*COUNTER_EVENTS), "STAT")
        .when(et == EventType.DEAD_LETTERED, "DLQ")
        .when(~consumer & topic.startswith(DLQ_TOPIC_PREFIX), "DLQ")
        .when(~consumer & (topic == SCHEDULE_TOPIC), "SCHED")
        .when(~consumer & topic.startswith(RETRY_TOPIC_PREFIX), "READY")
        .when(et == EventType.SEND_BACK, "SENDBACK")
        .when(et == EventType.PUBLISHED, "PUB")
        .otherwise("OTHER")
    )


def dlq_bound() -> Column:
    """A schedule copy on its way to the DLQ (4.x orderly/fallback quirk, §2.3, §12): REAL_TOPIC=%DLQ%…"""
    return F.coalesce(F.col("detail").rlike(rf"{PROPERTY_REAL_TOPIC}\W{{1,4}}{DLQ_TOPIC_PREFIX}"), F.lit(False))


def attempt_of(orderly_groups: tuple[str, ...] = ()) -> Column:
    """The delivery (its reconsume_times) an event is about.

    Consumer-side lines name the delivery they report. A stored retry copy carries the reconsume_times of the
    delivery it leads to (r + 1, §2.2 step 11), so it is about the failure of r. A DLQ-bound schedule copy comes
    from one of two 4.x paths (§2.3 quirk): an orderly consumer past its max re-publishes with the failed
    delivery's r (§4, §12), while a concurrent consumer's send-back fallback re-publishes with r + 1 (§1.4, §2.3),
    like any retry copy. Groups not configured are concurrent (the default).
    """
    kind, r = F.col("kind"), F.col("reconsume_times")
    orderly = F.col("consumer_group").isin(*orderly_groups) if orderly_groups else F.lit(False)
    return (
        F.when(kind.isin(*CONSUMER_KINDS), r)
        # a checkpoint carries the popped copy's r (``pops.resolve_pops``): the delivery it made
        .when(kind.isin("POP", "POPACK"), r)
        .when((kind == "SCHED") & F.col("dlq_bound") & orderly, r)
        .when(kind.isin("SCHED", "READY"), r - 1)
        .otherwise(F.lit(None).cast("int"))
    )


def observations(
    events: DataFrame,
    day: str,
    zone: str = "UTC",
    known_groups: tuple[str, ...] = (),
    orderly_groups: tuple[str, ...] = (),
    bindings: DataFrame | None = None,
    grpc: GrpcGroups | None = None,
) -> DataFrame:
    """Linked and attributed events with ``kind``, ``attempt``, ``t_ms``, ``in_day``; consumer outcomes lacking a
    reconsume_times (a trace SubAfter has none, §7.2) take that of the last delivery the same source reported.
    ``orderly_groups`` are the remoting orderly groups, whose DLQ-bound copies keep r (see ``attempt_of``).
    ``bindings`` and ``grpc`` are the evidence ``attribution.attribute`` reads; rows it cannot attribute keep no
    group and carry ``unattributed`` (a reason code)."""
    return observations_of_linked(linked_events(events, zone, known_groups), day, orderly_groups, bindings, grpc)


def linked_events(events: DataFrame, zone: str = "UTC", known_groups: tuple[str, ...] = ()) -> DataFrame:
    """The first half of ``observations``: conformed events, POP checkpoints resolved to their copies, ids and
    groups linked. The pipeline stores it (a local checkpoint) before the second half: on Spark Connect the whole
    plan of ``observations`` is a protobuf message nested past the client's decoding limit of 100 levels."""
    return link_identities(resolve_pops(conform(events, zone)), known_groups)


def observations_of_linked(
    ev: DataFrame,
    day: str,
    orderly_groups: tuple[str, ...] = (),
    bindings: DataFrame | None = None,
    grpc: GrpcGroups | None = None,
) -> DataFrame:
    """The second half of ``observations``, over ``linked_events``."""
    about, published = observation_parts(ev, day, orderly_groups, bindings, grpc)
    return about.unionByName(published)


def published_alone() -> Column:
    """A publication no consumer group is named on (over linked events; attribution gives a group only to the
    consumer-side event types, ``GROUP_EVENTS``, so such a row keeps none)."""
    return (evidence_kind() == "PUB") & F.col("consumer_group").isNull()


def observation_parts(
    ev: DataFrame,
    day: str,
    orderly_groups: tuple[str, ...] = (),
    bindings: DataFrame | None = None,
    grpc: GrpcGroups | None = None,
) -> tuple[DataFrame, DataFrame]:
    """``observations_of_linked`` as two frames that together hold its rows: (every row that can be about a
    lifecycle, through the r-filling windows and so partitioned by group and message; the publications no group
    is named on, ``published_alone``). No window reads a publication (none is a delivery, none an outcome to
    fill) and no aggregation per lifecycle or attempt keeps one (each asks for a group), yet they are most of a
    day's rows (59 % of the production mix's, docs/scale.md): kept apart, they are neither shuffled nor sorted
    for the windows, and the lifecycle's aggregations read the first frame alone."""
    alone = published_alone()
    about = _classified(ev.where(~alone), day, orderly_groups, bindings, grpc, windows=True)
    return about, _classified(ev.where(alone), day, orderly_groups, bindings, grpc, windows=False)


def _classified(
    ev: DataFrame,
    day: str,
    orderly_groups: tuple[str, ...],
    bindings: DataFrame | None,
    grpc: GrpcGroups | None,
    *,
    windows: bool,
) -> DataFrame:
    """Attributed, classified rows; ``windows``: give consumer outcomes without a reconsume_times that of their
    delivery (rows with no outcome among them, as ``published_alone``'s, need no windows: nothing is filled)."""
    need = F.col("consumer_group").isNull() & F.col("event_type").isin(*GROUP_EVENTS)
    ev = attribute(ev, bindings, grpc or GrpcGroups(), need).withColumn("original_topic", business_topic())
    ev = (
        ev.withColumn("kind", evidence_kind())
        .withColumn("dlq_bound", dlq_bound())
        .withColumn("t_ms", F.unix_millis("event_time"))
        .withColumn("in_day", F.col("dt") == F.lit(day))
    )
    # Pair SubAfter with its SubBefore by requestId (§7.2, §12: records of several messages interleave and a pair
    # can share a millisecond); without a requestId, take the same source's last earlier delivery.
    rid = F.nullif(F.regexp_extract(F.coalesce(F.col("detail"), F.lit("")), r"requestId=(\S+)", 1), F.lit(""))
    ev = ev.withColumn("_rid", rid)
    if not windows:
        return ev.withColumnRenamed("_rid", "request_id").withColumn("attempt", attempt_of(orderly_groups))
    delivery_r = F.when(F.col("kind") == "DELIVERY", F.col("reconsume_times"))
    by_request = F.max(delivery_r).over(Window.partitionBy("consumer_group", "msg_id", "source", "_rid"))
    ordered = (
        Window.partitionBy("consumer_group", "msg_id", "source")
        .orderBy("t_ms", F.when(F.col("kind") == "DELIVERY", 0).otherwise(1), "event_id")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    last_delivery_r = F.last(delivery_r, ignorenulls=True).over(ordered)
    fill = F.col("kind").isin("OK", "FAIL", "SUSPEND", "TIMEOUT", "DROP") & F.col("reconsume_times").isNull()
    # A source that never logs r (the gRPC SDK's listener-exception line, §6.2) logs one line per failed delivery:
    # its n-th line is attempt n - 1.
    nth = F.count(F.when(F.col("kind").isin("OK", "FAIL", "SUSPEND", "TIMEOUT", "DROP"), 1)).over(ordered) - 1
    # L-C8 "send expire msg back" (§1.6) prints no r, and the delivery it expires logged nothing in the client's own
    # file when the listener was still running: it is the delivery any source last saw begin. Counting the file's
    # failure lines instead (two a failure on 4.x: L-C1 and L-C2) put it attempts too late.
    any_source = (
        Window.partitionBy("consumer_group", "msg_id")
        .orderBy("t_ms", F.when(F.col("kind") == "DELIVERY", 0).otherwise(1), "event_id")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    expired_r = F.when(F.col("kind") == "TIMEOUT", F.last(delivery_r, ignorenulls=True).over(any_source))
    filled = F.when(F.col("_rid").isNotNull(), by_request).otherwise(
        F.coalesce(last_delivery_r, expired_r, nth.cast("int"))
    )
    ev = ev.withColumn("reconsume_times", F.when(fill, filled).otherwise(F.col("reconsume_times")))
    return ev.withColumnRenamed("_rid", "request_id").withColumn("attempt", attempt_of(orderly_groups))
