"""``rocketmq-retry reconstruct``: events/dt=D (+ a bounded look-back) -> transitions, lifecycles, dead_letters,
reconciliation for D (DESIGN §4), with the retry engine supplying what each hop should have been.

How it works (docs/reconstruction.md has the operator's view):

1. ``observations``: events conformed to the DESIGN §4 contract, identities linked (offset ids and
   ORIGIN_MESSAGE_ID resolved to UNIQ_KEY, groups from %RETRY%/%DLQ% topics), each event classified as an
   evidence kind about one delivery attempt (its reconsume_times).
2. ``attempt_facts`` / ``lifecycle_facts``: one aggregation per (group, msg_id, attempt) and per lifecycle, so
   evidence of one delivery from several sources is joined, never counted twice.
3. The driver asks the engine once per (group, reconsume_times, failure variant) and broadcasts the answers
   (``lifecycle_schedule``); ``attempt_plan`` joins them to every attempt, observed or inferred.
4. ``transitions`` explodes each attempt into its hops; ``lifecycles`` derives final and expected states,
   evidence class and anomalies; ``dead_letters`` and ``reconciliation`` follow.

No Python runs per row: built-in functions, window functions and one broadcast join carry the engine's answers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import pathlib
import re
import sys
import time
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from rocketmq_retry.config import Config, load_config
from rocketmq_retry.dates import date_arg
from rocketmq_retry.errors import InputError, UserError
from rocketmq_retry.jobs import lifecycle_schedule as sched
from rocketmq_retry.jobs.attribution import REASONS, GrpcGroups, read_bindings, unattributed_of
from rocketmq_retry.jobs.ingest_parse import ANY_TOPIC, LOG_FORMATS
from rocketmq_retry.jobs.partitions import committed, write_partitions
from rocketmq_retry.jobs.reconciliation import CAUSES, reconciliation
from rocketmq_retry.jobs.reconstruct_events import CONSUMER_KINDS, SCHEDULE_TOPIC, observations

TABLES = ("transitions", "lifecycles", "dead_letters", "reconciliation", "unattributed")
KEY = ["consumer_group", "msg_id"]
RETRY_ACTIONS = ("SCHEDULED_RETRY", "REPUBLISHED_RETRY", "LOCAL_RESUBMIT", "ORDERLY_SUSPEND", "INVISIBLE_RETRY",
                 "FIFO_LOCAL_RETRY")  # fmt: skip


@dataclass(frozen=True)
class Thresholds:
    """Anomaly thresholds (docs/reconstruction.md, "Anomalies")."""

    late_min_ms: int = 30_000  # LATE_REDELIVERY: drift above max(this, late_factor x the hop's delay)
    late_factor: float = 1.0
    orderly_block_ms: int = 60_000  # ORDERLY_QUEUE_BLOCKED: one message held its queue longer than this
    # DELIVERY_AFTER_DLQ: consumer hosts and the broker keep their own clocks (a trace SubBefore carries the
    # consumer's time, a DLQ copy the broker's storeTimestamp), and the broker's log lines carry whole seconds
    # (§6.1: a 5.x `send msg to DLQ` line reads up to 999 ms early), so "after" means later by more than this
    clock_skew_ms: int = 2_000


@dataclass
class Outputs:
    transitions: DataFrame
    lifecycles: DataFrame
    dead_letters: DataFrame
    reconciliation: DataFrame
    unattributed: DataFrame
    observations: DataFrame  # the linked, classified events (cached), for the run's evidence report
    report: dict[str, object] = field(default_factory=dict)
    cached: list[DataFrame] = field(default_factory=list)  # intermediate results this run cached

    def release(self) -> None:
        """Unpersist the cached intermediates: a session that outlives the run (tests, a notebook) keeps no
        cached blocks per date it reconstructed."""
        for frame in self.cached:
            if frame.is_cached:
                frame.unpersist()
            else:  # a local checkpoint: its blocks belong to its RDD, not to the cache manager
                frame._jdf.queryExecution().logical().rdd().unpersist(False)


# --------------------------------------------------------------------------------------------------------------
# engine tables (driver side, small, broadcast)


def engine_tables(
    spark: SparkSession, config: Config, obs: DataFrame
) -> tuple[DataFrame, DataFrame, list[sched.GroupSummary]]:
    """Ask the engine about every configured and observed group, up to the largest reconsume_times observed."""
    seen = {
        row["consumer_group"]: int(row["max_r"] or 0)
        for row in obs.where(F.col("consumer_group").isNotNull())
        .groupBy("consumer_group")
        .agg(F.max(F.greatest(F.col("reconsume_times"), F.lit(0))).alias("max_r"))
        .collect()
    }
    groups = set(config.groups) | set(seen)
    policies = {g: config.group_policy(g) for g in groups}
    rows, summaries = sched.build_tables(policies, seen)
    schedule_schema = T.StructType(
        [
            T.StructField("consumer_group", T.StringType()),
            T.StructField("variant", T.StringType()),
            T.StructField("attempt", T.IntegerType()),
            T.StructField("action", T.StringType()),
            T.StructField("next_topic", T.StringType()),
            T.StructField("next_level", T.IntegerType()),
            T.StructField("delay_ms", T.LongType()),
            T.StructField("next_reconsume_times", T.IntegerType()),
            T.StructField("via_schedule", T.BooleanType()),
            T.StructField("rule", T.StringType()),
        ]
    )
    schedule = spark.createDataFrame(rows, schedule_schema)
    group_schema = T.StructType(
        [
            T.StructField("consumer_group", T.StringType()),
            T.StructField("mode", T.StringType()),
            T.StructField("broker_major", T.IntegerType()),
            T.StructField("dlq_threshold", T.IntegerType()),
            T.StructField("dlq_copy_offset", T.IntegerType()),
            T.StructField("group_expected_deliveries", T.IntegerType()),
            T.StructField("group_expected_final", T.StringType()),
            T.StructField("level_ms", T.ArrayType(T.LongType())),
            T.StructField("max_reconsume_times", T.IntegerType()),
        ]
    )
    group_rows = [
        (
            s.group,
            s.mode,
            s.broker_major,
            s.dlq_threshold,
            s.dlq_copy_offset,
            s.expected_deliveries,
            s.expected_final_state,
            list(s.level_ms),
            s.dlq_threshold if s.dlq_threshold is not None else None,
        )
        for s in summaries
    ]
    groups_df = spark.createDataFrame(group_rows, group_schema)
    return F.broadcast(schedule), F.broadcast(groups_df), summaries


# --------------------------------------------------------------------------------------------------------------
# aggregation of evidence


def _min_t(cond: Column) -> Column:
    return F.min(F.when(cond, F.col("t_ms")))


def _ids(cond: Column) -> Column:
    return F.array_sort(F.collect_set(F.when(cond, F.col("event_id"))))


def attempt_facts(obs: DataFrame) -> DataFrame:
    """One row per (group, msg_id, attempt): what the evidence shows about that delivery and its failure hop."""
    kind = F.col("kind")
    per_source = (
        obs.where(F.col("attempt").isNotNull() & F.col("consumer_group").isNotNull() & F.col("msg_id").isNotNull())
        .groupBy(*KEY, "attempt", "source")
        .agg(
            # One delivery can appear once per source; only DELIVERED rows (one per delivery in the formats that
            # write them, e.g. a trace SubBefore) are counted, so two lines about one failure are not two deliveries.
            # Distinct by requestId: one trace record can reach us twice (the trace file and a dump of the trace
            # topic); two broadcasting instances have two requestIds (§7.2, §12).
            F.countDistinct(F.when(kind == "DELIVERY", F.coalesce("request_id", "event_id"))).alias("n_delivered"),
            # failed deliveries of the attempt: one per trace request or per instance that logged the failure (each
            # instance of a broadcasting group fails, or not, on its own)
            F.countDistinct(
                F.when(kind.isin("FAIL", "SUSPEND", "DROP"), F.coalesce("request_id", "instance", "event_id"))
            ).alias("n_failed"),
            _min_t(kind.isin(*CONSUMER_KINDS)).alias("seen_at"),
            _min_t(kind == "DELIVERY").alias("delivery_at"),
            _min_t(kind == "OK").alias("ok_at"),
            _min_t(kind.isin("FAIL", "SUSPEND", "TIMEOUT")).alias("fail_at"),
            F.max(kind == "TIMEOUT").alias("timeout"),
            F.max(kind == "SUSPEND").alias("suspend"),
            _min_t(kind == "DROP").alias("drop_at"),
            _min_t(kind == "LOCAL").alias("local_at"),
            _min_t(kind == "SBF").alias("sbf_at"),
            _min_t(kind == "SENDBACK").alias("sendback_at"),
            _min_t(kind == "SCHED").alias("sched_at"),
            # who sent the schedule copy: the broker keeps the message's bornHost on a send-back, the client's
            # fallback re-publish is a new message born on the consumer's host (§1.4, §2.2 step 11)
            F.min(F.when(kind == "SCHED", F.col("client_host"))).alias("sched_host"),
            F.min(F.when(kind == "READY", F.col("client_host"))).alias("ready_host"),
            F.min(F.when(kind == "SCHED", F.coalesce(F.col("delay_level"), F.col("queue_id") + 1))).alias(
                "sched_level"
            ),
            _min_t(kind == "READY").alias("ready_at"),
            F.min(F.when(kind == "READY", F.col("queue_id"))).alias("ready_queue"),
            F.min(F.when(kind == "READY", F.col("delay_level"))).alias("ready_level"),
            _ids(kind.isin(*CONSUMER_KINDS)).alias("ev_delivery"),
            _ids(kind.isin("OK", "FAIL", "SUSPEND", "TIMEOUT")).alias("ev_outcome"),
            _ids(kind.isin("SENDBACK", "SBF", "LOCAL")).alias("ev_sendback"),
            _ids(kind == "SCHED").alias("ev_sched"),
            _ids(kind == "READY").alias("ev_ready"),
            _ids(kind == "DROP").alias("ev_drop"),
        )
    )

    def _flat(name: str) -> Column:
        return F.array_sort(F.array_distinct(F.flatten(F.collect_list(name)))).alias(name)

    # Each application instance whose own log shows a delivery received one (a broadcasting group delivers every
    # message to every instance, §1.3): two instances logging the drop are two deliveries even without a trace.
    per_instance = (
        obs.where(
            F.col("attempt").isNotNull()
            & F.col("consumer_group").isNotNull()
            & F.col("msg_id").isNotNull()
            & kind.isin(*CONSUMER_KINDS)
            & F.col("source").isin(*LOG_FORMATS)
            & F.col("instance").isNotNull()
        )
        .groupBy(*KEY, "attempt")
        .agg(F.countDistinct("instance").alias("n_instances"))
    )
    facts = per_source.groupBy(*KEY, "attempt").agg(
        F.max("n_delivered").alias("n_delivered"),
        F.max("n_failed").alias("n_failed"),
        F.min("seen_at").alias("seen_at"),
        F.min("delivery_at").alias("delivery_at"),
        F.min("ok_at").alias("ok_at"),
        F.min("fail_at").alias("fail_at"),
        F.max("timeout").alias("timeout"),
        F.max("suspend").alias("suspend"),
        F.min("drop_at").alias("drop_at"),
        F.min("local_at").alias("local_at"),
        F.min("sbf_at").alias("sbf_at"),
        F.min("sendback_at").alias("sendback_at"),
        F.min("sched_at").alias("sched_at"),
        F.min("sched_host").alias("sched_host"),
        F.min("ready_host").alias("ready_host"),
        F.min("sched_level").alias("sched_level"),
        F.min("ready_at").alias("ready_at"),
        F.min("ready_queue").alias("ready_queue"),
        F.min("ready_level").alias("ready_level"),
        *[_flat(n) for n in ("ev_delivery", "ev_outcome", "ev_sendback", "ev_sched", "ev_ready", "ev_drop")],
    )
    return (
        facts.join(per_instance, [*KEY, "attempt"], "left")
        .withColumn("n_delivered", F.greatest("n_delivered", F.coalesce("n_instances", F.lit(0))))
        .drop("n_instances")
    )


def _first_by_time(col: str) -> Column:
    # Earliest non-null value, ties broken by event_id so re-runs agree.
    return F.min_by(F.col(col), F.when(F.col(col).isNotNull(), F.struct("t_ms", "event_id")))


def message_facts(obs: DataFrame) -> DataFrame:
    """Per msg_id, across groups: business metadata (a PUBLISHED or dump row usually has it all)."""
    return (
        obs.where(F.col("msg_id").isNotNull())
        .groupBy("msg_id")
        .agg(
            _first_by_time("original_topic").alias("m_original_topic"),
            _first_by_time("keys").alias("m_keys"),
            _first_by_time("tags").alias("m_tags"),
            _first_by_time("body").alias("m_body"),
            # the business copy's bornHost (a dump of the business topic): the producer's address
            F.min_by(
                F.col("client_host"),
                F.when(
                    (F.col("kind") == "PUB") & (F.col("source") == "message-dump") & F.col("client_host").isNotNull(),
                    F.struct("t_ms", "event_id"),
                ),
            ).alias("m_born_host"),
            F.min(F.when(F.col("kind") == "PUB", F.col("t_ms"))).alias("published_at"),
        )
    )


def subscriptions(spark: SparkSession, config: Config, bindings: DataFrame | None) -> DataFrame:
    """``consumer_group, topic`` pairs known without a lifecycle: the business topics the instances' bindings name
    (not a retry topic, not every topic of an instance) and the config's declared ``groups.<g>.topics``."""
    declared = [(g, t) for g, c in sorted(config.groups.items()) for t in c.topics]
    out = spark.createDataFrame(declared, "consumer_group string, topic string")
    if bindings is not None:
        named = bindings.where(~F.col("topic").startswith("%") & (F.col("topic") != ANY_TOPIC))
        out = out.unionByName(named.select("consumer_group", "topic"))
    return out


def with_silent_consumptions(
    lf: DataFrame, obs: DataFrame, mf: DataFrame, subscriptions: DataFrame | None = None
) -> DataFrame:
    """Lifecycles that left no consumer evidence at all: a message published on D to a topic a group is seen to
    consume (its other lifecycles' business topic, or ``subscriptions``: ``consumer_group, topic`` that the
    instances' bindings or the config's ``groups.<g>.topics`` name), with nothing of that message in that group.

    A failure always leaves evidence somewhere the configured sources reach (a stored copy in the retry, schedule,
    pop-retry or DLQ topic dumps; an L-C3/L-C4 line for orderly and broadcasting; a Spring WARN, §6.4, §11), and a
    success often leaves none (rocketmq-spring logs it at DEBUG, the gRPC SDK not at all, no trace without
    enableMsgTrace). Such a message was consumed on its first delivery: CONSUMED, one inferred delivery.
    """
    pubs = (
        obs.where((F.col("kind") == "PUB") & F.col("in_day") & F.col("msg_id").isNotNull())
        .groupBy("msg_id")
        .agg(F.min("t_ms").alias("pub_ms"), F.array_sort(F.collect_set("source")).alias("pub_sources"))
        .join(mf.select("msg_id", F.col("m_original_topic").alias("topic")), "msg_id")
        .where(F.col("topic").isNotNull())
    )
    subs = (
        lf.select(*KEY)
        .join(mf.select("msg_id", F.col("m_original_topic").alias("topic")), "msg_id")
        .where(F.col("topic").isNotNull())
        .select("consumer_group", "topic")
    )
    if subscriptions is not None:
        subs = subs.unionByName(subscriptions.select("consumer_group", "topic"))
    subs = subs.distinct()
    # A message with consumer lines that no group could be given to: its silence is not evidence of success.
    unplaced = obs.where(F.col("unattributed").isNotNull() & F.col("msg_id").isNotNull()).select("msg_id").distinct()
    silent = (
        pubs.join(unplaced, "msg_id", "left_anti")
        .join(subs, "topic")
        .join(lf.select(*KEY), KEY, "left_anti")
        .select(
            *KEY,
            F.lit(True).alias("in_day"),
            F.col("pub_ms").alias("first_ms"),
            F.col("pub_ms").alias("last_ms"),
            F.lit(0).alias("max_delivered"),
            F.lit(False).alias("has_delivery_records"),
            F.array().cast("array<string>").alias("ev_dlq"),
            F.lit(0).cast("long").alias("n_dlq_rows"),
            F.col("pub_sources").alias("evidence_sources"),
            F.array(F.lit("subscription")).alias("linked_by"),
            F.array(F.lit("subscription")).alias("attribution"),
            F.array().cast("array<string>").alias("instances"),
            F.lit(True).alias("silent_ok"),
        )
    )
    return lf.withColumn("silent_ok", F.lit(False)).unionByName(silent, allowMissingColumns=True)


def lifecycle_facts(obs: DataFrame) -> DataFrame:
    kind = F.col("kind")
    consumer = kind.isin(*CONSUMER_KINDS)
    return (
        obs.where(F.col("consumer_group").isNotNull() & F.col("msg_id").isNotNull() & (kind != "STAT"))
        .groupBy(*KEY)
        .agg(
            F.max("in_day").alias("in_day"),
            F.min("t_ms").alias("first_ms"),
            F.max("t_ms").alias("last_ms"),
            F.max(F.when(consumer, F.col("attempt"))).alias("max_delivered"),
            # a delivery's own record (SubBefore), not an outcome line, which can be written after the DLQ put
            F.max(F.when(kind == "DELIVERY", F.col("t_ms"))).alias("last_delivery_ms"),
            F.max(F.when(kind.isin("SCHED", "READY", "SENDBACK", "SBF"), F.col("attempt"))).alias("max_copy"),
            F.max(F.when(kind == "READY", F.col("attempt"))).alias("max_ready"),
            F.max(F.when(kind == "OK", F.col("attempt"))).alias("max_ok"),
            _min_t(kind == "DLQ").alias("dlq_ms"),
            # The DLQ copy's r; a DLQ line (L-B7, gRPC G-2) carries none, so take it from any row that has it.
            F.min_by(
                F.col("reconsume_times"),
                F.when((kind == "DLQ") & F.col("reconsume_times").isNotNull(), F.struct("t_ms", "event_id")),
            ).alias("dlq_r"),
            F.max(F.when(kind == "DLQ", F.col("in_day"))).alias("dlq_in_day"),
            _ids(kind == "DLQ").alias("ev_dlq"),
            F.count(F.when(kind == "DLQ", 1)).alias("n_dlq_rows"),
            F.max(kind == "DELIVERY").alias("has_delivery_records"),
            F.max(F.when(kind == "READY", F.col("topic"))).alias("ready_topic"),
            F.array_sort(F.collect_set(F.when(kind != "OTHER", F.col("source")))).alias("evidence_sources"),
            F.array_sort(F.collect_set(F.when(F.col("linked_by") != "msg_id", F.col("linked_by")))).alias("linked_by"),
            # how the group of each of the lifecycle's rows was established (docs/reconstruction.md, "Attribution")
            F.array_sort(F.collect_set(F.when(kind != "OTHER", F.col("attribution")))).alias("attribution"),
            F.array_sort(F.collect_set(F.when(consumer & F.col("source").isin(*LOG_FORMATS), F.col("instance")))).alias(
                "instances"
            ),
        )
    )


# --------------------------------------------------------------------------------------------------------------
# attempts and hops


def attempt_plan(lc: DataFrame, af: DataFrame, schedule: DataFrame, horizon_ms: int) -> DataFrame:
    """Every attempt 0..last of every lifecycle, observed or inferred, with the engine's next hop joined in."""
    last = F.greatest(
        F.col("max_delivered"),
        F.col("max_copy"),
        F.when(F.col("dlq_r").isNotNull(), F.col("dlq_r") - F.col("dlq_copy_offset")),
    )
    # gRPC FIFO retries locally (§5.3): the stored copy's r never advances, so a dead letter proves maxAttempts
    # deliveries (the engine's threshold), not the DLQ copy's r.
    fifo_dlq = (F.col("mode") == "GRPC_FIFO") & F.col("dlq_r").isNotNull()
    last = F.greatest(last, F.when(fifo_dlq, F.col("dlq_threshold")))
    lc = lc.withColumn("r_last", F.when(last >= 0, last))
    attempts = lc.select(
        *KEY,
        "r_last",
        F.explode(
            F.when(F.col("r_last").isNotNull(), F.sequence(F.lit(0), F.col("r_last").cast("int"))).otherwise(
                F.array().cast("array<int>")
            )
        ).alias("attempt"),
    )
    a = attempts.join(af, [*KEY, "attempt"], "left").join(
        lc.select(
            *KEY,
            "dlq_ms",
            "dlq_r",
            "mode",
            "dlq_threshold",
            "max_copy",
            "level_ms",
            "dlq_copy_offset",
            "silent_ok",
            "m_born_host",
        ),
        KEY,
        "left",
    )
    is_last = F.col("attempt") == F.col("r_last")
    dlq = F.col("dlq_ms").isNotNull() | (is_last & F.col("dlq_r").isNotNull())
    # A -1 override (§1.5) is recognised when the message went to the DLQ from its first delivery without ever
    # entering the schedule or retry topics (the DLQ copy then has no REAL_TOPIC, §12).
    override = is_last & dlq & (F.col("attempt") == 0) & F.col("max_copy").isNull()
    # A concurrent consumer's schedule copy born on another host than the copy it was delivered from (the business
    # copy, else the previous attempt's %RETRY% copy): the client re-published it after the send-back RPC failed
    # (§1.4; the broker's send-back keeps the delivered copy's bornHost, §2.2 step 11). The 4.x line for that
    # failure names no message (L-C5), so the copy is the only evidence that the broker took no send-back
    # (SNDBCK_PUT_NUMS does not count it).
    delivered_from = F.when(F.col("attempt") == 0, F.col("m_born_host")).otherwise(
        F.lag("ready_host").over(Window.partitionBy(*KEY).orderBy("attempt"))
    )
    republished_copy = F.coalesce(
        (F.col("mode") == "CONCURRENTLY") & (F.col("sched_host") != delivered_from), F.lit(False)
    )
    variant = (
        F.when(F.col("local_at").isNotNull(), "LOCAL")
        .when(F.col("sbf_at").isNotNull() | republished_copy, "RPC_FAILED")
        .when(F.coalesce(F.col("timeout"), F.lit(False)), "TIMEOUT")
        .when(override & (F.col("attempt") < F.coalesce(F.col("dlq_threshold"), F.lit(1 << 30))), "DLQ_OVERRIDE")
        .otherwise("NONE")
    )
    a = a.withColumn("variant", variant).withColumn("is_last", is_last)
    a = a.join(schedule, ["consumer_group", "variant", "attempt"], "left")
    failed_known = F.col("fail_at").isNotNull() | F.col("drop_at").isNotNull()
    later = ~F.col("is_last") | dlq | F.col("ready_at").isNotNull() | F.col("sched_at").isNotNull()
    later = later | F.col("sendback_at").isNotNull() | F.col("sbf_at").isNotNull() | F.col("local_at").isNotNull()
    # Broadcasting: the lifecycle spans the instances; one instance's dropped failure makes it DROPPED (§1.3).
    bcast_failed = (F.col("mode") == "BROADCASTING") & (F.col("fail_at").isNotNull() | F.col("drop_at").isNotNull())
    # cleanExpireMsg sent the message back while the listener still ran (§1.6): whatever the listener returns later
    # (the trace then shows a success with TIME_OUT), the message is redelivered from the retry topic.
    timed_out = F.coalesce(F.col("timeout"), F.lit(False))
    outcome = (
        F.when(bcast_failed | timed_out, "FAILED")
        .when(F.col("ok_at").isNotNull() | F.coalesce(F.col("silent_ok"), F.lit(False)), "OK")
        .when(failed_known | later, "FAILED")
        .when(F.col("mode") == "BROADCASTING", F.lit(None))
        .otherwise(F.lit(None))
    )
    a = a.withColumn("outcome", outcome)
    a = a.withColumn("engine_action", F.col("action"))
    action = (
        F.when(F.col("outcome") != "FAILED", F.lit(None))
        .when(F.col("is_last") & dlq, "DEAD_LETTER")
        .when(F.col("drop_at").isNotNull(), "DROPPED")
        # The engine expected a terminal hop but the message was delivered again: the evidence wins (the consumer's
        # max differs from the configured one); the hop is drawn as a scheduled retry.
        .when(~F.col("is_last") & F.col("action").isin("DEAD_LETTER", "DROPPED"), "SCHEDULED_RETRY")
        .otherwise(F.col("action"))
    )
    a = a.withColumn("hop_action", action)
    # The level the broker used: a stored copy shows it (DELAY, or schedule queue id + 1); else the engine's.
    level = F.coalesce(F.col("sched_level"), F.col("ready_level"), F.col("next_level"))
    a = a.withColumn("level", level)
    size = F.size("level_ms")
    level_delay = F.when(
        F.col("level").isNotNull() & (F.col("level") > 0),
        F.element_at(F.col("level_ms"), F.least(F.col("level"), size)),
    )
    a = a.withColumn(
        "wait_ms",
        F.when(F.col("hop_action").isin("SCHEDULED_RETRY", "REPUBLISHED_RETRY"), F.coalesce(level_delay, "delay_ms"))
        # A DLQ copy is stored at once after a send-back, after the schedule delay on the 4.x re-publish path
        # (§2.3), and at the next pop of the revived copy for gRPC (§5.4): the engine's delay_ms says which.
        .when(
            F.col("hop_action") == "DEAD_LETTER",
            F.when(F.col("via_schedule"), F.coalesce(level_delay, "delay_ms")).otherwise(
                F.coalesce(F.col("delay_ms"), F.lit(0))
            ),
        )
        .otherwise(F.col("delay_ms")),
    )
    fail_t = F.coalesce("fail_at", "drop_at", "seen_at")
    a = a.withColumn("fail_t", fail_t)
    base = F.coalesce("sched_at", "sendback_at", "sbf_at", "local_at", "fail_t")
    # Without consumer evidence of the failure (gRPC FAILURE returns log nothing), the stored retry copy's time is
    # when the message became deliverable again.
    a = a.withColumn("next_expected_ms", F.coalesce(base + F.coalesce(F.col("wait_ms"), F.lit(0)), F.col("ready_at")))
    w = Window.partitionBy(*KEY).orderBy("attempt")
    for col in ("hop_action", "next_expected_ms", "next_topic", "ready_at", "variant", "wait_ms"):
        a = a.withColumn(f"prev_{col}", F.lag(col).over(w))
    return a.withColumn("horizon_ms", F.lit(horizon_ms))


def _hop(
    to_state: str | Column,
    *,
    observed: Column,
    expected: Column,
    topic: Column,
    queue: Column,
    level: Column,
    rt: Column,
    inferred: Column,
    evidence: Column,
    when: Column,
    wait_before: Column | None = None,
) -> Column:
    wait_before = F.lit(None) if wait_before is None else wait_before
    s = F.struct(
        F.lit(to_state).alias("to_state") if isinstance(to_state, str) else to_state.alias("to_state"),
        observed.cast("long").alias("observed_ms"),
        expected.cast("long").alias("expected_ms"),
        topic.cast("string").alias("physical_topic"),
        queue.cast("int").alias("queue_id"),
        level.cast("int").alias("delay_level"),
        rt.cast("int").alias("reconsume_times"),
        inferred.alias("inferred"),
        F.coalesce(evidence, F.array().cast("array<string>")).alias("evidence"),
        wait_before.cast("long").alias("wait_before_ms"),
    )
    return F.when(when, s)


def transitions_from(plan: DataFrame, lc: DataFrame) -> DataFrame:
    """Explode every attempt into its hops (docs/reconstruction.md, "Hops")."""
    g = F.col("consumer_group")
    retry_topic = F.concat(F.lit("%RETRY%"), g)
    dlq_topic = F.concat(F.lit("%DLQ%"), g)
    r = F.col("attempt")
    empty = F.array().cast("array<string>")
    p = plan.join(lc.select(*KEY, "original_topic", "published_at", "ready_topic", "has_delivery_records"), KEY, "left")
    prev = F.col("prev_hop_action")
    deliver_topic = (
        F.when(r == 0, F.col("original_topic"))
        .when(prev.isin("SCHEDULED_RETRY", "REPUBLISHED_RETRY"), F.coalesce(F.col("ready_topic"), retry_topic))
        .when(prev.isin("INVISIBLE_RETRY"), F.col("prev_next_topic"))
        .otherwise(F.col("original_topic"))
    )
    delivered_obs = F.coalesce("delivery_at", "seen_at")
    delivered = _hop(
        "DELIVERED",
        observed=delivered_obs,
        expected=F.when(r == 0, F.lit(None)).otherwise(F.col("prev_next_expected_ms")),
        topic=deliver_topic,
        queue=F.lit(None),
        level=F.lit(None),
        rt=r,
        inferred=F.col("seen_at").isNull(),
        evidence=F.col("ev_delivery"),
        when=F.lit(True),
        wait_before=F.col("prev_wait_ms"),
    )
    outcome_state = F.when(F.col("outcome") == "OK", "CONSUMED").otherwise("FAILED")
    outcome = _hop(
        outcome_state,
        observed=F.when(F.col("outcome") == "OK", F.col("ok_at")).otherwise(F.col("fail_t")),
        expected=F.lit(None),
        topic=F.lit(None),
        queue=F.lit(None),
        level=F.lit(None),
        rt=r,
        inferred=F.col("ok_at").isNull() & F.col("fail_at").isNull() & F.col("drop_at").isNull(),
        evidence=F.col("ev_outcome"),
        when=F.col("outcome").isNotNull(),
    )
    act = F.col("hop_action")
    scheduled_path = act.isin("SCHEDULED_RETRY", "REPUBLISHED_RETRY")
    plain_send = (F.col("mode") == "ORDERLY") | F.col("variant").isin("RPC_FAILED") | (act == "REPUBLISHED_RETRY")
    send_state = F.when(plain_send, "REPUBLISHED").otherwise("SENT_BACK")
    send_obs = F.coalesce("sendback_at", "sbf_at", "sched_at")
    dlq_via_schedule = (act == "DEAD_LETTER") & F.coalesce(F.col("via_schedule"), F.lit(False))
    sent = _hop(
        send_state,
        observed=send_obs,
        expected=F.col("fail_t"),
        topic=retry_topic,
        queue=F.lit(None),
        level=F.when(scheduled_path | dlq_via_schedule, F.col("level")),
        rt=r,
        inferred=send_obs.isNull(),
        evidence=F.concat(F.col("ev_sendback"), F.coalesce(F.col("ev_sched"), empty)),
        when=scheduled_path | (act == "DEAD_LETTER"),
    )
    scheduled = _hop(
        "SCHEDULED",
        observed=F.col("sched_at"),
        expected=F.coalesce("sendback_at", "fail_t"),
        topic=F.lit(SCHEDULE_TOPIC),
        queue=F.col("level") - 1,
        level=F.col("level"),
        rt=r + F.when(dlq_via_schedule, 0).otherwise(1),
        inferred=F.col("sched_at").isNull(),
        evidence=F.col("ev_sched"),
        when=scheduled_path | dlq_via_schedule,
    )
    ready_expected = F.col("next_expected_ms")
    ready = _hop(
        "READY",
        observed=F.col("ready_at"),
        expected=ready_expected,
        topic=F.coalesce(F.col("ready_topic"), retry_topic),
        queue=F.col("ready_queue"),
        level=F.col("level"),
        rt=r + 1,
        inferred=F.col("ready_at").isNull(),
        evidence=F.col("ev_ready"),
        when=scheduled_path
        & (F.col("ready_at").isNotNull() | ~F.col("is_last") | (ready_expected <= F.col("horizon_ms"))),
    )
    local_wait = _hop(
        F.when(act == "ORDERLY_SUSPEND", "SUSPENDED")
        .when(act == "LOCAL_RESUBMIT", "LOCAL_RETRY")
        .otherwise("INVISIBLE"),
        observed=F.when(act == "ORDERLY_SUSPEND", F.when(F.col("suspend"), F.col("fail_at"))).when(
            act == "LOCAL_RESUBMIT", F.col("local_at")
        ),
        expected=F.col("fail_t"),
        topic=F.when(act.isin("INVISIBLE_RETRY"), F.col("next_topic")).otherwise(F.col("original_topic")),
        queue=F.lit(None),
        level=F.lit(None),
        rt=r + 1,
        inferred=~(
            ((act == "ORDERLY_SUSPEND") & F.coalesce(F.col("suspend"), F.lit(False)))
            | ((act == "LOCAL_RESUBMIT") & F.col("local_at").isNotNull())
        ),
        evidence=F.col("ev_sendback"),
        when=act.isin("ORDERLY_SUSPEND", "LOCAL_RESUBMIT", "INVISIBLE_RETRY", "FIFO_LOCAL_RETRY"),
    )
    dlq_expected = F.coalesce("sched_at", "sendback_at", "fail_t") + F.coalesce(F.col("wait_ms"), F.lit(0))
    dead = _hop(
        "DEAD_LETTERED",
        observed=F.col("dlq_ms"),
        expected=dlq_expected,
        topic=dlq_topic,
        queue=F.lit(0),
        level=F.lit(None),
        rt=F.coalesce(F.col("dlq_r"), r + F.col("dlq_copy_offset")),
        inferred=F.col("dlq_ms").isNull(),
        evidence=F.col("ev_dlq"),
        when=(act == "DEAD_LETTER") & (F.col("dlq_ms").isNotNull() | (dlq_expected <= F.col("horizon_ms"))),
    )
    dropped = _hop(
        "DROPPED",
        observed=F.col("drop_at"),
        expected=F.col("fail_t"),
        topic=F.lit(None),
        queue=F.lit(None),
        level=F.lit(None),
        rt=r,
        inferred=F.col("drop_at").isNull(),
        evidence=F.col("ev_drop"),
        when=act == "DROPPED",
    )
    p = p.join(lc.select(*KEY, "ev_dlq"), KEY, "left")
    hops = F.filter(
        F.array(delivered, outcome, sent, scheduled, ready, local_wait, dead, dropped), lambda h: h.isNotNull()
    )
    x = p.select(*KEY, "attempt", "has_delivery_records", F.posexplode(hops).alias("seq", "h"))
    w = Window.partitionBy(*KEY).orderBy("attempt", "seq")
    x = x.withColumn("hop", (F.row_number().over(w) - 1).cast("int"))
    x = x.withColumn("from_state", F.lag(F.col("h.to_state")).over(w))
    first_from = F.lit("PUBLISHED")
    x = x.select(
        *KEY,
        "hop",
        F.coalesce(F.col("from_state"), first_from).alias("from_state"),
        F.col("h.to_state").alias("to_state"),
        F.timestamp_millis("h.observed_ms").alias("observed_at"),
        F.timestamp_millis("h.expected_ms").alias("expected_at"),
        (F.col("h.observed_ms") - F.col("h.expected_ms")).alias("drift_ms"),
        F.col("h.delay_level").alias("delay_level"),
        F.col("h.reconsume_times").alias("reconsume_times"),
        F.col("h.physical_topic").alias("physical_topic"),
        F.col("h.queue_id").alias("queue_id"),
        F.col("h.inferred").alias("inferred"),
        F.col("h.evidence").alias("evidence"),
        # not written: inputs of the lifecycle anomalies (the delay a redelivery waited for; whether the
        # lifecycle has a source that records every delivery, so an inferred one is a gap, §7.3)
        F.col("h.wait_before_ms").alias("_prev_wait"),
        F.col("has_delivery_records").alias("_trace_like"),
    )
    return x


# --------------------------------------------------------------------------------------------------------------
# lifecycles


def _contains(arr: str, value: str) -> Column:
    return F.array_contains(F.col(arr), value)


def lifecycles_from(lc: DataFrame, plan: DataFrame, trans: DataFrame, th: Thresholds, horizon_ms: int) -> DataFrame:
    last = plan.where(F.col("is_last")).select(
        *KEY,
        F.col("outcome").alias("last_outcome"),
        F.col("hop_action").alias("last_action"),
        F.col("engine_action").alias("last_engine_action"),
        F.col("next_expected_ms").alias("last_next_expected_ms"),
        F.col("wait_ms").alias("last_wait_ms"),
        F.col("fail_t").alias("last_fail_ms"),
        F.col("attempt").alias("last_attempt"),
        F.coalesce("fail_at", "drop_at", "sendback_at", "sbf_at", "local_at", "sched_at", "ready_at")
        .isNotNull()
        .alias("last_fail_seen"),
    )
    per_attempt = plan.groupBy(*KEY).agg(
        F.sum(F.greatest(F.coalesce(F.col("n_delivered"), F.lit(0)), F.lit(1))).alias("deliveries"),
        F.max(F.coalesce(F.col("n_delivered"), F.lit(0))).alias("max_n_delivered"),
        F.min(F.coalesce(F.col("fail_t"), F.col("seen_at"))).alias("first_consume_ms"),
    )
    hop_stats = trans.groupBy(*KEY).agg(
        F.max(F.col("inferred").cast("int")).alias("any_inferred"),
        F.max(
            F.when(
                (F.col("to_state") == "DELIVERED") & (F.col("reconsume_times") > 0) & F.col("drift_ms").isNotNull(),
                F.col("drift_ms"),
            )
        ).alias("max_redelivery_drift"),
        F.max(
            F.when(
                (F.col("to_state") == "DELIVERED") & F.col("drift_ms").isNotNull(),
                F.col("drift_ms")
                - F.greatest(
                    F.lit(th.late_min_ms),
                    (F.col("_prev_wait") * F.lit(th.late_factor)).cast("long"),
                ),
            )
        ).alias("late_excess"),
        F.max(
            F.when(
                (F.col("to_state") == "DELIVERED") & F.col("inferred") & F.col("_trace_like"),
                F.lit(1),
            )
        ).alias("missing_delivery"),
    )
    x = (
        lc.join(last, KEY, "left")
        .join(per_attempt, KEY, "left")
        .join(hop_stats, KEY, "left")
        .withColumn("horizon_ms", F.lit(horizon_ms))
    )
    dlq_seen = F.col("dlq_ms").isNotNull()
    retry_pending = F.col("last_action").isin(*RETRY_ACTIONS)
    overdue = F.col("last_next_expected_ms") + F.greatest(
        F.lit(th.late_min_ms), (F.coalesce(F.col("last_wait_ms"), F.lit(0)) * th.late_factor).cast("long")
    )
    # An overdue redelivery with nothing after it, in a lifecycle whose sources do not record deliveries (no trace):
    # a further failure would have left a copy, a line or a DLQ arrival, so the redelivery succeeded silently (the
    # same reasoning as silent consumptions). With a delivery-recording source the gap is SILENT_LOSS instead.
    silent_success = (
        (F.col("last_outcome") == "FAILED")
        & retry_pending
        & (overdue < F.col("horizon_ms"))
        & ~F.coalesce(F.col("has_delivery_records"), F.lit(False))
    )
    final = (
        F.when(dlq_seen, "DEAD_LETTERED")
        .when(F.col("last_outcome") == "OK", "CONSUMED")
        .when(F.col("last_action") == "DROPPED", "DROPPED")
        .when(
            (F.col("last_action") == "DEAD_LETTER"),
            F.when(F.col("last_next_expected_ms") <= F.col("horizon_ms"), "DEAD_LETTERED").otherwise("IN_RETRY"),
        )
        .when(retry_pending & (overdue >= F.col("horizon_ms")), "IN_RETRY")
        .when(silent_success, "CONSUMED")
        .otherwise("UNKNOWN")
    )
    x = x.withColumn("final_state", final)
    # the redelivery that succeeded silently is one more (inferred) delivery
    x = x.withColumn("deliveries", F.col("deliveries") + F.when(silent_success & ~dlq_seen, 1).otherwise(0))
    ea = F.col("last_engine_action")
    expected_final = (
        F.when(F.col("last_outcome") == "OK", "CONSUMED")
        .when(
            F.col("last_outcome") == "FAILED",
            F.when(ea == "DEAD_LETTER", "DEAD_LETTERED")
            .when(ea == "DROPPED", "DROPPED")
            .when(ea.isNotNull(), "IN_RETRY"),
        )
        .otherwise("UNKNOWN")
    )
    x = x.withColumn("expected_final_state", expected_final)
    is_bcast = F.col("mode") == "BROADCASTING"
    anomalies = F.array_sort(
        F.filter(
            F.array(
                F.when(
                    dlq_seen
                    & F.col("dlq_threshold").isNotNull()
                    & (F.col("last_attempt") < F.col("dlq_threshold"))
                    & (F.col("last_engine_action") != "DEAD_LETTER"),
                    F.lit("EARLY_DLQ"),
                ),
                F.when(F.col("late_excess") > 0, F.lit("LATE_REDELIVERY")),
                F.when(F.col("missing_delivery") == 1, F.lit("MISSING_HOP")),
                F.when(
                    dlq_seen & (F.col("last_delivery_ms") > F.col("dlq_ms") + th.clock_skew_ms),
                    F.lit("DELIVERY_AFTER_DLQ"),
                ),
                F.when(is_bcast & (F.coalesce(F.col("last_attempt"), F.lit(0)) > 0), F.lit("RETRY_IN_BROADCAST")),
                F.when(is_bcast & F.col("max_copy").isNotNull(), F.lit("RETRY_IN_BROADCAST")),
                F.when(~is_bcast & (F.col("max_n_delivered") > 1), F.lit("DUPLICATE_CONSUME")),
                F.when(
                    (F.col("mode") == "ORDERLY")
                    & ((F.coalesce("dlq_ms", "last_ms") - F.col("first_consume_ms")) > th.orderly_block_ms),
                    F.lit("ORDERLY_QUEUE_BLOCKED"),
                ),
                F.when(
                    (F.col("final_state") == "UNKNOWN") & retry_pending & F.col("has_delivery_records"),
                    F.lit("SILENT_LOSS"),
                ),
            ),
            lambda c: c.isNotNull(),
        )
    )
    x = x.withColumn("anomalies", F.array_distinct(anomalies))
    evidence_class = (
        F.when(F.col("final_state") == "UNKNOWN", "UNDETERMINABLE")
        .when(F.coalesce(F.col("any_inferred"), F.lit(1)) == 1, "PARTIAL")
        .otherwise("FULL")
    )
    return x.withColumn("evidence_class", evidence_class)


# --------------------------------------------------------------------------------------------------------------
# compensation safety


def compensable() -> Column:
    """A dead letter compensation may act on: its DLQ arrival was observed (a DLQ copy, the broker's or the SDK's DLQ
    line), or the engine's answer for its last failure is the DLQ (its group's threshold reached, or a path that
    dead-letters earlier, such as the 4.x fallback re-publish) and that failure was observed. Its group is
    established by construction: a row no evidence gave a group never reaches a lifecycle."""
    observed = F.col("dlq_ms").isNotNull()
    engine_agrees = F.coalesce(F.col("last_engine_action") == "DEAD_LETTER", F.lit(False))
    return observed | (engine_agrees & F.coalesce(F.col("last_fail_seen"), F.lit(False)))


def review_reason() -> Column:
    """Why a dead letter is held for review rather than compensated (null when it is compensable)."""
    return (
        F.when(compensable(), F.lit(None).cast("string"))
        .when(
            ~F.coalesce(F.col("last_engine_action") == "DEAD_LETTER", F.lit(False)),
            F.lit("DLQ inferred, but the engine's answer for the last failure is not the DLQ"),
        )
        .otherwise(F.lit("DLQ inferred, but the failure of the last delivery was not observed"))
    )


# --------------------------------------------------------------------------------------------------------------
# business key, handler routes


def business_key(config: Config) -> Column:
    bk = config.compensation.business_key
    if bk.from_ == "body" and bk.json_path:
        return F.get_json_object(F.col("body"), bk.json_path)
    # KEYS holds space-separated keys (§7.2 "Keys Keys2"); the first is the business key.
    return F.nullif(F.split(F.coalesce(F.col("keys"), F.lit("")), " ").getItem(0), F.lit(""))


def compensation_handler(config: Config) -> Column:
    expr: Column = F.lit(None).cast("string")
    for route in reversed(config.compensation.routes):  # first match wins
        cond = F.lit(True)
        if route.topic != "*":
            cond = cond & (F.col("original_topic") == route.topic)
        if route.group != "*":
            cond = cond & (F.col("consumer_group") == route.group)
        expr = F.when(cond, F.lit(route.handler)).otherwise(expr)
    return expr


# --------------------------------------------------------------------------------------------------------------
# the whole transform


def _day_bounds(day: str, zone: str = "UTC") -> tuple[int, int]:
    """Epoch ms of D's start and end: dt=D is the calendar day D in the configuration's zone (as ingest writes it)."""
    tz = ZoneInfo(zone)
    start = dt.datetime.fromisoformat(day).replace(tzinfo=tz)
    end = (dt.datetime.fromisoformat(day) + dt.timedelta(days=1)).replace(tzinfo=tz)
    return int(start.timestamp() * 1000), int(end.timestamp() * 1000)


def _checkpoint(df: DataFrame) -> DataFrame:
    from pyspark import StorageLevel

    return df.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)


def reconstruct(
    spark: SparkSession,
    events: DataFrame,
    config: Config,
    day: str,
    *,
    horizon_ms: int | None = None,
    thresholds: Thresholds | None = None,
    bindings: DataFrame | None = None,
) -> Outputs:
    """All outputs for ``day`` from ``events`` (D plus look-back rows; a ``dt`` column marks partitions,
    else the UTC date of event_time does). ``horizon_ms`` is the end of observation (default: the latest
    event_time read), after which expected hops are pending rather than missing. ``bindings``: what the
    instances' start-up and client-log lines say about their groups (``attribution.read_bindings``)."""
    th = thresholds or Thresholds()
    zone = config.timezone
    orderly = tuple(g for g in config.groups if sched.group_mode(config.group_policy(g)) == "ORDERLY")
    # A local checkpoint, not a cache: every later plan then starts from stored rows instead of carrying (and
    # matching against the cache, and printing for Spark's listeners) the linking and attribution plan
    obs = _checkpoint(
        observations(events, day, zone, tuple(config.groups), orderly, bindings=bindings, grpc=GrpcGroups.of(config))
    )
    if horizon_ms is None:
        row = obs.agg(F.max("t_ms").alias("h")).collect()[0]
        horizon_ms = int(row["h"] or _day_bounds(day, zone)[1])
    schedule, groups, summaries = engine_tables(spark, config, obs)
    af = attempt_facts(obs)
    mf = message_facts(obs)
    lc = (
        with_silent_consumptions(lifecycle_facts(obs), obs, mf, subscriptions(spark, config, bindings))
        .where(F.col("in_day"))
        .join(groups, "consumer_group", "left")
        .join(mf, "msg_id", "left")
        .withColumn("original_topic", F.col("m_original_topic"))
        .withColumn("keys", F.col("m_keys"))
        .withColumn("tags", F.col("m_tags"))
        .withColumn("body", F.col("m_body"))
        .cache()
    )
    plan = attempt_plan(lc, af, schedule, horizon_ms)
    plan = plan.cache()
    trans_full = transitions_from(plan, lc).cache()
    life = lifecycles_from(lc, plan, trans_full, th, horizon_ms).cache()
    transitions = trans_full.select(*TRANSITION_COLUMNS)
    lifecycles = life.select(
        *KEY,
        "original_topic",
        "keys",
        "tags",
        business_key(config).alias("business_key"),
        F.timestamp_millis("first_ms").alias("first_seen"),
        F.timestamp_millis("last_ms").alias("last_seen"),
        F.col("deliveries").cast("int").alias("deliveries"),
        "final_state",
        "expected_final_state",
        F.col("max_reconsume_times").cast("int").alias("max_reconsume_times"),
        "anomalies",
        "evidence_class",
        "evidence_sources",
        "linked_by",
        "attribution",
        "instances",
    )
    d0, d1 = _day_bounds(day, zone)
    dlq_dead = F.col("final_state") == "DEAD_LETTERED"
    dlq_at = F.coalesce(F.col("dlq_ms"), F.col("last_next_expected_ms"))
    dead_letters = life.where(
        dlq_dead
        & (F.coalesce(F.col("dlq_in_day"), F.lit(False)) | (F.col("dlq_ms").isNull() & (dlq_at >= d0) & (dlq_at < d1)))
    ).select(
        *KEY,
        "original_topic",
        F.timestamp_millis(dlq_at).alias("dlq_at"),
        F.coalesce(F.col("dlq_r"), F.col("last_attempt") + F.col("dlq_copy_offset"))
        .cast("int")
        .alias("reconsume_times"),
        "keys",
        "tags",
        business_key(config).alias("business_key"),
        "body",
        compensation_handler(config).alias("compensation_handler"),
        F.col("dlq_ms").isNull().alias("dlq_inferred"),
        F.col("ev_dlq").alias("evidence"),
        "attribution",
        compensable().alias("compensable"),
        review_reason().alias("review_reason"),
    )
    group_topics = life.select("consumer_group", F.col("original_topic").alias("topic")).distinct()
    recon = reconciliation(spark, obs, transitions, plan, groups, group_topics, (d0, d1), horizon_ms)
    report = {"groups": [s.group for s in summaries], "horizon_ms": horizon_ms, "engine": sched.engine_available()}
    unattributed = unattributed_of(obs.where(F.col("in_day")), config)
    return Outputs(
        transitions, lifecycles, dead_letters, recon, unattributed, obs, report, [obs, lc, plan, trans_full, life]
    )


TRANSITION_COLUMNS = (
    "consumer_group",
    "msg_id",
    "hop",
    "from_state",
    "to_state",
    "observed_at",
    "expected_at",
    "drift_ms",
    "delay_level",
    "reconsume_times",
    "physical_topic",
    "queue_id",
    "inferred",
    "evidence",
)


# --------------------------------------------------------------------------------------------------------------
# entrypoint: read partitions, write atomically, summarize


def parse_duration_ms(text: str) -> int:
    """``4h46m``, ``90m``, ``300s``, ``2h`` or plain seconds."""
    text = text.strip()
    if text.isdigit():
        return int(text) * 1000
    parts = re.fullmatch(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    if not parts or not any(parts.groups()):
        raise UserError(f"--lookback {text!r}: use a duration such as 4h46m, 90m or 300s")
    d, h, m, s = (int(x or 0) for x in parts.groups())
    return (((d * 24 + h) * 60 + m) * 60 + s) * 1000


def read_events(spark: SparkSession, warehouse: str, day: str, lookback_ms: int, zone: str = "UTC") -> DataFrame:
    """events/dt=D plus the partitions the look-back reaches, the latter cut to the look-back window."""
    base = pathlib.Path(warehouse) / "events"
    d0, _ = _day_bounds(day, zone)
    start = dt.datetime.fromtimestamp((d0 - lookback_ms) / 1000, tz=ZoneInfo(zone)).date()
    target = dt.date.fromisoformat(day)
    if not committed(warehouse, "events", day).is_dir():
        raise InputError(f"no events for {day}: {base / f'dt={day}'} does not exist (run ingest first)")
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
}


def write_tables(tables: dict[str, DataFrame], warehouse: str, day: str, files: int = 1) -> str:
    """Write the tables as ``files`` sorted Parquet files each and commit them together (jobs/partitions.py):
    a crash leaves every table of D from the previous run or every one from this run; returns the run id."""
    return write_partitions(
        warehouse,
        day,
        {t: df.repartition(files).sortWithinPartitions(*SORT_KEYS[t]) for t, df in tables.items()},
        job="reconstruct",
        log=lambda what: print(f"  {what} …", flush=True),
    )


def summarize(spark: SparkSession, warehouse: str, day: str) -> dict[str, object]:
    life = spark.read.parquet(str(committed(warehouse, "lifecycles", day)))
    dead = spark.read.parquet(str(committed(warehouse, "dead_letters", day)))
    trans = spark.read.parquet(str(committed(warehouse, "transitions", day)))
    recon = spark.read.parquet(str(committed(warehouse, "reconciliation", day)))

    def counts(df: DataFrame, col: str) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in df.groupBy(col).count().orderBy(col).collect()}

    anomalies = counts(life.select(F.explode("anomalies").alias("a")), "a")
    return {
        "lifecycles": life.count(),
        "final_state": counts(life, "final_state"),
        "evidence_class": counts(life, "evidence_class"),
        "anomalies": anomalies,
        "dead_letters": dead.count(),
        "dead_letters_inferred": dead.where(F.col("dlq_inferred")).count(),
        "transitions": trans.count(),
        "inferred_hops": trans.where(F.col("inferred")).count(),
        "dead_letters_for_review": dead.where(~F.col("compensable")).count(),
        "reconciliation_minutes_with_diff": recon.where(F.col("cause").isNotNull()).count(),
        "reconciliation_causes": counts(recon.where(F.col("cause").isNotNull()), "cause"),
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
    p.add_argument("--date", required=True, type=date_arg, help="partition date YYYY-MM-DD")
    p.add_argument("--warehouse", required=True, help="warehouse root holding events/dt=D")
    p.add_argument("--config", default=None, help="configuration YAML (default: $ROCKETMQ_RETRY_CONFIG or defaults)")
    p.add_argument(
        "--lookback",
        default=None,
        help="how far before D to read events of lifecycles that began earlier (e.g. 4h46m); "
        "default: the longest configured always-failing schedule",
    )
    p.add_argument("--late-min", default="30s", help="LATE_REDELIVERY: minimum drift (default 30s)")
    p.add_argument("--late-factor", type=float, default=1.0, help="LATE_REDELIVERY: drift above factor x delay")
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
        return _run(args)
    except UserError as exc:
        print(f"rocketmq-retry reconstruct: {exc}", file=sys.stderr)
        return exc.exit_code


def _run(args: argparse.Namespace) -> int:
    from rocketmq_retry.jobs.spark_session import build_spark_session

    config = load_config(args.config)
    th = Thresholds(
        late_min_ms=parse_duration_ms(args.late_min),
        late_factor=args.late_factor,
        orderly_block_ms=parse_duration_ms(args.orderly_block),
        clock_skew_ms=parse_duration_ms(args.clock_skew),
    )
    t0 = time.monotonic()
    if not committed(args.warehouse, "events", args.date).is_dir():
        raise InputError(f"no events for {args.date} under {args.warehouse}/events (run ingest first)")
    policies = {g: config.group_policy(g) for g in {*config.groups, "__default__"}}
    configured = sched.default_lookback_ms(sched.summarize(p) for p in policies.values())
    lookback_ms = parse_duration_ms(args.lookback) if args.lookback else configured
    s = config.spark
    spark = build_spark_session(
        "rocketmq-retry-reconstruct",
        master=None if os.environ.get("SPARK_SUBMIT") else s.master,
        driver_memory=s.driver_memory,
        shuffle_partitions=s.shuffle_partitions,
        conf=s.conf,
    )
    print(
        f"reconstruct {args.date}: look-back {lookback_ms // 1000}s, "
        f"engine={'rocketmq_retry.engine' if sched.engine_available() else 'fallback rules'}"
    )
    events = read_events(spark, args.warehouse, args.date, lookback_ms, config.timezone)
    bindings = read_bindings(spark, args.warehouse, args.date, config.attribution.lookback_days)
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
