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
clients and brokers differ and a count can straddle a minute edge, so a difference that the neighbouring minutes
cancel (the sums over minute - 1 .. minute + 1 agree) is not a difference.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

RECONCILIATION_COLUMNS = (
    "consumer_group",
    "minute",
    "reconstructed_send_backs",
    "broker_send_backs",
    "send_back_diff",
    "reconstructed_dlq",
    "broker_dlq",
    "dlq_diff",
    "reconstructed_failures",
    "client_failures",
    "failure_diff",
    "cause",
)
# the counter each comparison reads, and the reconstructed side it is compared with
PAIRS = (
    ("reconstructed_send_backs", "broker_send_backs", "send_back_diff"),
    ("reconstructed_dlq", "broker_dlq", "dlq_diff"),
    ("reconstructed_failures", "client_failures", "failure_diff"),
)
CAUSES = {
    "unattributed": "lines of this group's topic are not attributed (see unattributed/)",
    "no-counter": "no counter line for this minute although the collected sources show traffic",
    "not-collected": "the counter shows more than the collected sources: a source (client log, trace, dump) "
    "is not collected",
    "unexplained": "no known cause",
}
_MINUTE_MS = 60_000


def stat_count() -> Column:
    """The SUM of a stats line: the ingest puts it in ``detail`` (L-B9, L-B10, L-B15, L-C16)."""
    from_detail = F.regexp_extract(F.coalesce(F.col("detail"), F.lit("")), r"(?:SUM: )?(\d+)", 1)
    return F.coalesce(F.nullif(from_detail, F.lit("")).cast("long"), F.col("status_code").cast("long"))


def _reconstructed(transitions: DataFrame, plan: DataFrame, groups: DataFrame) -> DataFrame:
    minute_of = F.date_trunc("minute", F.coalesce(F.col("observed_at"), F.col("expected_at")))
    # 4.x brokers count only the DLQ puts of handleRetryAndDLQ: those reached through a re-publish (REPUBLISHED, or
    # the 4.x DLQ-bound copy's SCHEDULED hop); 5.x counts every DLQ put (SNDBCK2DLQ_TIMES + TOPIC_PUT_NUMS).
    republished = F.col("from_state").isin("REPUBLISHED", "SCHEDULED")
    dlq = F.col("to_state") == "DEAD_LETTERED"
    counted_dlq = dlq & ((F.col("broker_major") >= 5) | republished)
    # A DLQ move straight from a failure is the proxy's (or the gRPC FIFO client's) forward to the DLQ, which the
    # broker runs as a consumerSendMsgBack with delay level -1 (ProducerProcessor#forwardMessageToDeadLetterQueue):
    # SNDBCK_PUT_NUMS counts it like any send-back.
    forwarded = dlq & ~F.col("from_state").isin("SENT_BACK", "REPUBLISHED", "SCHEDULED")
    hops = (
        transitions.where(F.col("to_state").isin("SENT_BACK", "DEAD_LETTERED"))
        .join(groups.select("consumer_group", "broker_major"), "consumer_group", "left")
        .groupBy("consumer_group", minute_of.alias("minute"))
        .agg(
            F.count(F.when((F.col("to_state") == "SENT_BACK") | forwarded, 1)).alias("reconstructed_send_backs"),
            F.count(F.when(counted_dlq, 1)).alias("reconstructed_dlq"),
        )
    )
    # Failed consumptions as the remoting client counts them (each instance of a broadcasting group counts its own;
    # a consume timeout is not a failed result: the listener's late return is counted as it ends).
    failed = plan.where(
        (F.col("outcome") == "FAILED")
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
        # printed at the minute's end by the printing host's clock, which may run a little behind
        (
            F.date_trunc("minute", F.col("event_time") + F.expr("INTERVAL 30 SECONDS")) - F.expr("INTERVAL 1 MINUTE")
        ).alias("minute"),
        stat_count().alias("n"),
    )

    def total(*types: str) -> Column:
        return F.sum(F.when(F.col("event_type").isin(*types), F.col("n")))

    return stats.groupBy("consumer_group", "minute").agg(
        total("SEND_BACK_COUNT").alias("broker_send_backs"),
        total("DLQ_COUNT", "DLQ_PUT_COUNT").alias("broker_dlq"),
        total("CONSUME_FAILED_COUNT").alias("client_failures"),
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


def reconciliation(
    obs: DataFrame,
    transitions: DataFrame,
    plan: DataFrame,
    groups: DataFrame,
    group_topics: DataFrame,
    bounds: tuple[int, int],
) -> DataFrame:
    """``reconciliation/dt=D`` (RECONCILIATION_COLUMNS). ``group_topics``: ``consumer_group, topic`` of the day's
    lifecycles; ``bounds``: the day's epoch ms."""
    rec = _reconstructed(transitions, plan, groups)
    counters = _counters(obs)
    # A group whose client log shows no failure counter at all on the day: its clients' logs are not collected
    # (or it has no remoting client), so its failures are not compared; a missing minute of a collected one is 0.
    with_client = (
        obs.where(F.col("event_type") == "CONSUME_FAILED_COUNT")
        .where(F.col("in_day") & F.col("consumer_group").isNotNull())
        .select("consumer_group")
        .distinct()
        .withColumn("client_collected", F.lit(True))
    )
    j = (
        rec.join(counters, ["consumer_group", "minute"], "full")
        .join(groups.select("consumer_group", "broker_major"), "consumer_group", "left")
        .join(with_client, "consumer_group", "left")
        .join(_unattributed_per_minute(obs, group_topics), ["consumer_group", "minute"], "left")
    )
    zero = F.lit(0).cast("long")
    j = j.select(
        "consumer_group",
        "minute",
        F.coalesce("reconstructed_send_backs", zero).alias("reconstructed_send_backs"),
        F.coalesce(F.col("broker_send_backs").cast("long"), zero).alias("broker_send_backs"),
        F.coalesce("reconstructed_dlq", zero).alias("reconstructed_dlq"),
        F.coalesce(F.col("broker_dlq").cast("long"), zero).alias("broker_dlq"),
        F.coalesce("reconstructed_failures", zero).alias("reconstructed_failures"),
        F.when(F.col("client_collected"), F.coalesce(F.col("client_failures").cast("long"), zero)).alias(
            "client_failures"
        ),
        F.col("broker_send_backs").isNull().alias("_no_sb_line"),
        F.col("broker_dlq").isNull().alias("_no_dlq_line"),
        F.col("client_failures").isNull().alias("_no_fail_line"),
        F.coalesce("unattributed_lines", zero).alias("_unattributed"),
    )
    edge = Window.partitionBy("consumer_group").orderBy(F.unix_millis("minute")).rangeBetween(-_MINUTE_MS, _MINUTE_MS)
    off: list[Column] = []
    for mine, theirs, diff in PAIRS:
        j = j.withColumn(diff, F.col(mine) - F.col(theirs))
        # the difference stands when the neighbouring minutes do not cancel it
        stands = (F.col(diff) != 0) & (F.sum(mine).over(edge) != F.sum(theirs).over(edge))
        j = j.withColumn(f"_{diff}", F.coalesce(stands, F.lit(False)))
        off.append(F.col(f"_{diff}"))
    any_off = off[0] | off[1] | off[2]
    missing_line = (
        (F.col("_send_back_diff") & (F.col("send_back_diff") > 0) & F.col("_no_sb_line"))
        | (F.col("_dlq_diff") & (F.col("dlq_diff") > 0) & F.col("_no_dlq_line"))
        | (F.col("_failure_diff") & (F.col("failure_diff") > 0) & F.col("_no_fail_line"))
    )
    counted_more = (
        (F.col("_send_back_diff") & (F.col("send_back_diff") < 0))
        | (F.col("_dlq_diff") & (F.col("dlq_diff") < 0))
        | (F.col("_failure_diff") & (F.col("failure_diff") < 0))
    )
    unattributed_near = F.sum("_unattributed").over(edge) > 0
    cause = (
        F.when(~any_off, F.lit(None).cast("string"))
        .when(unattributed_near, F.lit("unattributed"))
        .when(missing_line, F.lit("no-counter"))
        .when(counted_more, F.lit("not-collected"))
        .otherwise(F.lit("unexplained"))
    )
    j = j.withColumn("cause", cause)
    minute_ms = F.unix_millis("minute")
    return j.where((minute_ms >= bounds[0]) & (minute_ms < bounds[1])).select(*RECONCILIATION_COLUMNS)
