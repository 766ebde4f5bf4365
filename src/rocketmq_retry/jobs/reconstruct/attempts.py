"""Every attempt of every lifecycle, observed or inferred, with the engine's answer for its failure joined in
(docs/reconstruction.md, "Hops"): the attempt plan that transitions, lifecycles and reconciliation read. Each step
is a ``Column`` over the plan's columns; ``attempt_plan`` applies them in order."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rocketmq_retry.contract import HopState
from rocketmq_retry.engine.model import HopAction
from rocketmq_retry.jobs.reconstruct.facts import KEY

# the lifecycle columns every attempt carries
_LIFECYCLE_COLUMNS = (
    "dlq_ms",
    "dlq_r",
    "mode",
    "dlq_threshold",
    "max_copy",
    "level_ms",
    "dlq_copy_offset",
    "silent_ok",
    "m_born_host",
    "max_pop",
)


def last_attempt() -> Column:
    """A lifecycle's last attempt (null when none is known): the largest the evidence shows."""
    last = F.greatest(
        F.col("max_delivered"),
        F.col("max_copy"),
        F.when(F.col("dlq_r").isNotNull(), F.col("dlq_r") - F.col("dlq_copy_offset")),
    )
    # gRPC FIFO retries locally (§5.3): the stored copy's r never advances, so a dead letter proves maxAttempts
    # deliveries (the engine's threshold), not the DLQ copy's r.
    fifo_dlq = (F.col("mode") == "GRPC_FIFO") & F.col("dlq_r").isNotNull()
    last = F.greatest(last, F.when(fifo_dlq, F.col("dlq_threshold")))
    # a checkpoint is a pop, a delivery, up to the group's last attempt; a pop past it is the proxy's dead-letter
    # forward (§5.4: ReceiveMessageActivity pops the revived copy, sends it to the DLQ and acks it)
    popped = F.least(F.col("max_pop"), F.coalesce(F.col("dlq_threshold"), F.col("max_pop")))  # least skips nulls
    last = F.greatest(last, F.when(F.col("max_pop").isNotNull(), popped))
    return F.when(last >= 0, last)


def attempts_of(lc: DataFrame, af: DataFrame) -> DataFrame:
    """Attempts 0..r_last of every lifecycle, with the attempt's facts (if any) and its lifecycle's columns."""
    lc = lc.withColumn("r_last", last_attempt())
    attempts = lc.select(
        *KEY,
        "r_last",
        F.explode(
            F.when(F.col("r_last").isNotNull(), F.sequence(F.lit(0), F.col("r_last").cast("int"))).otherwise(
                F.array().cast("array<int>")
            )
        ).alias("attempt"),
    )
    return attempts.join(af, [*KEY, "attempt"], "left").join(lc.select(*KEY, *_LIFECYCLE_COLUMNS), KEY, "left")


def _is_last() -> Column:
    return F.col("attempt") == F.col("r_last")


def _dead_lettered() -> Column:
    """The attempt's failure went to the DLQ: an observed DLQ arrival, or the last attempt of a DLQ copy's r."""
    return F.col("dlq_ms").isNotNull() | (_is_last() & F.col("dlq_r").isNotNull())


def _republished_copy() -> Column:
    # A concurrent consumer's schedule copy born on another host than the copy it was delivered from (the business
    # copy, else the previous attempt's %RETRY% copy): the client re-published it after the send-back RPC failed
    # (§1.4; the broker's send-back keeps the delivered copy's bornHost, §2.2 step 11). The 4.x line for that
    # failure names no message (L-C5), so the copy is the only evidence that the broker took no send-back
    # (SNDBCK_PUT_NUMS does not count it).
    delivered_from = F.when(F.col("attempt") == 0, F.col("m_born_host")).otherwise(
        F.lag("ready_host").over(Window.partitionBy(*KEY).orderBy("attempt"))
    )
    return F.coalesce((F.col("mode") == "CONCURRENTLY") & (F.col("sched_host") != delivered_from), F.lit(False))


def failure_variant() -> Column:
    """Which of the engine's failure variants the attempt's evidence shows (the schedule table's ``variant``)."""
    # A -1 override (§1.5) is recognised when the message went to the DLQ from its first delivery without ever
    # entering the schedule or retry topics (the DLQ copy then has no REAL_TOPIC, §12).
    override = _is_last() & _dead_lettered() & (F.col("attempt") == 0) & F.col("max_copy").isNull()
    return (
        F.when(F.col("local_at").isNotNull(), "LOCAL")
        .when(F.col("sbf_at").isNotNull() | _republished_copy(), "RPC_FAILED")
        .when(F.coalesce(F.col("timeout"), F.lit(False)), "TIMEOUT")
        .when(override & (F.col("attempt") < F.coalesce(F.col("dlq_threshold"), F.lit(1 << 30))), "DLQ_OVERRIDE")
        .otherwise("NONE")
    )


def attempt_outcome() -> Column:
    """OK, FAILED, or null when the evidence does not say."""
    failed_known = F.col("fail_at").isNotNull() | F.col("drop_at").isNotNull()
    later = ~F.col("is_last") | _dead_lettered() | F.col("ready_at").isNotNull() | F.col("sched_at").isNotNull()
    later = later | F.col("sendback_at").isNotNull() | F.col("sbf_at").isNotNull() | F.col("local_at").isNotNull()
    # Broadcasting: the lifecycle spans the instances; one instance's dropped failure makes it DROPPED (§1.3).
    bcast_failed = (F.col("mode") == "BROADCASTING") & (F.col("fail_at").isNotNull() | F.col("drop_at").isNotNull())
    # cleanExpireMsg sent the message back while the listener still ran (§1.6): whatever the listener returns later
    # (the trace then shows a success with TIME_OUT), the message is redelivered from the retry topic.
    timed_out = F.coalesce(F.col("timeout"), F.lit(False))
    return (
        F.when(bcast_failed | timed_out, HopState.FAILED)
        # an acked last checkpoint is a consumption the broker recorded (``reconstruct.pops``)
        .when(
            F.col("ok_at").isNotNull() | F.col("pop_ok_ms").isNotNull() | F.coalesce(F.col("silent_ok"), F.lit(False)),
            "OK",
        )
        .when(failed_known | later, HopState.FAILED)
        .when(F.col("mode") == "BROADCASTING", F.lit(None))
        .otherwise(F.lit(None))
    )


def hop_action() -> Column:
    """What followed a failed attempt: the engine's action, unless the evidence shows otherwise."""
    return (
        F.when(F.col("outcome") != HopState.FAILED, F.lit(None))
        .when(F.col("is_last") & _dead_lettered(), HopAction.DEAD_LETTER)
        .when(F.col("drop_at").isNotNull(), HopAction.DROPPED)
        # The engine expected a terminal hop but the message was delivered again: the evidence wins (the consumer's
        # max differs from the configured one); the hop is drawn as a scheduled retry.
        .when(
            ~F.col("is_last") & F.col("action").isin(HopAction.DEAD_LETTER, HopAction.DROPPED),
            HopAction.SCHEDULED_RETRY,
        )
        .otherwise(F.col("action"))
    )


def delay_level() -> Column:
    """The level the broker used: a stored copy shows it (DELAY, or schedule queue id + 1); else the engine's."""
    return F.coalesce(F.col("sched_level"), F.col("ready_level"), F.col("next_level"))


def wait_ms() -> Column:
    """How long the failed attempt's next hop waits (the delay of ``level`` where the hop goes through the
    schedule topic, else the engine's delay_ms)."""
    size = F.size("level_ms")
    level_delay = F.when(
        F.col("level").isNotNull() & (F.col("level") > 0),
        F.element_at(F.col("level_ms"), F.least(F.col("level"), size)),
    )
    return (
        F.when(
            F.col("hop_action").isin(HopAction.SCHEDULED_RETRY, HopAction.REPUBLISHED_RETRY),
            F.coalesce(level_delay, "delay_ms"),
        )
        # A DLQ copy is stored at once after a send-back, after the schedule delay on the 4.x re-publish path
        # (§2.3), and at the next pop of the revived copy for gRPC (§5.4): the engine's delay_ms says which.
        .when(
            F.col("hop_action") == HopAction.DEAD_LETTER,
            F.when(F.col("via_schedule"), F.coalesce(level_delay, "delay_ms")).otherwise(
                F.coalesce(F.col("delay_ms"), F.lit(0))
            ),
        )
        .otherwise(F.col("delay_ms"))
    )


def next_expected_ms() -> Column:
    """When the message should be deliverable again after the failed attempt."""
    base = F.coalesce("sched_at", "sendback_at", "sbf_at", "local_at", "fail_t")
    # Without consumer evidence of the failure (gRPC FAILURE returns log nothing), the stored retry copy's time is
    # when the message became deliverable again.
    return F.coalesce(base + F.coalesce(F.col("wait_ms"), F.lit(0)), F.col("ready_at"))


def attempt_plan(lc: DataFrame, af: DataFrame, schedule: DataFrame, horizon_ms: int) -> DataFrame:
    """Every attempt 0..last of every lifecycle, observed or inferred, with the engine's next hop joined in."""
    a = attempts_of(lc, af)
    a = a.withColumn("variant", failure_variant()).withColumn("is_last", _is_last())
    a = a.join(schedule, ["consumer_group", "variant", "attempt"], "left")
    a = a.withColumn("outcome", attempt_outcome())
    a = a.withColumn("engine_action", F.col("action"))
    a = a.withColumn("hop_action", hop_action())
    a = a.withColumn("level", delay_level())
    a = a.withColumn("wait_ms", wait_ms())
    # fail_t: the failure's line, else the delivery (what the engine's waits count from); failed_ms: when the
    # delivery failed, where the revive log says it and no client line does (``reconstruct.pops``)
    a = a.withColumn("fail_t", F.coalesce("fail_at", "drop_at", "seen_at", "pop_at"))
    a = a.withColumn("failed_ms", F.coalesce("fail_at", "drop_at", "pop_fail_ms", "fail_t"))
    a = a.withColumn("next_expected_ms", next_expected_ms())
    w = Window.partitionBy(*KEY).orderBy("attempt")
    for col in ("hop_action", "next_expected_ms", "next_topic", "ready_at", "variant", "wait_ms"):
        a = a.withColumn(f"prev_{col}", F.lag(col).over(w))
    return a.withColumn("horizon_ms", F.lit(horizon_ms))
