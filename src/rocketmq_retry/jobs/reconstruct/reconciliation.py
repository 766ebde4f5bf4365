"""``reconciliation/dt=D``: the reconstructed retry traffic per consumer group and minute next to the counters the
broker and the clients print, each difference with the cause an operator can act on.

Counters (docs/reconstruction.md, "Reconciliation"):

- ``SNDBCK_PUT_NUMS [topic@group]`` (broker stats.log): every successful CONSUMER_SEND_MSG_BACK, the DLQ-bound ones
  included, not the client's plain re-publishes (SendMessageProcessor#asyncConsumerSendMsgBack, 4.x;
  AbstractSendMessageProcessor#consumerSendMsgBack, 5.x): the reconstructed ``SENT_BACK`` hops.
- ``SNDBCK2DLQ_TIMES`` (5.x broker_default.log): DLQ puts of consumerSendMsgBack (remoting send-backs, the proxy's
  forward of gRPC messages); ``TOPIC_PUT_NUMS [%DLQ%group]`` (stats.log): DLQ puts of handleRetryAndDLQ (the client's
  fallback re-publish, the orderly send-back past the max; on 4.x counted when the schedule service delivers the
  DLQ-bound copy). A 4.x broker counts nothing for a send-back's DLQ put, so for its groups only the DLQ arrivals
  that came through a re-publish are compared.
- ``CONSUME_FAILED_TPS [topic@group]`` (remoting client log, ConsumerStatsManager): failed consumptions.

A "Stats In One Minute" line is printed at the end of the minute it covers (by the printing host's clock, which
may run a few hundred ms behind): its minute is the one ending nearest to its timestamp. Clocks of
clients and brokers differ and a count can fall in the minute before or after its event's, so events and counts
are matched within one minute of each other (``unmatched``); only what cannot be matched is a difference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, Row, Window
from pyspark.sql import functions as F

from rocketmq_retry import contract
from rocketmq_retry.contract import EventType, HopState
from rocketmq_retry.spark_session import local_frame

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

RECONCILIATION_COLUMNS = contract.columns("reconciliation")
RECONCILIATION_SCHEMA = contract.struct_type("reconciliation")
# the counter each comparison reads, and the reconstructed side it is compared with
PAIRS = (
    ("reconstructed_send_backs", "broker_send_backs", "send_back_diff"),
    ("reconstructed_dlq", "broker_dlq", "dlq_diff"),
    ("reconstructed_failures", "client_failures", "failure_diff"),
)
CAUSES = contract.RECONCILIATION_CAUSES
_MINUTE_MS = 60_000


def stat_count() -> Column:
    """The SUM of a stats line: the ingest puts it in ``detail`` (L-B9, L-B10, L-B15, L-C16)."""
    from_detail = F.regexp_extract(F.coalesce(F.col("detail"), F.lit("")), r"(?:SUM: )?(\d+)", 1)
    return F.coalesce(F.nullif(from_detail, F.lit("")).cast("long"), F.col("status_code").cast("long"))


def counted_minute() -> Column:
    """The minute a stats line counts: printed at the minute's end by the printing host's clock, which may run a
    little behind."""
    return F.date_trunc("minute", F.col("event_time") + F.expr("INTERVAL 30 SECONDS")) - F.expr("INTERVAL 1 MINUTE")


def _reconstructed(transitions: DataFrame, plan: DataFrame, groups: DataFrame) -> DataFrame:
    at = F.coalesce(F.col("observed_at"), F.col("expected_at"))
    by_hop = Window.partitionBy("consumer_group", "msg_id").orderBy("hop")
    # A pop-based consumer's message is forwarded to the DLQ when the revived copy is popped, not when the last
    # delivery failed (PopMessageResultFilterImpl → forwardMessageToDeadLetterQueue): its send-back is counted then.
    forward_at = F.when(
        F.col("mode").isin("GRPC", "GRPC_FIFO", "SIMPLE")
        & (F.col("to_state") == HopState.SENT_BACK)
        & (F.lead("to_state").over(by_hop) == HopState.DEAD_LETTERED),
        F.lead(at).over(by_hop),
    )
    minute_of = F.date_trunc("minute", F.coalesce(forward_at, at))
    # 4.x brokers count only the DLQ puts of handleRetryAndDLQ: those reached through a re-publish (REPUBLISHED, or
    # the 4.x DLQ-bound copy's SCHEDULED hop); 5.x counts every DLQ put (SNDBCK2DLQ_TIMES + TOPIC_PUT_NUMS).
    republished = F.col("from_state").isin(HopState.REPUBLISHED, HopState.SCHEDULED)
    dlq = F.col("to_state") == HopState.DEAD_LETTERED
    counted_dlq = dlq & ((F.col("broker_major") >= 5) | republished)
    # A DLQ move straight from a failure is the proxy's (or the gRPC FIFO client's) forward to the DLQ, which the
    # broker runs as a consumerSendMsgBack with delay level -1 (ProducerProcessor#forwardMessageToDeadLetterQueue):
    # SNDBCK_PUT_NUMS counts it like any send-back.
    forwarded = dlq & ~F.col("from_state").isin(HopState.SENT_BACK, HopState.REPUBLISHED, HopState.SCHEDULED)
    hops = (
        transitions.join(groups.select("consumer_group", "broker_major", "mode"), "consumer_group", "left")
        .withColumn("minute", minute_of)
        .where(F.col("to_state").isin(HopState.SENT_BACK, HopState.DEAD_LETTERED))
        .groupBy("consumer_group", "minute")
        .agg(
            F.count(F.when((F.col("to_state") == HopState.SENT_BACK) | forwarded, 1)).alias("reconstructed_send_backs"),
            F.count(F.when(counted_dlq, 1)).alias("reconstructed_dlq"),
        )
    )
    # Failed consumptions as the remoting client counts them (each instance of a broadcasting group counts its own;
    # a consume timeout is not a failed result: the listener's late return is counted as it ends).
    failed = plan.where(
        (F.col("outcome") == HopState.FAILED)
        & ~F.coalesce(F.col("timeout"), F.lit(False))
        & F.col("fail_t").isNotNull()
        & ~F.col("mode").isin("GRPC", "GRPC_FIFO", "SIMPLE")
    )
    failures = failed.groupBy(
        "consumer_group", F.date_trunc("minute", F.timestamp_millis("fail_t")).alias("minute")
    ).agg(F.sum(F.greatest(F.coalesce("n_failed", F.lit(0)), F.lit(1))).cast("long").alias("reconstructed_failures"))
    return hops.join(failures, ["consumer_group", "minute"], "full")


def _counters(obs: DataFrame) -> DataFrame:
    stats = obs.where((F.col("kind") == "STAT") & F.col("consumer_group").isNotNull()).select(
        "consumer_group",
        "event_type",
        "in_day",
        counted_minute().alias("minute"),
        stat_count().alias("n"),
    )

    def total(*types: str) -> Column:
        return F.sum(F.when(F.col("event_type").isin(*types), F.col("n")))

    return stats.groupBy("consumer_group", "minute").agg(
        total(EventType.SEND_BACK_COUNT).alias("broker_send_backs"),
        total(EventType.DLQ_COUNT, EventType.DLQ_PUT_COUNT).alias("broker_dlq"),
        total(EventType.CONSUME_FAILED_COUNT).alias("client_failures"),
    )


def _unattributed_per_minute(obs: DataFrame, group_topics: DataFrame) -> DataFrame:
    """Per (group, minute): the consumer lines no evidence gave a group that may be this group's (it is one of
    their candidates, or they name a topic the group consumes)."""
    lines = obs.where(F.col("unattributed").isNotNull()).select(
        F.date_trunc("minute", F.col("event_time")).alias("minute"),
        F.coalesce(F.col("original_topic"), F.col("topic")).alias("topic"),
        "candidates",
    )
    by_candidate = lines.select("minute", F.explode("candidates").alias("consumer_group"))
    by_topic = lines.where(F.size("candidates") == 0).join(group_topics, "topic").select("minute", "consumer_group")
    return (
        by_candidate.unionByName(by_topic)
        .groupBy("consumer_group", "minute")
        .agg(F.count(F.lit(1)).alias("unattributed_lines"))
    )


def unmatched(rows: list[tuple[int, int, int | None]]) -> dict[int, tuple[int, int]]:
    """Per minute: (reconstructed events, counted events) that no count of the same or a neighbouring minute
    explains. ``rows`` are ``(minute_ms, reconstructed, counted)`` in minute order (counted None: not compared).

    A count is printed by another host's clock and sampled every 10 s, so an event may be counted in the minute
    before or after its own: events and counts are matched greedily, each one within one minute of the other,
    oldest first (the carries of a minute expire at the next). What cannot be matched stands.
    """
    out: dict[int, tuple[int, int]] = {}
    carry_r = carry_c = 0
    prev: int | None = None

    def expire(minute: int | None) -> None:
        nonlocal carry_r, carry_c
        if minute is not None and (carry_r or carry_c):
            out[minute] = (carry_r, carry_c)
        carry_r = carry_c = 0

    for minute, reconstructed, counted in rows:
        if counted is None:
            continue
        if prev is not None and minute - prev > _MINUTE_MS:
            expire(prev)
        r, c = reconstructed, counted
        x = min(carry_r, c)
        carry_r, c = carry_r - x, c - x
        y = min(carry_c, r)
        carry_c, r = carry_c - y, r - y
        expire(prev)
        z = min(r, c)
        carry_r, carry_c = r - z, c - z
        prev = minute
    expire(prev)
    return out


def reconciliation(
    spark: SparkSession,
    obs: DataFrame,
    transitions: DataFrame,
    plan: DataFrame,
    groups: DataFrame,
    group_topics: DataFrame,
    bounds: tuple[int, int],
    horizon_ms: int,
) -> DataFrame:
    """``reconciliation/dt=D`` (RECONCILIATION_COLUMNS). ``group_topics``: ``consumer_group, topic`` of the day's
    lifecycles; ``bounds``: the day's epoch ms; ``horizon_ms``: the end of observation (a count of the minute
    before it may not be printed yet).

    The counts per group and minute are computed in Spark; matching them, a sequential pass over at most 1,441
    minutes per group, runs on the driver over the collected table (``unmatched``)."""
    rec = _reconstructed(transitions, plan, groups)
    counters = _counters(obs)
    # A group whose client log shows no failure counter at all on the day: its clients' logs are not collected
    # (or it has no remoting client), so its failures are not compared; a missing minute of a collected one is 0.
    with_client = (
        obs.where(F.col("event_type") == EventType.CONSUME_FAILED_COUNT)
        .where(F.col("in_day") & F.col("consumer_group").isNotNull())
        .select("consumer_group")
        .distinct()
        .withColumn("client_collected", F.lit(True))
    )
    zero = F.lit(0).cast("long")
    minute_ms = F.unix_millis("minute")
    # the minute before the day too: an event of its last seconds may be counted in the day's first minute
    table = (
        rec.join(counters, ["consumer_group", "minute"], "full")
        .join(with_client, "consumer_group", "left")
        .join(_unattributed_per_minute(obs, group_topics), ["consumer_group", "minute"], "left")
        .where((minute_ms >= bounds[0] - _MINUTE_MS) & (minute_ms < bounds[1]))
        .select(
            "consumer_group",
            "minute",
            minute_ms.alias("minute_ms"),
            F.coalesce("reconstructed_send_backs", zero).alias("reconstructed_send_backs"),
            F.coalesce(F.col("broker_send_backs").cast("long"), zero).alias("broker_send_backs"),
            F.coalesce("reconstructed_dlq", zero).alias("reconstructed_dlq"),
            F.coalesce(F.col("broker_dlq").cast("long"), zero).alias("broker_dlq"),
            F.coalesce("reconstructed_failures", zero).alias("reconstructed_failures"),
            F.when(F.col("client_collected"), F.coalesce(F.col("client_failures").cast("long"), zero)).alias(
                "client_failures"
            ),
            (F.col("broker_send_backs").isNotNull() | F.col("broker_dlq").isNotNull()).alias("broker_line"),
            F.col("client_failures").isNotNull().alias("client_line"),
            F.coalesce("unattributed_lines", zero).alias("unattributed"),
        )
        .orderBy("consumer_group", "minute_ms")
        .collect()
    )
    rows = [_with_cause(group_rows, horizon_ms) for group_rows in _by_group(table)]
    out = [row for group_rows in rows for row in group_rows if bounds[0] <= row["minute_ms"] < bounds[1]]
    return local_frame(spark, [tuple(row[c] for c in RECONCILIATION_COLUMNS) for row in out], RECONCILIATION_SCHEMA)


def _by_group(table: list[Row]) -> list[list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in table:
        groups.setdefault(row["consumer_group"], []).append(row.asDict())
    return list(groups.values())


def _with_cause(rows: list[dict[str, Any]], horizon_ms: int) -> list[dict[str, Any]]:
    """The rows of one group (in minute order) with their differences and the cause of what stands."""
    stands: dict[int, list[tuple[int, int]]] = {}
    for mine, theirs, diff in PAIRS:
        for row in rows:
            row[diff] = None if row[theirs] is None else row[mine] - row[theirs]
        for minute, left in unmatched([(r["minute_ms"], r[mine], r[theirs]) for r in rows]).items():
            # an event of minute m may be counted on the line printed at the end of m + 1: not printed yet when
            # that is after the end of observation
            if left[0] and minute + 2 * _MINUTE_MS > horizon_ms:
                left = (0, left[1])
            if any(left):
                stands.setdefault(minute, []).append(left)
    near_unattributed = {r["minute_ms"] + k * _MINUTE_MS for r in rows if r["unattributed"] for k in (-1, 0, 1)}
    lines = {r["minute_ms"] for r in rows if r["broker_line"] or r["client_line"]}
    for row in rows:
        left = stands.get(row["minute_ms"])
        minute = row["minute_ms"]
        if not left:
            row["cause"] = None
        elif minute in near_unattributed:
            row["cause"] = "unattributed"
        elif any(c for _, c in left):
            row["cause"] = "not-collected"
        elif minute not in lines and minute + _MINUTE_MS not in lines:
            row["cause"] = "no-counter"
        else:
            row["cause"] = "unexplained"
    return rows
