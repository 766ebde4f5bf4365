"""Small driver-side lookup tables of the reconstruction (docs/reconstruction.md): the retry engine's answer per
(group, failure variant, attempt) and each group's summary, broadcast to every attempt; and the ``consumer_group,
topic`` subscriptions known from the config and the instances' bindings."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from rocketmq_retry import contract
from rocketmq_retry.config import Config
from rocketmq_retry.jobs import lifecycle_schedule as sched
from rocketmq_retry.jobs.ingest.parse import ANY_TOPIC
from rocketmq_retry.spark_session import local_frame

SCHEDULE_SCHEMA = T.StructType(
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
GROUP_SCHEMA = T.StructType(
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


def observed_max_reconsume_times(obs: DataFrame) -> dict[str, int]:
    """Per consumer group seen in the observations, the largest reconsume_times (at least 0)."""
    return {
        row["consumer_group"]: int(row["max_r"] or 0)
        for row in obs.where(F.col("consumer_group").isNotNull())
        .groupBy("consumer_group")
        .agg(F.max(F.greatest(F.col("reconsume_times"), F.lit(0))).alias("max_r"))
        .collect()
    }


def engine_tables(
    spark: SparkSession, config: Config, obs: DataFrame
) -> tuple[DataFrame, DataFrame, list[sched.GroupSummary]]:
    """Ask the engine about every configured and observed group, up to the largest reconsume_times observed."""
    seen = observed_max_reconsume_times(obs)
    groups = set(config.groups) | set(seen)
    policies = {g: config.group_policy(g) for g in groups}
    rows, summaries = sched.build_tables(policies, seen)
    schedule = local_frame(spark, rows, SCHEDULE_SCHEMA)
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
    groups_df = local_frame(spark, group_rows, GROUP_SCHEMA)
    return F.broadcast(schedule), F.broadcast(groups_df), summaries


def subscriptions(spark: SparkSession, config: Config, bindings: DataFrame | None) -> DataFrame:
    """``consumer_group, topic`` pairs known without a lifecycle: the business topics the instances' bindings name
    (not a retry topic, not every topic of an instance) and the config's declared ``groups.<g>.topics``."""
    declared = [(g, t) for g, c in sorted(config.groups.items()) for t in c.topics]
    out = local_frame(spark, declared, contract.struct_of([("consumer_group", "string"), ("topic", "string")]))
    if bindings is not None:
        named = bindings.where(~F.col("topic").startswith("%") & (F.col("topic") != ANY_TOPIC))
        out = out.unionByName(named.select("consumer_group", "topic"))
    return out
