"""Evidence aggregated per delivery attempt, per message and per lifecycle (docs/reconstruction.md): evidence of one
delivery from several sources is joined here, never counted twice. Each function is a pure ``DataFrame ->
DataFrame`` over the linked, classified observations (``reconstruct.events.observations``)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rocketmq_retry.jobs.ingest.parse import LOG_FORMATS
from rocketmq_retry.jobs.reconstruct.events import CONSUMER_KINDS

KEY = ["consumer_group", "msg_id"]  # one lifecycle: one message for one consumer group


def _min_t(cond: Column) -> Column:
    return F.min(F.when(cond, F.col("t_ms")))


def _ids(cond: Column) -> Column:
    return F.array_sort(F.collect_set(F.when(cond, F.col("event_id"))))


def _n_distinct(col: Column) -> Column:
    """``count(DISTINCT col)`` as the size of the set of its non-null values: a distinct aggregate makes Spark expand
    every input row once per distinct column and aggregate twice, the second time sorted (13 s of the 10 M-line
    day's reconstruction, docs/scale.md); a set in the one object-hash aggregation counts the same values."""
    return F.size(F.collect_set(col))


def _of_an_attempt() -> Column:
    """Rows that belong to one delivery attempt of one lifecycle."""
    return F.col("attempt").isNotNull() & F.col("consumer_group").isNotNull() & F.col("msg_id").isNotNull()


def _per_source_facts(obs: DataFrame) -> DataFrame:
    """One row per (group, msg_id, attempt, source): what that source shows about the delivery."""
    kind = F.col("kind")
    return (
        obs.where(_of_an_attempt())
        .groupBy(*KEY, "attempt", "source")
        .agg(
            # One delivery can appear once per source; only DELIVERED rows (one per delivery in the formats that
            # write them, e.g. a trace SubBefore) are counted, so two lines about one failure are not two deliveries.
            # Distinct by requestId: one trace record can reach us twice (the trace file and a dump of the trace
            # topic); two broadcasting instances have two requestIds (§7.2, §12).
            _n_distinct(F.when(kind == "DELIVERY", F.coalesce("request_id", "event_id"))).alias("n_delivered"),
            # failed deliveries of the attempt: one per trace request or per instance that logged the failure (each
            # instance of a broadcasting group fails, or not, on its own)
            _n_distinct(
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


def _instance_deliveries(obs: DataFrame) -> DataFrame:
    """Per (group, msg_id, attempt): the application instances whose own log shows a delivery of it."""
    # Each application instance whose own log shows a delivery received one (a broadcasting group delivers every
    # message to every instance, §1.3): two instances logging the drop are two deliveries even without a trace.
    return (
        obs.where(
            _of_an_attempt()
            & F.col("kind").isin(*CONSUMER_KINDS)
            & F.col("source").isin(*LOG_FORMATS)
            & F.col("instance").isNotNull()
        )
        .groupBy(*KEY, "attempt")
        .agg(_n_distinct(F.col("instance")).alias("n_instances"))
    )


def _flat(name: str) -> Column:
    return F.array_sort(F.array_distinct(F.flatten(F.collect_list(name)))).alias(name)


def _across_sources(per_source: DataFrame) -> DataFrame:
    """One row per (group, msg_id, attempt): the per-source facts joined, each delivery counted once."""
    return per_source.groupBy(*KEY, "attempt").agg(
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


def attempt_facts(obs: DataFrame) -> DataFrame:
    """One row per (group, msg_id, attempt): what the evidence shows about that delivery and its failure hop."""
    facts = _across_sources(_per_source_facts(obs))
    return (
        facts.join(_instance_deliveries(obs), [*KEY, "attempt"], "left")
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


def with_silent_consumptions(
    lf: DataFrame,
    obs: DataFrame,
    mf: DataFrame,
    subscriptions: DataFrame | None = None,
    *,
    about: DataFrame | None = None,
) -> DataFrame:
    """Lifecycles that left no consumer evidence at all: a message published on D to a topic a group is seen to
    consume (its other lifecycles' business topic, or ``subscriptions``: ``consumer_group, topic`` that the
    instances' bindings or the config's ``groups.<g>.topics`` name), with nothing of that message in that group.

    A failure always leaves evidence somewhere the configured sources reach (a stored copy in the retry, schedule,
    pop-retry or DLQ topic dumps; an L-C3/L-C4 line for orderly and broadcasting; a Spring WARN, §6.4, §11), and a
    success often leaves none (rocketmq-spring logs it at DEBUG, the gRPC SDK not at all, no trace without
    enableMsgTrace). Such a message was consumed on its first delivery: CONSUMED, one inferred delivery.
    ``about``: the rows of ``obs`` that can be about a lifecycle (``events.observation_parts``), where the
    unattributed ones are (default ``obs``).
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
    consumer_side = obs if about is None else about
    unplaced = (
        consumer_side.where(F.col("unattributed").isNotNull() & F.col("msg_id").isNotNull()).select("msg_id").distinct()
    )
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
            # the last attempt a revive-log checkpoint shows popped (``reconstruct.pops``; capped by the group's
            # last attempt in ``attempts.last_attempt``: a later pop is the proxy's dead-letter forward, §5.4)
            F.max(F.when(kind == "POP", F.col("attempt"))).alias("max_pop"),
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


def maybe_open() -> Column:
    """A lifecycle of the look-back that may still have been open when D began: neither a DLQ arrival nor a
    consumption of its last attempt is in its evidence. Only a cheap first cut: ``reconstruct.lifecycles.settled_by``
    decides, after the engine's answers, which of these D carries."""
    last_seen_attempt = F.greatest(F.col("max_delivered"), F.col("max_copy"))
    consumed_last = F.col("max_ok").isNotNull() & (F.col("max_ok") >= F.coalesce(last_seen_attempt, F.col("max_ok")))
    return F.col("dlq_ms").isNull() & ~consumed_last


def lifecycle_rows(
    obs: DataFrame,
    mf: DataFrame,
    groups: DataFrame,
    subscriptions: DataFrame,
    *,
    carry: bool = True,
    about: DataFrame | None = None,
) -> DataFrame:
    """One row per lifecycle of D (silent consumptions included), with its group's engine summary (``groups``)
    and its message's business metadata (``message_facts``). ``carry``: also the look-back's lifecycles that may
    have been open when D began (``maybe_open``), which D settles or carries on. ``about``: the rows of ``obs``
    that can be about a lifecycle (``events.observation_parts``), which the lifecycles' aggregation reads
    (default ``obs``)."""
    scope = F.col("in_day") | maybe_open() if carry else F.col("in_day")
    about = obs if about is None else about
    return (
        with_silent_consumptions(lifecycle_facts(about), obs, mf, subscriptions, about=about)
        .where(scope)
        .join(groups, "consumer_group", "left")
        .join(mf, "msg_id", "left")
        .withColumn("original_topic", F.col("m_original_topic"))
        .withColumn("keys", F.col("m_keys"))
        .withColumn("tags", F.col("m_tags"))
        .withColumn("body", F.col("m_body"))
    )
