"""Lifecycles: per (consumer_group, msg_id), the final and expected states, evidence class and anomalies
(docs/reconstruction.md, "Final states", "Anomalies"), from the lifecycle facts, the attempt plan and the
transitions. Each derived column is one ``Column`` function; ``lifecycles_from`` joins and applies them."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rocketmq_retry import contract as C
from rocketmq_retry.config import Config
from rocketmq_retry.contract import HopState
from rocketmq_retry.engine.model import HopAction
from rocketmq_retry.jobs.reconstruct.facts import KEY

RETRY_ACTIONS = (
    HopAction.SCHEDULED_RETRY, HopAction.REPUBLISHED_RETRY, HopAction.LOCAL_RESUBMIT, HopAction.ORDERLY_SUSPEND,
    HopAction.INVISIBLE_RETRY, HopAction.FIFO_LOCAL_RETRY,
)  # fmt: skip


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
    # How late a redelivery the broker's schedule service or the client itself makes may be before its silence
    # settles the lifecycle (``_overdue``): ScheduleMessageService delivers a due copy within its 100 ms tick
    # (DELAY_FOR_A_WHILE) into %RETRY%<group>, whose held pull is woken on arrival (PullRequestHoldService
    # #notifyMessageArriving), and a local resubmit or orderly suspend is the client's own timer. Only a consumer
    # that is down or backlogged is later, and then its later lines reopen the lifecycle.
    settle_after_ms: int = 60_000


def last_attempts(plan: DataFrame) -> DataFrame:
    """Per lifecycle: its last attempt's outcome, action and timing."""
    return plan.where(F.col("is_last")).select(
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


def attempt_totals(plan: DataFrame) -> DataFrame:
    """Per lifecycle: deliveries (at least one per attempt), the most of one attempt, the first consumption."""
    return plan.groupBy(*KEY).agg(
        F.sum(F.greatest(F.coalesce(F.col("n_delivered"), F.lit(0)), F.lit(1))).alias("deliveries"),
        F.max(F.coalesce(F.col("n_delivered"), F.lit(0))).alias("max_n_delivered"),
        F.min(F.coalesce(F.col("fail_t"), F.col("seen_at"))).alias("first_consume_ms"),
    )


def hop_stats(trans: DataFrame, th: Thresholds) -> DataFrame:
    """Per lifecycle, from its transitions: any inferred hop, redelivery drift, lateness, a missing delivery."""
    delivered = F.col("to_state") == HopState.DELIVERED
    return trans.groupBy(*KEY).agg(
        F.max(F.col("inferred").cast("int")).alias("any_inferred"),
        F.max(
            F.when(
                delivered & (F.col("reconsume_times") > 0) & F.col("drift_ms").isNotNull(),
                F.col("drift_ms"),
            )
        ).alias("max_redelivery_drift"),
        F.max(
            F.when(
                delivered & F.col("drift_ms").isNotNull(),
                F.col("drift_ms")
                - F.greatest(
                    F.lit(th.late_min_ms),
                    (F.col("_prev_wait") * F.lit(th.late_factor)).cast("long"),
                ),
            )
        ).alias("late_excess"),
        F.max(F.when(delivered & F.col("inferred") & F.col("_trace_like"), F.lit(1))).alias("missing_delivery"),
    )


def _dlq_seen() -> Column:
    return F.col("dlq_ms").isNotNull()


def _retry_pending() -> Column:
    return F.col("last_action").isin(*RETRY_ACTIONS)


def _overdue(th: Thresholds) -> Column:
    """When the last failure's redelivery is late beyond doubt: ``settle_after_ms`` after it was due, or, for a
    redelivery the broker revives (POP and gRPC invisible time, §1.7, §5.3: PopReviveService scans the revive
    topic in batches and may fall behind), the anomaly threshold ``max(late_min, late_factor x its wait)``."""
    revived = F.col("last_action") == HopAction.INVISIBLE_RETRY
    by_wait = F.greatest(
        F.lit(th.late_min_ms), (F.coalesce(F.col("last_wait_ms"), F.lit(0)) * th.late_factor).cast("long")
    )
    return F.col("last_next_expected_ms") + F.when(revived, by_wait).otherwise(F.lit(th.settle_after_ms))


def silent_success(th: Thresholds) -> Column:
    # An overdue redelivery with nothing after it, in a lifecycle whose sources do not record deliveries (no trace):
    # a further failure would have left a copy, a line or a DLQ arrival, so the redelivery succeeded silently (the
    # same reasoning as silent consumptions). With a delivery-recording source the gap is SILENT_LOSS instead.
    return (
        (F.col("last_outcome") == HopState.FAILED)
        & _retry_pending()
        & (_overdue(th) < F.col("horizon_ms"))
        & ~F.coalesce(F.col("has_delivery_records"), F.lit(False))
    )


def final_state(th: Thresholds) -> Column:
    return (
        F.when(_dlq_seen(), C.DEAD_LETTERED)
        .when(F.col("last_outcome") == "OK", C.CONSUMED)
        .when(F.col("last_action") == HopAction.DROPPED, C.DROPPED)
        .when(
            (F.col("last_action") == HopAction.DEAD_LETTER),
            F.when(F.col("last_next_expected_ms") <= F.col("horizon_ms"), C.DEAD_LETTERED).otherwise(C.IN_RETRY),
        )
        .when(_retry_pending() & (_overdue(th) >= F.col("horizon_ms")), C.IN_RETRY)
        .when(silent_success(th), C.CONSUMED)
        .otherwise(C.UNKNOWN)
    )


def settled_by(th: Thresholds, at: Column) -> Column:
    """Whether the lifecycle's final state was already what it is at time ``at``: the horizon of the run before D
    (docs/reconstruction.md, "Dates and look-back"). A state the evidence shows (a consumption, a DLQ arrival, a
    drop, a delivery without outcome) is settled at its last event; one the rules infer from silence is settled
    when the silence became conclusive: an inferred DLQ move when it was due, a silent success or a lost
    redelivery when the redelivery became overdue; ``IN_RETRY`` never is. The comparisons are those of
    ``final_state`` at that horizon, so a lifecycle is settled by exactly one date's run."""
    fs = F.col("final_state")
    dlq_inferred = (fs == C.DEAD_LETTERED) & ~_dlq_seen()
    overdue_based = fs.isin(C.CONSUMED, C.UNKNOWN) & (F.col("last_outcome") == HopState.FAILED) & _retry_pending()
    return (
        F.when(fs == C.IN_RETRY, F.lit(False))
        .when(dlq_inferred, F.col("last_next_expected_ms") <= at)
        .when(overdue_based, _overdue(th) < at)
        .otherwise(F.col("last_ms") <= at)
    )


def expected_final_state() -> Column:
    """What the engine's answer for the last attempt makes the final state."""
    ea = F.col("last_engine_action")
    return (
        F.when(F.col("last_outcome") == "OK", C.CONSUMED)
        .when(
            F.col("last_outcome") == HopState.FAILED,
            F.when(ea == HopAction.DEAD_LETTER, C.DEAD_LETTERED)
            .when(ea == HopAction.DROPPED, C.DROPPED)
            .when(ea.isNotNull(), C.IN_RETRY),
        )
        .otherwise(C.UNKNOWN)
    )


def anomalies(th: Thresholds) -> Column:
    """The sorted, distinct anomaly names of a lifecycle (docs/reconstruction.md, "Anomalies")."""
    is_bcast = F.col("mode") == "BROADCASTING"
    found = F.array_sort(
        F.filter(
            F.array(
                F.when(
                    _dlq_seen()
                    & F.col("dlq_threshold").isNotNull()
                    & (F.col("last_attempt") < F.col("dlq_threshold"))
                    & (F.col("last_engine_action") != HopAction.DEAD_LETTER),
                    F.lit(C.EARLY_DLQ),
                ),
                F.when(F.col("late_excess") > 0, F.lit(C.LATE_REDELIVERY)),
                F.when(F.col("missing_delivery") == 1, F.lit(C.MISSING_HOP)),
                F.when(
                    _dlq_seen() & (F.col("last_delivery_ms") > F.col("dlq_ms") + th.clock_skew_ms),
                    F.lit(C.DELIVERY_AFTER_DLQ),
                ),
                F.when(is_bcast & (F.coalesce(F.col("last_attempt"), F.lit(0)) > 0), F.lit(C.RETRY_IN_BROADCAST)),
                F.when(is_bcast & F.col("max_copy").isNotNull(), F.lit(C.RETRY_IN_BROADCAST)),
                F.when(~is_bcast & (F.col("max_n_delivered") > 1), F.lit(C.DUPLICATE_CONSUME)),
                F.when(
                    (F.col("mode") == "ORDERLY")
                    & ((F.coalesce("dlq_ms", "last_ms") - F.col("first_consume_ms")) > th.orderly_block_ms),
                    F.lit(C.ORDERLY_QUEUE_BLOCKED),
                ),
                F.when(
                    (F.col("final_state") == C.UNKNOWN) & _retry_pending() & F.col("has_delivery_records"),
                    F.lit(C.SILENT_LOSS),
                ),
            ),
            lambda c: c.isNotNull(),
        )
    )
    return F.array_distinct(found)


def evidence_class() -> Column:
    return (
        F.when(F.col("final_state") == C.UNKNOWN, C.UNDETERMINABLE)
        .when(F.coalesce(F.col("any_inferred"), F.lit(1)) == 1, C.PARTIAL)
        .otherwise(C.FULL)
    )


def lifecycles_from(
    lc: DataFrame, plan: DataFrame, trans: DataFrame, th: Thresholds, horizon_ms: int, carry_after_ms: int | None = None
) -> DataFrame:
    """The lifecycles of ``lc`` with their derived columns and ``written``: whether D's partition holds the row (it has
    an event on D, or it was still open when the run before D looked, at ``carry_after_ms``; None: only the first)."""
    x = (
        lc.join(last_attempts(plan), KEY, "left")
        .join(attempt_totals(plan), KEY, "left")
        .join(hop_stats(trans, th), KEY, "left")
        .withColumn("horizon_ms", F.lit(horizon_ms))
    )
    x = x.withColumn("final_state", final_state(th))
    # the redelivery that succeeded silently is one more (inferred) delivery
    x = x.withColumn("deliveries", F.col("deliveries") + F.when(silent_success(th) & ~_dlq_seen(), 1).otherwise(0))
    x = x.withColumn("expected_final_state", expected_final_state())
    x = x.withColumn("anomalies", anomalies(th))
    x = x.withColumn("evidence_class", evidence_class())
    carried = F.lit(False) if carry_after_ms is None else ~settled_by(th, F.lit(carry_after_ms))
    return x.withColumn("written", F.coalesce(F.col("in_day"), F.lit(False)) | carried)


def business_key(config: Config) -> Column:
    """The business key of a message (DESIGN §6 ``compensation.business_key``), decided here only: ``lifecycles``
    and ``dead_letters`` carry it and compensation hands the ``dead_letters`` value to its handlers. ``keys``: the
    first non-empty entry of KEYS (RocketMQ joins several with a space, §7.2 "Keys Keys2"); ``body``: Spark's
    ``get_json_object`` at ``json_path`` (a string as is, any other JSON value as its JSON text)."""
    bk = config.compensation.business_key
    if bk.from_ == "body" and bk.json_path:
        return F.get_json_object(F.col("body"), bk.json_path)
    return F.nullif(F.regexp_extract(F.coalesce(F.col("keys"), F.lit("")), r"^ *([^ ]+)", 1), F.lit(""))


def lifecycles_table(life: DataFrame, config: Config) -> DataFrame:
    """The written ``lifecycles`` columns (the data contract): the derived ones here, the rest by name."""
    derived = {
        "business_key": business_key(config),
        "first_seen": F.timestamp_millis("first_ms"),
        "last_seen": F.timestamp_millis("last_ms"),
        "deliveries": F.col("deliveries").cast("int"),
        "max_reconsume_times": F.col("max_reconsume_times").cast("int"),
    }
    return life.select(*C.select_columns("lifecycles", derived))
