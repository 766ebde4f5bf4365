"""Transitions: every attempt of the plan (``reconstruct.attempts.attempt_plan``) exploded into its hops
(docs/reconstruction.md, "Hops"). Each hop kind is one ``Column`` (a struct, null when the attempt has no such
hop); ``transitions_from`` keeps the non-null ones in order and numbers them per lifecycle."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rocketmq_retry import contract
from rocketmq_retry.contract import HopState
from rocketmq_retry.engine.model import DLQ_TOPIC_PREFIX, RETRY_TOPIC_PREFIX, SCHEDULE_TOPIC, UNKNOWN_TOPIC, HopAction
from rocketmq_retry.jobs.reconstruct.facts import KEY

TRANSITION_COLUMNS = contract.columns("transitions")


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


def _pop_retry_topic(name: str) -> Column:
    """The schedule names a pop retry topic with UNKNOWN_TOPIC for the business topic (one schedule per group);
    the lifecycle's own topic goes in its place, and with no topic known the physical topic stays unknown (null)
    rather than a made-up name."""
    return F.when(
        F.col("original_topic").isNotNull(), F.replace(F.col(name), F.lit(UNKNOWN_TOPIC), F.col("original_topic"))
    )


def _ids(name: str) -> Column:
    return F.coalesce(F.col(name), F.array().cast("array<string>"))


def _retry_topic() -> Column:
    return F.concat(F.lit(RETRY_TOPIC_PREFIX), F.col("consumer_group"))


def _scheduled_path() -> Column:
    return F.col("hop_action").isin(HopAction.SCHEDULED_RETRY, HopAction.REPUBLISHED_RETRY)


def _dlq_via_schedule() -> Column:
    return (F.col("hop_action") == HopAction.DEAD_LETTER) & F.coalesce(F.col("via_schedule"), F.lit(False))


def delivered_hop() -> Column:
    r = F.col("attempt")
    prev = F.col("prev_hop_action")
    deliver_topic = (
        F.when(r == 0, F.col("original_topic"))
        .when(
            prev.isin(HopAction.SCHEDULED_RETRY, HopAction.REPUBLISHED_RETRY),
            F.coalesce(F.col("ready_topic"), _retry_topic()),
        )
        .when(prev.isin(HopAction.INVISIBLE_RETRY), _pop_retry_topic("prev_next_topic"))
        .otherwise(F.col("original_topic"))
    )
    return _hop(
        HopState.DELIVERED,
        # a revive-log checkpoint is the pop: the delivery at its pt (``reconstruct.pops``)
        observed=F.coalesce("delivery_at", "seen_at", "pop_at"),
        expected=F.when(r == 0, F.lit(None)).otherwise(F.col("prev_next_expected_ms")),
        topic=deliver_topic,
        queue=F.lit(None),
        level=F.lit(None),
        rt=r,
        inferred=F.col("seen_at").isNull() & F.col("pop_at").isNull(),
        evidence=F.concat(_ids("ev_delivery"), _ids("ev_pop")),
        when=F.lit(True),
        wait_before=F.col("prev_wait_ms"),
    )


def outcome_hop() -> Column:
    return _hop(
        F.when(F.col("outcome") == "OK", HopState.CONSUMED).otherwise(HopState.FAILED),
        observed=F.when(F.col("outcome") == "OK", F.coalesce("ok_at", "pop_ok_ms")).otherwise(F.col("failed_ms")),
        expected=F.lit(None),
        topic=F.lit(None),
        queue=F.lit(None),
        level=F.lit(None),
        rt=F.col("attempt"),
        inferred=F.col("ok_at").isNull()
        & F.col("fail_at").isNull()
        & F.col("drop_at").isNull()
        & F.col("pop_ok_ms").isNull()
        & F.col("pop_fail_ms").isNull(),
        evidence=F.concat(_ids("ev_outcome"), _ids("ev_pop")),
        when=F.col("outcome").isNotNull(),
    )


def sent_hop() -> Column:
    """The send-back (or the client's re-publish) of a failure that goes to the retry or DLQ path."""
    act = F.col("hop_action")
    plain_send = (
        (F.col("mode") == "ORDERLY") | F.col("variant").isin("RPC_FAILED") | (act == HopAction.REPUBLISHED_RETRY)
    )
    send_obs = F.coalesce("sendback_at", "sbf_at", "sched_at")
    return _hop(
        F.when(plain_send, HopState.REPUBLISHED).otherwise(HopState.SENT_BACK),
        observed=send_obs,
        expected=F.col("fail_t"),
        topic=_retry_topic(),
        queue=F.lit(None),
        level=F.when(_scheduled_path() | _dlq_via_schedule(), F.col("level")),
        rt=F.col("attempt"),
        inferred=send_obs.isNull(),
        evidence=F.concat(F.col("ev_sendback"), F.coalesce(F.col("ev_sched"), F.array().cast("array<string>"))),
        when=_scheduled_path() | (act == HopAction.DEAD_LETTER),
    )


def scheduled_hop() -> Column:
    return _hop(
        HopState.SCHEDULED,
        observed=F.col("sched_at"),
        expected=F.coalesce("sendback_at", "fail_t"),
        topic=F.lit(SCHEDULE_TOPIC),
        queue=F.col("level") - 1,
        level=F.col("level"),
        rt=F.col("attempt") + F.when(_dlq_via_schedule(), 0).otherwise(1),
        inferred=F.col("sched_at").isNull(),
        evidence=F.col("ev_sched"),
        when=_scheduled_path() | _dlq_via_schedule(),
    )


def ready_hop() -> Column:
    """The retry copy becoming deliverable; an expected one after the horizon is pending, not drawn."""
    ready_expected = F.col("next_expected_ms")
    return _hop(
        HopState.READY,
        observed=F.col("ready_at"),
        expected=ready_expected,
        topic=F.coalesce(F.col("ready_topic"), _retry_topic()),
        queue=F.col("ready_queue"),
        level=F.col("level"),
        rt=F.col("attempt") + 1,
        inferred=F.col("ready_at").isNull(),
        evidence=F.col("ev_ready"),
        when=_scheduled_path()
        & (F.col("ready_at").isNotNull() | ~F.col("is_last") | (ready_expected <= F.col("horizon_ms"))),
    )


def local_wait_hop() -> Column:
    """A retry that stays on the client or in the queue: orderly suspend, local resubmit, invisible, FIFO local."""
    act = F.col("hop_action")
    return _hop(
        F.when(act == HopAction.ORDERLY_SUSPEND, HopState.SUSPENDED)
        .when(act == HopAction.LOCAL_RESUBMIT, HopState.LOCAL_RETRY)
        .otherwise(HopState.INVISIBLE),
        observed=F.when(act == HopAction.ORDERLY_SUSPEND, F.when(F.col("suspend"), F.col("fail_at"))).when(
            act == HopAction.LOCAL_RESUBMIT, F.col("local_at")
        ),
        expected=F.col("fail_t"),
        topic=F.when(act.isin(HopAction.INVISIBLE_RETRY), _pop_retry_topic("next_topic")).otherwise(
            F.col("original_topic")
        ),
        queue=F.lit(None),
        level=F.lit(None),
        rt=F.col("attempt") + 1,
        inferred=~(
            ((act == HopAction.ORDERLY_SUSPEND) & F.coalesce(F.col("suspend"), F.lit(False)))
            | ((act == HopAction.LOCAL_RESUBMIT) & F.col("local_at").isNotNull())
        ),
        evidence=F.col("ev_sendback"),
        when=act.isin(
            HopAction.ORDERLY_SUSPEND, HopAction.LOCAL_RESUBMIT, HopAction.INVISIBLE_RETRY, HopAction.FIFO_LOCAL_RETRY
        ),
    )


def dead_letter_hop() -> Column:
    """The DLQ arrival; an expected one after the horizon is pending, not drawn."""
    dlq_expected = F.coalesce("sched_at", "sendback_at", "fail_t") + F.coalesce(F.col("wait_ms"), F.lit(0))
    return _hop(
        HopState.DEAD_LETTERED,
        observed=F.col("dlq_ms"),
        expected=dlq_expected,
        topic=F.concat(F.lit(DLQ_TOPIC_PREFIX), F.col("consumer_group")),
        queue=F.lit(0),
        level=F.lit(None),
        rt=F.coalesce(F.col("dlq_r"), F.col("attempt") + F.col("dlq_copy_offset")),
        inferred=F.col("dlq_ms").isNull(),
        evidence=F.col("ev_dlq"),
        when=(F.col("hop_action") == HopAction.DEAD_LETTER)
        & (F.col("dlq_ms").isNotNull() | (dlq_expected <= F.col("horizon_ms"))),
    )


def dropped_hop() -> Column:
    return _hop(
        HopState.DROPPED,
        observed=F.col("drop_at"),
        expected=F.col("fail_t"),
        topic=F.lit(None),
        queue=F.lit(None),
        level=F.lit(None),
        rt=F.col("attempt"),
        inferred=F.col("drop_at").isNull(),
        evidence=F.col("ev_drop"),
        when=F.col("hop_action") == HopAction.DROPPED,
    )


def attempt_hops() -> Column:
    """The attempt's hops in the order they happen (an array of ``_hop`` structs)."""
    hops = F.array(
        delivered_hop(),
        outcome_hop(),
        sent_hop(),
        scheduled_hop(),
        ready_hop(),
        local_wait_hop(),
        dead_letter_hop(),
        dropped_hop(),
    )
    return F.filter(hops, lambda h: h.isNotNull())


def numbered_hops(hops: DataFrame) -> DataFrame:
    """``KEY, attempt, seq, h`` (+ ``has_delivery_records``) -> one transition row per hop, numbered per lifecycle,
    each from the state its predecessor reached (the first from PUBLISHED)."""
    w = Window.partitionBy(*KEY).orderBy("attempt", "seq")
    x = hops.withColumn("hop", (F.row_number().over(w) - 1).cast("int"))
    x = x.withColumn("from_state", F.lag(F.col("h.to_state")).over(w))
    first_from = F.lit(HopState.PUBLISHED)
    return x.select(
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


def transitions_from(plan: DataFrame, lc: DataFrame) -> DataFrame:
    """Explode every attempt into its hops (docs/reconstruction.md, "Hops")."""
    p = plan.join(lc.select(*KEY, "original_topic", "published_at", "ready_topic", "has_delivery_records"), KEY, "left")
    p = p.join(lc.select(*KEY, "ev_dlq"), KEY, "left")
    hops = p.select(*KEY, "attempt", "has_delivery_records", F.posexplode(attempt_hops()).alias("seq", "h"))
    return numbered_hops(hops)
